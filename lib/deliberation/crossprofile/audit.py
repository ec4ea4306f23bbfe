"""The cue audit: can the correct option be found without understanding a single fact?

A battery of meaning-free heuristics is run over the main templates; each picks one option
per template from its surface (how often an option is named, how long or numeric its facts
are, where it sits, which option the task's first fact names, how its irrelevant facts
sound). An accuracy a counting rule can reach measures nothing, so the audit fails when any
thresholded heuristic is more than :data:`MAX_ABOVE_CHANCE` (10 points) above its chance level.

Chance levels. A heuristic choosing among all three options has chance 1/3. The
irrelevant-fact heuristics choose among the options that carry irrelevant facts; by design
(bank v2) those are the correct option and the one-decoy option, so their chance is 1/2. The
chance reported is the mean over templates of 1/(number of candidates), which is 1/2 on a v2
bank and 1/3 on a bank whose irrelevant facts touch all three options.

Ties. When k options tie for a heuristic's pick and the correct option is among them, the
template scores 1/k (0 if it is not among them): the exact expected accuracy of breaking the
tie uniformly at random. The rule is deterministic, never favours the correct option, and adds
no noise (a bank where every option is named 4 times scores exactly 1/3 on "least named").

The decision uses the point estimate, so it means the same for a two-template fixture as for
the 60-template bank; the Wilson 95% interval (``statsmodels``) shows how sure the estimate is.
The same sentiment lexicon over all facts is reported without a threshold: polarity of
evidence is meaning, so with all facts it may find the key, and the report shows how far.
Sentiment is VADER's compound score (``vaderSentiment``), averaged over an option's facts.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from deliberation.crossprofile.schema import Template
from deliberation.crossprofile.tasks import DEFAULT_SEED, presentation_order
from deliberation.crossprofile.verifier import mention_count
from deliberation.tokens import count_tokens

MAX_ABOVE_CHANCE = 0.10
CONFIDENCE = 0.95

# A heuristic maps a template to a score per candidate option; it picks the highest score.
Scorer = Callable[[Template], dict[str, float]]


@dataclass(frozen=True)
class Heuristic:
    """One meaning-free rule: ``scores`` gives each candidate option a number, the rule picks
    the highest. ``thresholded`` rules fail the audit when far above chance."""

    name: str
    facts: str  # which facts it reads: "all facts", "irrelevant facts" or "none"
    scores: Scorer
    thresholded: bool = True


@functools.cache
def _analyzer():
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    return SentimentIntensityAnalyzer()


@functools.cache
def sentiment(text: str) -> float:
    """VADER's compound polarity of ``text``, from -1 (negative) to +1 (positive)."""
    return float(_analyzer().polarity_scores(text)["compound"])


def _name_count(t: Template, option: str) -> int:
    return sum(mention_count(f.text, option, ignore_case=True) for f in t.facts)


def _about(t: Template, option: str, role: str | None = None):
    return [f for f in t.facts if f.option == option and (role is None or f.role == role)]


def _tokens(t: Template) -> dict[str, float]:
    return {o: sum(count_tokens(f.text) for f in _about(t, o)) for o in t.options}


def _digits(t: Template) -> dict[str, float]:
    return {o: sum(ch.isdigit() for f in _about(t, o) for ch in f.text) for o in t.options}


def _mean_sentiment(t: Template, role: str | None) -> dict[str, float]:
    """Mean VADER compound of each option's facts (of ``role``); options without such facts
    are not candidates."""
    out = {}
    for o in t.options:
        facts = _about(t, o, role)
        if facts:
            out[o] = sum(sentiment(f.text) for f in facts) / len(facts)
    return out


def _negate(scores: Scorer) -> Scorer:
    return lambda t: {o: -v for o, v in scores(t).items()}


def _position(index: int) -> Scorer:
    return lambda t: {o: float(i == index) for i, o in enumerate(t.options)}


def _first_fact(seed: int) -> Scorer:
    def scores(t: Template) -> dict[str, float]:
        first = t.facts[presentation_order(t, seed)[0]]
        return {o: float(o == first.option) for o in t.options}

    return scores


def heuristics(seed: int = DEFAULT_SEED) -> tuple[Heuristic, ...]:
    """The battery, in report order (``seed`` is the task seed for the fact order)."""
    named = lambda t: {o: float(_name_count(t, o)) for o in t.options}  # noqa: E731
    irrelevant = functools.partial(_mean_sentiment, role="irrelevant")
    everything = functools.partial(_mean_sentiment, role=None)
    return (
        Heuristic("most-named option", "all facts", named),
        Heuristic("least-named option", "all facts", _negate(named)),
        Heuristic("longest text", "all facts", _tokens),
        Heuristic("shortest text", "all facts", _negate(_tokens)),
        Heuristic("most digits", "all facts", _digits),
        Heuristic("fewest digits", "all facts", _negate(_digits)),
        Heuristic("first fact of the task", "all facts", _first_fact(seed)),
        *(Heuristic(f"option in position {i + 1}", "none", _position(i)) for i in range(3)),
        Heuristic("most positive irrelevant facts (VADER)", "irrelevant facts", irrelevant),
        Heuristic(
            "most negative irrelevant facts (VADER)", "irrelevant facts", _negate(irrelevant)
        ),
        Heuristic("most positive facts (VADER)", "all facts", everything, thresholded=False),
        Heuristic(
            "most negative facts (VADER)", "all facts", _negate(everything), thresholded=False
        ),
    )


def credit(scores: dict[str, float], correct: str) -> float:
    """1/k if the correct option is among the k options with the top score, else 0."""
    if not scores:
        return 0.0
    top = max(scores.values())
    tied = [o for o, v in scores.items() if v == top]
    return 1 / len(tied) if correct in tied else 0.0


def wilson_interval(
    successes: float, n: int, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """Wilson score interval for a proportion (successes may be fractional, see Ties)."""
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(successes, n, alpha=1 - confidence, method="wilson")
    return float(low), float(high)


@dataclass(frozen=True)
class AuditReport:
    """One row per heuristic (see :func:`audit`); ``ok`` if no thresholded one fails."""

    table: pd.DataFrame
    n_templates: int

    @property
    def failures(self) -> pd.DataFrame:
        return self.table[self.table["thresholded"] & ~self.table["passes"]]

    @property
    def ok(self) -> bool:
        return self.failures.empty


def audit(templates: Sequence[Template], seed: int = DEFAULT_SEED) -> AuditReport:
    """Run every heuristic over the main (non-pilot) templates of ``templates``."""
    main = [t for t in templates if not t.pilot]
    if not main:
        raise ValueError("the cue audit needs at least one main (non-pilot) template")
    rows = []
    for h in heuristics(seed):
        # a template where the rule has no candidate (no irrelevant facts at all) is skipped
        scored = [(s, t) for t in main if (s := h.scores(t))]
        n = len(scored)
        if not n:
            continue
        hits = sum(credit(s, t.correct) for s, t in scored)
        chance = sum(1 / len(s) for s, _ in scored) / n
        accuracy = hits / n
        low, high = wilson_interval(hits, n)
        above = accuracy - chance
        rows.append(
            {
                "heuristic": h.name,
                "reads": h.facts,
                "n": n,
                "accuracy": accuracy,
                "ci_low": low,
                "ci_high": high,
                "chance": chance,
                "above_chance": above,
                "thresholded": h.thresholded,
                "passes": (above <= MAX_ABOVE_CHANCE) if h.thresholded else True,
            }
        )
    return AuditReport(table=pd.DataFrame(rows), n_templates=len(main))


def audit_table(report: AuditReport) -> pd.DataFrame:
    """The report as a display table: percentages, the interval, and the verdict."""
    t = report.table
    return pd.DataFrame(
        {
            "heuristic": t["heuristic"],
            "reads": t["reads"],
            "accuracy %": (100 * t["accuracy"]).round(1),
            f"{CONFIDENCE:.0%} CI": [
                f"{100 * lo:.1f}-{100 * hi:.1f}"
                for lo, hi in zip(t["ci_low"], t["ci_high"], strict=True)
            ],
            "chance %": (100 * t["chance"]).round(1),
            "above chance (points)": (100 * t["above_chance"]).round(1),
            "verdict": [
                ("ok" if p else "FAIL") if th else "reported"
                for p, th in zip(t["passes"], t["thresholded"], strict=True)
            ],
        }
    )


def format_audit(report: AuditReport) -> str:
    """The audit as text: the table and a summary line naming the failing heuristics."""
    lines = [
        f"cue audit over {report.n_templates} main templates (fail: more than "
        f"{100 * MAX_ABOVE_CHANCE:.0f} points above chance; ties score 1/k)",
        audit_table(report).to_string(index=False),
    ]
    if report.ok:
        lines.append(
            "\naudit OK: no meaning-free heuristic is more than "
            f"{100 * MAX_ABOVE_CHANCE:.0f} points above chance"
        )
    else:
        names = ", ".join(report.failures["heuristic"])
        lines.append(f"\naudit FAILED: {names}")
    return "\n".join(lines)
