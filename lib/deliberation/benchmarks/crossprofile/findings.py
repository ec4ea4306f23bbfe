"""What the CrossProfile verifier found, as records and tables: violations fail, the rest
(length by role, position of the correct option, source words by role, the bank's signature
table and each template's layout) is reported; :func:`format_report` is the command's output."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import pandas as pd

from deliberation.benchmarks.crossprofile import design, wording
from deliberation.benchmarks.crossprofile.errors import Violation
from deliberation.benchmarks.crossprofile.schema import ROLES, Template

N_OPTIONS = 3


@dataclass(frozen=True)
class FactLength:
    """Length of one fact text, for the by-role report."""

    template: str
    fact: str
    role: str
    words: int
    tokens: int


@dataclass(frozen=True)
class VerificationReport:
    """Everything the verifier found: violations fail, the rest is reported."""

    files: tuple[str, ...]
    templates: tuple[Template, ...]
    violations: tuple[Violation, ...]
    warnings: tuple[Violation, ...] = ()
    lengths: tuple[FactLength, ...] = ()
    composition_checked: bool = False
    seconds: float = 0.0
    failed_files: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not self.violations


def length_by_role(report: VerificationReport) -> pd.DataFrame:
    """Words and tokens per fact text by role (n, mean, min, max): roles should match in mean."""
    frame = pd.DataFrame(
        [vars(x) for x in report.lengths], columns=list(FactLength.__annotations__)
    )
    if frame.empty:
        return pd.DataFrame(columns=["role", "n", "words_mean", "words_min", "words_max"])
    table = frame.groupby("role", sort=False).agg(
        n=("words", "size"),
        words_mean=("words", "mean"),
        words_min=("words", "min"),
        words_max=("words", "max"),
        tokens_mean=("tokens", "mean"),
        tokens_min=("tokens", "min"),
        tokens_max=("tokens", "max"),
    )
    order = [r for r in ROLES if r in table.index]
    return table.loc[order].round(2).reset_index()


def correct_positions(report: VerificationReport) -> pd.DataFrame:
    """How many templates put the correct option at index 0, 1, 2 of ``options`` (main, pilot)."""
    rows = defaultdict(lambda: {"main": 0, "pilot": 0})
    for t in report.templates:
        if t.correct_position is not None:
            rows[t.correct_position]["pilot" if t.pilot else "main"] += 1
    frame = pd.DataFrame(
        [{"position": p, **rows[p]} for p in range(N_OPTIONS)],
        columns=["position", "main", "pilot"],
    )
    return frame


def source_words_by_role(report: VerificationReport) -> pd.DataFrame:
    """Share of support and decoy facts citing a source (audit, records, ...): the two roles
    should cite sources about equally often (old bank: 36% vs 19%)."""
    rows = []
    for role in ("support", "decoy"):
        facts = [f for t in report.templates for f in t.facts if f.role == role]
        cited = sum(wording.cites_source(f.text) for f in facts)
        rows.append(
            {
                "role": role,
                "n": len(facts),
                "cite a source": cited,
                "share": round(cited / len(facts), 3) if facts else float("nan"),
            }
        )
    return pd.DataFrame(rows)


def signature_table(report: VerificationReport) -> pd.DataFrame:
    """The bank's signature table: each layout, how many templates use it (main and pilot
    apart), and how many put the key in each of its slots."""
    return pd.DataFrame(design.signature_table(report.templates))


def template_layouts(report: VerificationReport) -> pd.DataFrame:
    """Per template: the key's slot and the slots in listed order (bank v5), or its bank-v4
    layout while the rewrite is under way."""
    rows = []
    for t in report.templates:
        v4 = design.v4_layout(t) if design.key_slot(t) is None else None
        rows.append(
            {
                "template": t.id,
                "key slot": design.key_slot(t) or "-",
                "listed order": design.slot_order(t) or "-",
                "bank-v4 layout C/X/Y": "/".join(map(str, v4)) if v4 else "-",
            }
        )
    return pd.DataFrame(
        rows, columns=["template", "key slot", "listed order", "bank-v4 layout C/X/Y"]
    )


def format_report(report: VerificationReport, *, details: bool = True) -> str:
    """The verifier's human-readable output: violations, then (optionally) the reported tables."""
    lines = [str(v) for v in report.violations]
    if details:
        if report.warnings:
            lines.append(f"\nwarnings (reported, not failed): {len(report.warnings)}")
            lines += [f"  {w}" for w in report.warnings]
        if report.lengths:
            lines.append("\nfact length by role (words; tokens by deliberation.inference.tokens):")
            lines.append(length_by_role(report).to_string(index=False))
        if report.templates:
            lines.append("\nposition of the correct option in `options`:")
            lines.append(correct_positions(report).to_string(index=False))
            lines.append("\nsupport and decoy facts citing a source (should be about equal):")
            lines.append(source_words_by_role(report).to_string(index=False))
            lines.append(
                "\nsignature table: per option (on-topic facts, off-topic facts, summed "
                "off-topic tone); bank v5 puts the key in E, P and N a third of the time each:"
            )
            lines.append(signature_table(report).to_string(index=False))
            lines.append("\nthe key's slot and the slots in listed order, per template:")
            lines.append(template_layouts(report).to_string(index=False))
    scope = "bank composition checked" if report.composition_checked else "composition not checked"
    status = (
        "OK"
        if report.ok
        else f"FAILED: {len(report.violations)} violations in {len(report.failed_files)} files"
    )
    lines.append(
        f"\nverified {len(report.files)} template files ({scope}) in {report.seconds:.2f}s: {status}"
    )
    return "\n".join(lines)
