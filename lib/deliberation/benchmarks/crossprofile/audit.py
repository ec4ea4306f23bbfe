"""The cue audit: can the correct option be found without understanding what a fact means?

A model that scores well on a bank with such a cue may be reading the cue, not the facts. So
every reader here is role-blind (it sees what a model sees, never a fact's role or polarity)
and picks one option per template: surface statistics (``surface.py``), structural counts,
topicality, order, lookups of joint structure and classifiers (trained leave-one-domain-out).
A reader fails only when it beats both chance plus :data:`MAX_ABOVE_CHANCE` and its own 95th
percentile with the keys drawn at random (a flexible classifier on 60 templates often beats 43.3%
with keys that mean nothing). The decision uses point estimates, so it means the same for a
two-template fixture as for the bank. Readers, ties and bars: docs/crossprofile-audit.md.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from deliberation.benchmarks.crossprofile.schema import Template
from deliberation.benchmarks.crossprofile.surface import STATISTICS, SurfaceStatistic
from deliberation.benchmarks.crossprofile.tasks import DEFAULT_SEED, presentation_order
from deliberation.benchmarks.crossprofile.verifier import mention_count, mentions
from deliberation.seeds import stable_seed
from deliberation.stats.bootstrap import percentile_interval, resample_counts

MAX_ABOVE_CHANCE = 0.10
_CONFIDENCE = 0.95
N_RESAMPLES = 2000
# The random-keys bar is this quantile of a reader's accuracy with the keys drawn at random.
RANDOM_KEYS_QUANTILE = 0.95
# Random-key draws: a fixed reader's picks do not depend on the keys (cheap, so many draws); a
# trained reader is retrained for every draw.
RULE_DRAWS = 10_000
DRAWS = 100

# A reader maps a template to a score per option; it picks the highest score.
_Scorer = Callable[[Template], dict[str, float]]
# Label-free encoding of one fold: (training templates, held-out templates) -> (X_train, X_test),
# one row per option in template and option order.
Encoder = Callable[[Sequence[Template], Sequence[Template]], tuple[Any, Any]]


@dataclass(frozen=True)
class Trained:
    """How a reader learns: ``encode`` turns one fold's templates into features (it never sees a
    key, so it runs once per fold however many key draws are scored), ``model`` makes a fresh
    estimator with ``fit(X, y)`` and ``predict_proba(X)`` (scikit-learn's interface)."""

    encode: Encoder
    model: Callable[[], Any]


@dataclass(frozen=True)
class Reader:
    """One role-blind rule. ``reads`` says what it looks at, ``family`` which of
    :data:`FAMILIES` it belongs to; ``thresholded`` rules fail the audit when above both bars.
    A fixed reader has ``scores``; a trained one ``trained``."""

    name: str
    reads: str
    family: str
    scores: _Scorer | None = None
    trained: Trained | None = None
    thresholded: bool = True


# ---------------------------------------------------------------- what a reader may see


def facts_naming(t: Template, option: str) -> list:
    """The facts whose text names ``option`` (found in the text, not in the fact's metadata:
    the reader is role-blind)."""
    return [f for f in t.facts if mentions(f.text, option, ignore_case=True)]


def _option_facts(t: Template, option: str) -> list[str]:
    """The texts of the facts that name ``option``."""
    return [f.text for f in facts_naming(t, option)]


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


def _content_words(text: str, t: Template) -> list[str]:
    """``text`` lower-cased as words, without the template's option names, stopwords and
    possessive endings (what the overlap counts compare)."""
    names = _name_words(t)
    words = (w.removesuffix("'s") for w in _WORD.findall(text.lower()))
    return [w for w in words if w not in names and w not in _stopwords() and len(w) > 1]


def classifier_text(t: Template, option: str) -> str:
    """An option's fact texts as the text classifiers read them: option names, numbers,
    stopwords and sentiment-lexicon words removed."""
    polar = polarity_words()
    text = " ".join(_option_facts(t, option))
    for name in sorted(t.options, key=len, reverse=True):
        text = re.sub(rf"(?<!\w){re.escape(name)}(?:'s)?(?!\w)", " ", text, flags=re.IGNORECASE)
    return " ".join(w for w in _content_words(text, t) if w not in polar)


@functools.cache
def sentiment(text: str) -> float:
    """VADER's compound polarity of ``text``, from -1 (negative) to +1 (positive)."""
    return float(_analyzer().polarity_scores(text)["compound"])


# ---------------------------------------------------------------- per-option measures


def _per_option(measure: Callable[[Template, str], float]) -> _Scorer:
    return lambda t: {o: float(measure(t, o)) for o in t.options}


def _facts(t: Template, o: str) -> float:
    return len(_option_facts(t, o))


def _named(t: Template, o: str) -> float:
    return sum(mention_count(f.text, o, ignore_case=True) for f in t.facts)


def _numbers(t: Template, o: str) -> float:
    return sum(len(_NUMBER.findall(x)) for x in _option_facts(t, o))


def _description_words(t: Template) -> set[str]:
    return set(_content_words(" ".join([t.title, t.description, *t.criteria]), t))


def _description_overlap(t: Template, o: str) -> float:
    """Words of the option's facts that also occur in the title, description or criteria."""
    shared = _description_words(t)
    return sum(w in shared for x in _option_facts(t, o) for w in _content_words(x, t))


def _on_criteria(t: Template, o: str) -> float:
    """Facts sharing a word with the stated criteria (a role-blind guess at 'on topic')."""
    criteria = set(_content_words(" ".join(t.criteria), t))
    return sum(bool(criteria & set(_content_words(x, t))) for x in _option_facts(t, o))


def _on_topic(t: Template, o: str) -> float:
    return sum(f.role != "irrelevant" for f in facts_naming(t, o))


def _off_topic(t: Template, o: str) -> float:
    return sum(f.role == "irrelevant" for f in facts_naming(t, o))


def _off_topic_tone(t: Template, o: str) -> float:
    return sum(f.tone for f in facts_naming(t, o) if f.role == "irrelevant")


def _favourable(t: Template, o: str) -> float:
    return sum(f.role != "irrelevant" and f.polarity > 0 for f in facts_naming(t, o))


def _unfavourable(t: Template, o: str) -> float:
    return sum(f.role != "irrelevant" and f.polarity < 0 for f in facts_naming(t, o))


def _mean_sentiment(t: Template, o: str) -> float:
    texts = _option_facts(t, o)
    return sum(map(sentiment, texts)) / len(texts) if texts else 0.0


# Structural features, in report order: (name, measure). The most/fewest readers and the
# structural classifier use the same list (lengths are surface statistics, see surface.py).
_STRUCTURE: tuple[tuple[str, Callable[[Template, str], float]], ...] = (
    ("facts naming it", _facts),
    ("name occurrences", _named),
    ("numbers", _numbers),
    ("facts on a criterion's words", _on_criteria),
    ("words shared with the description", _description_overlap),
)
# What a careful reader sees of topicality without the key (docs/crossprofile-audit.md).
TOPICALITY: tuple[tuple[str, Callable[[Template, str], float]], ...] = (
    ("on-topic facts", _on_topic),
    ("off-topic facts", _off_topic),
    ("off-topic tone", _off_topic_tone),
)


def _surface(statistic: SurfaceStatistic) -> _Scorer:
    return lambda t: {o: statistic(_option_facts(t, o), o) for o in t.options}


def _negate(scores: _Scorer) -> _Scorer:
    return lambda t: {o: -v for o, v in scores(t).items()}


def _position(index: int) -> _Scorer:
    return lambda t: {o: float(i == index) for i, o in enumerate(t.options)}


def _task_end(seed: int, index: int) -> _Scorer:
    def scores(t: Template) -> dict[str, float]:
        text = t.facts[presentation_order(t, seed)[index]].text
        return {o: float(mentions(text, o, ignore_case=True)) for o in t.options}

    return scores


# ---------------------------------------------------------------- features of trained readers


@functools.lru_cache(maxsize=4096)
def _raw_statistics(t: Template) -> np.ndarray:
    """Every per-option statistic (rows in ``t.options`` order): the structural counts,
    topicality, every surface statistic and the listed position (one column per position)."""
    rows = []
    for i, o in enumerate(t.options):
        texts = _option_facts(t, o)
        rows.append(
            [m(t, o) for _, m in _STRUCTURE]
            + [m(t, o) for _, m in TOPICALITY]
            + [s(texts, o) for s in STATISTICS]
            + [float(i == p) for p in range(len(t.options))]
        )
    return np.array(rows, dtype=float)


_N_STRUCTURE, _N_TOPICALITY, _N_SURFACE = len(_STRUCTURE), len(TOPICALITY), len(STATISTICS)


def _centred(raw: np.ndarray) -> np.ndarray:
    return raw - raw.mean(axis=0)


def _structure_features(t: Template) -> np.ndarray:
    """The structural counts of each option, centred on the template's mean so that the model
    compares options within a template."""
    return _centred(_raw_statistics(t)[:, :_N_STRUCTURE])


def _surface_features(t: Template) -> np.ndarray:
    """Every surface statistic of each option, centred like :func:`_structure_features`."""
    start = _N_STRUCTURE + _N_TOPICALITY
    return _centred(_raw_statistics(t)[:, start : start + _N_SURFACE])


def all_features(t: Template) -> np.ndarray:
    """Every per-option statistic (structure, topicality, surface, position), centred."""
    return _centred(_raw_statistics(t))


def all_features_raw_and_centred(t: Template) -> np.ndarray:
    """Every per-option statistic as it is and centred: a tree model can then read both a
    value ("5 facts") and its place among the template's options ("the most")."""
    raw = _raw_statistics(t)
    return np.hstack([raw, _centred(raw)])


def _rows(features: Callable[[Template], np.ndarray]) -> Encoder:
    return lambda train, test: (
        np.vstack([features(t) for t in train]),
        np.vstack([features(t) for t in test]),
    )


def _logistic():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))


def _gradient_boosting():
    # histogram-based: as accurate as GradientBoostingClassifier on bank v4 (68.3%), 3x faster
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(
        max_iter=30, max_depth=3, early_stopping=False, random_state=0
    )


@functools.lru_cache(maxsize=4096)
def _classifier_texts(t: Template) -> tuple[str, ...]:
    return tuple(classifier_text(t, o) for o in t.options)


def _texts(vectorizer: Callable[[], Any]) -> Encoder:
    """Fit ``vectorizer()`` on the training templates' option texts (one document per option)."""

    def encode(train, test):
        v = vectorizer()
        x_train = v.fit_transform([d for t in train for d in _classifier_texts(t)])
        return x_train, v.transform([d for t in test for d in _classifier_texts(t)])

    return encode


def _counts_vectorizer():
    from sklearn.feature_extraction.text import CountVectorizer

    return CountVectorizer(ngram_range=(1, 2))


def _tfidf_vectorizer():
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)


def _naive_bayes():
    from sklearn.naive_bayes import MultinomialNB

    return MultinomialNB()


def _logistic_text():
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=1.0, max_iter=2000)


class SlotLookup:
    """Where the key sits in each signature: fit on (signature, slot value) rows, one per
    option, it learns the rate at which an option with that value is the key among training
    templates with that signature, and scores a held-out option by it (an unseen signature
    falls back to the value's rate over all training templates, an unseen value to 0)."""

    def fit(self, rows: Sequence[tuple[Hashable, Hashable]], y: Sequence[int]) -> SlotLookup:
        by_slot: dict = defaultdict(lambda: [0, 0])
        by_value: dict = defaultdict(lambda: [0, 0])
        for (signature, value), label in zip(rows, y, strict=True):
            for table, key in ((by_slot, (signature, value)), (by_value, value)):
                table[key][0] += int(label)
                table[key][1] += 1
        self.by_slot, self.by_value = dict(by_slot), dict(by_value)
        self.signatures = {s for s, _ in self.by_slot}
        self.classes_ = np.unique(np.asarray(y))
        return self

    def predict_proba(self, rows: Sequence[tuple[Hashable, Hashable]]) -> np.ndarray:
        def rate(signature, value) -> float:
            table, key = (
                (self.by_slot, (signature, value))
                if signature in self.signatures
                else (self.by_value, value)
            )
            keys, options = table.get(key, (0, 0))
            return keys / options if options else 0.0

        p = np.array([rate(s, v) for s, v in rows], dtype=float)
        return np.column_stack([1 - p, p])


def signature_rows(value: Callable[[Template, str], Hashable]) -> Callable[[Template], list]:
    """Each option of a template as (signature, its value): the signature is the sorted tuple
    of every option's value, so a value that includes the position reads the listed order."""

    def rows(t: Template) -> list[tuple[Hashable, Hashable]]:
        values = [value(t, o) for o in t.options]
        signature = tuple(sorted(values))
        return [(signature, v) for v in values]

    return rows


def _lookup(value: Callable[[Template, str], Hashable]) -> Trained:
    rows = signature_rows(value)
    return Trained(
        encode=lambda train, test: (
            [r for t in train for r in rows(t)],
            [r for t in test for r in rows(t)],
        ),
        model=SlotLookup,
    )


def _count_value(t: Template, o: str) -> Hashable:
    return int(_facts(t, o))


def _topicality_value(t: Template, o: str) -> Hashable:
    return (int(_on_topic(t, o)), int(_off_topic(t, o)))


def _topicality_tone_value(t: Template, o: str) -> Hashable:
    return (*_topicality_value(t, o), int(_off_topic_tone(t, o)))


def _listed_topicality_value(t: Template, o: str) -> Hashable:
    return (t.options.index(o), *_topicality_tone_value(t, o))


# ---------------------------------------------------------------- the battery

# The readers' families, in report order (``deliberation crossprofile audit --family``).
FAMILIES = ("surface", "counts", "topicality", "order", "lookup", "classifier", "meaning")


def readers(seed: int = DEFAULT_SEED) -> tuple[Reader, ...]:
    """The battery, in report order (``seed`` is the task seed for the fact order)."""
    counts = []
    for name, measure in _STRUCTURE:
        scores = _per_option(measure)
        counts += [
            Reader(f"most {name}", "option texts", "counts", scores),
            Reader(f"fewest {name}", "option texts", "counts", _negate(scores)),
        ]
    topicality = []
    for name, measure in TOPICALITY:
        scores = _per_option(measure)
        high, low = ("best", "worst") if "tone" in name else ("most", "fewest")
        topicality += [
            Reader(f"{high} {name}", "topicality", "topicality", scores),
            Reader(f"{low} {name}", "topicality", "topicality", _negate(scores)),
        ]
    surface = []
    for statistic in STATISTICS:
        scores = _surface(statistic)
        surface += [
            Reader(f"highest {statistic.name}", "option texts", "surface", scores),
            Reader(f"lowest {statistic.name}", "option texts", "surface", _negate(scores)),
        ]
    tone = _per_option(_mean_sentiment)
    lodo = "(leave one domain out)"
    every = "every per-option statistic"
    trained = (  # (name, reads, family, how it learns)
        ("lookup: sorted counts of facts naming each option -> the key's count", "option texts",
         "lookup", _lookup(_count_value)),
        ("lookup: on-topic / off-topic counts per option -> the key's pair", "topicality",
         "lookup", _lookup(_topicality_value)),
        ("lookup: on/off-topic counts and off-topic tone per option -> the key's slot",
         "topicality", "lookup", _lookup(_topicality_tone_value)),
        ("lookup: the same in listed order -> the key's position", "topicality", "lookup",
         _lookup(_listed_topicality_value)),
        ("naive Bayes, word 1-2-grams", "option texts", "classifier",
         Trained(_texts(_counts_vectorizer), _naive_bayes)),
        ("logistic regression, word 1-2-grams", "option texts", "classifier",
         Trained(_texts(_tfidf_vectorizer), _logistic_text)),
        ("logistic regression, structural counts", "option texts", "classifier",
         Trained(_rows(_structure_features), _logistic)),
        ("logistic regression, all surface statistics", "option texts", "classifier",
         Trained(_rows(_surface_features), _logistic)),
        (f"logistic regression, {every}", "topicality", "classifier",
         Trained(_rows(all_features), _logistic)),
        (f"gradient boosting, {every}", "topicality", "classifier",
         Trained(_rows(all_features_raw_and_centred), _gradient_boosting)),
    )  # fmt: skip
    return (
        *surface,
        *counts,
        *topicality,
        Reader("first fact of the task", "task order", "order", _task_end(seed, 0)),
        Reader("last fact of the task", "task order", "order", _task_end(seed, -1)),
        *(Reader(f"option in position {i + 1}", "none", "order", _position(i)) for i in range(3)),
        *(
            Reader(f"{name} {lodo}", reads, family, trained=how)
            for name, reads, family, how in trained
        ),
        Reader("most positive facts (VADER)", "option texts", "meaning", tone, thresholded=False),
        Reader(
            "most negative facts (VADER)",
            "option texts",
            "meaning",
            _negate(tone),
            thresholded=False,
        ),
        Reader(
            "most favourable evidence",
            "meaning",
            "meaning",
            _per_option(_favourable),
            thresholded=False,
        ),
        Reader(
            "fewest unfavourable evidence",
            "meaning",
            "meaning",
            _negate(_per_option(_unfavourable)),
            thresholded=False,
        ),
    )


# ---------------------------------------------------------------- scoring


def credit(scores: dict[str, float], correct: str) -> float:
    """1/k if the correct option is among the k options with the top score, else 0."""
    if not scores:
        return 0.0
    top = max(scores.values())
    tied = [o for o, v in scores.items() if v == top]
    return 1 / len(tied) if correct in tied else 0.0


def bootstrap_interval(
    credits: Sequence[float], n_resamples: int = N_RESAMPLES, confidence: float = _CONFIDENCE
) -> tuple[float, float]:
    """Percentile interval of the mean credit, resampling templates (fixed seed, so the
    audit prints the same table every time)."""
    values = np.asarray(credits, dtype=float)
    rng = np.random.default_rng(stable_seed("crossprofile audit", len(values)))
    weights = resample_counts(len(values), n_resamples, rng)
    return percentile_interval(weights @ values / len(values), confidence)


def random_keys(templates: Sequence[Template], draws: int) -> np.ndarray:
    """``draws`` x templates option indices, each template's key drawn uniformly (fixed seed:
    every reader is compared with the same draws)."""
    rng = np.random.default_rng(stable_seed("crossprofile audit random keys", len(templates)))
    sizes = np.array([len(t.options) for t in templates])
    return (rng.random((draws, len(templates))) * sizes).astype(int)


def _credit_matrix(scored: Sequence[dict[str, float]], templates: Sequence[Template]) -> np.ndarray:
    """credit[i, j]: what template i scores if its key is option j."""
    width = max(len(t.options) for t in templates)
    out = np.zeros((len(templates), width))
    for i, (s, t) in enumerate(zip(scored, templates, strict=True)):
        for j, o in enumerate(t.options):
            out[i, j] = credit(s, o)
    return out


def _random_key_quantile(matrix: np.ndarray, keys: np.ndarray) -> float:
    """The random-keys bar of a reader whose picks do not depend on the keys."""
    accuracies = matrix[np.arange(matrix.shape[0]), keys].mean(axis=1)
    return _quantile(accuracies)


def _quantile(accuracies: np.ndarray) -> float:
    # "higher": an accuracy the reader reached, so "above the bar" happens at most 5% of draws
    return float(np.quantile(accuracies, RANDOM_KEYS_QUANTILE, method="higher"))


def _labels(templates: Sequence[Template], keys: Sequence[str]) -> np.ndarray:
    return np.array([o == k for t, k in zip(templates, keys, strict=True) for o in t.options], int)


def _per_template(templates: Sequence[Template], values: np.ndarray) -> list[dict[str, float]]:
    out, i = [], 0
    for t in templates:
        out.append({o: float(values[i + k]) for k, o in enumerate(t.options)})
        i += len(t.options)
    return out


@dataclass(frozen=True)
class _Fold:
    held: list[int]  # indices into the scored templates
    train: list[int]  # indices into the training pool
    x_train: Any
    x_test: Any


def _folds(
    trained: Trained, templates: Sequence[Template], pool: Sequence[Template]
) -> list[_Fold]:
    """Leave one domain out: for each domain of ``templates``, the pool's templates from the
    other domains, encoded once (no fold when no other domain is there to train on)."""
    folds = []
    for domain in dict.fromkeys(t.domain for t in templates):
        held = [i for i, t in enumerate(templates) if t.domain == domain]
        train = [i for i, t in enumerate(pool) if t.domain != domain]
        if train:
            x_train, x_test = trained.encode([pool[i] for i in train], [templates[i] for i in held])
            folds.append(_Fold(held, train, x_train, x_test))
    return folds


def _fit_folds(
    trained: Trained,
    folds: Sequence[_Fold],
    templates: Sequence[Template],
    pool: Sequence[Template],
    pool_keys: Sequence[str],
) -> list[dict[str, float] | None]:
    """Scores per template from models trained on ``pool_keys`` (None where no fold held it)."""
    out: list[dict[str, float] | None] = [None] * len(templates)
    for fold in folds:
        held = [templates[i] for i in fold.held]
        y = _labels([pool[i] for i in fold.train], [pool_keys[i] for i in fold.train])
        model = trained.model()
        model.fit(fold.x_train, y)
        if len(model.classes_) < 2:  # a training set without both labels cannot rank
            scores = [dict.fromkeys(t.options, 0.0) for t in held]
        else:
            scores = _per_template(held, model.predict_proba(fold.x_test)[:, 1])
        for i, s in zip(fold.held, scores, strict=True):
            out[i] = s
    return out


def _leave_one_domain_out(
    trained: Trained, templates: Sequence[Template], pool: Sequence[Template] | None = None
) -> list[dict[str, float] | None]:
    """Scores for every template from a model trained on the templates of ``pool`` (default:
    ``templates``) from the other domains (None where there is no other domain to train on)."""
    pool = templates if pool is None else pool
    folds = _folds(trained, templates, pool)
    return _fit_folds(trained, folds, templates, pool, [t.correct for t in pool])


def _reader_scores(
    reader: Reader, templates: Sequence[Template], pool: Sequence[Template] | None = None
) -> list[dict[str, float] | None]:
    """The reader's scores per template (None where it cannot score one); a trained reader
    learns from the other domains' templates of ``pool`` (default: ``templates``)."""
    if reader.trained is not None:
        return _leave_one_domain_out(reader.trained, templates, pool)
    return [reader.scores(t) for t in templates]


@dataclass(frozen=True)
class _AuditReport:
    """One row per reader (see :func:`audit`); ``ok`` if no thresholded one fails over the
    main templates (the ``pilot_*`` columns are reported, not thresholded)."""

    table: pd.DataFrame
    n_templates: int
    n_pilot: int = 0
    draws: int = DRAWS

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


def _summary(scored: Sequence[dict[str, float]], templates: Sequence[Template]) -> dict:
    credits = [credit(s, t.correct) for s, t in zip(scored, templates, strict=True)]
    low, high = bootstrap_interval(credits)
    return {
        "n": len(scored),
        "accuracy": float(np.mean(credits)),
        "ci_low": low,
        "ci_high": high,
        "chance": float(np.mean([1 / len(t.options) for t in templates])),
    }


def _main_row(reader: Reader, main: Sequence[Template], draws: int) -> dict | None:
    """Accuracy, interval, chance and random-keys bar of one reader over the main templates."""
    if reader.trained is None:
        scores = [reader.scores(t) for t in main]
        bar_draws = RULE_DRAWS
    else:
        folds = _folds(reader.trained, main, main)
        scores = _fit_folds(reader.trained, folds, main, main, [t.correct for t in main])
        bar_draws = draws
    kept = [i for i, s in enumerate(scores) if s]
    if not kept:
        return None  # a trained reader on a single domain has nothing to train on
    templates = [main[i] for i in kept]
    row = _summary([scores[i] for i in kept], templates)
    if bar_draws == 0:
        row["random_keys_p95"] = float("nan")
    elif reader.trained is None:
        row["random_keys_p95"] = _random_key_quantile(
            _credit_matrix([scores[i] for i in kept], templates), random_keys(templates, bar_draws)
        )
    else:
        accuracies = []
        for draw in random_keys(main, bar_draws):
            keys = [t.options[j] for t, j in zip(main, draw, strict=True)]
            drawn = _fit_folds(reader.trained, folds, main, main, keys)
            accuracies.append(np.mean([credit(drawn[i], keys[i]) for i in kept]))
        row["random_keys_p95"] = _quantile(np.array(accuracies))
    return row


def _pilot_row(reader: Reader, pilots: Sequence[Template], main: Sequence[Template]) -> dict:
    scores = _reader_scores(reader, pilots, pool=main)
    kept = [i for i, s in enumerate(scores) if s]
    if not kept:
        return {}
    templates = [pilots[i] for i in kept]
    row = _summary([scores[i] for i in kept], templates)
    bar = _random_key_quantile(
        _credit_matrix([scores[i] for i in kept], templates), random_keys(templates, RULE_DRAWS)
    )
    return {
        "pilot_n": row["n"],
        "pilot_accuracy": row["accuracy"],
        "pilot_ci_low": row["ci_low"],
        "pilot_ci_high": row["ci_high"],
        "pilot_random_keys_p95": bar,
    }


def passes(accuracy: float, chance: float, random_keys_p95: float) -> bool:
    """A reader fails only above both bars: more than :data:`MAX_ABOVE_CHANCE` above chance,
    and above its own 95th percentile with random keys (when that was measured)."""
    above_chance = accuracy - chance > MAX_ABOVE_CHANCE + 1e-12
    above_random = random_keys_p95 != random_keys_p95 or accuracy > random_keys_p95 + 1e-12
    return not (above_chance and above_random)


def audit(
    templates: Sequence[Template],
    seed: int = DEFAULT_SEED,
    draws: int = DRAWS,
    battery: Sequence[Reader] | None = None,
) -> _AuditReport:
    """Run every reader of ``battery`` (default: :func:`readers`) over the main (non-pilot)
    templates of ``templates``, and over its pilot templates beside them (``pilot_*`` columns,
    NaN without pilots). ``draws``: how many random-key draws each trained reader is retrained
    on for its random-keys bar (0: none)."""
    main = [t for t in templates if not t.pilot]
    pilots = [t for t in templates if t.pilot]
    if not main:
        raise ValueError("the cue audit needs at least one main (non-pilot) template")
    from threadpoolctl import threadpool_limits

    nan = float("nan")
    rows = []
    for reader in readers(seed) if battery is None else battery:
        # many small fits: one thread each is faster than a pool (and fair on a shared machine)
        with threadpool_limits(1):
            found = _main_row(reader, main, draws)
            if found is None:
                continue
            on_pilots = _pilot_row(reader, pilots, main) if pilots else {}
        rows.append(
            {
                "heuristic": reader.name,
                "reads": reader.reads,
                **found,
                "above_chance": found["accuracy"] - found["chance"],
                "thresholded": reader.thresholded,
                "passes": passes(found["accuracy"], found["chance"], found["random_keys_p95"])
                if reader.thresholded
                else True,
                "pilot_n": on_pilots.get("pilot_n", 0),
                **{
                    k: on_pilots.get(k, nan)
                    for k in (
                        "pilot_accuracy",
                        "pilot_ci_low",
                        "pilot_ci_high",
                        "pilot_random_keys_p95",
                    )
                },
            }
        )
    return _AuditReport(
        table=pd.DataFrame(rows), n_templates=len(main), n_pilot=len(pilots), draws=draws
    )


def _interval(lows: pd.Series, highs: pd.Series) -> list[str]:
    return [
        f"{100 * lo:.1f}-{100 * hi:.1f}" if lo == lo else "-"
        for lo, hi in zip(lows, highs, strict=True)
    ]


def audit_table(report: _AuditReport) -> pd.DataFrame:
    """The report as a display table: percentages, the interval, both bars, the verdict, the
    pilots."""
    t = report.table
    return pd.DataFrame(
        {
            "reader": t["heuristic"],
            "reads": t["reads"],
            "accuracy %": (100 * t["accuracy"]).round(1),
            f"{_CONFIDENCE:.0%} CI": _interval(t["ci_low"], t["ci_high"]),
            "chance %": (100 * t["chance"]).round(1),
            "above chance (points)": (100 * t["above_chance"]).round(1),
            "random keys p95 %": (100 * t["random_keys_p95"]).round(1),
            "verdict": [
                ("ok" if p else "FAIL") if th else "reported"
                for p, th in zip(t["passes"], t["thresholded"], strict=True)
            ],
            "pilots %": (100 * t["pilot_accuracy"]).round(1),
            f"pilots {_CONFIDENCE:.0%} CI": _interval(t["pilot_ci_low"], t["pilot_ci_high"]),
            "pilots random keys p95 %": (100 * t["pilot_random_keys_p95"]).round(1),
        }
    )


def format_audit(report: _AuditReport) -> str:
    """The audit as text: the table and a summary line naming the failing readers."""
    pilots = f", {report.n_pilot} pilot templates beside them" if report.n_pilot else ""
    bar = (
        f"and above its own {RANDOM_KEYS_QUANTILE:.0%} percentile with the keys drawn at random "
        f"({RULE_DRAWS:,} draws for a fixed reader, {report.draws} retrainings for a trained one)"
        if report.draws
        else "(random-keys bars of trained readers not measured: --draws 0)"
    )
    lines = [
        f"cue audit over {report.n_templates} main templates{pilots}: role-blind readers "
        f"(fail: more than {100 * MAX_ABOVE_CHANCE:.0f} points above chance over the main "
        f"templates {bar}; ties score 1/k; intervals bootstrap templates)",
        audit_table(report).to_string(index=False),
    ]
    if report.ok:
        lines.append(
            "\naudit OK: no role-blind reader is both more than "
            f"{100 * MAX_ABOVE_CHANCE:.0f} points above chance and above its random-keys bar"
        )
    else:
        names = ", ".join(report.failures["heuristic"])
        lines.append(f"\naudit FAILED: {names}")
    return "\n".join(lines)
