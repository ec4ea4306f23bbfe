"""Figure writer: PNG + PDF under ``figures/<profile>/`` with a provenance sidecar.

Every model-made figure gets its label in its title (``provenance.output_label``: the synthetic
label on the sim, the model's description on a real model). Metadata that varies between runs
(creation dates, software strings) is left out so the files are reproducible.

Figures say small samples as the tables do (:mod:`deliberation.stats.small_samples`): an
estimate from fewer clusters than the minimum gets no error bar but its n beside it
(:func:`interval_errors`, :func:`mark_small_samples`; one note when none reaches it,
:func:`note_all_withheld`), and a figure of a proportion draws the
chance line 1/k where there is one (:func:`draw_chance`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd

matplotlib.use("Agg", force=False)
import matplotlib.pyplot as plt

from deliberation.io import paths
from deliberation.profiles.profile import Profile
from deliberation.publish.provenance import ReleasedSource, output_label, write_output_set
from deliberation.stats.small_samples import MIN_CLUSTERS

_PNG_META = {"Software": None}
_PDF_META = {"Creator": None, "Producer": None, "CreationDate": None}


def figure_dir(profile: Profile) -> Path:
    return paths.output_root() / "figures" / profile.name


def withheld(n_clusters: Sequence[float] | None, min_clusters: int = MIN_CLUSTERS) -> np.ndarray:
    """Which estimates rest on fewer than ``min_clusters`` clusters (all False without counts)."""
    if n_clusters is None:
        return np.zeros(0, dtype=bool)
    counts = _floats(n_clusters)
    return np.isfinite(counts) & (counts < min_clusters)


def _floats(values: Sequence[object]) -> np.ndarray:
    """Floats, NaN for a missing value (None, pandas NA)."""
    return np.array(
        [np.nan if v is None or v is pd.NA else float(v) for v in np.asarray(values, dtype=object)],
        dtype=float,
    )


def interval_errors(
    estimate: Sequence[float],
    low: Sequence[float],
    high: Sequence[float],
    n_clusters: Sequence[float] | None = None,
    *,
    min_clusters: int = MIN_CLUSTERS,
    scale: float = 1.0,
) -> np.ndarray:
    """``yerr`` for ``errorbar``/``bar``: a (2, n) array of distances below and above each
    estimate, NaN (nothing drawn) where the interval is missing or rests on fewer than
    ``min_clusters`` clusters."""
    estimate, low, high = (scale * _floats(v) for v in (estimate, low, high))
    errors = np.vstack([estimate - low, high - estimate])
    errors[:, ~np.isfinite(errors).all(axis=0)] = np.nan  # one bound missing: no interval
    small = withheld(n_clusters, min_clusters)
    if small.size:
        errors[:, small] = np.nan
    return errors


def mark_small_samples(
    ax: plt.Axes,
    x: Sequence[float],
    y: Sequence[float],
    n_clusters: Sequence[float] | None,
    *,
    min_clusters: int = MIN_CLUSTERS,
    horizontal: bool = False,
) -> list[plt.Text]:
    """Write "n = 2 clusters" beside every estimate below the minimum (its bar is withheld)."""
    if n_clusters is None:
        return []
    small = withheld(n_clusters, min_clusters)
    marks = []
    for xi, yi, n, is_small in zip(x, y, _floats(n_clusters), small, strict=True):
        if not is_small or not np.isfinite(float(yi)):
            continue
        unit = "cluster" if int(n) == 1 else "clusters"
        marks.append(
            ax.annotate(
                f"n = {int(n)} {unit}",
                (xi, yi),
                xytext=(3, 3),
                textcoords="offset points",
                fontsize=6,
                rotation=0 if horizontal else 90,
                ha="left",
                va="bottom",
                color="dimgrey",
            )
        )
    return marks


def note_all_withheld(
    ax: plt.Axes, n_clusters: Sequence[float] | None, *, min_clusters: int = MIN_CLUSTERS
) -> bool:
    """When every estimate of the axes is below the minimum, one note says so ("no intervals:
    n = 3 clusters each, fewer than 5") instead of a label on every point. Returns whether it
    wrote the note (then the caller marks no point)."""
    if n_clusters is None:
        return False
    counts = _floats(n_clusters)
    counts = counts[np.isfinite(counts)]
    if not counts.size or not withheld(counts, min_clusters).all():
        return False
    low, high = int(counts.min()), int(counts.max())
    n = f"{low}" if low == high else f"{low}-{high}"
    unit = "cluster" if high == 1 else "clusters"
    ax.text(
        0.01, 0.99, f"no intervals: n = {n} {unit} each, fewer than {min_clusters}",
        transform=ax.transAxes, fontsize=7, ha="left", va="top", color="dimgrey",
    )  # fmt: skip
    return True


def draw_chance(ax: plt.Axes, chance: float | None, *, label: str | None = None) -> bool:
    """A dotted line at chance (in the axis' units, e.g. 33.3 for 1/3 in percent); nothing when
    there is no chance level (``None``/NaN). Returns whether a line was drawn."""
    if chance is None or not np.isfinite(float(chance)):
        return False
    ax.axhline(float(chance), color="grey", lw=1, ls=":", label=label or f"chance ({chance:.1f})")
    return True


def chance_level(table: pd.DataFrame) -> float | None:
    """The table's ``chance`` column as one value (None when absent or empty). A figure draws
    one line, so differing chance levels (mixed numbers of options) are averaged."""
    if "chance" not in getattr(table, "columns", ()):
        return None
    values = _floats(table["chance"])
    values = values[np.isfinite(values)]
    return float(values.mean()) if values.size else None


def label_figure(fig: plt.Figure, profile: Profile) -> None:
    label = output_label(profile)
    current = fig._suptitle.get_text() if fig._suptitle is not None else ""
    if label not in current:
        fig.suptitle(f"{current} [{label}]".strip() if current else label)


def save_figure(
    fig: plt.Figure,
    name: str,
    *,
    profile: Profile,
    caption: str,
    notebook: str,
    dpi: int = 150,
    source: ReleasedSource | None = None,
) -> dict[str, Path]:
    """Write ``<name>.png``, ``<name>.pdf`` and ``<name>.provenance.json`` as one set (all or
    none, the sidecar last with the hashes of the others). A figure of other people's
    released results (``source``) is titled with their label, not the profile's."""
    if source is None:
        label_figure(fig, profile)
    else:
        current = fig._suptitle.get_text() if fig._suptitle is not None else ""
        fig.suptitle(f"{current} [{source.label()}]".strip())

    def writer(fmt: str, meta: dict[str, None]) -> Callable[[Path], None]:
        def write(path: Path) -> None:
            fig.savefig(path, format=fmt, dpi=dpi, bbox_inches="tight", metadata=meta)

        return write

    return write_output_set(
        figure_dir(profile) / name,
        {"png": writer("png", _PNG_META), "pdf": writer("pdf", _PDF_META)},
        profile,
        notebook=notebook,
        caption=caption,
        source=source,
    )
