"""deliberation run crossprofile|hiddenbench: rows, columns, counts, identical prompts sent once."""

from __future__ import annotations

import pandas as pd
import pytest

from deliberation.cli import main
from deliberation.experiments.memory import (
    CROSSPROFILE_COLUMNS,
    HIDDENBENCH_COLUMNS,
    Grid,
    crossprofile_tasks,
    run_from_profile,
    run_memory_experiment,
)
from deliberation.inference import make_client
from deliberation.inference.base import ChatResponse
from deliberation.profiles.profile import load_profile

POLICIES = ("R1", "B4", "B3", "R1-rel", "oracle-balance", "all", "empty")


@pytest.fixture(scope="module")
def tasks():
    return crossprofile_tasks("main", limit=1)


class CountingBackend:
    """Wraps a backend and counts the requests that reach it."""

    def __init__(self, inner):
        self.inner, self.sent = inner, 0
        self.name = inner.name

    @property
    def identity(self):
        return self.inner.identity

    def request_payload(self, request):
        return self.inner.request_payload(request)

    def generate(self, requests, on_response=None):
        self.sent += len(requests)
        return self.inner.generate(requests, on_response)


def client(profile, tmp_path, backend=None):
    made = make_client(profile, cache_file=tmp_path / "cache.sqlite", progress=False)
    if backend is not None:
        made.backend = backend(made.backend)
    return made


def test_rows_columns_and_cells(tasks, tmp_path):
    profile = load_profile("sim")
    result = run_memory_experiment(
        "crossprofile", tasks, Grid(POLICIES), profile, client(profile, tmp_path), progress=False
    )
    frame = result.frame
    assert list(frame.columns) == list(CROSSPROFILE_COLUMNS)
    # per task: 5 budgeted item policies x (3 budgets + fixed) ... B3 3 budgets, 2 references
    cells = 3 * (3 + 1) + 3 + 2 + 1 * (3 + 1)  # R1, B4, R1-rel, oracle-balance: 4 cells; B3 3
    assert len(frame) == len(tasks) * (4 * 4 + 3 + 2) * 3 == len(tasks) * (cells + 0) * 3
    fixed = frame[frame["item_limit"].notna()]
    assert set(fixed["item_limit"]) == {7} and fixed["budget"].isna().all()
    assert (fixed[fixed.policy != "oracle-balance"]["kept_facts"].str.count(";") == 6).all()
    references = frame[frame.policy.isin(["all", "empty"])]
    assert references["budget"].isna().all() and references["budget_tokens"].isna().all()
    budgeted = frame[frame["budget"].notna()]
    assert (budgeted["kept_tokens"] <= budgeted["budget_tokens"]).all()
    b3 = frame[frame.policy == "B3"]
    assert (b3["kept_facts"] == "").all() and b3["net_lead"].isna().all()
    everything = frame[frame.policy == "all"]
    assert (everything["net_lead"] == 2).all()
    assert set(frame["tags"]) == {"keep", "remove", "shuffle"}
    assert ((frame["correct"] == 1) <= (frame["valid"] == 1)).all()
    assert (frame["chose_decoy"] + frame["correct"] <= 1).all()


def test_identical_prompts_are_sent_once_and_a_rerun_sends_nothing(tasks, tmp_path):
    profile = load_profile("sim")
    first_client = client(profile, tmp_path, CountingBackend)
    first = run_memory_experiment(
        "crossprofile", tasks, Grid(("R1", "B4", "all")), profile, first_client, progress=False
    )
    decision = next(s for s in first.report.stages if s.stage == "crossprofile.decision")
    assert decision.built == len(first.frame)
    assert decision.unique < decision.built  # e.g. B4 and R1 keep the same set when all shared
    assert decision.sent == decision.unique and decision.cached == 0
    assert first_client.backend.sent == decision.unique
    assert first.frame["key"].nunique() == decision.unique

    again_client = client(profile, tmp_path, CountingBackend)
    again = run_memory_experiment(
        "crossprofile", tasks, Grid(("R1", "B4", "all")), profile, again_client, progress=False
    )
    decision = next(s for s in again.report.stages if s.stage == "crossprofile.decision")
    assert decision.cached == decision.unique and decision.sent == 0
    assert again_client.backend.sent == 0
    pd.testing.assert_frame_equal(first.frame, again.frame)


def test_invalid_answers_are_recorded_and_counted_wrong(tasks, tmp_path):
    profile = load_profile("sim")
    profile = profile.model_copy(
        update={"options": profile.options.model_copy(update={"parameters": {"invalid_rate": 1.0}})}
    )
    result = run_memory_experiment(
        "crossprofile", tasks, Grid(("all",)), profile, client(profile, tmp_path), progress=False
    )
    frame = result.frame
    assert len(frame) == len(tasks) * 3
    assert (frame["valid"] == 0).all() and (frame["correct"] == 0).all()
    assert (frame["error"] == "answer names no single option").all()
    assert result.report.invalid == len(frame)


def test_failed_calls_are_rows_with_their_error(tasks, tmp_path):
    class Failing(CountingBackend):
        def generate(self, requests, on_response=None):
            out = [ChatResponse(text="", error="boom") for _ in requests]
            for i, r in enumerate(out):
                if on_response:
                    on_response(i, r)
            return out

    profile = load_profile("sim")
    result = run_memory_experiment(
        "crossprofile",
        tasks,
        Grid(("R1-rel",), item_limit=None),
        profile,
        client(profile, tmp_path, Failing),
        progress=False,
    )
    frame = result.frame
    assert len(frame) == len(tasks) * 3 * 3
    # The relevance call failed, so every R1-rel decision fails with it, unsent: a failed row
    # (valid empty, never counted), not an invalid answer.
    assert (
        frame["error"].str.startswith("input failed, not sent; relevance call failed: boom").all()
    )
    assert frame["valid"].isna().all() and frame["correct"].isna().all()
    assert (frame["key"] == "").all()
    assert result.report.failed == len(frame) and result.report.invalid == 0


def test_hiddenbench_rows(tmp_path):
    profile = load_profile("sim")
    result = run_from_profile(
        "hiddenbench",
        profile,
        policies=("R1", "private-only"),
        tags=("keep",),
        limit=2,
        client=client(profile, tmp_path),
        progress=False,
    )
    assert list(result.frame.columns) == HIDDENBENCH_COLUMNS
    assert set(result.frame["task"]) == {"hb01", "hb02"}
    with pytest.raises(ValueError, match="oracle"):
        run_from_profile(
            "hiddenbench", profile, policies=("oracle-rel",), limit=1,
            client=client(profile, tmp_path), progress=False,
        )  # fmt: skip


def test_cli_writes_rows_and_prints_counts(tmp_path, capsys):
    out = tmp_path / "rows.csv"
    code = main(
        [
            "run", "crossprofile", "--policies", "R1,all", "--budgets", "0.6", "--tags", "keep",
            "--limit", "1", "--item-limit", "0", "--cache", str(tmp_path / "c.sqlite"),
            "--out", str(out), "--no-progress",
        ]
    )  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "crossprofile.decision: 16 requests built" in printed
    assert "unique prompts" in printed and "already cached" in printed and "sent" in printed
    assert "synthetic (sim backend)" in printed
    frame = pd.read_csv(out)
    # The command's rows: the frame's columns (key named request_key), plus profile, model,
    # gold and outcome; a provenance sidecar beside them; a results table printed.
    added = {"profile", "model", "gold", "outcome"}
    assert [c for c in frame.columns if c not in added] == [
        "request_key" if c == "key" else c for c in CROSSPROFILE_COLUMNS
    ]
    assert len(frame) == 16 and (frame["profile"] == "sim").all()
    # The sim answers every call (its invalid_rate may make one answer name no option).
    assert (
        set(frame["outcome"]) <= {"answered", "invalid"} and (frame["outcome"] == "answered").any()
    )
    assert (frame["valid"] == (frame["outcome"] == "answered")).all()
    assert ((frame["gold"] == frame["answer"]) == (frame["correct"] == 1)).all()
    assert (tmp_path / "rows.csv.provenance.json").is_file()
    assert "accuracy (%) by policy and budget" in printed
    assert main(["run", "crossprofile", "--policies", "nope", "--out", str(out)]) == 2


@pytest.mark.parametrize("limit", [0, -1])
def test_a_limit_that_is_not_positive_is_refused_by_the_library_too(limit):
    from deliberation.experiments.memory.runs import crossprofile_tasks, run_from_profile

    with pytest.raises(ValueError, match="limit: must be a positive count"):
        crossprofile_tasks("main", limit)
    with pytest.raises(ValueError, match="limit: must be a positive count"):
        run_from_profile("crossprofile", load_profile("smoke"), limit=limit, client=object())


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"policies": ["R1", "R1"]}, "policies: R1"),
        ({"budgets": [0.6, 0.6]}, "budgets: 0.6"),
        ({"tags": ["keep", "shuffle", "keep"]}, "tags: keep"),
    ],
)
def test_a_grid_value_given_twice_is_refused_not_run_twice(overrides, named):
    from deliberation.experiments.memory.grid import Grid

    grid = {"policies": ("R1",), "budgets": (0.6,), "tags": ("keep",)}
    with pytest.raises(ValueError, match=f"{named} listed more than once"):
        Grid(**{**grid, **{k: tuple(v) for k, v in overrides.items()}})


def _quick_run(tmp_path, capsys, *flags: str) -> tuple[list[str], pd.DataFrame]:
    out = tmp_path / "rows.csv"
    argv = ["run", "crossprofile", "--profile", "smoke", "--limit", "1", *flags,
            "--cache", str(tmp_path / "c.sqlite"), "--out", str(out), "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    return capsys.readouterr().out.splitlines(), pd.read_csv(out)


def test_a_quick_try_runs_one_policy_budget_and_tag_mode_and_says_so_first(tmp_path, capsys):
    printed, frame = _quick_run(tmp_path, capsys)
    assert printed[0].startswith(
        "deliberation run crossprofile: a quick try (--limit 1): only policy R1, budget 0.6"
        " (no fixed-item-count rows) and tags keep"
    )
    assert len(frame) == 8  # one template's 8 variants, one cell each
    assert set(frame["policy"]) == {"R1"} and set(frame["tags"]) == {"keep"}
    assert set(frame["budget"]) == {0.6} and frame["item_limit"].isna().all()
    # No relevance labels for a policy that needs none (the full grid's R1-rel would).
    assert not any(line.startswith("crossprofile.relevance") for line in printed)


def test_a_grid_flag_given_keeps_its_values_in_a_quick_try(tmp_path, capsys):
    printed, frame = _quick_run(tmp_path, capsys, "--policies", "R1,B4")
    assert "only budget 0.6 (no fixed-item-count rows) and tags keep;" in printed[0]
    assert set(frame["policy"]) == {"R1", "B4"} and set(frame["budget"]) == {0.6}
    printed, _ = _quick_run(
        tmp_path, capsys, "--policies", "R1", "--budgets", "0.6", "--tags", "keep",
        "--item-limit", "0",
    )  # fmt: skip
    assert not any("quick try" in line for line in printed)  # nothing narrowed, nothing said
