"""Helpers shared by test modules (imported, never collected): fakes, fixtures, profiles."""
