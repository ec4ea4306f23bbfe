"""Keys are never shown: a key pasted where a variable name belongs is refused without being
repeated, a key with surrounding whitespace is stripped, one with whitespace or control
characters inside is refused unshown before any request, and nothing reaches the HTTP
libraries' DEBUG logs or is retried."""

from __future__ import annotations

import logging
import traceback

import pytest
from helpers.serve_sim import arithmetic_requests, openai_profile
from pydantic import ValidationError

from deliberation.inference.base import ChatRequest
from deliberation.inference.openai_api import OpenAIBackend, OpenAIOptions
from deliberation.inference.secrets import InvalidAPIKeyError, check_env_name, looks_like_a_key
from deliberation.profiles.profile import ProfileError, load_profile
from deliberation.testing import sim_server_in_thread

# Made-up values shaped like real keys (none is a real credential).
KEY_LIKE = [
    "gsk_4fJq9ZbT2xLmW8pR7vYc1KdN3sHe6GaU",
    "sk-proj-Zx81Qm4LrT7pVw2Nc9BfKd3Hs6Je",
    "AKIAZ7Q3M5N8P2R4T6V9",  # capitals and digits: a valid variable name, still a key
    "3f9ad2c471be0e5589a61c2d7f04b3e9",
    "xai-Qw3Er5Ty7Ui9Op1As2Df4Gh6Jk8Lz",
]
NOT_A_NAME = ["deepseek_api_key", "MY KEY", "1_STARTS_WITH_DIGIT", "KEY-NAME", ""]


def _full_text(exc: BaseException) -> str:
    """Everything a notebook or terminal would show for the exception, chain included."""
    return "".join(traceback.format_exception(exc)) + repr(exc)


def _profile_file(tmp_path, api_key_env: str):
    path = tmp_path / "leaky.yaml"
    path.write_text(
        "backend: openai\nmodel: m\nopenai:\n"
        f"  base_url: http://127.0.0.1:9/v1\n  api_key_env: {api_key_env!r}\n"
    )
    return path


@pytest.mark.parametrize("value", KEY_LIKE)
def test_a_key_pasted_as_the_variable_name_is_refused_without_echoing_it(tmp_path, value) -> None:
    assert looks_like_a_key(value)
    with pytest.raises(ProfileError) as caught:
        load_profile(_profile_file(tmp_path, value))
    text = _full_text(caught.value)
    assert value not in text and value[:12] not in text
    assert "leaky.yaml" in text and "openai.api_key_env" in text and "looks like an API key" in text
    with pytest.raises(ValidationError) as direct:
        OpenAIOptions(base_url="http://x/v1", api_key_env=value)
    assert value not in _full_text(direct.value)


@pytest.mark.parametrize("value", NOT_A_NAME)
def test_a_variable_name_must_look_like_one(tmp_path, value) -> None:
    with pytest.raises(ProfileError, match="name of an environment variable") as caught:
        load_profile(_profile_file(tmp_path, value))
    assert "leaky.yaml" in str(caught.value)


@pytest.mark.parametrize("value", ["DEEPSEEK_API_KEY", "_PRIVATE", "OPENAI_API_KEY_2"])
def test_ordinary_variable_names_are_accepted(value) -> None:
    assert check_env_name(value) == value


def _debug_everything(caplog) -> None:
    caplog.set_level(logging.DEBUG)
    for name in ("httpx", "httpcore", "httpx2", "httpcore2", "openai"):
        logging.getLogger(name).setLevel(logging.DEBUG)


def test_a_key_with_surrounding_whitespace_is_stripped_and_never_logged(
    monkeypatch, caplog
) -> None:
    key = "test-key-8f2c91d0"
    monkeypatch.setenv("SERVER_SIDE_KEY", key)
    monkeypatch.setenv("PASTED_KEY", f"  {key} \n")
    _debug_everything(caplog)
    with sim_server_in_thread(require_key_env="SERVER_SIDE_KEY") as handle:
        profile = openai_profile(handle.base_url, api_key_env="PASTED_KEY")
        (response,) = OpenAIBackend.from_profile(profile).generate(arithmetic_requests(1))
    assert response.ok and response.attempts == 1  # the server accepted the stripped key
    assert caplog.records, "DEBUG logging was not captured"
    assert all(key not in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize("bad", ["key with space", "key\nnewline", "kéy-non-ascii", "key\x07bell"])
def test_a_key_a_header_cannot_carry_is_refused_unshown_before_any_request(
    monkeypatch, caplog, bad
) -> None:
    monkeypatch.setenv("PASTED_KEY", bad)
    _debug_everything(caplog)
    with sim_server_in_thread() as handle:
        profile = openai_profile(handle.base_url, api_key_env="PASTED_KEY")
        with pytest.raises(InvalidAPIKeyError, match="PASTED_KEY") as caught:
            OpenAIBackend.from_profile(profile)
        assert handle.stats()["arrivals"] == 0
    assert bad not in _full_text(caught.value)
    assert all(bad not in record.getMessage() for record in caplog.records)
    with pytest.raises(InvalidAPIKeyError) as direct:
        OpenAIBackend(model="m", base_url="http://127.0.0.1:9/v1", api_key=bad)
    assert bad not in _full_text(direct.value)


def test_a_request_httpx_refuses_to_send_fails_at_once_without_retries() -> None:
    with sim_server_in_thread() as handle:
        backend = OpenAIBackend(
            model="sim-mechanism", base_url=handle.base_url, max_retries=5, backoff_base_s=0.01
        )
        (response,) = backend.generate([ChatRequest.from_prompt("hi", stage="bad\nstage")])
        assert handle.stats()["arrivals"] == 0
    assert not response.ok and response.attempts == 1
    assert "not retried" in response.error and "not valid HTTP" in response.error


def test_serve_sim_refuses_a_key_given_as_its_key_variable_without_showing_it() -> None:
    value = KEY_LIKE[0]
    with pytest.raises(InvalidAPIKeyError) as caught, sim_server_in_thread(require_key_env=value):
        pass
    assert value not in _full_text(caught.value)
