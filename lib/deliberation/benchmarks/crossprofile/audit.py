"""The cue audit: can the correct option be found without understanding what a fact means?

Every reader here is **role-blind**: it sees what a model sees (the decision description and
criteria, the options, the fact texts and the task's presentation order) and never a fact's
role, option field, polarity or tone. A fact belongs to the option its text names (the
verifier proves each fact names exactly one). Each reader picks one option per template:

- *surface form, as a family*: every statistic of :mod:`deliberation.benchmarks.crossprofile.surface`
  (fact length in tokens, characters and words as max, min, mean, total and spread;
  punctuation, digits, negations, hedges and capitalised words as total and mean; the
  name's length) gives the readers "highest" and "lowest"; a new statistic there is a new
  pair of readers here and a new feature of the surface classifier;
- *structural counts*: how many facts name an option, how often it is named, how many
  numbers its facts hold, how many of its facts share a word with the criteria and how many
  words they share with the description (most and fewest of each), its place in
  ``options``, and whether the task's first or last fact names it;
- *cross-validated classifiers*: each option's fact texts, with every option name,
  stopwords, numbers and sentiment-lexicon words removed, as word 1-2-grams; naive Bayes and
  logistic regression (``scikit-learn``), and logistic regressions on the structural counts
  and on all surface statistics together. Each is trained leave-one-domain-out (the 12 folds
  never see the held-out domain's vocabulary) and picks, per held-out template, the option it
  scores most likely correct.

Every rule picks one of the template's options, so chance is 1 / number of options (1/3).
The audit fails when any thresholded reader is more than :data:`MAX_ABOVE_CHANCE` (10 points)
above chance over the main templates: an accuracy a reader that ignores meaning can reach
measures nothing. The pilot templates are scored beside them (classifiers trained on the main
templates of the other domains) and reported, not thresholded: ten templates decide little.
Sentiment over all facts (VADER's compound score, ``vaderSentiment``) is reported without a
threshold: the polarity of evidence is its meaning, so with all facts it may find the key.

Ties. When k options tie for a reader's pick and the correct option is among them, the
template scores 1/k (0 if it is not among them): the exact expected accuracy of breaking the
tie uniformly at random; deterministic, never favouring the correct option, adding no noise.

The decision uses the point estimate, so it means the same for a two-template fixture as for
the 60-template bank; the 95% percentile interval of a bootstrap over templates
(:mod:`deliberation.stats.bootstrap`, fixed seed) shows how sure the estimate is.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from deliberation.benchmarks.crossprofile.schema import Template
from deliberation.benchmarks.crossprofile.surface import STATISTICS, SurfaceStatistic
from deliberation.benchmarks.crossprofile.tasks import DEFAULT_SEED, presentation_order
from deliberation.benchmarks.crossprofile.verifier import mention_count, mentions
from deliberation.seeds import stable_seed
from deliberation.stats.bootstrap import percentile_interval, resample_counts

MAX_ABOVE_CHANCE = 0.10
CONFIDENCE = 0.95
N_RESAMPLES = 2000

# A reader maps a template to a score per option; it picks the highest score.
Scorer = Callable[[Template], dict[str, float]]
# A classifier maps (training templates, held-out templates) to scores per held-out template.
Classifier = Callable[[Sequence[Template], Sequence[Template]], list[dict[str, float]]]


@dataclass(frozen=True)
class Reader:
    """One role-blind rule. ``reads`` says what it looks at; ``thresholded`` rules fail the
    audit when far above chance. A counting reader has ``scores``; a classifier ``fit``."""

    name: str
    reads: str
    scores: Scorer | None = None
    fit: Classifier | None = None
    thresholded: bool = True


# ---------------------------------------------------------------- what a reader may see


def option_facts(t: Template, option: str) -> list[str]:
    """The texts of the facts that name ``option`` (found in the text, not in the fact's
    metadata: the reader is role-blind)."""
    return [f.text for f in t.facts if mentions(f.text, option, ignore_case=True)]


_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


@functools.cache
def _stopwords() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


@functools.cache
def _analyzer():
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    return SentimentIntensityAnalyzer()


@functools.cache
def polarity_words() -> frozenset[str]:
    """Every word of the VADER sentiment lexicon (the words that carry polarity by themselves)."""
    return frozenset(w for w, v in _analyzer().lexicon.items() if v and w.isalpha())


def _name_words(t: Template) -> set[str]:
    return {w for o in t.options for w in _WORD.findall(o.lower())}


def content_words(text: str, t: Template) -> list[str]:
    """``text`` lower-cased as words, without the template's option names, stopwords and
    possessive endings (what the overlap counts compare)."""
    names = _name_words(t)
    words = (w.removesuffix("'s") for w in _WORD.findall(text.lower()))
    return [w for w in words if w not in names and w not in _stopwords() and len(w) > 1]


def classifier_text(t: Template, option: str) -> str:
    """An option's fact texts as the text classifiers read them: option names, numbers,
    stopwords and sentiment-lexicon words removed."""
    polar = polarity_words()
    text = " ".join(option_facts(t, option))
    for name in sorted(t.options, key=len, reverse=True):
        text = re.sub(rf"(?<!\w){re.escape(name)}(?:'s)?(?!\w)", " ", text, flags=re.IGNORECASE)
    return " ".join(w for w in content_words(text, t) if w not in polar)


@functools.cache
def sentiment(text: str) -> float:
    """VADER's compound polarity of ``text``, from -1 (negative) to +1 (positive)."""
    return float(_analyzer().polarity_scores(text)["compound"])


# ---------------------------------------------------------------- structural counts


def _per_option(measure: Callable[[Template, str], float]) -> Scorer:
    return lambda t: {o: float(measure(t, o)) for o in t.options}


def _facts(t: Template, o: str) -> float:
    return len(option_facts(t, o))


def _named(t: Template, o: str) -> float:
    return sum(mention_count(f.text, o, ignore_case=True) for f in t.facts)


def _numbers(t: Template, o: str) -> float:
    return sum(len(_NUMBER.findall(x)) for x in option_facts(t, o))


def _description_words(t: Template) -> set[str]:
    return set(content_words(" ".join([t.title, t.description, *t.criteria]), t))


def _description_overlap(t: Template, o: str) -> float:
    """Words of the option's facts that also occur in the title, description or criteria."""
    shared = _description_words(t)
    return sum(w in shared for x in option_facts(t, o) for w in content_words(x, t))


def _on_criteria(t: Template, o: str) -> float:
    """Facts sharing a word with the stated criteria (a role-blind guess at 'on topic')."""
    criteria = set(content_words(" ".join(t.criteria), t))
    return sum(bool(criteria & set(content_words(x, t))) for x in option_facts(t, o))


def _mean_sentiment(t: Template, o: str) -> float:
    texts = option_facts(t, o)
    return sum(map(sentiment, texts)) / len(texts) if texts else 0.0


# Structural features, in report order: (name, measure). The most/fewest readers and the
# structural classifier use the same list (lengths are surface statistics, see surface.py).
STRUCTURE: tuple[tuple[str, Callable[[Template, str], float]], ...] = (
    ("facts naming it", _facts),
    ("name occurrences", _named),
    ("numbers", _numbers),
    ("facts on a criterion's words", _on_criteria),
    ("words shared with the description", _description_overlap),
)


def _surface(statistic: SurfaceStatistic) -> Scorer:
    return lambda t: {o: statistic(option_facts(t, o), o) for o in t.options}


def _negate(scores: Scorer) -> Scorer:
    return lambda t: {o: -v for o, v in scores(t).items()}


def _position(index: int) -> Scorer:
    return lambda t: {o: float(i == index) for i, o in enumerate(t.options)}


def _task_end(seed: int, index: int) -> Scorer:
    def scores(t: Template) -> dict[str, float]:
        text = t.facts[presentation_order(t, seed)[index]].text
        return {o: float(mentions(text, o, ignore_case=True)) for o in t.options}

    return scores


# ---------------------------------------------------------------- classifiers


def _labels(templates: Sequence[Template]) -> np.ndarray:
    return np.array([o == t.correct for t in templates for o in t.options], dtype=int)


def _per_template(templates: Sequence[Template], values: np.ndarray) -> list[dict[str, float]]:
    out, i = [], 0
    for t in templates:
        out.append({o: float(values[i + k]) for k, o in enumerate(t.options)})
        i += len(t.options)
    return out


def _text_classifier(make_model: Callable[[], object]) -> Classifier:
    """Fit ``make_model()`` (a scikit-learn pipeline from texts) on the training templates'
    option texts; score each held-out option by its predicted probability of being correct."""

    def fit(train: Sequence[Template], test: Sequence[Template]) -> list[dict[str, float]]:
        model = make_model()
        model.fit([classifier_text(t, o) for t in train for o in t.options], _labels(train))
        if len(model.classes_) < 2:  # a training set without both labels cannot rank
            return [dict.fromkeys(t.options, 0.0) for t in test]
        docs = [classifier_text(t, o) for t in test for o in t.options]
        return _per_template(test, model.predict_proba(docs)[:, 1])

    return fit


def _naive_bayes():
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.naive_bayes import MultinomialNB
    from sklearn.pipeline import make_pipeline

    return make_pipeline(CountVectorizer(ngram_range=(1, 2)), MultinomialNB())


def _logistic_ngrams():
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    return make_pipeline(
        TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True),
        LogisticRegression(C=1.0, max_iter=2000),
    )


def structure_features(t: Template) -> np.ndarray:
    """The structural counts of each option (rows in ``t.options`` order), each centred on
    the template's mean so that the model compares options within a template."""
    raw = np.array([[m(t, o) for _, m in STRUCTURE] for o in t.options], dtype=float)
    return raw - raw.mean(axis=0)


def surface_features(t: Template) -> np.ndarray:
    """Every surface statistic of each option (rows in ``t.options`` order), centred on the
    template's mean like :func:`structure_features`."""
    raw = np.array([[s(option_facts(t, o), o) for s in STATISTICS] for o in t.options], dtype=float)
    return raw - raw.mean(axis=0)


def _feature_classifier(features: Callable[[Template], np.ndarray]) -> Classifier:
    """A standardised logistic regression on ``features`` (one row per option)."""

    def fit(train: Sequence[Template], test: Sequence[Template]) -> list[dict[str, float]]:
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        y = _labels(train)
        if len(set(y)) < 2:
            return [dict.fromkeys(t.options, 0.0) for t in test]
        model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
        model.fit(np.vstack([features(t) for t in train]), y)
        x = np.vstack([features(t) for t in test])
        return _per_template(test, model.predict_proba(x)[:, 1])

    return fit


def leave_one_domain_out(
    fit: Classifier, templates: Sequence[Template], pool: Sequence[Template] | None = None
) -> list[dict[str, float] | None]:
    """Scores for every template from a model trained on the templates of ``pool`` (default:
    ``templates``) from the other domains (None where there is no other domain to train on)."""
    pool = templates if pool is None else pool
    out: list[dict[str, float] | None] = [None] * len(templates)
    for domain in dict.fromkeys(t.domain for t in templates):
        held = [i for i, t in enumerate(templates) if t.domain == domain]
        train = [t for t in pool if t.domain != domain]
        if not train:
            continue
        for i, scores in zip(held, fit(train, [templates[i] for i in held]), strict=True):
            out[i] = scores
    return out


# ---------------------------------------------------------------- the battery


def readers(seed: int = DEFAULT_SEED) -> tuple[Reader, ...]:
    """The battery, in report order (``seed`` is the task seed for the fact order)."""
    counts = []
    for name, measure in STRUCTURE:
        scores = _per_option(measure)
        counts += [
            Reader(f"most {name}", "option texts", scores),
            Reader(f"fewest {name}", "option texts", _negate(scores)),
        ]
    surface = []
    for statistic in STATISTICS:
        scores = _surface(statistic)
        surface += [
            Reader(f"highest {statistic.name}", "option texts", scores),
            Reader(f"lowest {statistic.name}", "option texts", _negate(scores)),
        ]
    tone = _per_option(_mean_sentiment)
    return (
        *surface,
        *counts,
        Reader("first fact of the task", "task order", _task_end(seed, 0)),
        Reader("last fact of the task", "task order", _task_end(seed, -1)),
        *(Reader(f"option in position {i + 1}", "none", _position(i)) for i in range(3)),
        Reader(
            "naive Bayes, word 1-2-grams (leave one domain out)",
            "option texts",
            fit=_text_classifier(_naive_bayes),
        ),
        Reader(
            "logistic regression, word 1-2-grams (leave one domain out)",
            "option texts",
            fit=_text_classifier(_logistic_ngrams),
        ),
        Reader(
            "logistic regression, structural counts (leave one domain out)",
            "option texts",
            fit=_feature_classifier(structure_features),
        ),
        Reader(
            "logistic regression, all surface statistics (leave one domain out)",
            "option texts",
            fit=_feature_classifier(surface_features),
        ),
        Reader("most positive facts (VADER)", "option texts", tone, thresholded=False),
        Reader("most negative facts (VADER)", "option texts", _negate(tone), thresholded=False),
    )


def credit(scores: dict[str, float], correct: str) -> float:
    """1/k if the correct option is among the k options with the top score, else 0."""
    if not scores:
        return 0.0
    top = max(scores.values())
    tied = [o for o, v in scores.items() if v == top]
    return 1 / len(tied) if correct in tied else 0.0


def bootstrap_interval(
    credits: Sequence[float], n_resamples: int = N_RESAMPLES, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """Percentile interval of the mean credit, resampling templates (fixed seed, so the
    audit prints the same table every time)."""
    values = np.asarray(credits, dtype=float)
    rng = np.random.default_rng(stable_seed("crossprofile audit", len(values)))
    weights = resample_counts(len(values), n_resamples, rng)
    return percentile_interval(weights @ values / len(values), confidence)


@dataclass(frozen=True)
class AuditReport:
    """One row per reader (see :func:`audit`); ``ok`` if no thresholded one fails over the
    main templates (the ``pilot_*`` columns are reported, not thresholded)."""

    table: pd.DataFrame
    n_templates: int
    n_pilot: int = 0

    @property
    def failures(self) -> pd.DataFrame:
        return self.table[self.table["thresholded"] & ~self.table["passes"]]

    @property
    def ok(self) -> bool:
        return self.failures.empty

    def best(self) -> pd.Series:
        """The thresholded reader with the highest accuracy above its chance level."""
        thresholded = self.table[self.table["thresholded"]]
        return thresholded.loc[thresholded["above_chance"].idxmax()]


def reader_scores(
    reader: Reader, templates: Sequence[Template], pool: Sequence[Template] | None = None
) -> list[dict[str, float] | None]:
    """The reader's scores per template (None where it cannot score one); a classifier
    trains on the other domains' templates of ``pool`` (default: ``templates``)."""
    if reader.fit is not None:
        return leave_one_domain_out(reader.fit, templates, pool)
    return [reader.scores(t) for t in templates]


def _score(
    reader: Reader, templates: Sequence[Template], pool: Sequence[Template] | None = None
) -> dict[str, float] | None:
    """Accuracy, chance and interval of one reader over ``templates`` (None if unscored)."""
    scored = [
        (s, t) for s, t in zip(reader_scores(reader, templates, pool), templates, strict=True) if s
    ]
    if not scored:
        return None  # a classifier on a single domain has nothing to train on
    credits = [credit(s, t.correct) for s, t in scored]
    low, high = bootstrap_interval(credits)
    return {
        "n": len(scored),
        "accuracy": float(np.mean(credits)),
        "ci_low": low,
        "ci_high": high,
        "chance": float(np.mean([1 / len(t.options) for _, t in scored])),
    }


def audit(templates: Sequence[Template], seed: int = DEFAULT_SEED) -> AuditReport:
    """Run every reader over the main (non-pilot) templates of ``templates``, and over its
    pilot templates beside them (``pilot_*`` columns, NaN without pilots)."""
    main = [t for t in templates if not t.pilot]
    pilots = [t for t in templates if t.pilot]
    if not main:
        raise ValueError("the cue audit needs at least one main (non-pilot) template")
    rows = []
    for reader in readers(seed):
        found = _score(reader, main)
        if found is None:
            continue
        above = found["accuracy"] - found["chance"]
        on_pilots = _score(reader, pilots, pool=main) if pilots else None
        rows.append(
            {
                "heuristic": reader.name,
                "reads": reader.reads,
                **found,
                "above_chance": above,
                "thresholded": reader.thresholded,
                "passes": (above <= MAX_ABOVE_CHANCE + 1e-12) if reader.thresholded else True,
                "pilot_n": on_pilots["n"] if on_pilots else 0,
                "pilot_accuracy": on_pilots["accuracy"] if on_pilots else float("nan"),
                "pilot_ci_low": on_pilots["ci_low"] if on_pilots else float("nan"),
                "pilot_ci_high": on_pilots["ci_high"] if on_pilots else float("nan"),
            }
        )
    return AuditReport(table=pd.DataFrame(rows), n_templates=len(main), n_pilot=len(pilots))


def _interval(lows: pd.Series, highs: pd.Series) -> list[str]:
    return [
        f"{100 * lo:.1f}-{100 * hi:.1f}" if lo == lo else "-"
        for lo, hi in zip(lows, highs, strict=True)
    ]


def audit_table(report: AuditReport) -> pd.DataFrame:
    """The report as a display table: percentages, the interval, the verdict, the pilots."""
    t = report.table
    return pd.DataFrame(
        {
            "reader": t["heuristic"],
            "reads": t["reads"],
            "accuracy %": (100 * t["accuracy"]).round(1),
            f"{CONFIDENCE:.0%} CI": _interval(t["ci_low"], t["ci_high"]),
            "chance %": (100 * t["chance"]).round(1),
            "above chance (points)": (100 * t["above_chance"]).round(1),
            "verdict": [
                ("ok" if p else "FAIL") if th else "reported"
                for p, th in zip(t["passes"], t["thresholded"], strict=True)
            ],
            "pilots %": (100 * t["pilot_accuracy"]).round(1),
            f"pilots {CONFIDENCE:.0%} CI": _interval(t["pilot_ci_low"], t["pilot_ci_high"]),
        }
    )


def format_audit(report: AuditReport) -> str:
    """The audit as text: the table and a summary line naming the failing readers."""
    pilots = f", {report.n_pilot} pilot templates beside them" if report.n_pilot else ""
    lines = [
        f"cue audit over {report.n_templates} main templates{pilots}: role-blind readers "
        f"(fail: more than {100 * MAX_ABOVE_CHANCE:.0f} points above chance over the main "
        "templates; ties score 1/k; intervals bootstrap templates)",
        audit_table(report).to_string(index=False),
    ]
    if report.ok:
        lines.append(
            "\naudit OK: no role-blind reader is more than "
            f"{100 * MAX_ABOVE_CHANCE:.0f} points above chance"
        )
    else:
        names = ", ".join(report.failures["heuristic"])
        lines.append(f"\naudit FAILED: {names}")
    return "\n".join(lines)
