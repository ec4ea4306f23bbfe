"""``deliberation compare P1 P2 ...``: the headline numbers of several profiles side by side.

The headline numbers are the tables the claims tables of ``figures/README.md`` name (one claim
per file, both papers), read from each profile's published ``tables/<profile>/<name>.csv``:
nothing is recomputed. A table takes part when it reports intervals: a ``low``/``high`` column
pair (or ``<kind>_low``/``<kind>_high``, the first pair wins). Its value is ``estimate`` or
``accuracy``, else the nearest column before the interval that is not a test statistic
(``p_value``, ``se``, ``z``); the text columns before the value identify a row (policy, cell,
label...), with the numeric descriptors ``budget``, ``item_limit``, ``k`` and ``r`` (counts
such as ``n_rows`` or ``decisions`` differ between profiles, so they never identify a row).
Rows are matched across profiles by those columns, read as text, so ``0.6`` meets ``0.6``. A
table a profile has not made is listed as missing, never filled in; a damaged one (not what its
provenance sidecar vouches for, or a number missing where one is required) is refused, naming it
(:mod:`deliberation.results.published_tables`).
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from deliberation.io import paths
from deliberation.results.published_tables import (  # noqa: F401 (part of this module's API)
    NUMERIC_KEYS,
    STATISTICS,
    VALUE_COLUMNS,
    Layout,
    interval_layout,
    read_published_table,
)
from deliberation.stats.small_samples import NOTE_COLUMN

_CLAIM_ROW = re.compile(
    r"^\|\s*(?P<claim>[^|]+?)\s*\|[^|]*\|\s*`tables/<profile>/(?P<table>[^`/]+)\.csv`\s*\|"
    r"\s*(?P<notebook>[^|]+?)\s*\|"
)


@dataclass(frozen=True)
class Headline:
    """A claim's table: its file stem, the claim it shows and the notebook that makes it."""

    table: str
    claim: str
    notebook: str


def headline_tables(readme: Path | None = None) -> list[Headline]:
    """Every table the claims tables of ``figures/README.md`` name, in their order (the rows
    tables excepted); a row that says ``(same, ...)`` inherits the claim above it."""
    readme = readme or paths.repo_root() / "figures" / "README.md"
    found, claim = [], ""
    for line in readme.read_text(encoding="utf-8").splitlines():
        if line.startswith("| claim") or not line.startswith("|"):
            continue
        row = re.match(r"^\|\s*([^|]+?)\s*\|", line)
        if row and not row.group(1).startswith("(same"):
            claim = row.group(1)
        match = _CLAIM_ROW.match(line)
        if match and not match["table"].endswith("_rows"):  # rows: for re-analysis
            found.append(Headline(match["table"], claim, match["notebook"]))
    return found


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def _format_interval(estimate: float, low: float, high: float, note: str = "") -> str:
    if pd.isna(estimate):
        return "-"
    if pd.isna(low) or pd.isna(high):
        return f"{_number(estimate)} ({note})" if note else _number(estimate)
    return f"{_number(estimate)} [{_number(low)}, {_number(high)}]"


@dataclass
class _Block:
    """One headline table across the profiles: a frame of key columns + one column each."""

    headline: Headline
    frame: pd.DataFrame
    missing: list[str] = field(default_factory=list)  # profiles without this table


@dataclass
class _Comparison:
    profiles: list[str]
    synthetic: dict[str, bool]
    blocks: list[_Block]
    without_intervals: list[str] = field(default_factory=list)  # named tables, no low/high

    def lines(self) -> list[str]:
        kinds = ", ".join(
            f"{p} ({'synthetic' if self.synthetic[p] else 'model'})" for p in self.profiles
        )
        out = [f"compare: {kinds}; estimate [95% interval] from tables/<profile>/"]
        if any(self.synthetic.values()):
            out.append("synthetic columns are the sim mechanism model: not evidence about models")
        for block in self.blocks:
            out += [
                "",
                f"== {block.headline.table} ({block.headline.notebook}): {block.headline.claim}",
            ]
            if not block.frame.empty:
                out.append(block.frame.to_markdown(index=False))
            if block.missing:
                out.append(f"not made for: {', '.join(block.missing)} (make paper PROFILE=...)")
        if self.without_intervals:
            out += ["", f"no intervals, not compared: {', '.join(self.without_intervals)}"]
        return out


def _load(profile: str, table: str) -> pd.DataFrame | None:
    """The published table (as text), or None; checked against its sidecar and its columns
    first (:mod:`deliberation.results.published_tables`): a damaged one is refused."""
    path = paths.output_root() / "tables" / profile / f"{table}.csv"
    if not path.is_file():
        return None
    return read_published_table(path)


def _cells(frame: pd.DataFrame, layout: Layout) -> pd.Series:
    number = {
        c: pd.to_numeric(frame[c], errors="coerce") for c in (layout.value, layout.low, layout.high)
    }
    notes = frame[NOTE_COLUMN] if NOTE_COLUMN in frame.columns else [""] * len(frame)
    cells = [
        _format_interval(e, lo, hi, note)
        for e, lo, hi, note in zip(
            number[layout.value], number[layout.low], number[layout.high], notes, strict=True
        )
    ]
    keys = list(layout.keys)
    return pd.Series(cells, index=pd.MultiIndex.from_frame(frame[keys]))


def _synthetic(profile: str) -> bool:
    """As the report labels it; for tables whose profile file is not here (copied from another
    machine), from their provenance sidecars."""
    import json

    from deliberation.profiles.profile import ProfileError
    from deliberation.publish.pages import run_label

    try:
        return run_label(profile).synthetic
    except ProfileError:
        sidecars = (paths.output_root() / "tables" / profile).glob("*.provenance.json")
        return any(json.loads(p.read_text()).get("synthetic") for p in sidecars)


def compare_profiles(
    profiles: Sequence[str], *, tables: Sequence[str] | None = None, readme: Path | None = None
) -> _Comparison:
    """The headline tables of ``profiles`` side by side (``tables``: only these stems)."""
    profiles = list(dict.fromkeys(profiles))
    synthetic = {p: _synthetic(p) for p in profiles}
    wanted = headline_tables(readme)
    if tables:
        wanted = [h for h in wanted if h.table in set(tables)]
    comparison = _Comparison(profiles, synthetic, [])
    for headline in wanted:
        frames = {p: _load(p, headline.table) for p in profiles}
        present = {p: f for p, f in frames.items() if f is not None}
        layouts = {p: interval_layout(f) for p, f in present.items()}
        layout = next((x for x in layouts.values() if x is not None), None)
        if present and layout is None:
            comparison.without_intervals.append(headline.table)
            continue
        missing = [p for p in profiles if p not in present]
        if layout is None:  # no profile made it
            comparison.blocks.append(_Block(headline, pd.DataFrame(), missing))
            continue
        columns = {}
        for profile, frame in present.items():
            if layouts[profile] != layout:
                missing.append(profile)  # another layout: cannot be matched row by row
                continue
            series = _cells(frame, layout)
            columns[profile] = series[~series.index.duplicated()]
        order = list(dict.fromkeys(k for series in columns.values() for k in series.index))
        joined = pd.DataFrame({p: s.reindex(order) for p, s in columns.items()}).fillna("-")
        joined.index = pd.MultiIndex.from_tuples(order, names=list(layout.keys))
        comparison.blocks.append(_Block(headline, joined.reset_index(), missing))
    return comparison


def _comparison_html(comparison: _Comparison) -> str:
    """The comparison as the body of a report page."""
    parts = [
        "<p>Estimate [95% interval] of every headline table (the claims tables of"
        " <code>figures/README.md</code>), read from each profile's <code>tables/</code>.</p>"
    ]
    for block in comparison.blocks:
        head = html.escape(f"{block.headline.table} ({block.headline.notebook})")
        parts.append(f"<h2>{head}</h2><p>{html.escape(block.headline.claim)}</p>")
        if not block.frame.empty:
            parts.append(block.frame.to_html(index=False, border=0))
        if block.missing:
            parts.append(f"<p>not made for: {html.escape(', '.join(block.missing))}</p>")
    return "".join(parts)


def write_comparison_page(comparison: _Comparison, out: Path | None = None) -> Path:
    """``build/report/compare-<P1>-<P2>.../index.html`` (self-contained, like ``make report``)."""
    from deliberation.io.atomic import atomic_write_text
    from deliberation.publish.pages import CSS, RunLabel, page

    folder = out or paths.build_dir() / "report" / ("compare-" + "-".join(comparison.profiles))
    folder.mkdir(parents=True, exist_ok=True)
    kinds = ", ".join(
        f"{p}: {'synthetic (sim backend)' if comparison.synthetic[p] else 'model output'}"
        for p in comparison.profiles
    )
    label = RunLabel(" vs ".join(comparison.profiles), any(comparison.synthetic.values()), kinds)
    atomic_write_text(folder / "style.css", CSS)
    text = page("Profiles side by side", label, _comparison_html(comparison), up=None)
    atomic_write_text(folder / "index.html", text)
    return folder / "index.html"
