"""Figure writer: PNG + PDF under ``figures/<profile>/`` with a provenance sidecar.

Every model-made figure gets its label in its title (``provenance.output_label``: the synthetic
label on the sim, the model's description on a real model). Metadata that varies between runs
(creation dates, software strings) is left out so the files are reproducible.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg", force=False)
import matplotlib.pyplot as plt

from deliberation.io import paths
from deliberation.profiles.profile import Profile
from deliberation.publish.provenance import ReleasedSource, output_label, write_output_set

_PNG_META = {"Software": None}
_PDF_META = {"Creator": None, "Producer": None, "CreationDate": None}


def figure_dir(profile: Profile) -> Path:
    return paths.output_root() / "figures" / profile.name


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
