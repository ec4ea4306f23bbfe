"""Re-analysis of the tables the DHD authors released (``dhd_reference``), with this library's code.

The authors' repository (MIT; pinned in ``../shared/data/dhd_reference/SOURCE.md``) releases
aggregated counts, not per-message replay rows. From them this module recomputes the headline
flip figures: for each model, replay design and proposal correctness, the helpful share among
correctness flips, helpful / (helpful + harmful), with a Wilson 95% interval, and the same by
benchmark and by pool size K.

What the released rows cannot support: they are counts pooled over messages, so the messages of
one problem cannot be resampled together. A Wilson interval treats every flip as independent and
is therefore narrower than the problem-clustered bootstrap this companion uses on its own rows;
it is reported as the only interval the counts allow, and labelled as such.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from deliberation import paths
from deliberation.dhd.labels import wilson_interval

FLIP_DIRECTION = Path("figures/fig_correctness_flip_direction_source.csv")
CROSS_BENCHMARK = Path("figures/fig_cross_benchmark_trajectory_value_source.csv")
LOO_BY_K = Path("figures/fig_loo_by_k_appendix_source.csv")
EXPECTED_SUMMARIES = Path("data/manifests/expected_summaries.json")
INTERVAL_NOTE = "Wilson 95% (flips treated as independent; the released counts cannot be clustered)"


class ReferenceNotFoundError(FileNotFoundError):
    """The authors' released tables are not where we looked."""


def reference_root(root: str | Path | None = None) -> Path:
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
    out["interval"] = INTERVAL_NOTE
    return out


def flip_direction(root: str | Path | None = None) -> pd.DataFrame:
    """Helpful share among flips per model, design (single-message, in-pool LOO) and proposal
    correctness, recomputed from the released counts, beside the share the authors reported."""
    base = reference_root(root)
    frame = _read(base, FLIP_DIRECTION)
    out = _with_shares(frame)
    out["reported_share"] = frame["helpful_share_among_flips_pct"] / 100
    columns = ["model", "metric", "proposal_correctness", "helpful_count", "neutral_count"]
    columns += ["harmful_count", "flips", "helpful_share", "share_low", "share_high"]
    return out[columns + ["reported_share", "interval"]]


def by_benchmark(root: str | Path | None = None) -> pd.DataFrame:
    """The same per benchmark, model and proposal correctness (in-pool LOO), with the authors'
    Wilson bounds beside ours."""
    base = reference_root(root)
    frame = _read(base, CROSS_BENCHMARK)
    out = _with_shares(frame)
    out["reported_low"] = frame["helpful_share_wilson95_low_pct"] / 100
    out["reported_high"] = frame["helpful_share_wilson95_high_pct"] / 100
    columns = ["benchmark", "model", "proposal_correctness", "helpful_count", "harmful_count"]
    columns += ["flips", "helpful_share", "share_low", "share_high", "reported_low"]
    return out[columns + ["reported_high", "interval"]]


def loo_by_k(root: str | Path | None = None) -> pd.DataFrame:
    """Rate of each signal category among eligible messages by benchmark and pool size K, with
    Wilson intervals (the released rows do not name the model)."""
    base = reference_root(root)
    frame = _read(base, LOO_BY_K)
    intervals = [
        wilson_interval(int(c), int(n))
        for c, n in zip(frame["count"], frame["eligible_count"], strict=True)
    ]
    return frame.assign(
        rate=frame["count"] / frame["eligible_count"],
        rate_low=[low for low, _ in intervals],
        rate_high=[high for _, high in intervals],
        reported_rate=frame["eligible_signal_rate_pct"] / 100,
    )


def expected_headline(root: str | Path | None = None) -> dict[str, float]:
    """The authors' own manifest of headline helpful shares ("OSS|wrong" -> 0.419, ...)."""
    base = reference_root(root)
    path = base / EXPECTED_SUMMARIES
    manifest = json.loads(path.read_text(encoding="utf-8"))
    return {k: v / 100 for k, v in manifest["helpful_share_among_flips_pct"].items()}
