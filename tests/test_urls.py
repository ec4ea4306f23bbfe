"""URL credentials never reach a log line: ours, or the HTTP libraries' own debug lines."""

from __future__ import annotations

import logging

import pytest

from deliberation.inference.openai_api import OpenAIBackend
from deliberation.inference.urls import check_base_url, install_log_redaction, redact_urls


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("GET http://alice:PW@host/v1/models", "GET http://***@host/v1/models"),
        ("url=https://tok@api.example.com/v1 ok", "url=https://***@api.example.com/v1 ok"),
        ("http://h/v1?api_key=SECRET&x=1", "http://h/v1?api_key=***&x=1"),
        ("mail alice@example.com, http://h/v1", "mail alice@example.com, http://h/v1"),
    ],
)
def test_redact_urls_masks_user_info_and_secret_query_values(text, expected):
    assert redact_urls(text) == expected


@pytest.mark.parametrize("logger", ["httpx", "httpcore.http11", "openai._base_client", "x.y"])
def test_every_logger_s_lines_are_redacted_once_installed(logger, caplog):
    install_log_redaction()
    with caplog.at_level(logging.DEBUG), caplog.at_level(logging.DEBUG, logger=logger):
        logging.getLogger(logger).debug("HTTP Request: POST %s", "http://alice:PW@h:8/v1/chat")
        try:
            raise ConnectionError("cannot reach http://alice:PW@h:8/v1")
        except ConnectionError:
            logging.getLogger(logger).exception("failed")
    assert "http://***@h:8/v1/chat" in caplog.text
    assert "PW" not in caplog.text and "alice" not in caplog.text
    assert "ConnectionError" in caplog.text  # the traceback is kept, masked


def test_the_command_line_installs_the_redaction(caplog, capsys, monkeypatch):
    from deliberation.cli import main
    from deliberation.inference import urls

    original = logging.getLogRecordFactory()
    monkeypatch.setattr(urls, "_installed", False)
    logging.setLogRecordFactory(logging.LogRecord)  # as in a fresh process
    try:
        main(["data", "sources"])
        capsys.readouterr()
        with caplog.at_level(logging.DEBUG):
            logging.getLogger("deliberation.probe").warning("connect http://u:PW@h/v1")
    finally:
        logging.setLogRecordFactory(original)
    assert "connect http://***@h/v1" in caplog.text and "PW" not in caplog.text


def test_a_backend_built_in_code_refuses_a_url_with_credentials_or_another_scheme():
    with pytest.raises(ValueError, match="api_key_env"):
        OpenAIBackend(model="m", base_url="http://alice:PW@127.0.0.1:9/v1")
    with pytest.raises(ValueError, match="http"):
        OpenAIBackend(model="m", base_url="file:///etc/passwd")


def test_check_base_url_keeps_a_good_url_as_given():
    assert check_base_url("https://api.deepseek.com/v1") == "https://api.deepseek.com/v1"
