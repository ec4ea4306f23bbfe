"""show_memory: a memory as the decision model reads it, from a task id and a policy alone
(the profile's defaults), as HTML in JupyterLab and as text in a terminal."""

from __future__ import annotations

import pytest

from deliberation.experiments.memory import display
from deliberation.inference import open_run
from deliberation.profiles.profile import load_profile


@pytest.fixture(autouse=True)
def _fresh_clients(monkeypatch):
    monkeypatch.setattr(display, "_RUNS", {})
    monkeypatch.setenv("DELIBERATION_PROFILE", "smoke")


def test_show_memory_needs_only_task_and_policy_and_matches_an_explicit_call():
    view = display.show_memory("education-01/SP-DS-IP", "R1")
    profile, client = open_run(load_profile("smoke"), progress=False)
    task = display.find_task("education-01/SP-DS-IP", seed=profile.seed)
    explicit = display.show_memory(task, "R1", 0.6, profile=profile, client=client)
    assert view.prompt == explicit.prompt and view.html == explicit.html
    assert "r = 0.6" in view.html  # the primary budget by default


def test_in_a_terminal_the_view_is_text_with_roles_not_html():
    view = display.show_memory("education-01", "B4", 0.4)  # a template id: its classic cell
    text = repr(view)
    assert "<div" not in text and str(view) == text
    assert text.splitlines()[0].startswith(
        "education-01/SP-DS-IP · policy B4 · tags keep · r = 0.4"
    )
    notes = [line for line in text.splitlines() if line.startswith("[")]
    assert notes and all(
        line.split("]")[0][1:] in {"support", "decoy", "irrelevant"} for line in notes
    )
    # Every prompt line is there, in order, under its margin.
    assert [line[14:] for line in text.splitlines()[3:]] == view.prompt.splitlines()
    assert "<div" in view._repr_html_()


def test_an_unknown_task_names_it():
    with pytest.raises(KeyError, match="no CrossProfile template 'nosuch'"):
        display.show_memory("nosuch/SP-DS-IP", "R1")
