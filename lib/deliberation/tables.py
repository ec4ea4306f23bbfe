"""Table writer: CSV + Markdown (+ LaTeX) under ``tables/<profile>/`` with a provenance sidecar.

The Markdown and LaTeX carry the caption, and for sim-made tables the synthetic label; the CSV
stays plain data (its sidecar carries the label).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from deliberation import paths
from deliberation.atomic import atomic_write_text
from deliberation.params import Profile
from deliberation.provenance import label_caption, write_sidecar


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
    float_format: str = "%.4g",
    uses_model: bool = True,
) -> dict[str, Path]:
    """Write ``<name>.csv``, ``.md``, optionally ``.tex``, and ``<name>.provenance.json``.

    ``uses_model=False`` is for tables that describe a benchmark and involve no model call
    (the same under every profile); their sidecar says so instead of naming a model.
    """
    stem = table_dir(profile) / name
    full_caption = label_caption(caption, profile, uses_model=uses_model)
    written: dict[str, Path] = {}
    written["csv"] = atomic_write_text(
        stem.with_suffix(".csv"),
        frame.to_csv(index=False, lineterminator="\n", float_format=float_format),
    )
    markdown = frame.to_markdown(index=False, floatfmt=float_format.lstrip("%"))
    written["md"] = atomic_write_text(
        stem.with_suffix(".md"), f"**{full_caption}**\n\n{markdown}\n"
    )
    if latex:
        tex = frame.to_latex(
            index=False,
            caption=full_caption,
            label=f"tab:{name}",
            float_format=float_format.__mod__,
        )
        written["tex"] = atomic_write_text(stem.with_suffix(".tex"), tex)
    written["provenance"] = write_sidecar(
        stem,
        profile,
        notebook=notebook,
        caption=caption,
        files=list(written.values()),
        uses_model=uses_model,
    )
    return written
