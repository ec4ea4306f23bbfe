"""The profile's ``experiments.dhd`` section."""

from __future__ import annotations

from pydantic import Field, field_validator

from deliberation.profiles.profile import Strict, distinct_values


class DHDOptions(Strict):
    """The DHD experiment (``deliberation run dhd``, notebooks 07-08)."""

    benchmarks: tuple[str, ...] = Field(
        ("synthetic",), description="synthetic (the sim's bank) or the five DHD benchmarks"
    )
    problems: int | None = Field(
        200, gt=0, description="problems per benchmark, stratified by subject; null: all"
    )
    repeated_problems: int | None = Field(
        60, gt=0, description="problems with repeated replays (paper 2: 1,000 per model)"
    )
    blocks: int = Field(5, gt=0, description="repeated-replay blocks per problem (paper 2: 5)")
    sizes: tuple[int, ...] = Field((2, 3, 4, 5), description="pool sizes K of leave-one-out")
    n_resamples: int = Field(
        10_000,
        gt=0,
        description="unused: kept for the profiles (the intervals are cluster-robust t)",
    )
    n_permutations: int = Field(10_000, gt=0, description="permutations per problem")
    masking_cases: int = Field(10, gt=0, description="masking cases per cell (paper 2 pilot: 10)")
    masking_replicates: int = Field(5, gt=0, description="replicates per masking case")

    _distinct_values = field_validator("benchmarks", "sizes")(distinct_values)
