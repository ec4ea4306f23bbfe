"""A problem found in a template file, named by file and fact id (or field path)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Violation:
    """One rule broken by one template: ``<file>: <where>: <message>``.

    ``where`` is a fact id (``s4``), a fact id with a field (``i1.attribute``) or a field
    path (``options``, ``facts[3].tone``); bank-wide problems use ``bank``.
    """

    file: str
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.where}: {self.message}"


class TemplateError(ValueError):
    """Raised when template files break the format; carries every violation, not just the first."""

    def __init__(self, violations: Sequence[Violation]):
        self.violations = tuple(violations)
        lines = [str(v) for v in self.violations[:20]]
        if len(self.violations) > 20:
            lines.append(f"... and {len(self.violations) - 20} more")
        super().__init__("\n".join(lines) or "invalid template")
