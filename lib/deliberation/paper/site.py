"""``make report``: a static HTML site of one profile's run under ``build/report/<profile>/``.

``index.html`` links every executed notebook (converted with nbconvert; a failed run's partial
notebook is listed as failed; a notebook whose model calls failed is listed as incomplete, with
the count and first error, at the top of the index and on its page), every figure (PNG shown, PDF
linked), every table (a page per table from its CSV, with the CSV, Markdown and LaTeX files
linked), ``papers.html``, the papers' headline numbers beside the sim's and this profile's
(``deliberation compare --papers``), and ``power.html``, each preregistered test's power against
grid size (``deliberation power``; synthetic data with the effects planted). Every page says which profile made it and whether it is
synthetic, in a banner at its top. The site is self-contained: no script, font or style is
fetched from the network, so it opens offline and from ``file://``. Every table is checked
against its provenance sidecar first, and a damaged one is refused, naming it
(:mod:`deliberation.results.published_tables`).
"""

from __future__ import annotations

import html
import json
import shutil
from pathlib import Path

import pandas as pd

from deliberation.io import paths
from deliberation.io.atomic import atomic_write_text
from deliberation.publish.pages import CSS, page, run_label
from deliberation.publish.tables import SOURCE_COLUMN
from deliberation.results.published_tables import check_table_folder


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


def _papers_page(profile: str) -> str:
    """The papers' headline numbers beside the sim's and this profile's, one row per headline
    (``deliberation compare --papers``): what a reader of a run asks first."""
    from deliberation.results.side_by_side import compare_with_papers, papers_label

    profiles = list(dict.fromkeys(["sim", profile]))
    synthetic = {p: run_label(p).synthetic for p in profiles}
    comparison = compare_with_papers(profiles, synthetic)
    return page("Papers side by side", papers_label(comparison), comparison.html(), up="")


def _power_page(profile_arg: str, label, folder: Path) -> str:
    """``power.html``: each preregistered test's power against grid size (``power.png``) and
    the table of ``deliberation power`` (no plan: its calls and cost need minutes). The effects
    are planted in synthetic data, so the page says so; panels whose variance comes from the
    sim's rows say that too."""
    from deliberation.paper.power import CURVE_SIZES, power_curves_figure, run_power
    from deliberation.profiles.model_label import SYNTHETIC_LABEL

    rows, frame, lines = run_power(profile_arg, plan=False, curve_sizes=CURVE_SIZES)
    from_sim = any(r.spread_kind == "sim" for r in rows) or label.synthetic
    title = f"Power by grid size, profile {label.profile}: effects planted in synthetic data"
    if from_sim:
        title += f"; variance from the sim [{SYNTHETIC_LABEL}]"
    fig = power_curves_figure(rows, title=title)
    fig.savefig(folder / "power.png", dpi=110, metadata={"Software": None})
    notes = [line.removeprefix("- ") for line in lines[1:] if not line.startswith("|")]
    body = (
        f"<p>{html.escape(lines[0])}. Recompute with <code>deliberation power"
        f" {html.escape(label.profile)}</code> (adds each recommendation's calls and cost).</p>"
        f'<p><img src="power.png" alt="{html.escape(title)}"></p>'
        + frame.drop(columns=["calls", "cost"]).to_html(index=False, na_rep="", border=0)
        + "<ul>"
        + "".join(f"<li>{html.escape(n)}</li>" for n in notes)
        + "</ul>"
    )
    return page("Power of the preregistered tests", label, body, up="")


def build_report(profile_arg: str, *, out: Path | None = None, power: bool = True) -> Path:
    """Write the site and return its ``index.html``. The folder is rebuilt from scratch (in a
    temporary folder renamed into place), so a stale page never survives. ``power``: with the
    power page (``deliberation power``'s simulation, ~20 s)."""
    label = run_label(profile_arg)
    profile = label.profile
    executed = paths.build_dir() / "executed" / profile
    root = paths.output_root()
    check_table_folder(root / "tables" / profile)  # a damaged table is refused, naming it
    target = Path(out) if out is not None else paths.build_dir() / "report" / profile
    staging = target.with_name(f".tmp-{target.name}")
    shutil.rmtree(staging, ignore_errors=True)
    for sub in ("notebooks", "figures", "tables"):
        (staging / sub).mkdir(parents=True)
    (staging / "style.css").write_text(
        CSS + _highlight_css(), encoding="utf-8", errors="backslashreplace"
    )

    notebooks = sorted(p for p in executed.glob("*.ipynb") if not p.name.startswith(".tmp-"))
    notebook_items = []
    incomplete_notes = []
    for path in notebooks:
        failed = path.name.startswith("FAILED-")
        name = path.stem
        notebook_page = staging / "notebooks" / f"{name}.html"
        incomplete = "" if failed else _incomplete(executed / f"{name}.inputs.json")
        warning = f'<p class="failed"><b>{html.escape(incomplete)}</b></p>' if incomplete else ""
        notebook_page.write_text(
            page(name, label, warning + _notebook_body(path), up="../"),
            encoding="utf-8",
            errors="backslashreplace",
        )
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
        frame = pd.read_csv(csv).drop(
            columns=[SOURCE_COLUMN], errors="ignore"
        )  # the banner says it
        body = f"<p>{html.escape(caption)}</p><p>files: {' · '.join(links)}</p>" + frame.to_html(
            index=False, na_rep="", border=0
        )
        (staging / "tables" / f"{stem}.html").write_text(
            page(stem, label, body, up="../"), encoding="utf-8", errors="backslashreplace"
        )
        table_items.append(
            f'<li><a href="tables/{stem}.html">{html.escape(stem)}</a> — {html.escape(caption)}</li>'
        )

    (staging / "papers.html").write_text(
        _papers_page(profile), encoding="utf-8", errors="backslashreplace"
    )
    power_items = ["<li>not built (--no-power)</li>"]
    if power:
        (staging / "power.html").write_text(
            _power_page(profile_arg, label, staging), encoding="utf-8", errors="backslashreplace"
        )
        power_items = [
            '<li><a href="power.html">power against grid size per test, and the grid that'
            " reaches 80% (synthetic data with the effects planted)</a></li>"
        ]

    replies_body, reply_items = _replies_body(profile_arg)
    (staging / "replies.html").write_text(
        page("Replies", label, replies_body, up=""), encoding="utf-8", errors="backslashreplace"
    )

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
    index = page(
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
        + section("Power", power_items)
        + section('Replies: <a href="replies.html">a sample per stage</a>', reply_items),
    )
    atomic_write_text(staging / "index.html", index)
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging.rename(target)
    return target / "index.html"
