"""Tests of `deliberation.experiments.memory`, mirroring the library's package."""
