"""Surface statistics of an option: what its fact texts look like, whatever they mean.

The cue audit turns each statistic into two role-blind readers ("pick the option with the
highest" and "with the lowest") and feeds all of them together to one classifier, so a new
statistic is one line in one of the registries below and the audit reads it everywhere:

- :data:`FACT_LENGTHS` (tokens with the budgets' counter, characters, words), each aggregated
  over an option's facts by every entry of :data:`LENGTH_AGGREGATES` (max, min, mean, total,
  spread = max - min);
- :data:`FACT_COUNTS` (punctuation, digits, negation words, hedge words, capitalised words),
  each aggregated by :data:`COUNT_AGGREGATES` (total, mean);
- :data:`NAME_LENGTHS`: the option name's own length (tokens, characters).

An option's facts are the texts that name it (found by the audit in the text, never in a
fact's metadata). The definitions are shared with the bank's authors: the templates are
balanced against exactly these numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import fmean

from deliberation.inference.tokens import count_tokens

_NEGATIONS = frozenset(
    [
        "no",
        "not",
        "never",
        "none",
        "nor",
        "without",
        "cannot",
        "neither",
        "nothing",
        "nobody",
        "nowhere",
        "n't",
    ]
)
_HEDGES = frozenset(
    [
        "may",
        "might",
        "could",
        "perhaps",
        "possibly",
        "likely",
        "reportedly",
        "about",
        "around",
        "roughly",
        "approximately",
        "some",
        "seems",
        "appears",
        "suggests",
    ]
)

_EDGE_PUNCTUATION = "\"'“”‘’()[]{}.,;:!?-–—"


def words(text: str) -> list[str]:
    """The text's words: split at whitespace (punctuation stays attached)."""
    return text.split()


def _bare(word: str) -> str:
    return word.strip(_EDGE_PUNCTUATION).lower().replace("’", "'")


def _is_negation(word: str) -> bool:
    bare = _bare(word)
    return bare in _NEGATIONS or bare.endswith("n't")


def _capitalised_words(text: str) -> int:
    """Words starting with an upper-case letter, the fact's first word excepted."""
    return sum(w.lstrip(_EDGE_PUNCTUATION)[:1].isupper() for w in words(text)[1:])


# How long one fact is, per unit.
FACT_LENGTHS: dict[str, Callable[[str], float]] = {
    "tokens": count_tokens,
    "characters": len,
    "words": lambda text: len(words(text)),
}
# How an option's per-fact lengths become one number.
LENGTH_AGGREGATES: dict[str, Callable[[Sequence[float]], float]] = {
    "max": max,
    "min": min,
    "mean": fmean,
    "total": sum,
    "spread": lambda values: max(values) - min(values),
}
# What one fact holds, counted.
FACT_COUNTS: dict[str, Callable[[str], float]] = {
    "punctuation": lambda text: sum(not c.isalnum() and not c.isspace() for c in text),
    "digits": lambda text: sum(c.isdigit() for c in text),
    "negations": lambda text: sum(map(_is_negation, words(text))),
    "hedges": lambda text: sum(_bare(w) in _HEDGES for w in words(text)),
    "capitalised words": _capitalised_words,
}
COUNT_AGGREGATES: dict[str, Callable[[Sequence[float]], float]] = {
    "total": sum,
    "mean": fmean,
}
# How long the option's own name is.
NAME_LENGTHS: dict[str, Callable[[str], float]] = {
    "tokens": count_tokens,
    "characters": len,
}


@dataclass(frozen=True)
class SurfaceStatistic:
    """One number per option from its fact texts and its name (0 for an option no fact names)."""

    name: str
    measure: Callable[[Sequence[str], str], float]

    def __call__(self, texts: Sequence[str], option: str) -> float:
        return float(self.measure(texts, option))


def _over_facts(per_fact: Callable[[str], float], aggregate: Callable) -> Callable:
    return lambda texts, _option: aggregate([per_fact(x) for x in texts]) if texts else 0.0


def _statistics() -> tuple[SurfaceStatistic, ...]:
    out = [
        SurfaceStatistic(f"fact {unit} ({agg})", _over_facts(length, aggregate))
        for unit, length in FACT_LENGTHS.items()
        for agg, aggregate in LENGTH_AGGREGATES.items()
    ]
    out += [
        SurfaceStatistic(f"{what} ({agg})", _over_facts(count, aggregate))
        for what, count in FACT_COUNTS.items()
        for agg, aggregate in COUNT_AGGREGATES.items()
    ]
    out += [
        SurfaceStatistic(f"name {unit}", lambda _texts, option, f=length: f(option))
        for unit, length in NAME_LENGTHS.items()
    ]
    return tuple(out)


# Every statistic, in report order.
STATISTICS: tuple[SurfaceStatistic, ...] = _statistics()
