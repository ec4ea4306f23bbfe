"""Figure writer: PNG + PDF under ``figures/<profile>/`` with a provenance sidecar.

Sim-made figures get the synthetic label in their title. Metadata that varies between runs
(creation dates, software strings) is left out so the files are reproducible.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg", force=False)
import matplotlib.pyplot as plt  # noqa: E402

from deliberation import paths  # noqa: E402
from deliberation.atomic import atomic_path  # noqa: E402
from deliberation.params import Profile  # noqa: E402
from deliberation.provenance import SYNTHETIC_LABEL, write_sidecar  # noqa: E402

_PNG_META = {"Software": None}
_PDF_META = {"Creator": None, "Producer": None, "CreationDate": None}


def figure_dir(profile: Profile) -> Path:
    return paths.output_root() / "figures" / profile.name


def label_figure(fig: plt.Figure, profile: Profile) -> None:
    if not profile.synthetic:
        return
    current = fig._suptitle.get_text() if fig._suptitle is not None else ""
    if SYNTHETIC_LABEL not in current:
        fig.suptitle(f"{current} [{SYNTHETIC_LABEL}]".strip() if current else SYNTHETIC_LABEL)


def save_figure(
    fig: plt.Figure, name: str, *, profile: Profile, caption: str, notebook: str, dpi: int = 150
) -> dict[str, Path]:
    """Write ``<name>.png``, ``<name>.pdf`` and ``<name>.provenance.json``."""
    label_figure(fig, profile)
    stem = figure_dir(profile) / name
    written: dict[str, Path] = {}
    for fmt, meta in (("png", _PNG_META), ("pdf", _PDF_META)):
        target = stem.with_suffix(f".{fmt}")
        with atomic_path(target) as tmp:
            fig.savefig(tmp, format=fmt, dpi=dpi, bbox_inches="tight", metadata=meta)
        written[fmt] = target
    written["provenance"] = write_sidecar(
        stem, profile, notebook=notebook, caption=caption, files=list(written.values())
    )
    return written
