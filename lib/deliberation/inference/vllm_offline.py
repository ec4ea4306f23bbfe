"""The ``vllm`` backend: offline ``vllm.LLM`` on local GPUs, a stage's requests in a few large calls.

In full: ``docs/engines.md``, section "The offline vllm backend (inference/vllm_offline.py)".
"""

from __future__ import annotations

import functools
import gc
import importlib
import importlib.util
import logging
import time
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    field_validator,
)

from deliberation.inference.base import (
    Backend,
    BackendIdentity,
    BackendUnavailableError,
    ChatRequest,
    ChatResponse,
    OnResponse,
    output_options,
    transport_only,
)
from deliberation.inference.structured import vllm_structured_kwargs
from deliberation.inference.structured_answers import parse_structured_text
from deliberation.seeds import derive_seed

logger = logging.getLogger(__name__)

_INSTALL_HINT = (
    "the vllm backend needs vLLM (CUDA GPUs only), which is not installed here: install the "
    "extra with `pip install -e '.[vllm]'` (pins vllm>=0.10.2,<0.34), or run the same model "
    "behind an OpenAI-compatible server with a profile like params/vllm-serve-local.yaml"
)
# Engine arguments this module sets itself; engine_extra may not override them.
_MANAGED_ENGINE_KEYS = frozenset(
    {
        "model",
        "revision",
        "tokenizer",
        "dtype",
        "max_model_len",
        "gpu_memory_utilization",
        "tensor_parallel_size",
        "pipeline_parallel_size",
        "distributed_executor_backend",
        "trust_remote_code",
        "seed",
        "enforce_eager",
        "generation_config",
    }
)


class VLLMOptions(BaseModel):
    """The ``vllm:`` section of a profile (model, revision and seed come from the profile's top
    level); validated strictly, so a bad or unknown option is an error naming it. Every option
    not made with ``transport_only`` is part of the cache key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tokenizer: StrictStr | None = None
    dtype: StrictStr = "auto"
    max_model_len: Annotated[StrictInt, Field(gt=0)] | None = None
    # Memory and process placement decide where the work runs, not what is computed.
    gpu_memory_utilization: Annotated[float, Field(gt=0, le=1)] = transport_only(0.9)
    tensor_parallel_size: Annotated[StrictInt, Field(gt=0)] = 1
    pipeline_parallel_size: Annotated[StrictInt, Field(gt=0)] = 1
    distributed_executor_backend: Literal["mp", "ray"] | None = transport_only(None)
    trust_remote_code: StrictBool = False
    enforce_eager: StrictBool = False
    # Passed to the chat template (e.g. {"enable_thinking": false} for Qwen3,
    # {"reasoning_effort": "low"} for gpt-oss).
    chat_template_kwargs: dict[str, Any] | None = None
    use_tqdm: StrictBool = transport_only(True)
    # Requests per LLM.chat call. Each chunk is cached as it finishes, so an engine failure
    # (out of memory, CUDA error) loses at most one chunk and a rerun resumes from there;
    # larger chunks keep the engine's batch fuller near a chunk's end. Answers do not depend
    # on it (every request carries its own seed), so it is not part of the cache key.
    chunk_size: Annotated[StrictInt, Field(gt=0)] = transport_only(512)
    engine_extra: dict[str, Any] = Field(default_factory=dict)

    @field_validator("engine_extra")
    @classmethod
    def _extra_may_not_override_managed_keys(cls, value: dict[str, Any]) -> dict[str, Any]:
        clash = sorted(_MANAGED_ENGINE_KEYS & set(value))
        if clash:
            raise ValueError(
                f"engine_extra may not set {clash}: use the backend option of the same name"
                " (generation_config is always 'vllm')"
            )
        return value

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> VLLMOptions:
        """Build from a profile's option mapping (errors name the option)."""
        return cls.model_validate(dict(options))

    def engine_kwargs(
        self, model: str, revision: str | None = None, seed: int = 0
    ) -> dict[str, Any]:
        """Keyword arguments for ``vllm.LLM``: always ``generation_config="vllm"``; optional
        settings only when given, so vLLM's defaults apply otherwise."""
        kwargs: dict[str, Any] = {
            "model": model,
            "generation_config": "vllm",
            "dtype": self.dtype,
            "gpu_memory_utilization": self.gpu_memory_utilization,
            "tensor_parallel_size": self.tensor_parallel_size,
            "pipeline_parallel_size": self.pipeline_parallel_size,
            "trust_remote_code": self.trust_remote_code,
            "seed": seed,
            "enforce_eager": self.enforce_eager,
        }
        optional = {
            "revision": revision,
            "tokenizer": self.tokenizer,
            "max_model_len": self.max_model_len,
            "distributed_executor_backend": self.distributed_executor_backend,
        }
        kwargs.update({k: v for k, v in optional.items() if v is not None})
        kwargs.update(self.engine_extra)
        return kwargs


def _import_vllm() -> ModuleType:
    """Import vLLM, or fail with an error that says how to install it."""
    try:
        return importlib.import_module("vllm")
    except ImportError as exc:
        raise BackendUnavailableError(_INSTALL_HINT) from exc


def sampling_fields(request: ChatRequest, default_seed: int) -> dict[str, Any]:
    """Every plain ``SamplingParams`` field for one request, neutral values spelled out, with
    the per-draw seed (the structured constraint is added by :func:`sampling_kwargs`)."""
    base_seed = default_seed if request.seed is None else request.seed
    return {
        "n": 1,
        "temperature": request.temperature,
        "top_p": request.top_p,
        "top_k": -1,
        "min_p": 0.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
        "repetition_penalty": 1.0,
        "max_tokens": request.max_tokens,
        "seed": derive_seed(base_seed, request.sample),
    }


def sampling_kwargs(
    request: ChatRequest, default_seed: int, sampling_params_module: ModuleType
) -> dict[str, Any]:
    """:func:`sampling_fields` plus the structured-output constraint for the installed vLLM."""
    kwargs = sampling_fields(request, default_seed)
    kwargs.update(vllm_structured_kwargs(request.structured, sampling_params_module))
    return kwargs


def response_from_output(request: ChatRequest, output: Any, latency_s: float) -> ChatResponse:
    """Map one vLLM ``RequestOutput`` to a :class:`ChatResponse` (first completion only; n=1)."""
    completions = getattr(output, "outputs", None) or []
    if not completions:
        return ChatResponse(text="", latency_s=latency_s, error="vLLM returned no completion")
    completion = completions[0]
    text = completion.text or ""
    return ChatResponse(
        text=text,
        parsed=parse_structured_text(request.structured, text),
        finish_reason=completion.finish_reason,
        prompt_tokens=len(getattr(output, "prompt_token_ids", None) or ()),
        completion_tokens=len(getattr(completion, "token_ids", None) or ()),
        latency_s=latency_s,
    )


def _deliver(responses: Sequence[ChatResponse], on_response: OnResponse | None) -> None:
    """Hand a finished chunk to ``on_response``, every answer of it even when a call raises
    (the cache cannot be written: each one is kept, the next chunk is not started); then the
    first error is raised."""
    if on_response is None:
        return
    refused: list[Exception] = []
    for index, response in enumerate(responses):
        try:
            on_response(index, response)
        except Exception as exc:
            refused.append(exc)
    if refused:
        raise refused[0]


def _shifted(on_response: OnResponse, offset: int, index: int, response: ChatResponse) -> None:
    """``on_response`` with a chunk's index turned back into the batch's."""
    on_response(offset + index, response)


class VLLMBackend(Backend):
    """Offline vLLM: one ``LLM.chat`` call per :meth:`generate`, one ``SamplingParams`` per request."""

    Options = VLLMOptions
    engine = "vllm"

    def __init__(
        self,
        *,
        model: str,
        revision: str | None = None,
        seed: int = 0,
        load_vllm: bool = True,
        **options: Any,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"model: expected a model id, got {model!r}")
        self.model = model.strip()
        self.revision = revision or None
        self.seed = seed
        self.options = VLLMOptions.from_options(options)
        self._llm: Any = None
        if not load_vllm:  # keys and payloads only (for_planning): never generates
            self._vllm = None
            return
        self._vllm = _import_vllm()
        self._sampling_params_module = importlib.import_module("vllm.sampling_params")
        logger.info(
            "vllm backend: vLLM %s, model %s",
            getattr(self._vllm, "__version__", "?"),
            self.model,
        )

    @classmethod
    def from_profile(cls, profile: Any) -> VLLMBackend:
        """Model, revision and seed from the profile's top level; engine options from ``vllm:``."""
        return cls(
            model=profile.model,
            revision=profile.revision or None,
            seed=profile.seed,
            **profile.options.model_dump(),
        )

    @classmethod
    def check_available(cls) -> None:
        """vLLM importable here (found, not imported: importing it takes seconds)."""
        try:
            found = importlib.util.find_spec("vllm") is not None
        except (ImportError, ValueError):  # a broken or blocked installation
            found = False
        if not found:
            raise BackendUnavailableError(_INSTALL_HINT)

    @classmethod
    def for_planning(cls, profile: Any) -> VLLMBackend:
        """Keys and payloads without vLLM installed (``deliberation plan`` on a CPU machine)."""
        return cls(
            model=profile.model,
            revision=profile.revision or None,
            seed=profile.seed,
            load_vllm=False,
            **profile.options.model_dump(),
        )

    @property
    def identity(self) -> BackendIdentity:
        return BackendIdentity(backend="vllm", model=self.model, revision=self.revision or "")

    def request_payload(self, request: ChatRequest) -> dict[str, Any]:
        """The prompt, every sampling field, the structured spec and every option that changes
        outputs (``chat_template_kwargs``, precision, tokenizer, parallelism, extras, the
        engine seed): all but the ``transport_only`` options."""
        return {
            "messages": request.messages_as_dicts(),
            "sampling": sampling_fields(request, self.seed),
            "structured": None if request.structured is None else request.structured.to_dict(),
            "engine_seed": self.seed,
            "options": output_options(self.options),
        }

    def _engine(self) -> Any:
        if self._vllm is None:
            raise RuntimeError("this vllm backend was built for planning (keys only)")
        if self._llm is None:
            kwargs = self.options.engine_kwargs(self.model, self.revision, self.seed)
            logger.info("loading vLLM engine: %s", kwargs)
            self._llm = self._vllm.LLM(**kwargs)
        return self._llm

    def sampling_params(self, request: ChatRequest) -> Any:
        """The ``vllm.SamplingParams`` for one request."""
        kwargs = sampling_kwargs(request, self.seed, self._sampling_params_module)
        return self._vllm.SamplingParams(**kwargs)

    def _chat(self, conversations: list[list[dict[str, str]]], params: list[Any]) -> list[Any]:
        chat_kwargs: dict[str, Any] = {"sampling_params": params, "use_tqdm": self.options.use_tqdm}
        if self.options.chat_template_kwargs is not None:
            chat_kwargs["chat_template_kwargs"] = dict(self.options.chat_template_kwargs)
        outputs = list(self._engine().chat(conversations, **chat_kwargs))
        if len(outputs) != len(conversations):
            raise RuntimeError(
                f"vLLM returned {len(outputs)} outputs for {len(conversations)} prompts"
            )
        return outputs

    def generate(
        self, requests: Sequence[ChatRequest], on_response: OnResponse | None = None
    ) -> list[ChatResponse]:
        """Send the requests chunk by chunk; each chunk reaches ``on_response`` as it ends."""
        responses: list[ChatResponse] = []
        size = self.options.chunk_size
        for start in range(0, len(requests), size):
            chunk = requests[start : start + size]
            deliver = None
            if on_response is not None:
                deliver = functools.partial(_shifted, on_response, start)
            responses.extend(self._generate_chunk(chunk, deliver))
            if len(requests) > size:
                logger.info("vLLM: %d of %d requests done", len(responses), len(requests))
        return responses

    def _generate_chunk(
        self, requests: Sequence[ChatRequest], on_response: OnResponse | None
    ) -> list[ChatResponse]:
        if not requests:
            return []
        conversations = [request.messages_as_dicts() for request in requests]
        params = [self.sampling_params(request) for request in requests]
        started = time.perf_counter()
        try:
            outputs = self._chat(conversations, params)
        except ValueError as exc:
            logger.warning(
                "vLLM rejected the batch of %d (%s); retrying one request per call",
                len(requests),
                exc,
            )
            return self._generate_one_by_one(requests, conversations, params, on_response)
        share = (time.perf_counter() - started) / len(requests)
        responses = [
            response_from_output(request, output, share)
            for request, output in zip(requests, outputs, strict=True)
        ]
        _deliver(responses, on_response)
        return responses

    def _generate_one_by_one(
        self,
        requests: Sequence[ChatRequest],
        conversations: list[list[dict[str, str]]],
        params: list[Any],
        on_response: OnResponse | None,
    ) -> list[ChatResponse]:
        responses = []
        for index, request in enumerate(requests):
            started = time.perf_counter()
            try:
                (output,) = self._chat([conversations[index]], [params[index]])
                response = response_from_output(request, output, time.perf_counter() - started)
            except ValueError as exc:
                response = ChatResponse(
                    text="",
                    latency_s=time.perf_counter() - started,
                    error=f"vLLM rejected the request: {exc}",
                )
            responses.append(response)
            if on_response is not None:
                on_response(index, response)
        return responses

    def close(self) -> None:
        """Drop the engine so its GPU memory can be reclaimed."""
        if self._llm is not None:
            self._llm = None
            gc.collect()
