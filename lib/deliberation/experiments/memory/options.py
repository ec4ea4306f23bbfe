"""The profile's ``experiments.crossprofile`` and ``experiments.hiddenbench`` sections (one per
registered memory benchmark): the grid of a memory run."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from deliberation.profiles.profile import Strict, distinct_values


class MemoryGridOptions(Strict):
    """The grid of a memory run (``deliberation run crossprofile|hiddenbench``; the command's
    options override it). Policy and tag names are checked when the grid is built."""

    policies: tuple[str, ...] | None = Field(
        None, description="memory policies; none given: every policy the benchmark supports"
    )
    budgets: tuple[Annotated[float, Field(gt=0, le=1)], ...] = Field(
        (0.4, 0.6, 0.8), description="budget fractions r, each in (0, 1]"
    )
    item_limit: int = Field(7, ge=0, description="fixed item count of the control; 0: none")
    tags: tuple[str, ...] = ("keep", "remove", "shuffle")
    templates: Literal["main", "pilot", "all"] | tuple[str, ...] = Field(
        "main",
        description="CrossProfile only: a template set, or a list of template ids (e.g. one or"
        " two per domain) to which every notebook's main and pilot runs are restricted",
    )
    limit: int | None = Field(
        None, gt=0, description="first N templates (CrossProfile) or tasks (HiddenBench)"
    )
    option_order: Literal["rotate", "template"] = Field(
        "rotate",
        description="rotate: options counterbalanced so no position predicts the key;"
        " template: the stored order in every variant (the papers' fixed order)",
    )
    n_resamples: int = Field(
        10_000,
        ge=2,
        description="resamples of the papers' percentile bootstrap, shown beside the cluster-robust t"
        " in the R1-B3, H1-H3, classic-cell and social-proof tables from 20 clusters",
    )

    _distinct_values = field_validator("policies", "budgets", "tags")(distinct_values)

    @field_validator("templates")
    @classmethod
    def _listed_templates(cls, value: str | tuple[str, ...]) -> str | tuple[str, ...]:
        if isinstance(value, tuple):
            if not value:
                raise ValueError("a template list names at least one template id")
            distinct_values(value)
        return value

    def listed_main_templates(self) -> int | None:
        """How many main templates the ``templates`` list names (None: a set, not a list): the
        grid size of every CrossProfile test, which reads main templates only."""
        if not isinstance(self.templates, tuple):
            return None
        from deliberation.benchmarks.crossprofile.memory import verified_bank

        return sum(not t.pilot for t in verified_bank() if t.id in set(self.templates))
