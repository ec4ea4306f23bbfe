"""Every prompt the DHD experiments send lives here, so a prompt change is one reviewable diff.

Prompt text feeds the cache key (the key is what is sent), so editing a prompt re-asks the model
for every affected request instead of serving answers to the old wording.

- ``JUDGE_*``: the Omni-MATH equivalence judge used for items math-verify cannot rule-check
  (built into a request by :func:`deliberation.datasets.omnimath.judge_request`). Omni-MATH's own
  evaluation uses a GPT-4 judge with its own prompt; this prompt is ours.
"""

from __future__ import annotations

JUDGE_STAGE = "dhd.judge"
JUDGE_CHOICES = ("equivalent", "not equivalent")
JUDGE_SYSTEM = (
    "You check answers to competition mathematics problems. Compare the candidate's final answer "
    "with the reference answer and decide whether they are mathematically equivalent: the same "
    "value, set, expression or statement, possibly written differently. Ignore the candidate's "
    "reasoning and formatting; judge only the final answer. Reply with exactly one of: "
    "equivalent, not equivalent."
)
JUDGE_USER = (
    "Problem:\n{problem}\n\nReference answer:\n{reference}\n\nCandidate final answer:\n{candidate}"
)
