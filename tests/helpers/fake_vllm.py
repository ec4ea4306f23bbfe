"""A fake ``vllm`` package injected into ``sys.modules``: it records what the offline backend
asked for (engines, chat calls, sampling and structured-output parameters)."""

from __future__ import annotations

import sys
import types
from types import SimpleNamespace
from typing import Any

import pytest


class Recorder:
    """Stands in for a vLLM parameter class: keeps the keyword arguments it was built with."""

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


class FakeStructuredOutputsParams(Recorder):
    pass


class FakeGuidedDecodingParams(Recorder):
    pass


class FakeSamplingParams(Recorder):
    pass


def fake_sampling_params_module(api: str) -> types.ModuleType:
    module = types.ModuleType("vllm.sampling_params")
    module.SamplingParams = FakeSamplingParams
    if api in ("structured_outputs", "both"):
        module.StructuredOutputsParams = FakeStructuredOutputsParams
    if api in ("guided_decoding", "both"):
        module.GuidedDecodingParams = FakeGuidedDecodingParams
    return module


def words(text: str) -> list[int]:
    """Fake token ids: one per whitespace-separated word, so counts are easy to check by hand."""
    return [0] * len(text.split())


class FakeVLLM:
    """A fake ``vllm`` package. ``answers`` maps the last user message to the completion text;
    prompts containing ``reject_marker`` make ``chat`` raise ValueError like vLLM's validation."""

    def __init__(self, api: str = "structured_outputs") -> None:
        self.engines: list[Any] = []
        self.chat_calls: list[dict[str, Any]] = []
        self.answers: dict[str, str] = {}
        self.finish_reasons: dict[str, str] = {}
        self.reject_marker: str | None = None
        self.drop_last_output = False
        fake = self

        class LLM:
            def __init__(self, **kwargs: Any) -> None:
                self.kwargs = kwargs
                fake.engines.append(self)

            def chat(self, messages, sampling_params=None, use_tqdm=True, **kwargs):
                fake.chat_calls.append(
                    {
                        "messages": messages,
                        "sampling_params": sampling_params,
                        "use_tqdm": use_tqdm,
                        **kwargs,
                    }
                )
                if fake.reject_marker is not None and any(
                    fake.reject_marker in m["content"] for conv in messages for m in conv
                ):
                    raise ValueError("prompt is longer than max_model_len")
                outputs = []
                for conversation in messages:
                    prompt = conversation[-1]["content"]
                    text = fake.answers.get(prompt, f"echo {prompt}")
                    all_words = " ".join(m["content"] for m in conversation)
                    completion = SimpleNamespace(
                        text=text,
                        token_ids=words(text),
                        finish_reason=fake.finish_reasons.get(prompt, "stop"),
                    )
                    outputs.append(
                        SimpleNamespace(prompt_token_ids=words(all_words), outputs=[completion])
                    )
                return outputs[:-1] if fake.drop_last_output else outputs

        self.module = types.ModuleType("vllm")
        self.module.__version__ = "0.0.0+fake"
        self.module.LLM = LLM
        self.module.SamplingParams = FakeSamplingParams
        self.module.sampling_params = fake_sampling_params_module(api)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> FakeVLLM:
        monkeypatch.setitem(sys.modules, "vllm", self.module)
        monkeypatch.setitem(sys.modules, "vllm.sampling_params", self.module.sampling_params)
        return self
