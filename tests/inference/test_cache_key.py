"""The cache key is what is sent: every setting that changes a request changes the key.

The field lists come from ``ChatRequest``'s dataclass fields and from each backend's options
model, so a field added later is covered (or must be declared ``transport_only``) without
editing this file.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

import pytest
from helpers.fake_vllm import FakeVLLM
from pydantic import BaseModel, ValidationError

from deliberation.inference.base import (
    ChatRequest,
    Message,
    StructuredOutput,
    transport_only_fields,
)
from deliberation.inference.cache import request_key
from deliberation.inference.openai_api import OpenAIBackend, OpenAIOptions
from deliberation.inference.sim import SimBackend
from deliberation.inference.structured import SERVER_STRUCTURED_MODES
from deliberation.inference.vllm_offline import VLLMBackend, VLLMOptions

SCHEMA = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
# Every field set to a non-default value, so each can be changed in place.
REQUEST = ChatRequest(
    messages=(Message("system", "be brief"), Message("user", "pick one")),
    stage="crossprofile.decision",
    temperature=0.7,
    max_tokens=64,
    top_p=0.9,
    seed=3,
    structured=StructuredOutput(choices=("A", "B")),
    sample=1,
)
STRUCTURED_VARIANTS = (
    None,
    StructuredOutput(choices=("A", "B")),
    StructuredOutput(choices=("A", "C")),
    StructuredOutput(json_schema=SCHEMA),
)


def _changed(value: Any) -> Any:
    """A different value of the same kind (request fields are never None in REQUEST)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value / 2
    if isinstance(value, str):
        return value + ".other"
    if isinstance(value, tuple) and all(isinstance(m, Message) for m in value):
        return (*value[:-1], Message(value[-1].role, value[-1].content + " now"))
    if isinstance(value, StructuredOutput):
        return StructuredOutput(json_schema=SCHEMA)
    raise AssertionError(f"no change known for {value!r}: extend _changed")


def _literal_values(annotation: Any) -> list[Any]:
    found = []
    for arg in typing.get_args(annotation):
        found += _literal_values(arg)
    if typing.get_origin(annotation) is typing.Literal:
        found += list(typing.get_args(annotation))
    return found


def option_changes(model: type[BaseModel], base: BaseModel) -> dict[str, BaseModel]:
    """For every field of ``model``, ``base`` with that one field set to another valid value."""
    out = {}
    for name, info in model.model_fields.items():
        current = getattr(base, name)
        candidates = [*_literal_values(info.annotation)]
        if current is not None and not isinstance(current, dict):
            candidates.insert(0, _changed(current))
        candidates += ["other-value", "OTHER_NAME", 4096, 0.5, True, {"enable_thinking": False}]
        for candidate in candidates:
            try:
                changed = model.model_validate({**base.model_dump(), name: candidate})
            except ValidationError:
                continue
            if getattr(changed, name) != current:
                out[name] = changed
                break
        else:
            raise AssertionError(f"{model.__name__}.{name}: no other valid value found")
    return out


def request_changes() -> dict[str, ChatRequest]:
    return {
        f.name: dataclasses.replace(REQUEST, **{f.name: _changed(getattr(REQUEST, f.name))})
        for f in dataclasses.fields(ChatRequest)
    }


# -- openai ---------------------------------------------------------------------------------------

OPENAI_BASE = OpenAIOptions(base_url="http://127.0.0.1:9/v1")


def _openai(options: OpenAIOptions = OPENAI_BASE, **kwargs: Any) -> OpenAIBackend:
    settings = options.model_dump()
    settings.pop("api_key_env")
    return OpenAIBackend(model=kwargs.pop("model", "m"), **settings, **kwargs)


@pytest.mark.parametrize("field", [f.name for f in dataclasses.fields(ChatRequest)])
@pytest.mark.parametrize("backend", ["openai", "sim"])
def test_every_request_field_changes_the_key(backend, field):
    sender = _openai() if backend == "openai" else SimBackend()
    changed = request_changes()[field]
    assert request_key(sender, changed) != request_key(sender, REQUEST)


@pytest.mark.parametrize("field", sorted(OpenAIOptions.model_fields))
def test_every_openai_option_changes_the_key_unless_transport_only(field):
    neutral = transport_only_fields(OpenAIOptions)
    changed = _openai(option_changes(OpenAIOptions, OPENAI_BASE)[field])
    for request in (
        REQUEST,
        dataclasses.replace(REQUEST, structured=StructuredOutput(json_schema=SCHEMA)),
    ):
        same = request_key(changed, request) == request_key(_openai(), request)
        if field in neutral:
            assert same, f"{field} is transport_only but changes the key"
        elif field != "structured_output" or request.structured.json_schema is not None:
            assert not same, f"{field} changes what is sent but not the key"


def test_every_structured_mode_gets_its_own_key():
    request = dataclasses.replace(REQUEST, structured=StructuredOutput(json_schema=SCHEMA))
    keys = {
        request_key(_openai(OPENAI_BASE.model_copy(update={"structured_output": mode})), request)
        for mode in SERVER_STRUCTURED_MODES
    }
    assert len(keys) == len(SERVER_STRUCTURED_MODES)


def test_send_seed_off_changes_the_key_and_draws_keep_their_own_rows():
    quiet = _openai(OPENAI_BASE.model_copy(update={"send_seed": False}))
    assert request_key(quiet, REQUEST) != request_key(_openai(), REQUEST)
    assert request_key(quiet, dataclasses.replace(REQUEST, sample=2)) != request_key(quiet, REQUEST)


def test_model_and_revision_change_the_key():
    base = request_key(_openai(), REQUEST)
    assert request_key(_openai(model="m2"), REQUEST) != base
    assert request_key(_openai(revision="r2"), REQUEST) != base


def test_only_the_api_key_changing_keeps_the_key():
    one = _openai(api_key="sk-first-secret-0000")
    two = _openai(api_key="sk-second-secret-1111")
    assert request_key(one, REQUEST) == request_key(two, REQUEST)
    assert "secret" not in str(one.request_payload(REQUEST))


def test_each_structured_variant_differs_on_every_backend():
    for sender in (_openai(), SimBackend()):
        keys = {
            request_key(sender, dataclasses.replace(REQUEST, structured=s))
            for s in STRUCTURED_VARIANTS
        }
        assert len(keys) == len(STRUCTURED_VARIANTS)


# -- vllm -----------------------------------------------------------------------------------------


@pytest.fixture
def fake_vllm(monkeypatch):
    return FakeVLLM().install(monkeypatch)


@pytest.mark.parametrize("field", [f.name for f in dataclasses.fields(ChatRequest)])
def test_every_request_field_changes_the_vllm_key(fake_vllm, field):
    backend = VLLMBackend(model="m")
    assert request_key(backend, request_changes()[field]) != request_key(backend, REQUEST)


@pytest.mark.parametrize("field", sorted(VLLMOptions.model_fields))
def test_every_vllm_option_changes_the_key_unless_transport_only(fake_vllm, field):
    base = VLLMBackend(model="m")
    changed_options = option_changes(VLLMOptions, base.options)[field]
    changed = VLLMBackend(model="m", **changed_options.model_dump())
    same = request_key(changed, REQUEST) == request_key(base, REQUEST)
    assert same == (field in transport_only_fields(VLLMOptions))


def test_vllm_model_revision_and_engine_seed_change_the_key(fake_vllm):
    base = request_key(VLLMBackend(model="m"), REQUEST)
    for other in ({"model": "m2"}, {"model": "m", "revision": "r"}, {"model": "m", "seed": 9}):
        assert request_key(VLLMBackend(**other), REQUEST) != base


def test_chat_template_kwargs_reach_the_key(fake_vllm):
    thinking = VLLMBackend(model="m", chat_template_kwargs={"enable_thinking": True})
    silent = VLLMBackend(model="m", chat_template_kwargs={"enable_thinking": False})
    assert request_key(thinking, REQUEST) != request_key(silent, REQUEST)
