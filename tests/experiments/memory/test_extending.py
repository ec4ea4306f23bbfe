"""README "Extending" followed to the letter: a toy memory benchmark (one object satisfying
``MemoryBenchmark``, one registry line) and a toy model-based policy (one policy function plus one
need provider) run through the real pipeline, with a backend whose answers can be worked out by
hand.

The toy task: options Alpha (correct) and Beta; four statements, one holding a number. The toy
need asks which statements hold a number; the toy policy ``numbers-first`` keeps those first.
The backend answers a decision with the option named in the first note it reads, so which
statements a memory keeps decides the answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import pandas as pd
import pytest
from toy_benchmark.benchmark import ToyFact, ToyTask

from deliberation import benchmarks
from deliberation.benchmarks import memory_benchmark
from deliberation.benchmarks.crossprofile.sim import read_fact
from deliberation.benchmarks.memory_benchmark import MemoryBenchmark, common_row, typed_frame
from deliberation.experiments.memory import needs, prompts
from deliberation.experiments.memory.grid import Grid
from deliberation.experiments.memory.pipeline import Decision
from deliberation.experiments.memory.runs import run_from_profile, run_memory_experiment
from deliberation.inference.base import Backend, BackendIdentity, ChatRequest, ChatResponse
from deliberation.inference.cache import ResponseCache
from deliberation.inference.client import CachedClient
from deliberation.io import paths
from deliberation.memory_policies import MemoryPool, registry
from deliberation.profiles.profile import ProfileError, load_profile

# --- the toy benchmark: what README "Extending" asks for, as one module would hold it ---------


# The task and fact records of the toy benchmark folder (tests/toy_benchmark/); one task here.
TASK = ToyTask(
    id="toy-1",
    description="Pick a supplier.",
    criteria=("reliability",),
    options=("Alpha", "Beta"),
    correct="Alpha",
    agents=("A1", "A2"),
    facts=(
        ToyFact("f1", "Beta has a friendly website.", ("A1", "A2")),
        ToyFact("f2", "Beta answers the phone politely.", ("A1", "A2")),
        ToyFact("f3", "Alpha delivered 99 of 100 orders on time.", ("A1",)),
        ToyFact("f4", "Beta lost several shipments.", ("A2",)),
    ),
)


class ToyBench:
    name = "toybench"
    title = "ToyBench"
    description = "one hand-made task"
    columns = ["task", "policy", "budget", "item_limit", "tags", "kept_facts", "kept_tokens",
               "budget_tokens", "answer", "correct", "valid", "error", "key", "kept_count"]  # fmt: skip
    policies = ("B4", "numbers-first")
    has_truth = False
    selects_templates = False
    sim_reader = staticmethod(read_fact)  # unused: RuleBackend answers
    notebooks = {}
    smoke = {}

    def tasks(
        self, seed: int, *, templates: str | None, limit: int | None, option_order: str = "rotate"
    ) -> list[ToyTask]:
        return [TASK][:limit]  # one task: no option order to counterbalance

    def truth(self, task: ToyTask) -> None:
        return None

    def rows(self, decisions: Sequence[Decision]) -> pd.DataFrame:
        rows = [
            {**common_row(d, d.task.correct), "kept_count": len(d.memory.fact_ids)}
            for d in decisions
        ]
        return typed_frame(pd.DataFrame(rows, columns=self.columns))


# --- the toy model-based policy: a policy function plus one need provider ----------------------


def numbers_first(pool: MemoryPool) -> list:
    """Statements the labeller says hold a number, then the rest, in first-mention order."""
    numbered = pool.require("numbers", "numbers-first")
    return sorted(pool.candidates, key=lambda c: (c.fact_id not in numbered, c.first_mention))


def _numbers_prompt(task, pool, transcript, limit) -> str:
    lines = "\n".join(f"{k}. {c.text}" for k, c in enumerate(pool.candidates, 1))
    return f"Which statements hold a number? Reply with a JSON list of their numbers.\n{lines}"


def _numbers_read(text: str, task, pool) -> needs.NeedReading:
    try:
        numbers = json.loads(text)
    except json.JSONDecodeError:
        return needs.NeedReading(frozenset(), f"not JSON: {text!r}")
    return needs.NeedReading(frozenset(pool.candidates[n - 1].fact_id for n in numbers))


NUMBERS = needs.MemoryNeed("numbers", prompt=_numbers_prompt, read=_numbers_read)


@pytest.fixture
def toy_extensions(monkeypatch):
    """Register the toy benchmark, policy and need as README says; undone after the test."""
    monkeypatch.setattr(benchmarks, "_REGISTRY", dict(benchmarks._REGISTRY))
    monkeypatch.setattr(registry, "_POLICIES", dict(registry._POLICIES))
    monkeypatch.setattr(needs, "_NEEDS", dict(needs._NEEDS))
    benchmarks.register_memory_benchmark(ToyBench())
    registry.rank_policy("numbers-first", needs=("numbers",))(numbers_first)
    needs.register_need(NUMBERS)


# --- a backend whose answers are worked out by hand -------------------------------------------


class RuleBackend(Backend):
    """Labels: statements with a digit. Decisions: the option named in the first note (tags
    removed). ``fail_stage``: every request of that stage fails."""

    def __init__(self, fail_stage: str | None = None) -> None:
        self.stages: list[str] = []
        self.fail_stage = fail_stage

    @property
    def identity(self):
        return BackendIdentity(backend="rule", model="toy")

    def request_payload(self, request):
        return {"messages": request.messages_as_dicts(), "stage": request.stage}

    def generate(self, requests: Sequence[ChatRequest], on_response=None):
        out = []
        for index, request in enumerate(requests):
            self.stages.append(request.stage)
            prompt = request.messages[-1].content
            if request.stage == self.fail_stage:
                response = ChatResponse(text="", error="HTTP 500")
            elif request.stage.endswith(".numbers"):
                found = re.findall(r"^(\d+)\. .*\d", prompt, flags=re.MULTILINE)
                response = ChatResponse(text=json.dumps([int(n) for n in found]))
            else:
                notes = prompt.split(prompts.NOTES_HEADER_PLAIN, 1)[-1].strip()
                first = notes.splitlines()[0] if notes else ""
                named = [o for o in ("Alpha", "Beta") if o in first]
                response = ChatResponse(text=named[0] if named else "none")
            if on_response is not None:
                on_response(index, response)
            out.append(response)
        return out


def _run(tmp_path, grid: Grid, backend: RuleBackend):
    client = CachedClient(backend, ResponseCache(tmp_path / "c.sqlite"), profile="toy")
    profile = load_profile("sim")
    tasks = memory_benchmark("toybench").tasks(0, templates=None, limit=None)
    return run_memory_experiment("toybench", tasks, grid, profile, client, progress=False)


def test_the_toy_benchmark_is_found_by_name_and_satisfies_the_protocol(toy_extensions):
    assert isinstance(memory_benchmark("toybench"), MemoryBenchmark)
    assert "toybench" in benchmarks.memory_benchmarks()
    with pytest.raises(ValueError, match="unknown benchmark 'nobench'"):
        memory_benchmark("nobench")


def test_the_toy_policy_reads_its_need_and_changes_the_answer(toy_extensions, tmp_path):
    """Item limit 1: B4 keeps f1 (Beta, wrong); numbers-first keeps f3 (Alpha, right)."""
    backend = RuleBackend()
    grid = Grid(policies=("B4", "numbers-first"), budgets=(), item_limit=1, tags=("remove",))
    result = _run(tmp_path, grid, backend)
    frame = result.frame
    assert list(frame.columns) == ToyBench.columns
    kept = dict(zip(frame["policy"], frame["kept_facts"], strict=True))
    assert kept == {"B4": "f1", "numbers-first": "f3"}
    answers = dict(zip(frame["policy"], frame["answer"], strict=True))
    assert answers == {"B4": "Beta", "numbers-first": "Alpha"}
    assert frame["kept_count"].tolist() == [1, 1]
    # One need call per task, tagged <benchmark>.<need>, before the decisions.
    assert backend.stages == ["toybench.numbers", "toybench.decision", "toybench.decision"]


def test_no_need_call_without_a_policy_that_needs_it(toy_extensions, tmp_path):
    backend = RuleBackend()
    _run(tmp_path, Grid(policies=("B4",), budgets=(), item_limit=1, tags=("remove",)), backend)
    assert backend.stages == ["toybench.decision"]


def test_a_failed_need_call_fails_only_the_cells_that_need_it(toy_extensions, tmp_path):
    backend = RuleBackend(fail_stage="toybench.numbers")
    grid = Grid(policies=("B4", "numbers-first"), budgets=(), item_limit=1, tags=("remove",))
    frame = _run(tmp_path, grid, backend).frame.set_index("policy")
    assert frame.loc["B4", "valid"] == 1 and frame.loc["B4", "answer"] == "Beta"
    assert pd.isna(frame.loc["numbers-first", "valid"])
    assert "numbers call failed: HTTP 500" in frame.loc["numbers-first", "error"]
    assert backend.stages.count("toybench.decision") == 1  # the failed cell is never sent


def test_a_benchmark_without_true_roles_refuses_oracle_policies(toy_extensions, tmp_path):
    with pytest.raises(ValueError, match="ToyBench has none"):
        _run(tmp_path, Grid(policies=("oracle-rel",), budgets=(0.6,)), RuleBackend())


def test_a_profile_sets_the_toy_benchmarks_grid_in_its_own_section(toy_extensions, tmp_path):
    """The registered section ``experiments.toybench`` is validated like the built-in grids
    and is the grid ``run_from_profile`` runs."""
    path = tmp_path / "toy.yaml"
    path.write_text(
        "extends: sim\nexperiments:\n  toybench: {policies: [numbers-first], budgets: [],"
        " item_limit: 1, tags: [remove]}\n"
    )
    (tmp_path / "sim.yaml").write_text((paths.params_dir() / "sim.yaml").read_text())
    profile = load_profile(path)
    assert profile.experiments.toybench.policies == ("numbers-first",)
    client = CachedClient(RuleBackend(), ResponseCache(tmp_path / "c.sqlite"), profile="toy")
    frame = run_from_profile("toybench", profile, client=client, progress=False).frame
    assert frame[["policy", "kept_facts", "answer"]].values.tolist() == [
        ["numbers-first", "f3", "Alpha"]
    ]
    path.write_text("extends: sim\nexperiments:\n  toybench: {tags: [keep, keep]}\n")
    with pytest.raises(ProfileError, match=r"experiments.toybench.tags: .*more than once"):
        load_profile(path)


def test_the_registered_benchmark_is_an_experiment_with_its_run_command(toy_extensions, capsys):
    """Its one registry line is all `deliberation run toybench` and its profile section need."""
    from deliberation.cli import main
    from deliberation.experiments import experiment

    record = experiment("toybench")
    assert record.stages == ("toybench.",) and record.bound == {"benchmark": "toybench"}
    with pytest.raises(SystemExit):
        main(["run", "toybench", "--help"])
    assert "experiments.toybench section" in capsys.readouterr().out.replace("\n", " ")
