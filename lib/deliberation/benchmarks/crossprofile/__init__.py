"""CrossProfile: template schema, loader, verifier, cue audit, ownership variants and tasks.

Templates live in ``templates/crossprofile/<id>.yaml`` (format: ``templates/README.md``);
``deliberation crossprofile verify`` checks them, ``deliberation crossprofile audit`` looks for
surface cues to the answer, and ``deliberation tasks crossprofile`` derives the tasks.
"""

from deliberation.benchmarks.crossprofile.errors import TemplateError, Violation
from deliberation.benchmarks.crossprofile.loader import bank_dir, load_template
from deliberation.benchmarks.crossprofile.schema import DOMAINS, ROLES, Template
from deliberation.benchmarks.crossprofile.scoring import (
    irrelevant_tone,
    net_evidence_lead,
    option_tones,
    score_options,
    tone_lead,
)
from deliberation.benchmarks.crossprofile.tasks import (
    Task,
    TaskFact,
    derive_task,
    derive_tasks,
    read_tasks_jsonl,
    write_tasks_jsonl,
)
from deliberation.benchmarks.crossprofile.variants import (
    AGENTS,
    ALL_VARIANTS,
    CLASSIC,
    OwnershipVariant,
)
from deliberation.benchmarks.crossprofile.verifier import (
    VerificationReport,
    load_bank,
    verify_paths,
)

__all__ = [
    "AGENTS",
    "ALL_VARIANTS",
    "CLASSIC",
    "DOMAINS",
    "ROLES",
    "OwnershipVariant",
    "Task",
    "TaskFact",
    "Template",
    "TemplateError",
    "VerificationReport",
    "Violation",
    "bank_dir",
    "derive_task",
    "derive_tasks",
    "irrelevant_tone",
    "load_bank",
    "load_template",
    "net_evidence_lead",
    "option_tones",
    "read_tasks_jsonl",
    "score_options",
    "tone_lead",
    "verify_paths",
    "write_tasks_jsonl",
]
