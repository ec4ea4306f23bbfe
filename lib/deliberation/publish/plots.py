"""Figures: built with matplotlib's object-oriented API, shown inline, written with provenance.

Nothing here (nor anywhere in the library) chooses matplotlib's backend or touches pyplot: a
:class:`Figure` is a plain :class:`matplotlib.figure.Figure` that renders itself as PNG when a
notebook displays it (``_repr_png_``), so a Jupyter kernel keeps its inline backend and a
figure shows in JupyterLab, under papermill and nbval, and in the report alike.
:func:`save_figure` writes ``<name>.png``, ``.pdf`` and a provenance sidecar under
``figures/<profile>/`` and returns a :class:`SavedFigure`, which a notebook displays: what the
reader sees is the file that was written.

Every model-made figure gets its label in its title (``provenance.output_label``: the synthetic
label on the sim, the model's description on a real model). Metadata that varies between runs
(creation dates, software strings) is left out so the files are reproducible.

Figures say small samples as the tables do (:mod:`deliberation.stats.small_samples`): an
estimate from fewer clusters than the minimum gets no error bar but its n beside it
(:func:`interval_errors`, :func:`mark_small_samples`; one note when none reaches it,
:func:`note_all_withheld`), and a figure of a proportion draws the chance line 1/k where there
is one (:func:`draw_chance`). A figure counts the error bars it drew (``Figure.intervals``), so
the caption :func:`save_figure` writes says only what is drawn (:meth:`IntervalCount.sentence`).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib.figure
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.text import Text

from deliberation.io import paths
from deliberation.profiles.profile import Profile
from deliberation.publish.provenance import ReleasedSource, output_label, write_output_set
from deliberation.stats.small_samples import MIN_CLUSTERS

_PNG_META = {"Software": None}
_PDF_META = {"Creator": None, "Producer": None, "CreationDate": None}
# PNG resolution: sharp on a screen, and small enough that a notebook committed with its figures
# stays reviewable (the PDF beside each PNG is the figure for print).
DPI = 110
CHANCE_STYLE = {"color": "grey", "lw": 1, "ls": ":"}


@dataclass
class IntervalCount:
    """The error bars a figure drew: estimates with one, estimates whose interval was withheld
    (fewer than ``min_clusters`` clusters, or no interval at all), and the minimum."""

    drawn: int = 0
    withheld: int = 0
    min_clusters: int = MIN_CLUSTERS

    def sentence(self, method: str) -> str:
        """What the error bars are, in the unit and method given ("95% intervals, percentile
        bootstrap resampling templates"), for as many estimates as have one; "" when the
        figure has no estimate that could carry one."""
        total = self.drawn + self.withheld
        if total == 0:
            return ""
        if self.drawn == 0:
            return (
                f"No error bars: no estimate rests on {self.min_clusters} or more clusters"
                " (each shows its n instead)."
            )
        if self.withheld == 0:
            return f"Error bars: {method}."
        return (
            f"Error bars: {method}, on the {self.drawn} of {total} estimates resting on"
            f" {self.min_clusters} or more clusters (the others show their n instead)."
        )


class Figure(matplotlib.figure.Figure):
    """A matplotlib figure that a notebook shows as PNG by itself (no backend, no pyplot), and
    that counts the error bars drawn on it (``intervals``)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.intervals = IntervalCount()

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight", metadata=_PNG_META)
        return buffer.getvalue()


@dataclass(frozen=True)
class SavedFigure:
    """A figure as written: a notebook displays the PNG file itself, and its text form names
    the file and says the caption (what nbval compares, since it skips image bytes)."""

    name: str
    files: dict[str, Path] = field(repr=False)
    caption: str
    folder: str  # figures/<profile>, relative to the output root

    def _repr_png_(self) -> bytes:
        return self.files["png"].read_bytes()

    def __repr__(self) -> str:
        return f"Figure {self.folder}/{self.name}.png (and .pdf): {self.caption}"


def _figure_dir(profile: Profile) -> Path:
    return paths.output_root() / "figures" / profile.name


def _withheld(n_clusters: Sequence[float] | None, min_clusters: int = MIN_CLUSTERS) -> np.ndarray:
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
    figure: Figure | None = None,
) -> np.ndarray:
    """``yerr`` for ``errorbar``/``bar``: a (2, n) array of distances below and above each
    estimate, NaN (nothing drawn) where the interval is missing or rests on fewer than
    ``min_clusters`` clusters. With ``figure``, the bars are counted on it
    (``figure.intervals``: drawn, and withheld for an estimate that has none)."""
    estimate, low, high = (scale * _floats(v) for v in (estimate, low, high))
    errors = np.vstack([estimate - low, high - estimate])
    errors[:, ~np.isfinite(errors).all(axis=0)] = np.nan  # one bound missing: no interval
    small = _withheld(n_clusters, min_clusters)
    if small.size:
        errors[:, small] = np.nan
    if figure is not None:
        shown = np.isfinite(estimate)
        drawn = int((np.isfinite(errors).all(axis=0) & shown).sum())
        figure.intervals.drawn += drawn
        figure.intervals.withheld += int(shown.sum()) - drawn
        figure.intervals.min_clusters = min_clusters
    return errors


def mark_small_samples(
    ax: Axes,
    x: Sequence[float],
    y: Sequence[float],
    n_clusters: Sequence[float] | None,
    *,
    min_clusters: int = MIN_CLUSTERS,
    horizontal: bool = False,
) -> list[Text]:
    """Write "n = 2 clusters" beside every estimate below the minimum (its bar is withheld)."""
    if n_clusters is None:
        return []
    small = _withheld(n_clusters, min_clusters)
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
    ax: Axes, n_clusters: Sequence[float] | None, *, min_clusters: int = MIN_CLUSTERS
) -> bool:
    """When every estimate of the axes is below the minimum, one note says so ("no intervals:
    n = 3 clusters each, fewer than 5") instead of a label on every point. The note is a line
    under the axes' title (set the title first), never over the data. Returns whether it wrote
    the note (then the caller marks no point)."""
    if n_clusters is None:
        return False
    counts = _floats(n_clusters)
    counts = counts[np.isfinite(counts)]
    if not counts.size or not _withheld(counts, min_clusters).all():
        return False
    low, high = int(counts.min()), int(counts.max())
    n = f"{low}" if low == high else f"{low}-{high}"
    unit = "cluster" if high == 1 else "clusters"
    note = f"no intervals: n = {n} {unit} each, fewer than {min_clusters}"
    ax.set_title("\n".join(t for t in (ax.get_title(), note) if t), fontsize=8)
    return True


def label_bars_without_interval(ax: Axes, bars, errors: np.ndarray, fmt: str = "{:.0f}") -> None:
    """Print the value on each bar that has no error bar (withheld, or none), so a bar of 0 is
    not read as a missing one; a bar with an interval needs no label (it would sit on the bar)."""
    bare = ~np.isfinite(errors).all(axis=0)
    labels = [
        fmt.format(b.get_height()) if no_bar else "" for b, no_bar in zip(bars, bare, strict=True)
    ]
    ax.bar_label(bars, labels=labels, fontsize=6, padding=1)


def note_no_data(ax: Axes, what: str = "no estimates in this run") -> None:
    """An empty panel says why it is empty, in its middle (there is no data to cover)."""
    ax.text(0.5, 0.7, what, transform=ax.transAxes, ha="center", va="center", color="dimgrey")


def draw_chance(ax: Axes, chance: float | None, *, label: str | None = None) -> bool:
    """A dotted line at chance (in the axis' units, e.g. 33.3 for 1/3 in percent); nothing when
    there is no chance level (``None``/NaN). Returns whether a line was drawn."""
    if chance is None or not np.isfinite(float(chance)):
        return False
    ax.axhline(float(chance), **CHANCE_STYLE, label=label or f"chance ({chance:.1f})")
    return True


def chance_level(table: pd.DataFrame) -> float | None:
    """The table's ``chance`` column as one value (None when absent or empty). A figure draws
    one line, so differing chance levels (mixed numbers of options) are averaged."""
    if "chance" not in getattr(table, "columns", ()):
        return None
    values = _floats(table["chance"])
    values = values[np.isfinite(values)]
    return float(values.mean()) if values.size else None


def percent_axis(ax: Axes, values: Sequence[float]) -> None:
    """A percent y axis fitted to the data (interval ends included): from 0 to a round number
    a little above the largest value, at most 100, so rates below 10% are not drawn flat on a
    0-100 axis."""
    finite = _floats(values)
    finite = finite[np.isfinite(finite)]
    top = float(finite.max()) if finite.size else 0.0
    step = 10.0 if top > 40 else 5.0
    ax.set_ylim(-0.02 * max(top, 5.0), min(102.0, max(step, step * np.ceil(1.08 * top / step))))


def legend_outside(ax: Axes, **kwargs) -> None:
    """The axes' legend to the right of it, so no entry covers data."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, **kwargs)


def footnote(fig: matplotlib.figure.Figure, text: str) -> None:
    """A line of explanation under the figure (codes, what the bars are), wrapped to fit."""
    fig.supxlabel(text, fontsize=7, wrap=True)


def _label_figure(fig: matplotlib.figure.Figure, profile: Profile) -> None:
    label = output_label(profile)
    current = fig.get_suptitle()
    if label not in current:
        fig.suptitle(f"{current} [{label}]".strip() if current else label)


def save_figure(
    fig: matplotlib.figure.Figure,
    name: str,
    *,
    profile: Profile,
    caption: str,
    notebook: str,
    intervals: str | None = None,
    dpi: int = DPI,
    source: ReleasedSource | None = None,
) -> SavedFigure:
    """Write ``<name>.png``, ``<name>.pdf`` and ``<name>.provenance.json`` as one set (all or
    none, the sidecar last with the hashes of the others) and return it for the notebook to
    show. ``intervals`` says what the figure's error bars are ("95% intervals, percentile
    bootstrap resampling templates"); the caption then gets the sentence
    :meth:`IntervalCount.sentence` makes of it from the bars the figure drew, so a caption
    never promises bars that are not there. A figure of other people's released results
    (``source``) is titled with their label, not the profile's."""
    if source is None:
        _label_figure(fig, profile)
    else:
        fig.suptitle(f"{fig.get_suptitle()} [{source.label()}]".strip())
    count = getattr(fig, "intervals", None)
    if intervals is not None and isinstance(count, IntervalCount):
        caption = " ".join(part for part in (caption.rstrip(), count.sentence(intervals)) if part)

    def writer(fmt: str, meta: dict[str, None]) -> Callable[[Path], None]:
        def write(path: Path) -> None:
            fig.savefig(path, format=fmt, dpi=dpi, bbox_inches="tight", metadata=meta)

        return write

    files = write_output_set(
        _figure_dir(profile) / name,
        {"png": writer("png", _PNG_META), "pdf": writer("pdf", _PDF_META)},
        profile,
        notebook=notebook,
        caption=caption,
        source=source,
    )
    return SavedFigure(name, files, caption, f"figures/{profile.name}")
