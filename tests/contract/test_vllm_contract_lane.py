"""The vLLM contract lane's own checks can fail (``make contract`` runs them against vLLM; here
its source-reading mode runs on a made-up vLLM source tree, so ``make unit`` needs no vLLM)."""

from __future__ import annotations

import importlib.util
import json
import textwrap
from pathlib import Path

from deliberation.inference.base import ChatRequest, StructuredOutput
from deliberation.inference.openai_api import OpenAIBackend
from deliberation.paper.stage_examples import request_to_dict

LANE = Path(__file__).with_name("vllm_contract.py")


def lane_module():
    spec = importlib.util.spec_from_file_location("vllm_contract", LANE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fake_vllm(root: Path, *, request_fields: str, constraint_class: str) -> Path:
    """A vllm/ folder with just the classes the source mode reads."""
    files = {
        "entrypoints/openai/protocol.py": f"class ChatCompletionRequest:\n{request_fields}",
        "sampling_params.py": textwrap.dedent(f"""\
            class {constraint_class}:
                choice: list
                json: dict
            class SamplingParams:
                n: int
                temperature: float
                top_p: float
                top_k: int
                min_p: float
                presence_penalty: float
                frequency_penalty: float
                repetition_penalty: float
                max_tokens: int
                seed: int
                {"structured_outputs" if constraint_class == "StructuredOutputsParams"
                 else "guided_decoding"}: object
            """),
        "engine/arg_utils.py": "class EngineArgs:\n" + "".join(
            f"    {name}: object\n"
            for name in ("model", "generation_config", "dtype", "gpu_memory_utilization",
                         "tensor_parallel_size", "pipeline_parallel_size", "trust_remote_code",
                         "seed", "enforce_eager", "revision", "max_model_len")
        ),
    }  # fmt: skip
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return root


def cases(tmp_path: Path, engine_kwargs: dict) -> Path:
    request = ChatRequest.from_prompt(
        "Pick.", stage="s", seed=0, structured=StructuredOutput(choices=("A", "B"))
    )
    bodies = {}
    for mode in ("structured_outputs", "guided", "response_format", "none"):
        bodies[mode] = OpenAIBackend(
            model="m", base_url="http://127.0.0.1:9/v1", structured_output=mode
        ).request_body(request)
    data = {"cases": [
        {"profile": "offline", "kind": "offline", "seed": 0, "engine_kwargs": engine_kwargs,
         "stages": [{"stage": "s", "constraint": "choice", "request": request_to_dict(request)}]},
        {"profile": "served", "kind": "server", "mode": "structured_outputs", "serve_argv": None,
         "model": "m", "stages": [{"stage": "s", "constraint": "choice", "bodies": bodies}]},
    ]}  # fmt: skip
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(data))
    return path


NEW_SERVER = "".join(
    f"    {n}: object\n"
    for n in ("model", "messages", "temperature", "top_p", "max_tokens", "seed",
              "structured_outputs", "response_format")
)  # fmt: skip


def test_a_release_matching_the_dialect_notes_passes(tmp_path, capsys) -> None:
    root = fake_vllm(tmp_path / "vllm", request_fields=NEW_SERVER,
                     constraint_class="StructuredOutputsParams")  # fmt: skip
    assert lane_module().check_source(cases(tmp_path, {"model": "m"}), root, "0.33.0") == 0
    out = capsys.readouterr().out
    assert "request[guided]" in out and "as documented" in out  # dropped, as the notes say


def test_an_unknown_field_or_engine_argument_fails_the_lane(tmp_path, capsys) -> None:
    without_seed = NEW_SERVER.replace("    seed: object\n", "")
    root = fake_vllm(tmp_path / "vllm", request_fields=without_seed,
                     constraint_class="StructuredOutputsParams")  # fmt: skip
    lane = lane_module()
    assert lane.check_source(cases(tmp_path, {"model": "m"}), root, "0.33.0") == 1
    assert "FAIL ignored ['seed']" in capsys.readouterr().out
    root = fake_vllm(tmp_path / "vllm2", request_fields=NEW_SERVER,
                     constraint_class="StructuredOutputsParams")  # fmt: skip
    assert lane.check_source(cases(tmp_path, {"model": "m", "no_such": 1}), root, "0.33.0") == 1
    assert "not EngineArgs fields: ['no_such']" in capsys.readouterr().out


def test_a_mode_working_where_the_notes_say_it_is_dropped_fails_the_lane(tmp_path) -> None:
    """The notes are tested too: guided_* fields defined by a release >= 0.12 contradict them."""
    root = fake_vllm(tmp_path / "vllm", request_fields=NEW_SERVER + "    guided_choice: object\n",
                     constraint_class="StructuredOutputsParams")  # fmt: skip
    assert lane_module().check_source(cases(tmp_path, {"model": "m"}), root, "0.33.0") == 1
