"""Tests of `deliberation.experiments`, mirroring the library's package."""
