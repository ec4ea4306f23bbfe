"""Every prompt of the DHD protocol, in one place (recruiter, hypothesizer, integrator, judge).

The texts are ours, written from the protocol in paper 2 (``../shared/seeds/001_*.txt``): the
recruiter never sees the answer; hypothesizers work alone and reply in the fixed format of
:mod:`deliberation.experiments.dhd.messages`; the integrator sees only the problem and the messages
it is given, and ends with a ``Final answer:`` line that every grader in
:mod:`deliberation.benchmarks.problems` reads; the judge sees the problem, the reference answer and the
candidate answer, never the reasoning (a blind evaluator) and decides equivalence for items no rule
can check.

Prompt text feeds the cache key (the key is what is sent), so editing a prompt re-asks the model
for every affected request instead of serving answers to the old wording. The judge
(``JUDGE_*``) is built into a request by :func:`deliberation.experiments.dhd.judge.judge_request`;
Omni-MATH's own evaluation uses a GPT-4 judge with its own prompt; this prompt is ours.
"""

from __future__ import annotations

from deliberation.experiments.dhd.messages import LABELS

N_ROLES = 5

RECRUITER_STAGE = "dhd.recruiter"
HYPOTHESIZER_STAGE = "dhd.hypothesizer"
INTEGRATOR_STAGE = "dhd.integrator"

RECRUITER_SYSTEM = (
    "You assemble a team of independent problem solvers. You do not solve the problem yourself."
)
RECRUITER_USER = (
    "Problem:\n{problem}\n\n"
    f"Propose {N_ROLES} expert roles for solvers who will each attack this problem alone. Make "
    "them specific to this problem and genuinely different from each other: different fields, "
    "methods or angles of attack, not five names for the same approach.\n"
    "Reply with a JSON object: "
    '{{"roles": [{{"name": "<role name>", "focus": "<one sentence: how this role attacks the '
    'problem>"}}, ...]}} with exactly ' + str(N_ROLES) + " roles."
)
# The structured-output schema of the recruiter's reply (validated after the call).
RECRUITER_SCHEMA = {
    "type": "object",
    "properties": {
        "roles": {
            "type": "array",
            "minItems": N_ROLES,
            "maxItems": N_ROLES,
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "focus": {"type": "string", "minLength": 1},
                },
                "required": ["name", "focus"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["roles"],
    "additionalProperties": False,
}

HYPOTHESIZER_SYSTEM = (
    "You are {role}. {focus} You work alone: you see no other solver's work, and nobody will "
    "check your answer before it is used."
)
HYPOTHESIZER_USER = (
    "Problem:\n{problem}\n\n"
    "Work on the problem from your role's angle. Then reply with exactly these seven labelled "
    "lines, in this order, and nothing after them:\n"
    + "\n".join(
        f"{label}: {hint}"
        for label, hint in zip(
            LABELS.values(),
            (
                "your role",
                "your final answer (a value, expression or option letter(s), no explanation)",
                "the line of reasoning you followed, with the intermediate results you found",
                "the one idea that matters most",
                "the assumption your answer depends on most",
                "what another solver should check",
                "low, medium or high, with a short reason",
            ),
            strict=True,
        )
    )
)

INTEGRATOR_SYSTEM = (
    "You write the final answer to a problem. Other solvers may have sent messages; each may be "
    "right or wrong, in its reasoning or in its answer. Use what helps, ignore what does not."
)
INTEGRATOR_INSTRUCTION = (
    "Solve the problem. End your reply with one line: 'Final answer: <answer>'{answer_hint}."
)
INTEGRATOR_USER = "Problem:\n{problem}\n\n{messages}\n\n" + INTEGRATOR_INSTRUCTION
INTEGRATOR_NO_MESSAGES = "No messages from other solvers are available: solve it on your own."
INTEGRATOR_MESSAGES_HEADER = "Messages from independent solvers ({count}):"
# A stand-in for a whole message (the neutral-replacement arm): it carries no content.
NEUTRAL_MESSAGE = "This solver sent no usable content."

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
