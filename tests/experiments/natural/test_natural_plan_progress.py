"""Notebook 06's experiment call shows progress bars only where its client does: the plan's
client never does, so `make plan` prints no stray `memories: 0%` bar before the plan."""

from __future__ import annotations

from types import SimpleNamespace

from deliberation.experiments.natural import runs
from deliberation.profiles.profile import load_profile


def test_the_notebook_call_follows_its_clients_progress(monkeypatch) -> None:
    seen = []
    monkeypatch.setattr(runs, "run_from_profile", lambda *a, **kw: seen.append(kw["progress"]))
    profile = load_profile("smoke")
    runs.run_notebook(profile, SimpleNamespace(progress=False))  # the plan's client
    runs.run_notebook(profile, SimpleNamespace(progress=True))  # a notebook's own
    assert seen == [False, True]
