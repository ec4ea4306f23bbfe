"""HTML pages of the report and the comparison pages: one stylesheet, the provenance banner that
says whose outputs a page shows (synthetic or a model's), and the page skeleton. Its own module so
the build's report (``paper/``) and the comparisons (``results/``) share it without importing each
other."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path

from deliberation.io import paths
from deliberation.profiles.profile import load_profile
from deliberation.publish.provenance import SYNTHETIC_LABEL

CSS = """
body { font-family: system-ui, sans-serif; margin: 0 auto; max-width: 1100px; padding: 0 1.5em 3em; }
.banner { position: sticky; top: 0; padding: .6em 1em; margin: 0 -1.5em 1em; font-weight: 600; }
.banner.synthetic { background: #fff3cd; border-bottom: 2px solid #b58100; }
.banner.model { background: #d9f2e3; border-bottom: 2px solid #1b7f45; }
table { border-collapse: collapse; margin: .5em 0; font-size: 90%; }
th, td { border: 1px solid #ccc; padding: .25em .5em; text-align: right; }
img { max-width: 100%; }
.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(300px, 1fr)); gap: 1em; }
.figures figure { margin: 0; border: 1px solid #ddd; padding: .5em; }
pre { overflow-x: auto; background: #f6f8fa; padding: .5em; }
.failed { color: #a00; }
.cell-input { border-left: 3px solid #8aa; padding-left: .5em; margin-top: 1em; }
details { border: 1px solid #ddd; margin: .4em 0; padding: .3em .6em; }
details.invalid summary, details.failed summary { color: #a00; }
pre { white-space: pre-wrap; }
"""


@dataclass(frozen=True)
class RunLabel:
    profile: str
    synthetic: bool
    text: str

    def banner(self) -> str:
        kind = "synthetic" if self.synthetic else "model"
        return (
            f'<div class="banner {kind}" id="provenance">Profile <code>{html.escape(self.profile)}'
            f"</code> · {html.escape(self.text)}</div>"
        )


def run_label(profile_arg: str) -> RunLabel:
    """Synthetic when the profile is, or when any output's sidecar says so (a real-model
    profile served by serve-sim)."""
    profile = load_profile(profile_arg)
    synthetic = profile.synthetic
    for sidecar in _output_sidecars(profile.name):
        record = json.loads(sidecar.read_text())
        synthetic = synthetic or bool(record.get("synthetic"))
    if synthetic:
        return RunLabel(profile.name, True, f"{SYNTHETIC_LABEL}: not model results")
    return RunLabel(profile.name, False, f"model output ({profile.backend}): {profile.label}")


def _output_sidecars(profile: str) -> list[Path]:
    root = paths.output_root()
    return sorted(
        p
        for kind in ("figures", "tables")
        for p in (root / kind / profile).glob("*.provenance.json")
    )


def page(title: str, label: RunLabel, body: str, *, up: str | None = None) -> str:
    """A page with the provenance banner; ``up`` is the way back to the index (None: this is
    the index)."""
    back = f'<p><a href="{up}index.html">← index</a></p>' if up is not None else ""
    up = up or ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)} · {html.escape(label.profile)}</title>"
        f'<link rel="stylesheet" href="{up}style.css"></head><body>'
        f"{label.banner()}{back}<h1>{html.escape(title)}</h1>{body}</body></html>\n"
    )
