"""The offline vLLM backend, its structured-output shim and per-draw seeds.

vLLM itself is replaced by small fake modules injected into ``sys.modules`` that record what the
backend asked for; the one test that needs the real vLLM and a GPU skips with its reason.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from types import MappingProxyType, SimpleNamespace
from typing import Any

import pytest
from helpers.fake_vllm import (
    FakeGuidedDecodingParams,
    FakeSamplingParams,
    FakeStructuredOutputsParams,
    FakeVLLM,
    fake_sampling_params_module,
)

from deliberation.inference.backends import backend_class
from deliberation.inference.base import ChatRequest, StructuredOutput
from deliberation.inference.structured import (
    CHOICE_FIELD,
    choice_schema,
    detect_vllm_structured_api,
    openai_structured_extra_body,
    vllm_structured_kwargs,
)
from deliberation.inference.structured_answers import parse_structured_text
from deliberation.inference.vllm_offline import (
    VLLMBackend,
    VLLMOptions,
    response_from_output,
    sampling_kwargs,
)
from deliberation.seeds import derive_seed

CHOICES = StructuredOutput(choices=("A", "B", "C"))
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
JSON_SPEC = StructuredOutput(json_schema=SCHEMA)


@pytest.fixture
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> FakeVLLM:
    return FakeVLLM().install(monkeypatch)


def ask(prompt: str, **kwargs: Any) -> ChatRequest:
    return ChatRequest.from_prompt(prompt, **kwargs)


# ---------------------------------------------------------------------------------------------
# Offline structured-output shim
# ---------------------------------------------------------------------------------------------


def test_new_api_puts_a_choice_list_in_structured_outputs():
    kwargs = vllm_structured_kwargs(CHOICES, fake_sampling_params_module("structured_outputs"))
    assert list(kwargs) == ["structured_outputs"]
    params = kwargs["structured_outputs"]
    assert isinstance(params, FakeStructuredOutputsParams)
    assert params.kwargs == {"choice": ["A", "B", "C"]}


def test_new_api_puts_a_json_schema_in_structured_outputs():
    kwargs = vllm_structured_kwargs(JSON_SPEC, fake_sampling_params_module("structured_outputs"))
    assert kwargs["structured_outputs"].kwargs == {"json": SCHEMA}


def test_old_api_uses_guided_decoding_params():
    module = fake_sampling_params_module("guided_decoding")
    choice = vllm_structured_kwargs(CHOICES, module)
    schema = vllm_structured_kwargs(JSON_SPEC, module)
    assert list(choice) == ["guided_decoding"]
    assert isinstance(choice["guided_decoding"], FakeGuidedDecodingParams)
    assert choice["guided_decoding"].kwargs == {"choice": ["A", "B", "C"]}
    assert schema["guided_decoding"].kwargs == {"json": SCHEMA}


def test_new_api_wins_when_both_are_exported():
    module = fake_sampling_params_module("both")
    assert detect_vllm_structured_api(module) == "structured_outputs"
    assert "structured_outputs" in vllm_structured_kwargs(CHOICES, module)


def test_a_vllm_without_either_api_gets_a_clear_error():
    with pytest.raises(RuntimeError, match=r"\.\[vllm\]"):
        vllm_structured_kwargs(CHOICES, fake_sampling_params_module("neither"))


def test_no_spec_means_no_structured_kwargs():
    assert vllm_structured_kwargs(None, fake_sampling_params_module("neither")) == {}


def test_schema_handed_to_vllm_is_a_plain_copy():
    items = MappingProxyType({"enum": ("x",)})
    spec = StructuredOutput(json_schema=MappingProxyType({"type": "array", "items": items}))
    sent = vllm_structured_kwargs(spec, fake_sampling_params_module("structured_outputs"))
    schema = sent["structured_outputs"].kwargs["json"]
    assert type(schema) is dict and schema == {"type": "array", "items": {"enum": ["x"]}}
    json.dumps(schema)  # serialisable


# ---------------------------------------------------------------------------------------------
# Server-side structured-output fields (for the openai backend)
# ---------------------------------------------------------------------------------------------


def test_structured_outputs_mode_fields():
    assert openai_structured_extra_body(CHOICES, "structured_outputs") == {
        "structured_outputs": {"choice": ["A", "B", "C"]}
    }
    assert openai_structured_extra_body(JSON_SPEC, "structured_outputs") == {
        "structured_outputs": {"json": SCHEMA}
    }


def test_guided_mode_fields():
    assert openai_structured_extra_body(CHOICES, "guided") == {"guided_choice": ["A", "B", "C"]}
    assert openai_structured_extra_body(JSON_SPEC, "guided") == {"guided_json": SCHEMA}


def test_response_format_mode_sends_a_strict_json_schema():
    body = openai_structured_extra_body(JSON_SPEC, "response_format")
    assert body == {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": SCHEMA, "strict": True},
        }
    }


def test_response_format_mode_turns_a_choice_list_into_a_closed_enum_object():
    schema = openai_structured_extra_body(CHOICES, "response_format")["response_format"][
        "json_schema"
    ]["schema"]
    assert schema == choice_schema(["A", "B", "C"])
    assert schema["properties"][CHOICE_FIELD]["enum"] == ["A", "B", "C"]
    assert schema["required"] == [CHOICE_FIELD] and schema["additionalProperties"] is False


def test_json_object_mode_constrains_only_json_specs():
    assert openai_structured_extra_body(JSON_SPEC, "json_object") == {
        "response_format": {"type": "json_object"}
    }
    assert openai_structured_extra_body(CHOICES, "json_object") == {}


def test_none_mode_and_no_spec_send_nothing():
    assert openai_structured_extra_body(CHOICES, "none") == {}
    assert openai_structured_extra_body(None, "structured_outputs") == {}


def test_unknown_server_mode_is_rejected_by_name():
    with pytest.raises(ValueError, match="guided_decoding"):
        openai_structured_extra_body(CHOICES, "guided_decoding")


# ---------------------------------------------------------------------------------------------
# Parsing structured answers
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["B", "  B\n", '"B"', '{"answer": "B"}', '```json\n"B"\n```'])
def test_choice_answers_in_every_accepted_form_parse_to_the_choice(text):
    assert parse_structured_text(CHOICES, text) == "B"


@pytest.mark.parametrize("text", ["b", "D", "B.", "The answer is B", '{"answer": "B", "x": 1}', ""])
def test_choice_answers_outside_the_list_do_not_parse(text):
    assert parse_structured_text(CHOICES, text) is None


def test_json_answer_parses_to_its_value():
    assert parse_structured_text(JSON_SPEC, '{"answer": "A"}') == {"answer": "A"}
    assert parse_structured_text(JSON_SPEC, '```json\n{"answer": "A"}\n```') == {"answer": "A"}


@pytest.mark.parametrize("text", ['{"answer": "A"', "answer: A", '["A"]', '"A"'])
def test_unparseable_or_wrongly_typed_json_gives_none(text):
    assert parse_structured_text(JSON_SPEC, text) is None


def test_number_schemas_do_not_accept_booleans():
    integer = StructuredOutput(json_schema={"type": "integer"})
    number = StructuredOutput(json_schema={"type": "number"})
    assert parse_structured_text(integer, "3") == 3
    assert parse_structured_text(integer, "3.5") is None
    assert parse_structured_text(number, "3.5") == 3.5
    assert parse_structured_text(integer, "true") is None


def test_no_spec_parses_to_none():
    assert parse_structured_text(None, '{"a": 1}') is None


# ---------------------------------------------------------------------------------------------
# Request building
# ---------------------------------------------------------------------------------------------


def test_sampling_kwargs_spell_out_every_field():
    request = ask("q", temperature=0.7, top_p=0.9, max_tokens=64, seed=11)
    kwargs = sampling_kwargs(request, 0, fake_sampling_params_module("structured_outputs"))
    assert kwargs == {
        "n": 1,
        "temperature": 0.7,
        "top_p": 0.9,
        "top_k": -1,
        "min_p": 0.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
        "repetition_penalty": 1.0,
        "max_tokens": 64,
        "seed": 11,
    }


def test_sample_index_changes_the_seed_and_unseeded_requests_use_the_profile_seed():
    module = fake_sampling_params_module("structured_outputs")
    draw0 = sampling_kwargs(ask("q", seed=11, sample=0), 5, module)["seed"]
    draw1 = sampling_kwargs(ask("q", seed=11, sample=1), 5, module)["seed"]
    unseeded = sampling_kwargs(ask("q", sample=2), 5, module)["seed"]
    assert draw0 == 11
    assert draw1 == derive_seed(11, 1) != 11
    assert unseeded == derive_seed(5, 2)


def test_sampling_kwargs_carry_the_structured_constraint():
    kwargs = sampling_kwargs(
        ask("q", structured=CHOICES), 0, fake_sampling_params_module("guided_decoding")
    )
    assert kwargs["guided_decoding"].kwargs == {"choice": ["A", "B", "C"]}
    assert "structured_outputs" not in kwargs


# ---------------------------------------------------------------------------------------------
# Profile options -> engine
# ---------------------------------------------------------------------------------------------


def test_engine_kwargs_carry_parallelism_and_pin_generation_config():
    options = VLLMOptions.from_options(
        {
            "tensor_parallel_size": 4,
            "pipeline_parallel_size": 2,
            "distributed_executor_backend": "ray",
            "max_model_len": 8192,
            "dtype": "bfloat16",
            "engine_extra": {"quantization": "awq"},
        }
    )
    kwargs = options.engine_kwargs("Qwen/Qwen2.5-7B-Instruct", "abc123", 3)
    assert kwargs["generation_config"] == "vllm"
    assert kwargs["tensor_parallel_size"] == 4
    assert kwargs["pipeline_parallel_size"] == 2
    assert kwargs["distributed_executor_backend"] == "ray"
    assert kwargs["model"] == "Qwen/Qwen2.5-7B-Instruct" and kwargs["revision"] == "abc123"
    assert kwargs["max_model_len"] == 8192 and kwargs["dtype"] == "bfloat16"
    assert kwargs["seed"] == 3 and kwargs["quantization"] == "awq"


def test_unset_optional_engine_settings_are_left_to_vllm():
    kwargs = VLLMOptions().engine_kwargs("m")
    for key in ("revision", "tokenizer", "max_model_len", "distributed_executor_backend"):
        assert key not in kwargs
    assert kwargs["tensor_parallel_size"] == 1 and kwargs["pipeline_parallel_size"] == 1


@pytest.mark.parametrize(
    "options, field",
    [
        ({"tensor_parallel_size": 0}, "tensor_parallel_size"),
        ({"pipeline_parallel_size": 1.5}, "pipeline_parallel_size"),
        ({"distributed_executor_backend": "slurm"}, "distributed_executor_backend"),
        ({"gpu_memory_utilization": 1.5}, "gpu_memory_utilization"),
        ({"enforce_eager": "yes"}, "enforce_eager"),
        ({"engine_extra": {"seed": 1}}, "engine_extra"),
        ({"tensor_parallel": 2}, "tensor_parallel"),
        ({"model": "m"}, "model"),  # the model comes from the profile's top level
    ],
)
def test_bad_profile_options_are_rejected_naming_the_field(options, field):
    with pytest.raises(ValueError, match=field):
        VLLMOptions.from_options(options)


# ---------------------------------------------------------------------------------------------
# The backend over a fake engine
# ---------------------------------------------------------------------------------------------


def test_backend_is_registered_as_vllm():
    assert backend_class("vllm") is VLLMBackend


def test_engine_is_built_once_on_first_work_with_the_profile_options(fake_vllm):
    backend = VLLMBackend(model="m", tensor_parallel_size=2, distributed_executor_backend="mp")
    assert fake_vllm.engines == []  # a fully cached run never loads weights
    assert backend.generate([]) == []
    assert fake_vllm.engines == []
    backend.generate([ask("one")])
    backend.generate([ask("two")])
    assert len(fake_vllm.engines) == 1
    engine_kwargs = fake_vllm.engines[0].kwargs
    assert engine_kwargs["generation_config"] == "vllm"
    assert engine_kwargs["tensor_parallel_size"] == 2
    assert engine_kwargs["distributed_executor_backend"] == "mp"


def test_all_requests_go_out_in_one_chat_call_with_one_sampling_params_each(fake_vllm):
    backend = VLLMBackend(model="m", seed=5, use_tqdm=False, chat_template_kwargs={"x": 1})
    requests = [
        ask("first", system="sys", temperature=0.0, seed=1),
        ask("second", temperature=1.0, seed=1, sample=1),
        ask("third", max_tokens=8, structured=CHOICES),
    ]
    backend.generate(requests)
    assert len(fake_vllm.chat_calls) == 1
    call = fake_vllm.chat_calls[0]
    assert call["messages"] == [r.messages_as_dicts() for r in requests]
    params = call["sampling_params"]
    assert len(params) == 3 and all(isinstance(p, FakeSamplingParams) for p in params)
    assert [p.kwargs["seed"] for p in params] == [1, derive_seed(1, 1), 5]
    assert [p.kwargs["temperature"] for p in params] == [0.0, 1.0, 0.0]
    assert params[2].kwargs["max_tokens"] == 8
    assert params[2].kwargs["structured_outputs"].kwargs == {"choice": ["A", "B", "C"]}
    assert "structured_outputs" not in params[0].kwargs
    assert call["use_tqdm"] is False
    assert call["chat_template_kwargs"] == {"x": 1}


def test_chat_template_kwargs_are_not_sent_when_unset(fake_vllm):
    VLLMBackend(model="m").generate([ask("q")])
    assert "chat_template_kwargs" not in fake_vllm.chat_calls[0]


def test_outputs_map_back_in_order_with_counts_reasons_and_parsed_values(fake_vllm):
    fake_vllm.answers = {
        "pick one": "B",
        "give json": '{"answer": "yes"}',
        "broken json": '{"answer": ',
        "free text": "three little words",
    }
    fake_vllm.finish_reasons = {"broken json": "length"}
    requests = [
        ask("pick one", structured=CHOICES),
        ask("give json", structured=JSON_SPEC),
        ask("broken json", structured=JSON_SPEC),
        ask("free text", system="be brief"),
    ]
    seen: list[tuple[int, str]] = []
    responses = VLLMBackend(model="m").generate(
        requests, on_response=lambda i, r: seen.append((i, r.text))
    )
    assert [r.text for r in responses] == [
        "B",
        '{"answer": "yes"}',
        '{"answer": ',
        "three little words",
    ]
    assert seen == [(i, r.text) for i, r in enumerate(responses)]
    assert responses[0].parsed == "B"
    assert responses[1].parsed == {"answer": "yes"}
    # An unparseable structured answer is a valid response whose parsed value is None.
    assert responses[2].parsed is None and responses[2].ok
    assert responses[2].finish_reason == "length"
    assert responses[3].parsed is None and responses[3].finish_reason == "stop"
    # Fake token ids are one per word: "be brief" + "free text" = 4, "three little words" = 3.
    assert responses[3].prompt_tokens == 4 and responses[3].completion_tokens == 3
    assert responses[0].prompt_tokens == 2 and responses[0].completion_tokens == 1
    assert all(r.attempts == 1 and not r.cached for r in responses)


def test_batch_latency_is_shared_evenly(fake_vllm):
    responses = VLLMBackend(model="m").generate([ask("a"), ask("b"), ask("c")])
    latencies = {r.latency_s for r in responses}
    assert len(latencies) == 1 and latencies.pop() >= 0.0


def test_a_rejected_batch_is_retried_per_request_so_only_bad_prompts_fail(fake_vllm):
    fake_vllm.reject_marker = "TOO LONG"
    requests = [ask("fine one"), ask("TOO LONG prompt"), ask("fine two")]
    seen: list[int] = []
    responses = VLLMBackend(model="m").generate(requests, on_response=lambda i, r: seen.append(i))
    assert len(fake_vllm.chat_calls) == 1 + len(requests)
    assert [r.ok for r in responses] == [True, False, True]
    assert responses[0].text == "echo fine one" and responses[2].text == "echo fine two"
    assert responses[1].text == "" and "max_model_len" in responses[1].error
    assert seen == [0, 1, 2]


def test_engine_failures_other_than_validation_propagate(fake_vllm):
    backend = VLLMBackend(model="m")
    backend._engine().chat = lambda *a, **k: (_ for _ in ()).throw(RuntimeError("CUDA OOM"))
    with pytest.raises(RuntimeError, match="CUDA OOM"):
        backend.generate([ask("q")])


def test_a_short_output_list_is_an_error_not_a_silent_misalignment(fake_vllm):
    fake_vllm.drop_last_output = True
    with pytest.raises(RuntimeError, match="2 outputs for 3 prompts"):
        VLLMBackend(model="m").generate([ask("a"), ask("b"), ask("c")])


def test_output_without_completions_becomes_an_error_response():
    response = response_from_output(ask("q"), SimpleNamespace(outputs=[]), 0.5)
    assert not response.ok and response.text == "" and response.latency_s == 0.5


def test_identity_names_model_and_revision(fake_vllm):
    identity = VLLMBackend(model="org/model", revision="r1").identity
    assert (identity.backend, identity.model, identity.revision) == ("vllm", "org/model", "r1")
    assert VLLMBackend(model="org/model", revision="r2").identity != identity


def test_an_empty_model_id_is_rejected(fake_vllm):
    with pytest.raises(ValueError, match="model"):
        VLLMBackend(model=" ")


def test_close_drops_the_engine_and_a_later_call_builds_a_new_one(fake_vllm):
    backend = VLLMBackend(model="m")
    backend.generate([ask("q")])
    backend.close()
    backend.generate([ask("q")])
    assert len(fake_vllm.engines) == 2


def test_old_vllm_gets_guided_decoding_through_the_backend(monkeypatch):
    fake = FakeVLLM(api="guided_decoding").install(monkeypatch)
    VLLMBackend(model="m").generate([ask("q", structured=JSON_SPEC)])
    (params,) = fake.chat_calls[0]["sampling_params"]
    assert params.kwargs["guided_decoding"].kwargs == {"json": SCHEMA}


# ---------------------------------------------------------------------------------------------
# Lazy import
# ---------------------------------------------------------------------------------------------


def test_module_imports_and_registers_without_vllm():
    code = (
        "import sys; sys.modules['vllm'] = None\n"
        "import deliberation.inference.vllm_offline\n"
        "from deliberation.inference.backends import registered_backends\n"
        "assert 'vllm' in registered_backends()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_constructing_without_vllm_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # makes `import vllm` raise ImportError
    with pytest.raises(ImportError, match=r"pip install -e '\.\[vllm\]'"):
        VLLMBackend(model="m")


# ---------------------------------------------------------------------------------------------
# Real vLLM on a GPU (skipped here)
# ---------------------------------------------------------------------------------------------


def test_real_vllm_answers_a_choice_and_repeats_a_seeded_draw():
    pytest.importorskip("vllm", reason="vLLM is not installed (GPU-only extra: .[vllm])")
    torch = pytest.importorskip("torch", reason="torch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: the real vLLM engine needs a GPU")
    model = os.environ.get("DELIBERATION_VLLM_TEST_MODEL")
    if not model:
        pytest.skip("set DELIBERATION_VLLM_TEST_MODEL to a small local chat model to run this")
    backend = VLLMBackend(model=model, max_model_len=1024, gpu_memory_utilization=0.5)
    try:
        request = ask("Answer with one letter: A, B or C?", temperature=1.0, seed=3, max_tokens=4)
        first, again, other = backend.generate(
            [
                dataclasses.replace(request, structured=CHOICES),
                dataclasses.replace(request, structured=CHOICES),
                ask("Say something short.", temperature=1.0, seed=3, max_tokens=8),
            ]
        )
        assert first.parsed in CHOICES.choices
        assert again.text == first.text  # same seed, same draw
        assert other.completion_tokens > 0 and other.prompt_tokens > 0
    finally:
        backend.close()


def test_profile_builds_the_backend_with_its_parallelism(fake_vllm):
    from deliberation.profiles.profile import load_profile

    profile = load_profile("gpt-oss-120b-vllm")
    backend = VLLMBackend.from_profile(profile)
    kwargs = backend.options.engine_kwargs(backend.model)
    assert kwargs["tensor_parallel_size"] == profile.options.tensor_parallel_size == 2
    assert kwargs["generation_config"] == "vllm" and kwargs["model"] == profile.model


# ---------------------------------------------------------------------------------------------
# Chunks: an engine failure loses at most one chunk
# ---------------------------------------------------------------------------------------------


def test_a_stage_is_sent_in_chunks_and_an_engine_crash_keeps_every_finished_chunk(
    fake_vllm, tmp_path
):
    """The probe: an out-of-memory error in a stage lost every answer of the stage."""
    from deliberation.inference.cache import ResponseCache
    from deliberation.inference.client import CachedClient

    requests = [ask(f"q{i}") for i in range(10)]
    backend = VLLMBackend(model="m", chunk_size=4)
    engine = backend._engine()
    real_chat = engine.chat

    def out_of_memory_on_the_third_call(*args, **kwargs):
        if len(fake_vllm.chat_calls) == 2:
            fake_vllm.chat_calls.append({"crashed": True})
            raise RuntimeError("CUDA out of memory")
        return real_chat(*args, **kwargs)

    engine.chat = out_of_memory_on_the_third_call
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        client = CachedClient(backend, cache, profile="p", progress=False)
        with pytest.raises(RuntimeError, match="out of memory"):
            client.generate(requests)
        assert len(cache.keys()) == 8  # chunks one and two were committed as they finished
        assert [len(c["messages"]) for c in fake_vllm.chat_calls[:2]] == [4, 4]

        engine.chat = real_chat
        fake_vllm.chat_calls.clear()
        out = client.generate(requests)  # the rerun resumes with the failed chunk
    assert [len(c["messages"]) for c in fake_vllm.chat_calls] == [2]
    assert [c[-1]["content"] for c in fake_vllm.chat_calls[0]["messages"]] == ["q8", "q9"]
    assert [r.text for r in out] == [f"echo q{i}" for i in range(10)]
    assert [r.cached for r in out] == [True] * 8 + [False] * 2


def test_a_full_disk_keeps_every_answer_of_the_finished_chunk_and_starts_no_other(
    fake_vllm, tmp_path
):
    from deliberation.inference.cache import CacheWriteError, ResponseCache, spill_files
    from deliberation.inference.client import CachedClient

    requests = [ask(f"q{i}") for i in range(10)]
    fake_vllm.answers = {f"q{i}": f"{i} " + "x" * 3000 for i in range(10)}  # a page each
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        pages = cache._conn.execute("PRAGMA page_count").fetchone()[0]
        cache._conn.execute(f"PRAGMA max_page_count={pages}")  # SQLITE_FULL, as a full disk
        client = CachedClient(VLLMBackend(model="m", chunk_size=4), cache, profile="p",
                              progress=False, write_wait_s=0)  # fmt: skip
        with pytest.raises(CacheWriteError, match="received answers saved in"):
            client.generate(requests)
        stored = len(cache.keys())
    assert len(fake_vllm.chat_calls) == 1  # the second chunk never started
    (spill,) = spill_files(tmp_path / "c.sqlite")
    spilled = len(spill.read_text().splitlines()) - 1
    assert spilled >= 1 and stored + spilled == 4  # the whole first chunk kept


def test_chunk_indices_map_back_to_the_batch_and_rejections_stay_in_their_chunk(fake_vllm):
    fake_vllm.reject_marker = "TOO LONG"
    requests = [ask(f"q{i}") for i in range(5)] + [ask("TOO LONG")] + [ask("q6")]
    seen: list[tuple[int, str]] = []
    responses = VLLMBackend(model="m", chunk_size=3).generate(
        requests, on_response=lambda i, r: seen.append((i, r.text))
    )
    assert [i for i, _ in seen] == list(range(7))
    assert [text for _, text in seen] == [r.text for r in responses]
    # chunks [0-2], [3-5] (rejected: retried one by one), [6]
    assert [len(c["messages"]) for c in fake_vllm.chat_calls] == [3, 3, 1, 1, 1, 1]
    assert not responses[5].ok and responses[6].text == "echo q6"


def test_the_profile_sets_the_chunk_size(fake_vllm):
    from deliberation.profiles.profile import load_profile

    profile = load_profile("qwen2.5-7b-vllm")
    assert VLLMBackend.from_profile(profile).options.chunk_size == profile.options.chunk_size
    changed = profile.model_copy(
        update={"options": profile.options.model_copy(update={"chunk_size": 7})}
    )
    assert VLLMBackend.from_profile(changed).options.chunk_size == 7
    with pytest.raises(ValueError, match="chunk_size"):
        VLLMOptions(model="m", chunk_size=0)
