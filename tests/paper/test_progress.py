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


def test_the_kernels_count_is_of_distinct_prompts(tmp_path, monkeypatch) -> None:
    """A prompt read again (a later cell re-reading a run's relevance labels from the cache:
    notebook 03's 482 extra reads on the sim) counts once, as the plan counts it."""
    from deliberation.inference import call_progress as progress

    monkeypatch.setenv(progress.PROGRESS_FILE_ENV, str(tmp_path / "calls.json"))
    monkeypatch.setattr(progress, "_counter", progress._CallCounter())
    progress.calls_done(["a", "b", "a"])
    progress.calls_done(["b", "c"], flush=True)
    assert progress.read_calls(tmp_path / "calls.json") == 3
