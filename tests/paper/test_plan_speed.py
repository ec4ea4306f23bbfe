"""The fast plan counts exactly what the slow one counted: the sim reading its declared
parameters once per batch and the checked-schema cache change speed, not one number."""

from __future__ import annotations

import jsonschema
import pytest

from deliberation.inference import structured_answers as structured
from deliberation.inference.sim import SimBackend
from deliberation.paper.manifest import load_manifest
from deliberation.paper.plan import plan_calls
from deliberation.profiles.profile import load_profile

# One notebook of each kind of protocol: plumbing, a paper-1 grid with relevance labels, a
# multi-round natural discussion, and DHD's recruiter -> hypothesizer -> integrator chain.
NOTEBOOKS = ("00_smoke", "04_tag_ablation", "06_natural_discussion", "07_dhd_replay")


def _slow_paths(monkeypatch) -> None:
    """The code before the speed-up: declared parameters read on every param() call and every
    schema checked each time it is used."""

    def generate(self, requests, on_response=None):
        responses = []
        for index, request in enumerate(requests):
            response = self.answer(request)  # no batch-wide declared parameters
            if on_response is not None:
                on_response(index, response)
            responses.append(response)
        return responses

    def schema_validator(schema):
        plain = structured.plain_schema(schema)
        validator_class = jsonschema.validators.validator_for(plain)
        validator_class.check_schema(plain)
        return validator_class(plain)

    monkeypatch.setattr(SimBackend, "generate", generate)
    monkeypatch.setattr(structured, "schema_validator", schema_validator)


def _plan(monkeypatch, slow: bool):
    entries = [e for e in load_manifest() if e.stem in NOTEBOOKS]
    assert [e.stem for e in entries] == list(NOTEBOOKS)
    with monkeypatch.context() as patch:
        if slow:
            _slow_paths(patch)
        return plan_calls(load_profile("smoke"), entries)


def test_the_fast_plan_equals_the_slow_one_on_the_smoke_profile(monkeypatch):
    fast, slow = _plan(monkeypatch, slow=False), _plan(monkeypatch, slow=True)
    assert not fast.not_planned and not slow.not_planned
    assert set(fast.table()["notebook"]) == set(NOTEBOOKS)
    assert fast.table().equals(slow.table())
    # call by call, not only the sums: same keys, states and token counts in the same order
    assert fast.calls == slow.calls


def test_a_schema_that_is_not_valid_is_still_an_error_every_time():
    for _ in range(2):  # the second call must not be served from the cache
        with pytest.raises(jsonschema.SchemaError):
            structured.schema_validator({"type": "no-such-type"})


def test_the_bank_is_verified_once_and_again_when_a_template_changes(tmp_path, monkeypatch):
    import shutil

    import deliberation.benchmarks.crossprofile as crossprofile
    from deliberation.benchmarks.crossprofile.errors import TemplateError
    from deliberation.experiments.memory.runs import crossprofile_tasks, verified_bank
    from deliberation.io import paths

    shutil.copytree(paths.templates_dir() / "crossprofile", tmp_path / "crossprofile")
    monkeypatch.setattr(paths, "templates_dir", lambda: tmp_path)
    loads = []
    load_bank = crossprofile.load_bank
    monkeypatch.setattr(crossprofile, "load_bank", lambda: loads.append(1) or load_bank())
    first = crossprofile_tasks("main", limit=1)
    assert verified_bank() is verified_bank() and len(loads) == 1
    assert crossprofile_tasks("main", limit=1) == first and len(loads) == 1
    changed = sorted((tmp_path / "crossprofile").glob("*.yaml"))[0]
    changed.write_text(changed.read_text() + "\nnot: a template key\n")
    with pytest.raises(TemplateError):
        verified_bank()
    assert len(loads) == 2
