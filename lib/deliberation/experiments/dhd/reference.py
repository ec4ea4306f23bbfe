"""Re-analysis of the tables the DHD authors released (``dhd_reference``), with this library's code.

In full: ``docs/experiments.md``, section "Re-analysis of the DHD authors' released tables
(experiments/dhd/reference.py)".
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from deliberation.experiments.dhd.labels import wilson_interval
from deliberation.io import paths
from deliberation.publish.provenance import ReleasedSource
from deliberation.stats.small_samples import withhold_inference

FLIP_DIRECTION = Path("figures/fig_correctness_flip_direction_source.csv")
_CROSS_BENCHMARK = Path("figures/fig_cross_benchmark_trajectory_value_source.csv")
_LOO_BY_K = Path("figures/fig_loo_by_k_appendix_source.csv")
_EXPECTED_SUMMARIES = Path("data/manifests/expected_summaries.json")
_INTERVAL_NOTE = (
    "Wilson 95% (flips treated as independent; the released counts cannot be clustered)"
)
_UNKNOWN_CLUSTERS_NOTE = (
    "no interval: the released counts do not say which problems the flips come from, so the"
    " clusters (problems) behind them are unknown"
)


# The released rows' model labels -> the models the authors ran (paper 2).
_RELEASED_MODELS = {"oss": "gpt-oss-120b", "gemma": "gemma-4-31B-it"}


def model_name(label: str) -> str:
    """The model behind a released row's ``model`` label (``OSS``/``oss`` -> gpt-oss-120b)."""
    try:
        return _RELEASED_MODELS[str(label).lower()]
    except KeyError:
        raise ValueError(
            f"released model label {label!r} is none of {sorted(_RELEASED_MODELS)}"
        ) from None


def released_source(*files: Path) -> ReleasedSource:
    """Who made the released rows behind an output: the authors' models, their repository and
    the commit this companion pins (:mod:`deliberation.benchmarks.problems.sources`), and ``files``."""
    from deliberation.benchmarks.problems.sources import source

    pinned = source("dhd_reference")
    return ReleasedSource(
        models=tuple(_RELEASED_MODELS.values()),
        repository=pinned.repository,
        commit=pinned.commit,
        licence=pinned.licence,
        files=tuple(str(f) for f in files),
    )


class ReferenceNotFoundError(FileNotFoundError):
    """The authors' released tables are not where we looked."""


def _reference_root(root: str | Path | None = None) -> Path:
    """The folder holding the authors' released tables: ``root`` if given, else
    ``data/external/dhd_reference`` (``make data``), else the shared test copy."""
    candidates = [Path(root)] if root is not None else []
    candidates.append(paths.external_data_dir() / "dhd_reference")
    shared = paths.shared_data_dir()
    if shared is not None:
        candidates.append(shared / "dhd_reference")
    for candidate in candidates:
        if (candidate / FLIP_DIRECTION).exists():
            return candidate
    raise ReferenceNotFoundError(
        "the DHD authors' released tables were not found in "
        + ", ".join(str(c) for c in candidates)
        + " (run `make data`)"
    )


def _read(root: Path, relative: Path) -> pd.DataFrame:
    path = root / relative
    try:
        return pd.read_csv(path)
    except FileNotFoundError:
        raise ReferenceNotFoundError(f"{path}: missing (run `make data`)") from None


def _with_shares(frame: pd.DataFrame) -> pd.DataFrame:
    flips = frame["helpful_count"] + frame["harmful_count"]
    out = frame.assign(flips=flips)
    out["helpful_share"] = out["helpful_count"] / flips.where(flips > 0)
    intervals = [
        wilson_interval(int(h), int(n)) for h, n in zip(out["helpful_count"], flips, strict=True)
    ]
    out["share_low"] = [low for low, _ in intervals]
    out["share_high"] = [high for _, high in intervals]
    out["interval"] = _INTERVAL_NOTE
    return out


def _unknown_clusters(table: pd.DataFrame) -> pd.DataFrame:
    """The released counts do not say which problems the flips come from: the clusters are
    unknown, so no interval can be said to rest on enough of them; the Wilson bounds are
    withheld and the note says why."""
    out = withhold_inference(table.assign(n_clusters=float("nan")))
    return out.assign(interval=_UNKNOWN_CLUSTERS_NOTE)


def flip_direction(root: str | Path | None = None) -> pd.DataFrame:
    """Helpful share among flips per model, design (single-message, in-pool LOO) and proposal
    correctness, recomputed from the released counts, beside the share the authors reported."""
    base = _reference_root(root)
    frame = _read(base, FLIP_DIRECTION)
    out = _with_shares(frame)
    out["reported_share"] = frame["helpful_share_among_flips_pct"] / 100
    out["model_name"] = out["model"].map(model_name)
    columns = [
        "model",
        "model_name",
        "metric",
        "proposal_correctness",
        "helpful_count",
        "neutral_count",
    ]
    columns += ["harmful_count", "flips", "helpful_share", "share_low", "share_high"]
    return _unknown_clusters(out[columns + ["reported_share", "interval"]])


def by_benchmark(root: str | Path | None = None) -> pd.DataFrame:
    """The same per benchmark, model and proposal correctness (in-pool LOO), with the authors'
    Wilson bounds beside ours."""
    base = _reference_root(root)
    frame = _read(base, _CROSS_BENCHMARK)
    out = _with_shares(frame)
    out["reported_low"] = frame["helpful_share_wilson95_low_pct"] / 100
    out["reported_high"] = frame["helpful_share_wilson95_high_pct"] / 100
    out["model_name"] = out["model"].map(model_name)
    columns = [
        "benchmark",
        "model",
        "model_name",
        "proposal_correctness",
        "helpful_count",
        "harmful_count",
    ]
    columns += ["flips", "helpful_share", "share_low", "share_high", "reported_low"]
    return _unknown_clusters(out[columns + ["reported_high", "interval"]])


def loo_by_k(root: str | Path | None = None) -> pd.DataFrame:
    """Rate of each signal category among eligible messages by benchmark and pool size K, with
    Wilson intervals (the released rows do not name the model)."""
    base = _reference_root(root)
    frame = _read(base, _LOO_BY_K)
    intervals = [
        wilson_interval(int(c), int(n))
        for c, n in zip(frame["count"], frame["eligible_count"], strict=True)
    ]
    table = frame.assign(
        rate=frame["count"] / frame["eligible_count"],
        rate_low=[low for low, _ in intervals],
        rate_high=[high for _, high in intervals],
        reported_rate=frame["eligible_signal_rate_pct"] / 100,
        interval=_INTERVAL_NOTE,
    )
    return _unknown_clusters(table)


def expected_headline(root: str | Path | None = None) -> dict[str, float]:
    """The authors' own manifest of headline helpful shares ("OSS|wrong" -> 0.419, ...)."""
    base = _reference_root(root)
    path = base / _EXPECTED_SUMMARIES
    manifest = json.loads(path.read_text(encoding="utf-8"))
    return {k: v / 100 for k, v in manifest["helpful_share_among_flips_pct"].items()}


# --- Component masking and cross-fitted selection (paper 2's last two results) ---------------

MASKING_PILOT = Path("data/derived/component_masking_pilot_summary.json")
SELECTION_PER_FOLD = Path("data/derived/signal_labels/value_aware_one_removal_per_fold.csv")
EXPECTED_SIGNAL_TABLES = Path("data/manifests/expected_signal_tables.json")
# Benchmark names of the released per-fold rows -> the paper's names (as in the manifests).
_BENCHMARK_NAMES = {
    "omni_16k": "Omni-MATH-2",
    "jeebench": "JEEBench",
    "scibench": "SciBench",
    "labbench": "LAB-Bench",
    "mascqa": "MaScQA",
}
_MASKING_INTERVAL_NOTE = (
    "Wilson 95% on nominal events (cases x replicates; the released rates are rounded and the "
    "per-case events are not released, so neither the counts nor a problem-clustered interval "
    "can be recovered)"
)
_PILOT_CELL = re.compile(
    r"^(?P<cell>wrong_helpful|correct_helpful|wrong_harmful|correct_harmful|indeterminate)"
    r"(?:_(?P<note>[a-z_]+?))?_n(?P<cases>\d+)$"
)


def _read_json(root: Path, relative: Path) -> dict:
    path = root / relative
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReferenceNotFoundError(f"{path}: missing (run `make data`)") from None


def masking_pilot(root: str | Path | None = None) -> pd.DataFrame:
    """The authors' component-masking pilot as a tidy table: one row per (cell, arm) with the
    released success rate, the difference from the full arm, and a Wilson interval on the
    nominal events (:data:`_MASKING_INTERVAL_NOTE`). Arms use this library's names
    (:data:`deliberation.experiments.dhd.masking.ARMS`); ``condition`` is the authors' name."""
    from deliberation.experiments.dhd.masking import ARMS

    base = _reference_root(root)
    summary = _read_json(base, MASKING_PILOT)
    path = base / MASKING_PILOT
    try:
        replicates = int(summary["design"]["replicates"])
        rates = summary["success_rate"]
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"{path}: no design.replicates or success_rate") from None
    arm_of = {condition: arm for arm, (condition, _) in ARMS.items()}
    rows = []
    for key, by_condition in rates.items():
        match = _PILOT_CELL.match(key)
        if match is None:
            raise ValueError(f"{path}: success_rate key {key!r} is not <cell>[_note]_n<cases>")
        cases = int(match["cases"])
        unknown = set(by_condition) - set(arm_of)
        if unknown:
            raise ValueError(f"{path}: {key}: unknown condition(s) {sorted(unknown)}")
        full = by_condition.get("full")
        for condition, arm in arm_of.items():
            if condition not in by_condition:
                continue
            rate = float(by_condition[condition])
            events = cases * replicates
            low, high = wilson_interval(round(rate * events), events)
            rows.append(
                {
                    "cell": match["cell"].replace("_", "-"),
                    "note": match["note"] or "",
                    "cases": cases,
                    "arm": arm,
                    "condition": condition,
                    "success": rate,
                    "low": low,
                    "high": high,
                    "minus_full": None if full is None else rate - float(full),
                    "nominal_events": events,
                    "interval": _MASKING_INTERVAL_NOTE,
                    "n_clusters": cases,  # cases of distinct messages: at most that many problems
                }
            )
    return withhold_inference(pd.DataFrame(rows))


def selection_per_fold(root: str | Path | None = None) -> pd.DataFrame:
    """The authors' released per-fold selection rows, checked to have the columns of
    :data:`deliberation.experiments.dhd.selection.PER_FOLD_COLUMNS` (same meaning as this
    library's)."""
    from deliberation.experiments.dhd.selection import PER_FOLD_COLUMNS

    base = _reference_root(root)
    frame = _read(base, SELECTION_PER_FOLD)
    missing = [c for c in PER_FOLD_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{base / SELECTION_PER_FOLD}: missing column(s) {missing}")
    frame = frame[PER_FOLD_COLUMNS].copy()
    bad = frame[PER_FOLD_COLUMNS[4:19]].isna().any(axis=1)
    if bad.any():
        line = int(bad.to_numpy().nonzero()[0][0]) + 2
        raise ValueError(f"{base / SELECTION_PER_FOLD}: line {line} has an empty policy column")
    return frame


def _expected_selection_gains(root: str | Path | None = None) -> pd.DataFrame:
    """The authors' manifest of selector-minus-always-full gains (percentage points), per model
    and benchmark (released benchmark names) and pooled."""
    base = _reference_root(root)
    table = _read_json(base, EXPECTED_SIGNAL_TABLES)["tab_cross_fitted_one_removal"]
    by_paper_name = {paper: released for released, paper in _BENCHMARK_NAMES.items()}
    rows = [
        {"model": model, "benchmark": by_paper_name.get(bench, bench), "reported_gain_pp": gain}
        for bench, by_model in table["by_benchmark"].items()
        for model, gain in by_model.items()
    ]
    rows += [
        {"model": model, "benchmark": "pooled", "reported_gain_pp": values["gain_pp"]}
        for model, values in table["overall"].items()
    ]
    return pd.DataFrame(rows)


def selection_tables(
    root: str | Path | None = None, n_resamples: int = 2000, seed: int = 0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Recompute, from the released per-fold rows, every policy's held-out accuracy and the
    selector's gain against every baseline, per model and benchmark and pooled, with
    cluster-robust t intervals over problems
    (:func:`deliberation.experiments.dhd.selection.policy_accuracy`,
    :func:`~deliberation.experiments.dhd.selection.selector_gains`). The gains carry the authors'
    reported gain against always-full beside ours (``reported_gain_pp``; empty for other
    baselines)."""
    from deliberation.experiments.dhd.selection import policy_accuracy, selector_gains

    per_fold = selection_per_fold(root)
    accuracy = policy_accuracy(per_fold, by=("model",), n_resamples=n_resamples, seed=seed)
    gains = selector_gains(per_fold, by=("model",), n_resamples=n_resamples, seed=seed)
    reported = _expected_selection_gains(root).assign(baseline="full")
    gains = gains.merge(reported, on=["model", "benchmark", "baseline"], how="left")
    accuracy.insert(accuracy.columns.get_loc("model") + 1, "model_name",
                    accuracy["model"].map(model_name))  # fmt: skip
    gains.insert(gains.columns.get_loc("model") + 1, "model_name", gains["model"].map(model_name))
    return accuracy, gains
