"""Every sim number quoted in the comments of ``params/sim.yaml`` is recomputed here from a run
of the shipped profile, so a change to the bank or the mechanism that moves one fails until the
comment is updated (the comments are read, not copied: the test parses each quoted number).

Paper numbers in the same comments (Qwen's +21.0, 96.7%, ...) are the papers' and are not checked.
"""

from __future__ import annotations

import re

import pytest

from deliberation.benchmarks.crossprofile import CLASSIC
from deliberation.experiments.memory import run_from_profile
from deliberation.io import paths
from deliberation.profiles.profile import load_profile

pytestmark = pytest.mark.experiments  # whole sim runs: the `make experiments` lane
SIM = load_profile("sim")
COMMENTS = (paths.params_dir() / "sim.yaml").read_text(encoding="utf-8")
# The comments wrap lines; numbers are searched in the text with line breaks and '#' removed.
TEXT = " ".join(re.sub(r"^\s*#?\s*", "", line.split("#", 1)[-1]) for line in COMMENTS.splitlines())
TEXT = re.sub(r"\s+", " ", TEXT)


def quoted(pattern: str) -> tuple[str, ...]:
    """The numbers ``pattern`` captures in sim.yaml's comments (it must occur exactly once)."""
    found = re.findall(pattern, TEXT)
    assert len(found) == 1, f"params/sim.yaml: {pattern!r} found {len(found)} times"
    return found[0] if isinstance(found[0], tuple) else (found[0],)


def as_quoted(value: float, text: str) -> str:
    """``value`` written with as many decimals as the comment's ``text`` (and its sign)."""
    decimals = len(text.split(".")[1]) if "." in text else 0
    return f"{value:+.{decimals}f}" if text[0] in "+-" else f"{value:.{decimals}f}"


def crossprofile(tmp_path, **grid):
    return run_from_profile(
        "crossprofile", SIM, tags=("keep",), item_limit=0,
        cache_file=tmp_path / "cache.sqlite", progress=False, **grid,
    ).frame  # fmt: skip


def test_support_shared_minus_private_with_all_facts(tmp_path):
    (text,) = quoted(r"the sim gives ([+-]\d+\.\d) on the 60 main templates")
    frame = crossprofile(tmp_path, policies=("all",))
    frame = frame[frame["pilot"] == 0]
    by_support = frame.groupby("support")["correct"].mean()
    gap = by_support["shared"] - by_support["private"]
    assert as_quoted(100 * gap, text) == text


def test_r1_in_the_classic_cell_and_r1_and_random_on_average_at_the_primary_budget(tmp_path):
    (classic,) = quoted(r"R1 scores (\d+)% in the classic cell")
    r1_mean, random_mean = quoted(r"and (\d+)% on average against Random's (\d+)%")
    frame = crossprofile(tmp_path, policies=("R1", "Random"), budgets=(0.6,))
    frame = frame[frame["pilot"] == 0]
    r1, random = frame[frame["policy"] == "R1"], frame[frame["policy"] == "Random"]
    in_classic = r1.loc[r1["variant"] == CLASSIC.id, "correct"].mean()
    assert as_quoted(100 * in_classic, classic) == classic
    assert as_quoted(100 * r1["correct"].mean(), r1_mean) == r1_mean
    assert as_quoted(100 * random["correct"].mean(), random_mean) == random_mean


def test_natural_discussion_disclosure_votes_and_decisions(tmp_path):
    from deliberation.experiments.natural import report
    from deliberation.experiments.natural.runs import run_from_profile as run_natural

    pattern = (
        r"private facts in full (\d+)% \(evidence-first (\d+)%\), group final votes (\d+)% right "
        r"vs every fact (\d+)%, and full transcript (\d+)% vs empty memory (\d+)%"
    )
    texts = quoted(pattern)
    (templates,) = quoted(r"With these values \((\d+) main templates, plain prompt\)")
    assert int(templates) == SIM.experiments.natural.limit
    result = run_natural(
        SIM, benchmarks=["crossprofile"], cache_file=tmp_path / "cache.sqlite", progress=False
    )
    values = report.outcomes(result.rows, result.disclosure)
    means = 100 * values.groupby(["prompt", "measure"])["value"].mean()
    computed = [
        means[("plain", report.FULL_PRIVATE)],
        means[("evidence-first", report.FULL_PRIVATE)],
        means[("plain", "group share (final)")],
        means[("plain", "decision: every-fact")],
        means[("plain", "decision: transcript")],
        means[("plain", "decision: empty")],
    ]
    assert [as_quoted(v, t) for v, t in zip(computed, texts, strict=True)] == list(texts)
