"""``deliberation replies``: the prompt and raw reply of each call, from the response cache,
judged by the rows the experiment wrote (or by the request's output spec)."""

from __future__ import annotations

import hashlib
import re

import pandas as pd
import pytest
from helpers.published import vouch_for

from deliberation.cli import main
from deliberation.inference.base import BackendIdentity, ChatRequest, ChatResponse
from deliberation.inference.cache import ResponseCache
from deliberation.io import paths
from deliberation.results.replies import find_replies

CHOICES = ("Ashgrove", "Kingsmere")


def _key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _request(prompt: str, stage: str = "crossprofile.decision") -> ChatRequest:
    from deliberation.inference.base import StructuredOutput

    return ChatRequest.from_prompt(
        prompt, stage=stage, structured=StructuredOutput(choices=CHOICES)
    )


@pytest.fixture
def cache_and_rows(tmp_path):
    """Four decision calls: valid, invalid by the rows, invalid by the spec (no rows), failed."""
    cache_file = tmp_path / "toy.sqlite"
    identity = BackendIdentity(backend="openai", model="toy")
    calls = {
        "good": ("Which school, first?", "Kingsmere"),
        "rambling": ("Which school, second?", "Honestly, both have merits."),
        "unrowed": ("Which school, third?", "Pennfield"),
    }
    with ResponseCache(cache_file) as cache:
        for name, (prompt, reply) in calls.items():
            cache.put(_key(name), _request(prompt), ChatResponse(text=reply), profile="toy",
                      identity=identity)  # fmt: skip
        failed = ChatResponse(text="", error="HTTP 503 after 6 attempts")
        cache.record_failure(
            _key("failed"), _request("Which school, fourth?"), failed, profile="toy"
        )
    rows = tmp_path / "rows.csv"
    # The key column found by its values, whatever its name.
    pd.DataFrame(
        {
            "task": ["edu-01/SP-DS-IP", "edu-02/SS-DS-IS", "edu-02/SS-DS-IS"],
            "valid": [1, 0, 0],
            "error": ["", "named no single option", "request failed"],
            "cache_key": [_key("good"), _key("rambling"), _key("failed")],
        }
    ).to_csv(rows, index=False)
    return cache_file, rows


def test_replies_are_judged_by_the_rows_then_the_spec_and_failures_kept_apart(cache_and_rows):
    cache_file, rows = cache_and_rows
    selection = find_replies("sim", cache_file=cache_file, rows=[rows], limit=None)
    states = {r.text: (r.state, r.verdict.reason, r.verdict.tasks) for r in selection.replies}
    assert states["Kingsmere"] == ("valid", "", ("edu-01/SP-DS-IP",))
    assert states["Honestly, both have merits."] == (
        "invalid", "named no single option", ("edu-02/SS-DS-IS",)
    )  # fmt: skip
    assert states["Pennfield"][0] == "invalid" and "output spec" in states["Pennfield"][1]
    failed = [r for r in selection.replies if r.state == "failed"]
    assert len(failed) == 1 and failed[0].verdict.reason == "HTTP 503 after 6 attempts"
    assert selection.matched == {"valid": 1, "invalid": 2, "failed": 1}


def test_filters_and_invalid_first(cache_and_rows):
    cache_file, rows = cache_and_rows
    first = find_replies("sim", cache_file=cache_file, rows=[rows], invalid_first=True, limit=3)
    assert [r.state for r in first.replies] == ["invalid", "invalid", "failed"]
    only = find_replies("sim", cache_file=cache_file, rows=[rows], only="invalid", task="edu-02")
    assert [r.text for r in only.replies] == ["Honestly, both have merits."]
    assert only.replies[0].messages[0]["content"] == "Which school, second?"
    assert not find_replies("sim", cache_file=cache_file, rows=[rows], stage="dhd").replies
    by_prefix = find_replies("sim", cache_file=cache_file, rows=[rows], stage="crossprofile")
    assert sum(by_prefix.matched.values()) == 4


def test_a_run_without_out_then_replies_shows_its_prompt_and_reply(capsys):
    status = main(["run", "crossprofile", "--profile", "sim", "--limit", "1", "--no-progress"])
    assert status == 0, capsys.readouterr()
    rows = pd.read_csv(paths.build_dir() / "runs" / "sim" / "crossprofile_rows.csv")
    capsys.readouterr()
    assert main(["replies", "--profile", "sim", "--stage", "crossprofile.decision",
                 "--limit", "1"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    key_column = next(
        c for c in rows.columns if rows[c].astype(str).str.fullmatch("[0-9a-f]{64}").all()
    )
    # The call shown is one of the run's rows (sends go in prefix order, not row order).
    shown = re.search(r"key ([0-9a-f]{64})", out).group(1)
    first = rows[rows[key_column] == shown].iloc[0]
    assert f"task {first['task']}" in out
    assert "judged by crossprofile_rows.csv" in out
    reply = out.split("reply (", 1)[1].splitlines()[1].strip()
    assert reply == first["answer"]
    assert "Options:" in out.split("prompt [user]:", 1)[1]


def test_replies_show_the_latest_runs_calls_unless_asked_for_another_run_or_all(capsys):
    """The probe: after a one-template run, `replies --profile sim` listed every call of the
    cache (39,619 HiddenBench calls among them) and --rows did not narrow it."""
    common = ["--profile", "sim", "--limit", "1", "--no-progress", "--policies", "R1"]
    assert main(["run", "hiddenbench", *common, "--out", str(paths.build_dir() / "hb.csv")]) == 0
    assert main(["run", "crossprofile", *common]) == 0  # the latest run (build/runs/sim/)
    rows = paths.build_dir() / "runs" / "sim" / "crossprofile_rows.csv"
    run_keys = set(pd.read_csv(rows)["request_key"])
    capsys.readouterr()

    def shown(*extra):
        assert main(["replies", "--profile", "sim", "--limit", "0", *extra]) == 0
        out = capsys.readouterr().out
        return out.splitlines()[0], set(re.findall(r"^key ([0-9a-f]{64})", out, re.MULTILINE))

    head, keys = shown()
    assert keys == run_keys and len(keys) == 8  # one template's 8 variants, nothing else
    assert "build/runs/sim/crossprofile_rows.csv name (--all: every call in the cache" in head
    head, keys = shown("--rows", str(paths.build_dir() / "hb.csv"))
    assert keys and not keys & run_keys  # another run's calls: the HiddenBench ones
    head, every = shown("--all")
    assert every >= run_keys | keys and "of every call in the cache" in head


def test_replies_without_a_cache_say_nothing_ran(capsys):
    assert main(["replies", "--profile", "smoke"]) == 0
    assert "no response cache" in capsys.readouterr().out


def test_the_report_links_a_sample_of_replies_per_stage_invalid_first(tmp_path):
    from deliberation.inference import make_client
    from deliberation.inference.cache import request_key
    from deliberation.paper.site import REPLIES_PER_STAGE, build_report
    from deliberation.profiles.profile import load_profile

    client = make_client(load_profile("smoke"), progress=False)
    sums = [
        ChatRequest.from_prompt(f"What is {i} + 1?", stage="smoke.arithmetic") for i in range(5)
    ]
    client.generate([*sums, ChatRequest.from_prompt("What is 7 + 7?", stage="smoke.other")])
    last_key = request_key(client.backend, sums[-1])
    client.cache.close()
    # The experiment's rows say the last sum's reply was invalid.
    tables = paths.output_root() / "tables" / "smoke"
    tables.mkdir(parents=True)
    pd.DataFrame(
        {"task": ["t/1"], "valid": [0], "error": ["not a number"], "key": [last_key]}
    ).to_csv(tables / "toy_rows.csv", index=False)
    vouch_for(tables / "toy_rows.csv")
    index = build_report("smoke", out=tmp_path / "site")
    assert 'href="replies.html"' in index.read_text()
    page = (index.parent / "replies.html").read_text()
    arithmetic = page.split("smoke.arithmetic</h2>", 1)[1].split("<h2", 1)[0]
    assert "1 invalid, 4 unchecked" in arithmetic  # no output spec and no rows for the others
    assert arithmetic.count("<details") == REPLIES_PER_STAGE
    first = arithmetic.split("<details", 2)[1]
    assert "invalid: not a number" in first and "What is 4 + 1?" in first
    other = page.split("smoke.other</h2>", 1)[1]  # a stage the sim does not know: no reply
    assert "1 failed" in other and other.count("<details") == 1 and "no reply" in other
