"""A profile's own model server: started when a call must be sent and its URL does not answer,
stopped at the end (also on an error, Ctrl-C and SIGTERM), never one that was already running.

The server under test is serve-sim started through the profile's ``server:`` section, so the
whole path (command, readiness, requests, stop) runs as it does for llama.cpp or vLLM.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
from helpers.llama_like import LlamaCppPythonLike, llama_like_server
from helpers.serve_sim import SIM_MODEL, arithmetic_requests, openai_profile, wait_until

from deliberation import exit_codes
from deliberation.inference.cache import ResponseCache
from deliberation.inference.client import CachedClient
from deliberation.inference.model_server import (
    ServerOptions,
    ServerStartError,
    answers,
    model_server,
)
from deliberation.inference.openai_api import ModelMismatchError, OpenAIBackend, PreflightError
from deliberation.profiles.profile import Profile, ProfileError, load_profile
from deliberation.testing import sim_server_in_thread

SERVE_SIM = ("{python}", "-m", "deliberation", "serve-sim", "--port", "{port}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def managed_profile(tmp_path: Path, port: int, **server: object) -> Profile:
    base = openai_profile(f"http://127.0.0.1:{port}/v1", name="managed")
    options = {"command": SERVE_SIM, "log_file": str(tmp_path / "server.log"),
               "ready_timeout_s": 60.0, **server}  # fmt: skip
    return base.model_copy(update={"server": ServerOptions(**options)})


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def client_for(profile: Profile, cache_file: Path) -> CachedClient:
    return CachedClient(
        OpenAIBackend.from_profile(profile), ResponseCache(cache_file), profile=profile.name,
        progress=False,
    )  # fmt: skip


def test_the_run_starts_the_server_when_a_call_is_sent_and_stops_it_after(tmp_path) -> None:
    port = free_port()
    profile = managed_profile(tmp_path, port)
    with model_server(profile) as server:
        assert server is not None and server.process is None  # nothing sent yet: not started
        responses = client_for(profile, tmp_path / "c.sqlite").generate(arithmetic_requests(3))
        assert all(r.ok for r in responses)
        pid = server.process.pid
        assert listening(port)
    assert not listening(port)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert "serve-sim" in (tmp_path / "server.log").read_text()


def test_a_run_answered_from_the_cache_starts_no_server(tmp_path) -> None:
    port = free_port()
    profile = managed_profile(tmp_path, port)
    with model_server(profile):
        client_for(profile, tmp_path / "c.sqlite").generate(arithmetic_requests(2))
    with model_server(profile) as server:
        again = client_for(profile, tmp_path / "c.sqlite").generate(arithmetic_requests(2))
        assert all(r.cached for r in again) and server.process is None
    assert not listening(port)


def test_a_server_already_answering_is_used_and_never_stopped(tmp_path) -> None:
    with sim_server_in_thread() as running:
        port = int(running.base_url.rsplit(":", 1)[1].split("/")[0])
        profile = managed_profile(tmp_path, port)
        with model_server(profile) as server:
            client_for(profile, tmp_path / "c.sqlite").generate(arithmetic_requests(2))
            assert server.external and server.process is None
        assert answers(f"{running.base_url}/models")  # still up after the block


@pytest.mark.parametrize("failure", [RuntimeError("boom"), KeyboardInterrupt()])
def test_an_error_or_ctrl_c_inside_the_run_stops_the_server(tmp_path, failure) -> None:
    port = free_port()
    profile = managed_profile(tmp_path, port)
    with pytest.raises(type(failure)), model_server(profile, start_now=True) as server:
        assert listening(port)
        pid = server.process.pid
        raise failure
    assert not listening(port)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_sigterm_to_the_run_stops_its_server(tmp_path) -> None:
    port = free_port()
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from pathlib import Path
        from test_model_server import managed_profile  # this module itself, in a child process
        from deliberation.inference.model_server import model_server
        with model_server(managed_profile(Path({str(tmp_path)!r}), {port}), start_now=True):
            print("ready", flush=True)
            time.sleep(60)
    """)
    run = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert run.stdout.readline().strip() == "ready"
        assert listening(port)
        run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=30) == 128 + signal.SIGTERM
    finally:
        run.kill()
    assert wait_until(lambda: not listening(port), 10)


def test_a_server_that_exits_at_once_is_an_error_quoting_its_log(tmp_path) -> None:
    command = ("{python}", "-c", "import sys; print('no such model file'); sys.exit(3)")
    profile = managed_profile(tmp_path, free_port(), command=command)
    with (
        pytest.raises(ServerStartError, match="status 3.*no such model file"),
        model_server(profile, start_now=True),
    ):
        pass


def test_a_server_that_never_gets_ready_is_stopped_and_named(tmp_path) -> None:
    command = ("{python}", "-c", "import time; time.sleep(60)")
    profile = managed_profile(tmp_path, free_port(), command=command, ready_timeout_s=1.0)
    started = time.monotonic()
    with (
        pytest.raises(ServerStartError, match="ready_timeout_s=1"),
        model_server(profile, start_now=True),
    ):
        pass
    assert time.monotonic() - started < 30


def test_a_missing_model_file_says_what_makes_it(tmp_path) -> None:
    profile = managed_profile(tmp_path, free_port(), model_file=str(tmp_path / "absent.gguf"))
    with (
        pytest.raises(ServerStartError, match="make models"),
        model_server(profile, start_now=True),
    ):
        pass


def test_the_server_section_must_name_the_base_url_of_this_machine(tmp_path) -> None:
    yaml = tmp_path / "remote.yaml"
    yaml.write_text(
        textwrap.dedent("""
        backend: openai
        model: m
        openai: {base_url: "http://example.org:8000/v1"}
        server: {command: [vllm, serve, m]}
    """)
    )
    with pytest.raises(ProfileError, match="remote.yaml: .*server.*example.org"):
        load_profile(yaml)
    yaml.write_text(
        textwrap.dedent("""
        backend: openai
        model: m
        openai: {base_url: "http://127.0.0.1:8000/v1"}
        server: {command: [vllm, serve, m], port: 9000}
    """)
    )
    with pytest.raises(ProfileError, match="server.port: 9000 differs"):
        load_profile(yaml)


def test_the_shipped_managed_profiles_load_with_their_server_sections() -> None:
    llama = load_profile("smollm2-135m-llamacpp")
    assert llama.server.model_file.endswith(".gguf") and llama.server.port == 8431
    assert llama.options.structured_output == "json_object_schema"
    vllm = load_profile("vllm-serve-managed")
    assert vllm.server.command[:2] == ("vllm", "serve")
    assert OpenAIBackend.from_profile(llama).base_url.endswith(":8431/v1")


def test_a_model_name_the_server_refuses_stops_the_preflight_naming_both() -> None:
    with sim_server_in_thread() as running:
        assert OpenAIBackend.from_profile(openai_profile(running.base_url)).preflight() == []
        other = OpenAIBackend(model="not-served", base_url=running.base_url)
        with pytest.raises(
            PreflightError, match=f"not-served.*{SIM_MODEL}|{SIM_MODEL}.*not-served"
        ):
            other.preflight()


@pytest.fixture
def llama_like():
    with llama_like_server() as base_url:
        yield base_url


def test_a_refused_structured_output_mode_stops_the_run_at_once_naming_the_key(llama_like) -> None:
    profile = openai_profile(
        llama_like, structured_output="response_format", max_retries=6, allow_model_alias=True
    )
    with model_server(profile), pytest.raises(PreflightError) as refused:
        client_for(profile, Path(tempfile.mkdtemp()) / "c.sqlite").generate(arithmetic_requests(20))
    message = str(refused.value)
    assert "openai.structured_output" in message and "Input should be 'text'" in message
    assert llama_like.rsplit("/v1", 1)[0] in message
    # It asked the server which dialect it speaks, and says what to set.
    assert "set openai.structured_output: json_object_schema" in message
    # The pre-flight request, the same without its structured fields, then one per mode tried
    # (vLLM's two are ignored, answered in free text) until json_object_schema: no batch sent.
    bodies = LlamaCppPythonLike.bodies
    assert "response_format" not in bodies[1]
    assert [b.get("response_format", {}).get("type") for b in bodies[2:]] == [
        None, None, "json_object"]  # fmt: skip
    assert "schema" in bodies[-1]["response_format"]


def test_a_mode_the_server_ignores_is_a_warning_and_the_right_mode_passes(llama_like) -> None:
    ignored = OpenAIBackend(model="served-model", base_url=llama_like)  # vLLM's fields
    (warning,) = ignored.preflight()
    assert "openai.structured_output='structured_outputs'" in warning
    assert "set openai.structured_output: json_object_schema" in warning
    right = OpenAIBackend(
        model="served-model", base_url=llama_like, structured_output="json_object_schema"
    )
    assert right.preflight() == []
    sent = LlamaCppPythonLike.bodies[-1]["response_format"]
    assert sent["type"] == "json_object" and sent["schema"]["properties"]["answer"]["enum"]


def test_a_server_no_mode_constrains_is_told_to_use_none(llama_like, monkeypatch) -> None:
    """The dialect search can come back empty: then the advice is free text (mode none)."""
    monkeypatch.setattr(LlamaCppPythonLike, "do_POST", _free_text_only)
    backend = OpenAIBackend(model="served-model", base_url=llama_like)
    assert backend.working_structured_mode() is None
    (warning,) = backend.preflight()
    assert "set openai.structured_output: none" in warning


def _free_text_only(handler: LlamaCppPythonLike) -> None:
    handler.rfile.read(int(handler.headers["Content-Length"]))
    handler.send_json(200, {"id": "x", "object": "chat.completion", "created": 0,
                        "model": "served-model", "choices": [{"index": 0, "finish_reason": "stop",
                        "message": {"role": "assistant", "content": "Maybe."}}]})  # fmt: skip


def test_a_model_name_the_server_does_not_list_stops_the_run_naming_both(llama_like) -> None:
    backend = OpenAIBackend(
        model="SmolLM2-typo", base_url=llama_like, structured_output="json_object_schema"
    )
    with pytest.raises(ModelMismatchError) as stopped:
        backend.preflight()
    assert "SmolLM2-typo" in str(stopped.value) and "served-model" in str(stopped.value)
    assert stopped.value.exit_code == exit_codes.MODEL_MISMATCH == 6
    assert "openai.allow_model_alias" in str(stopped.value)


def test_an_allowed_alias_is_a_warning_naming_both(llama_like) -> None:
    backend = OpenAIBackend(
        model="SmolLM2-alias",
        base_url=llama_like,
        structured_output="json_object_schema",
        allow_model_alias=True,
    )
    (warning,) = backend.preflight()
    assert "SmolLM2-alias" in warning and "served-model" in warning and "accepted" in warning


def test_deliberation_run_starts_the_profiles_server_only_when_it_must_send(
    tmp_path, caplog
) -> None:
    """The CLI path: a run with calls to send starts the server and stops it; the same run
    again is answered from the cache and starts nothing."""
    import logging

    from deliberation.cli import main

    port = free_port()
    profile = tmp_path / "managed.yaml"
    profile.write_text(
        textwrap.dedent(f"""
        backend: openai
        model: {SIM_MODEL}
        openai: {{base_url: "http://127.0.0.1:{port}/v1", timeout_s: 10}}
        server:
          command: ["{{python}}", "-m", "deliberation", "serve-sim", "--port", "{{port}}"]
          log_file: {tmp_path}/server.log
    """)
    )
    argv = ["run", "crossprofile", "--profile", str(profile), "--limit", "1", "--policies", "R1",
            "--budgets", "0.6", "--tags", "keep", "--item-limit", "0", "--cache",
            str(tmp_path / "c.sqlite"), "--out", str(tmp_path / "rows.csv"), "--no-progress"]  # fmt: skip

    def started() -> int:
        return sum("started server" in r.getMessage() for r in caplog.records)

    with caplog.at_level(logging.INFO, logger="deliberation.inference.model_server"):
        assert main(argv) == 0
        assert started() == 1 and not listening(port)
        assert main(argv) == 0
        assert started() == 1 and not listening(port)  # all cached: no server needed
    assert len((tmp_path / "rows.csv").read_text().splitlines()) == 1 + 8


def _answers_version(version: str):
    """A do_GET for the llama-like server that also answers vLLM's ``GET /version``."""

    def do_GET(handler: LlamaCppPythonLike) -> None:
        if handler.path == "/version":
            handler.send_json(200, {"version": version})
        else:
            handler.send_json(200, {"object": "list", "data": [{"id": "served-model"}]})

    return do_GET


@pytest.mark.parametrize(
    ("version", "mode", "fix"),
    [("0.10.2", "structured_outputs", "guided"), ("0.12.0", "guided", "structured_outputs")],
)
def test_a_vllm_release_that_would_drop_the_modes_fields_stops_the_preflight(
    llama_like, monkeypatch, version, mode, fix
) -> None:
    """vLLM's request model drops fields it does not define (HTTP 200, unconstrained): the
    pre-flight asks the server's release and stops before any request, naming the mode."""
    monkeypatch.setattr(LlamaCppPythonLike, "do_GET", _answers_version(version))
    backend = OpenAIBackend(model="served-model", base_url=llama_like, structured_output=mode)
    with pytest.raises(PreflightError, match=f"vLLM {version}.*openai.structured_output: {fix}"):
        backend.preflight()
    assert LlamaCppPythonLike.bodies == []


def test_a_vllm_release_that_honours_the_mode_passes_and_llama_cpp_is_not_asked(
    llama_like, monkeypatch
) -> None:
    monkeypatch.setattr(LlamaCppPythonLike, "do_GET", _answers_version("0.33.0"))
    backend = OpenAIBackend(model="served-model", base_url=llama_like)
    assert backend.vllm_version() == "0.33.0"
    backend.preflight()  # the version check passes (the stand-in then ignores the fields)
    assert LlamaCppPythonLike.bodies
    llama = OpenAIBackend(
        model="served-model", base_url=llama_like, structured_output="json_object_schema"
    )
    assert llama.vllm_version() is None  # not one of vLLM's modes: not asked
