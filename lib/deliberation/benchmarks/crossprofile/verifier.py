"""The CrossProfile verifier: proves every template's answer key and format, and reports the
bank's shape. The rules are in :mod:`.rules`, the report records and tables in :mod:`.findings`;
this module walks the files, applies both, and loads a verified bank (:func:`load_bank`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from pathlib import Path

from deliberation.benchmarks.crossprofile.errors import TemplateError, Violation
from deliberation.benchmarks.crossprofile.findings import (  # noqa: F401  (the verifier's public names)
    FactLength,
    VerificationReport,
    correct_positions,
    format_report,
    length_by_role,
    signature_table,
    source_words_by_role,
    template_layouts,
)
from deliberation.benchmarks.crossprofile.loader import (
    bank_dir,
    display_name,
    read_template,
    template_files,
)
from deliberation.benchmarks.crossprofile.rules import (  # noqa: F401
    mention_count,
    mentions,
    sentence_problems,
    verify_bank,
    verify_template,
    warnings_for,
    word_count,
)
from deliberation.benchmarks.crossprofile.schema import Template
from deliberation.inference.tokens import count_tokens

log = logging.getLogger(__name__)


def verify_paths(
    paths: Iterable[Path] | None = None, *, composition: bool | None = None
) -> VerificationReport:
    """Verify template files and directories (default: the whole shipped bank).

    ``composition`` (60 main + 10 pilot, 12 domains x 5) defaults to True when ``paths`` is
    None (the whole bank) and False when files or folders are named.
    """
    start = time.perf_counter()
    if composition is None:
        composition = paths is None
    files = template_files([bank_dir()] if paths is None else paths)
    violations: list[Violation] = []
    warnings: list[Violation] = []
    lengths: list[FactLength] = []
    loaded: list[tuple[str, Template]] = []
    failed: list[str] = []
    for path in files:
        name = display_name(path)
        template, problems = read_template(path)
        if template is not None:
            problems = verify_template(template, name, path)
            loaded.append((name, template))
            warnings += warnings_for(template, name)
            lengths += [
                FactLength(template.id, f.id, f.role, word_count(f.text), count_tokens(f.text))
                for f in template.facts
            ]
        violations += problems
        if problems:
            failed.append(name)
    bank_problems = verify_bank(loaded, composition=composition)
    violations += bank_problems
    failed += sorted({v.file for v in bank_problems} - set(failed))
    return VerificationReport(
        files=tuple(display_name(p) for p in files),
        templates=tuple(t for _, t in loaded),
        violations=tuple(violations),
        warnings=tuple(warnings),
        lengths=tuple(lengths),
        composition_checked=composition,
        seconds=time.perf_counter() - start,
        failed_files=tuple(failed),
    )


def load_bank(directory: Path | None = None, *, include_pilot: bool = True) -> list[Template]:
    """Load and verify every template in ``directory`` (default: the shipped bank), sorted by id.

    Raises :class:`TemplateError` listing every violation if any template breaks a rule, so
    tasks are never derived from an unverified template. (It lives here, not in the loader,
    so that the loader only parses and the verifier builds on it: no import cycle.)
    """
    directory = bank_dir() if directory is None else Path(directory)
    report = verify_paths([directory], composition=False)
    if report.violations:
        raise TemplateError(report.violations)
    if not report.templates:
        raise TemplateError([Violation(display_name(directory), "bank", "no template files")])
    templates = sorted(report.templates, key=lambda t: t.id)
    log.debug("loaded %d templates from %s", len(templates), directory)
    return [t for t in templates if include_pilot or not t.pilot]
