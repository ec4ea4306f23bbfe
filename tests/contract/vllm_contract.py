"""DRAFT (issue 34, not yet run end to end): vLLM's own classes check what the backends build.

Run with a vLLM venv's python and PYTHONPATH=lib (never /work/main/.venv):
    PYTHONPATH=lib /work/wt/_venvs/vllm-0.33.0/bin/python tests/contract/vllm_contract.py
It builds SamplingParams through vllm_offline.sampling_kwargs with vLLM's real
vllm.sampling_params module, validates every openai request body per structured-output mode
with vllm.entrypoints.openai.protocol.ChatCompletionRequest (a key the model does not define
fails: no silent extras), and checks each offline profile's LLM(...) keywords against EngineArgs.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys

from deliberation.inference.base import ChatRequest, StructuredOutput
from deliberation.inference.openai_api import OpenAIBackend
from deliberation.inference.structured import SERVER_STRUCTURED_MODES
from deliberation.inference.vllm_offline import VLLMOptions, sampling_kwargs

SPECS = {
    "choice": StructuredOutput(choices=("A", "B", "C")),
    "json": StructuredOutput(
        json_schema={"type": "object", "properties": {"answer": {"type": "integer"}}}
    ),
    "none": None,
}
VLLM_MODES = ("structured_outputs", "guided", "response_format", "none")


def request(spec: StructuredOutput | None) -> ChatRequest:
    return ChatRequest.from_prompt("Pick one.", stage="contract", max_tokens=16, seed=0,
                                   structured=spec)  # fmt: skip


def main() -> int:
    vllm = importlib.import_module("vllm")
    sp = importlib.import_module("vllm.sampling_params")
    rows, bad = [], 0
    for name, spec in SPECS.items():
        try:
            vllm.SamplingParams(**sampling_kwargs(request(spec), 0, sp))
            rows.append((vllm.__version__, "SamplingParams", name, "ok"))
        except Exception as exc:  # any refusal is a finding
            bad += 1
            rows.append((vllm.__version__, "SamplingParams", name, f"FAIL {exc}"))
    try:  # vLLM 0.10-0.2x; newer releases moved it into chat_completion/
        protocol = importlib.import_module("vllm.entrypoints.openai.protocol")
    except ModuleNotFoundError:
        protocol = importlib.import_module("vllm.entrypoints.openai.chat_completion.protocol")
    model = protocol.ChatCompletionRequest
    for mode in VLLM_MODES:
        assert mode in SERVER_STRUCTURED_MODES
        backend = OpenAIBackend(model="m", base_url="http://127.0.0.1:1/v1",
                                structured_output=mode)  # fmt: skip
        for name, spec in SPECS.items():
            body = backend.request_body(request(spec))
            extras = sorted(set(body) - set(model.model_fields))
            try:
                model.model_validate(body)
                verdict = "ok" if not extras else f"IGNORED {extras}"
            except Exception as exc:
                verdict = f"FAIL {str(exc)[:200]}"
            bad += verdict != "ok"
            rows.append((vllm.__version__, f"ChatCompletionRequest[{mode}]", name, verdict))
    engine_args = importlib.import_module("vllm.engine.arg_utils").EngineArgs
    fields = {f.name for f in dataclasses.fields(engine_args)}
    unknown = sorted(set(VLLMOptions().engine_kwargs("m", "r", 0)) - fields)
    bad += bool(unknown)
    rows.append(
        (vllm.__version__, "EngineArgs", "engine_kwargs", f"unknown {unknown}" if unknown else "ok")
    )
    for row in rows:
        print(" | ".join(row))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
