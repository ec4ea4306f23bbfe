"""The profile's ``experiments.natural`` section."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from deliberation.profiles.profile import Strict, distinct_values


class NaturalOptions(Strict):
    """The natural-discussion experiment (``deliberation run natural``, notebook 06)."""

    benchmarks: tuple[str, ...] = Field(
        ("crossprofile", "hiddenbench"), description="task sets (HiddenBench needs make data)"
    )
    variants: tuple[Literal["plain", "evidence-first"], ...] = Field(
        ("plain", "evidence-first"), description="speaking-prompt variants, paired on tasks"
    )
    replicates: int = Field(1, gt=0, description="discussions per task and variant (fresh seeds)")
    rounds: int = Field(2, gt=0, description="speaking rounds between the two votes")
    policies: tuple[str, ...] = Field(
        ("R1", "B4", "Random", "B3", "R1-rel", "balance", "all", "empty"),
        description="memory policies applied to the transcript's statements",
    )
    budget: float = Field(0.6, gt=0, le=1, description="budget fraction r of budgeted policies")
    templates: Literal["main", "pilot", "all"] = Field("main", description="CrossProfile only")
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
        gt=0,
        description="unused: kept for the profiles (the intervals are cluster-robust t)",
    )

    _distinct_values = field_validator("benchmarks", "variants", "policies")(distinct_values)

    @field_validator("benchmarks")
    @classmethod
    def _registered(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        """Each a registered memory benchmark (benchmarks)."""
        from deliberation.benchmarks import memory_benchmarks

        unknown = [name for name in value if name not in memory_benchmarks()]
        if unknown:
            raise ValueError(f"unknown benchmarks {unknown}; registered: {memory_benchmarks()}")
        return value
