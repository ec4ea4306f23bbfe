"""make paper's progress line: calls done of planned, "about" where the plan is not exact."""

from __future__ import annotations

from deliberation.paper.progress import NotebookProgress


def _line(progress: NotebookProgress, calls: int, monkeypatch) -> str:
    monkeypatch.setattr(NotebookProgress, "calls", lambda self: calls)
    return progress.line()


def test_an_exact_plan_reads_of_planned_and_a_count_past_it_reads_about(monkeypatch) -> None:
    exact = NotebookProgress("03.ipynb", planned_calls=22_400)
    assert "4,210 of 22,400 planned calls" in _line(exact, 4_210, monkeypatch)
    assert "22,882 of about 22,400 planned calls" in _line(exact, 22_882, monkeypatch)


def test_a_real_models_plan_is_about(monkeypatch) -> None:
    estimate = NotebookProgress("03.ipynb", planned_calls=624, planned_exact=False)
    assert "10 of about 624 planned calls" in _line(estimate, 10, monkeypatch)
