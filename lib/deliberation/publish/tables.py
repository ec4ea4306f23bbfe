"""Table writer: CSV + Markdown (+ LaTeX) under ``tables/<profile>/`` with a provenance sidecar.

The Markdown and LaTeX carry the caption with the output's label (the synthetic label on the
sim, the model's description on a real model: ``provenance.output_label``); the CSV carries it
in its last column, ``source`` (:data:`SOURCE_COLUMN`: "synthetic (sim backend)" on every row
of a sim table), so a CSV read alone still says what made it and stays plain data that any CSV
reader loads (a comment line would not). The CSV keeps full precision for
re-analysis; the Markdown and LaTeX are for reading, so their numbers are rounded
(:data:`_DISPLAY_FLOAT_FORMAT`) and the Markdown escapes ``|`` inside cells so every row renders.
Row dumps (a name ending in ``_rows``: one row per decision, for re-analysis) are CSV only.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pandas as pd

from deliberation.io import paths
from deliberation.profiles.profile import Profile
from deliberation.publish.provenance import (
    ReleasedSource,
    label_caption,
    output_label,
    write_output_set,
)
from deliberation.stats.small_samples import MIN_CLUSTERS, inference_leaks

_DISPLAY_FLOAT_FORMAT = "%.4g"  # Markdown and LaTeX: four significant digits (62.92, 0.0123)
_ROWS_SUFFIX = "_rows"  # tables of rows for re-analysis: CSV only
SOURCE_COLUMN = "source"  # the CSV's last column: what made the table (provenance.output_label)


def table_dir(profile: Profile) -> Path:
    return paths.output_root() / "tables" / profile.name


def _markdown_cell(value: object) -> object:
    """A cell that cannot break a Markdown table row: ``|`` escaped, line breaks as spaces."""
    if isinstance(value, str):
        return value.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")
    return value


def markdown_table(frame: pd.DataFrame, float_format: str = _DISPLAY_FLOAT_FORMAT) -> str:
    """``frame`` as a GitHub Markdown table: strings escaped, floats rounded, missing values
    left blank (not ``nan``)."""
    shown = frame.rename(columns=lambda c: _markdown_cell(str(c)))
    shown = shown.apply(lambda column: column.map(_markdown_cell))
    shown = shown.astype(object).where(shown.notna(), None)
    return shown.to_markdown(index=False, floatfmt=float_format.lstrip("%"), missingval="")


def write_table(
    frame: pd.DataFrame,
    name: str,
    *,
    profile: Profile,
    caption: str,
    notebook: str,
    latex: bool | None = None,
    markdown: bool | None = None,
    float_format: str = "%.4g",
    uses_model: bool = True,
    source: ReleasedSource | None = None,
) -> dict[str, Path]:
    """Write ``<name>.csv``, ``.md``, optionally ``.tex``, and ``<name>.provenance.json`` as one
    set: all or none, the sidecar last with the hashes of the others. The CSV gets the
    :data:`SOURCE_COLUMN` last (what made the table, on every row).

    ``markdown`` and ``latex`` default to True, except for a name ending in ``_rows`` (the rows
    a notebook analysed, which are data to re-analyse, not a table to read): CSV alone, and
    asking for Markdown or LaTeX of one is an error. ``float_format`` is the CSV's precision;
    Markdown and LaTeX show :data:`_DISPLAY_FLOAT_FORMAT`. The frame is written as given: the
    analyses withhold inference below the cluster floor where they compute it
    (:func:`~deliberation.stats.small_samples.withhold_inference`), so what a notebook shows is
    what is written; a table that still shows an interval, p-value, test or standard error
    below the floor, or inference without ``n_clusters``, is refused with a ValueError
    (:func:`~deliberation.stats.small_samples.inference_leaks`), nothing written.

    ``uses_model=False`` is for tables that describe a benchmark and involve no model call
    (the same under every profile); their sidecar says so instead of naming a model.
    ``source`` is for tables made from other people's released results: the caption and the
    sidecar name their models, repository and commit instead of the profile's backend.
    """
    is_rows = name.endswith(_ROWS_SUFFIX)
    if is_rows and (markdown or latex):
        raise ValueError(
            f"table {name!r}: rows for re-analysis are written as CSV only (markdown/latex)"
        )
    markdown = not is_rows if markdown is None else markdown
    latex = not is_rows if latex is None else latex
    leaks = [] if is_rows else inference_leaks(frame, MIN_CLUSTERS)
    if leaks:
        shown = "; ".join(leaks[:3]) + (f" (and {len(leaks) - 3} more)" if len(leaks) > 3 else "")
        raise ValueError(f"table {name!r} shows inference below the cluster floor: {shown}")
    stem = table_dir(profile) / name
    full_caption = label_caption(caption, profile, uses_model=uses_model, source=source)
    if SOURCE_COLUMN in frame.columns:
        raise ValueError(f"table {name!r}: the column {SOURCE_COLUMN!r} is the table writer's")
    labelled = frame.assign(
        **{SOURCE_COLUMN: output_label(profile, uses_model=uses_model, source=source)}
    )
    texts = {"csv": labelled.to_csv(index=False, lineterminator="\n", float_format=float_format)}
    if markdown:
        texts["md"] = f"**{_markdown_cell(full_caption)}**\n\n{markdown_table(frame)}\n"
    if latex:
        texts["tex"] = frame.to_latex(
            index=False,
            caption=full_caption,
            label=f"tab:{name}",
            float_format=_DISPLAY_FLOAT_FORMAT.__mod__,
        )
    return write_output_set(
        stem,
        {suffix: functools.partial(_write_text, text=text) for suffix, text in texts.items()},
        profile,
        notebook=notebook,
        caption=caption,
        uses_model=uses_model,
        source=source,
    )


def _write_text(path: Path, *, text: str) -> None:
    path.write_text(text, encoding="utf-8")
