"""Tests of `deliberation.experiments.natural`, mirroring the library's package."""
