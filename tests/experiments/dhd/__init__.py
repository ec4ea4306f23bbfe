"""Tests of `deliberation.experiments.dhd`, mirroring the library's package."""
