"""``make report``: a static HTML site of one profile's run under ``build/report/<profile>/``.

``index.html`` links every executed notebook (converted with nbconvert; a failed run's partial
notebook is listed as failed; a notebook whose model calls failed is listed as incomplete, with
the count and first error, at the top of the index and on its page), every figure (PNG shown, PDF
linked), every table (a page per table from its CSV, with the CSV, Markdown and LaTeX files
linked) and ``papers.html``, the papers' headline numbers beside the sim's and this profile's
(``deliberation compare --papers``). Every page says which profile made it and whether it is
synthetic, in a banner at its top. The site is self-contained: no script, font or style is
fetched from the network, so it opens offline and from ``file://``.
"""

from __future__ import annotations

import html
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from deliberation import paths
from deliberation.atomic import atomic_write_text
from deliberation.params import load_profile
from deliberation.provenance import SYNTHETIC_LABEL

if TYPE_CHECKING:
    from deliberation.results.side_by_side import PapersComparison

_CSS = """
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
    for sidecar in _sidecars(profile.name):
        record = json.loads(sidecar.read_text())
        synthetic = synthetic or bool(record.get("synthetic"))
    if synthetic:
        return RunLabel(profile.name, True, f"{SYNTHETIC_LABEL}: not model results")
    return RunLabel(profile.name, False, f"model output ({profile.backend}): {profile.label}")


def _sidecars(profile: str) -> list[Path]:
    root = paths.output_root()
    return sorted(
        p
        for kind in ("figures", "tables")
        for p in (root / kind / profile).glob("*.provenance.json")
    )


def _page(title: str, label: RunLabel, body: str, *, up: str | None = None) -> str:
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


def _notebook_body(path: Path) -> str:
    """The executed notebook as HTML (nbconvert's basic template: no network, our own CSS)."""
    import nbformat
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="basic")
    exporter.exclude_input_prompt = True
    exporter.exclude_output_prompt = True
    body, _ = exporter.from_notebook_node(nbformat.read(path, as_version=4))
    return body


def _highlight_css() -> str:
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter().get_style_defs(".highlight")


def _incomplete(record_path: Path) -> str:
    """What a notebook's run record says about failed calls ("" for a complete run)."""
    try:
        record = json.loads(record_path.read_text())
    except (OSError, ValueError):
        return ""
    incomplete = record.get("incomplete")
    if not incomplete:
        return ""
    return (
        f"INCOMPLETE: {incomplete.get('failed_calls')} model calls failed"
        f" (first: {incomplete.get('first_error')})"
    )


def _caption(sidecar: Path) -> str:
    if not sidecar.is_file():
        return ""
    return str(json.loads(sidecar.read_text()).get("caption", ""))


REPLIES_PER_STAGE = 3


def _replies_body(profile_arg: str) -> tuple[str, list[str]]:
    """The replies page (a sample per stage, invalid and failed calls first: what a reader
    wants to see) and the index's links to each stage on it."""
    from deliberation.results.replies import STATES, find_replies

    selection = find_replies(profile_arg, invalid_first=True, per_stage=REPLIES_PER_STAGE)
    if not selection.cache.is_file():
        return "<p>No response cache for this profile: nothing ran yet.</p>", []
    intro = (
        f"<p>Up to {REPLIES_PER_STAGE} calls per stage from <code>"
        f"{html.escape(selection.cache.name)}</code>, invalid and failed ones first, each with its"
        " prompt as sent and the raw reply. More: <code>deliberation replies --profile"
        f" {html.escape(selection.profile)} --stage STAGE --invalid-first --limit N</code>.</p>"
    )
    sections, links = [intro], []
    for number, (stage, counts) in enumerate(selection.matched_by_stage.items()):
        summary = ", ".join(f"{counts[s]} {s}" for s in STATES if counts[s])
        anchor = f"stage-{number}"
        links.append(
            f'<li><a href="replies.html#{anchor}">{html.escape(stage)}</a> ({summary})</li>'
        )
        parts = [f'<h2 id="{anchor}">{html.escape(stage)}</h2><p>{summary}</p>']
        for reply in (r for r in selection.replies if r.stage == stage):
            verdict = reply.verdict
            title = " · ".join(
                x
                for x in (
                    f"task {verdict.tasks[0]}" if verdict.tasks else "",
                    f"{verdict.state}: {verdict.reason}" if verdict.reason else verdict.state,
                )
                if x
            )
            prompt = "".join(
                f"<p>prompt [{html.escape(str(m.get('role')))}]</p>"
                f"<pre>{html.escape(str(m.get('content')))}</pre>"
                for m in reply.messages
            )
            answer = (
                "<p>no reply: the call failed (the next run retries it)</p>"
                if reply.state == "failed"
                else f"<p>reply</p><pre>{html.escape(reply.text)}</pre>"
            )
            parts.append(
                f'<details class="{html.escape(reply.state)}"><summary>{html.escape(title)}'
                f"</summary>{prompt}{answer}</details>"
            )
        sections.append("".join(parts))
    return "".join(sections), links


def papers_label(comparison: PapersComparison) -> RunLabel:
    """The banner of a papers page: synthetic when any column is."""
    kinds = ", ".join(
        f"{p}: {SYNTHETIC_LABEL if comparison.synthetic[p] else 'model output'}"
        for p in comparison.profiles
    )
    profiles = ", ".join(comparison.profiles)
    return RunLabel(f"papers vs {profiles}", any(comparison.synthetic.values()), kinds)


def _papers_page(profile: str) -> str:
    """The papers' headline numbers beside the sim's and this profile's, one row per headline
    (``deliberation compare --papers``): what a reader of a run asks first."""
    from deliberation.results.side_by_side import compare_with_papers

    profiles = list(dict.fromkeys(["sim", profile]))
    synthetic = {p: run_label(p).synthetic for p in profiles}
    comparison = compare_with_papers(profiles, synthetic)
    return _page("Papers side by side", papers_label(comparison), comparison.html(), up="")


def write_papers_page(comparison: PapersComparison, out: Path | None = None) -> Path:
    """``build/report/papers-<P1>-<P2>.../index.html`` (self-contained, like the report)."""
    folder = out or paths.build_dir() / "report" / ("papers-" + "-".join(comparison.profiles))
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(folder / "style.css", _CSS)
    page = _page("Papers side by side", papers_label(comparison), comparison.html(), up=None)
    atomic_write_text(folder / "index.html", page)
    return folder / "index.html"


def build_report(profile_arg: str, *, out: Path | None = None) -> Path:
    """Write the site and return its ``index.html``. The folder is rebuilt from scratch (in a
    temporary folder renamed into place), so a stale page never survives."""
    label = run_label(profile_arg)
    profile = label.profile
    executed = paths.build_dir() / "executed" / profile
    root = paths.output_root()
    target = Path(out) if out is not None else paths.build_dir() / "report" / profile
    staging = target.with_name(f".tmp-{target.name}")
    shutil.rmtree(staging, ignore_errors=True)
    for sub in ("notebooks", "figures", "tables"):
        (staging / sub).mkdir(parents=True)
    (staging / "style.css").write_text(_CSS + _highlight_css())

    notebooks = sorted(p for p in executed.glob("*.ipynb") if not p.name.startswith(".tmp-"))
    notebook_items = []
    incomplete_notes = []
    for path in notebooks:
        failed = path.name.startswith("FAILED-")
        name = path.stem
        page = staging / "notebooks" / f"{name}.html"
        incomplete = "" if failed else _incomplete(executed / f"{name}.inputs.json")
        warning = f'<p class="failed"><b>{html.escape(incomplete)}</b></p>' if incomplete else ""
        page.write_text(_page(name, label, warning + _notebook_body(path), up="../"))
        state = ' <span class="failed">(failed: partial run)</span>' if failed else ""
        if incomplete:
            state = f' <span class="failed">({html.escape(incomplete)})</span>'
            incomplete_notes.append(f"<li>{html.escape(name)}: {html.escape(incomplete)}</li>")
        notebook_items.append(
            f'<li><a href="notebooks/{name}.html">{html.escape(name)}</a>{state}</li>'
        )

    figure_items = []
    for png in sorted((root / "figures" / profile).glob("*.png")):
        shutil.copy2(png, staging / "figures" / png.name)
        pdf = png.with_suffix(".pdf")
        pdf_link = ""
        if pdf.is_file():
            shutil.copy2(pdf, staging / "figures" / pdf.name)
            pdf_link = f' · <a href="figures/{pdf.name}">PDF</a>'
        caption = html.escape(_caption(png.with_name(png.stem + ".provenance.json")))
        figure_items.append(
            f'<figure><a href="figures/{png.name}"><img src="figures/{png.name}"'
            f' alt="{html.escape(png.stem)}"></a><figcaption><b>{html.escape(png.stem)}</b>'
            f"{pdf_link}<br>{caption}</figcaption></figure>"
        )

    table_items = []
    for csv in sorted((root / "tables" / profile).glob("*.csv")):
        stem = csv.stem
        links = []
        for suffix in (".csv", ".md", ".tex"):
            source = csv.with_suffix(suffix)
            if source.is_file():
                shutil.copy2(source, staging / "tables" / source.name)
                links.append(f'<a href="{source.name}">{suffix[1:]}</a>')
        caption = _caption(csv.with_name(stem + ".provenance.json"))
        frame = pd.read_csv(csv)
        body = f"<p>{html.escape(caption)}</p><p>files: {' · '.join(links)}</p>" + frame.to_html(
            index=False, na_rep="", border=0
        )
        (staging / "tables" / f"{stem}.html").write_text(_page(stem, label, body, up="../"))
        table_items.append(
            f'<li><a href="tables/{stem}.html">{html.escape(stem)}</a> — {html.escape(caption)}</li>'
        )

    (staging / "papers.html").write_text(_papers_page(profile))

    replies_body, reply_items = _replies_body(profile_arg)
    (staging / "replies.html").write_text(_page("Replies", label, replies_body, up=""))

    def section(title: str, items: list[str], wrap: str = "ul") -> str:
        content = "".join(items) if items else "<li>none</li>"
        if wrap == "div":
            content = "".join(items) or "<p>none</p>"
            return f'<h2>{title}</h2><div class="figures">{content}</div>'
        return f"<h2>{title}</h2><ul>{content}</ul>"

    alert = ""
    if incomplete_notes:
        alert = (
            '<div class="failed"><h2>Incomplete: model calls failed</h2><p>These notebooks ran'
            " with failed calls; their tables and figures are marked INCOMPLETE and are not"
            " final. The next <code>make paper</code> reruns them, sending only the failed"
            f" calls.</p><ul>{''.join(incomplete_notes)}</ul></div>"
        )
    index = _page(
        f"Paper build: {profile}",
        label,
        alert
        + section("Notebooks", notebook_items)
        + section("Figures", figure_items, wrap="div")
        + section("Tables", table_items)
        + section(
            "Papers",
            ['<li><a href="papers.html">headline numbers: the papers, the sim, this run</a></li>'],
        )
        + section('Replies: <a href="replies.html">a sample per stage</a>', reply_items),
    )
    atomic_write_text(staging / "index.html", index)
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging.rename(target)
    return target / "index.html"
