"""Table writer: CSV + Markdown (+ LaTeX) under ``tables/<profile>/`` with a provenance sidecar.

The Markdown and LaTeX carry the caption, and for sim-made tables the synthetic label; the CSV
stays plain data (its sidecar carries the label).
"""

from __future__ import annotations

import functools
from pathlib import Path

import pandas as pd

from deliberation import paths
from deliberation.params import Profile
from deliberation.provenance import label_caption, write_output_set


def table_dir(profile: Profile) -> Path:
    return paths.output_root() / "tables" / profile.name


def write_table(
    frame: pd.DataFrame,
    name: str,
    *,
    profile: Profile,
    caption: str,
    notebook: str,
    latex: bool = True,
    markdown: bool = True,
    float_format: str = "%.4g",
    uses_model: bool = True,
) -> dict[str, Path]:
    """Write ``<name>.csv``, ``.md``, optionally ``.tex``, and ``<name>.provenance.json`` as one
    set: all or none, the sidecar last with the hashes of the others.

    ``markdown=False`` (with ``latex=False``) writes the CSV alone: for the rows a notebook
    analysed, which are data to re-analyse, not a table to read.

    ``uses_model=False`` is for tables that describe a benchmark and involve no model call
    (the same under every profile); their sidecar says so instead of naming a model.
    """
    stem = table_dir(profile) / name
    full_caption = label_caption(caption, profile, uses_model=uses_model)
    texts = {"csv": frame.to_csv(index=False, lineterminator="\n", float_format=float_format)}
    if markdown:
        texts["md"] = (
            f"**{full_caption}**\n\n"
            f"{frame.to_markdown(index=False, floatfmt=float_format.lstrip('%'))}\n"
        )
    if latex:
        texts["tex"] = frame.to_latex(
            index=False,
            caption=full_caption,
            label=f"tab:{name}",
            float_format=float_format.__mod__,
        )
    return write_output_set(
        stem,
        {suffix: functools.partial(_write_text, text=text) for suffix, text in texts.items()},
        profile,
        notebook=notebook,
        caption=caption,
        uses_model=uses_model,
    )


def _write_text(path: Path, *, text: str) -> None:
    path.write_text(text, encoding="utf-8")
