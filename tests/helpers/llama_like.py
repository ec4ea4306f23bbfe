"""A stand-in for llama-cpp-python's server (helpers for tests; imported, not collected).

It behaves as llama-cpp-python 0.3.36's server was measured to: it lists one model, refuses
``response_format`` of type ``json_schema`` with HTTP 500, honours ``json_object`` (+ ``schema``)
and ignores vLLM's fields, answering free text. Like llama-cpp-python, a reply's ``model`` echoes the
request's (its ``create_chat_completion`` is called with the body's ``model``), while ``GET
/models`` lists only the alias it serves. Its usage counts its own "tokenizer": a fixed
31 prompt tokens, unlike the project's counter. Every request body is kept in ``bodies``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

from helpers.json_handler import JsonHandler, serving

SERVED_MODEL = "served-model"
SERVER_PROMPT_TOKENS = 31


class LlamaCppPythonLike(JsonHandler):
    """What llama-cpp-python's server does with structured-output fields (measured): it lists
    its model, refuses ``json_schema`` with HTTP 500, honours ``json_object`` + ``schema`` and
    ignores vLLM's fields (answering free text)."""

    bodies: list[dict] = []

    def do_GET(self) -> None:
        self.send_json(200, {"object": "list", "data": [{"id": SERVED_MODEL, "object": "model"}]})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).bodies.append(body)
        kind = (body.get("response_format") or {}).get("type")
        if kind == "json_schema":
            self.send_json(500, {"detail": [{"msg": "Input should be 'text' or 'json_object'"}]})
            return
        text = '{"answer": "yes"}' if kind == "json_object" else "The correct answer is: yes."
        self.send_json(200, {
            "id": "x", "object": "chat.completion", "created": 0, "model": body.get("model"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": SERVER_PROMPT_TOKENS, "completion_tokens": 5, "total_tokens": 36},
        })  # fmt: skip


@contextlib.contextmanager
def llama_like_server() -> Iterator[str]:
    """The stand-in on a free port for the block; yields its base URL (``.../v1``)."""
    LlamaCppPythonLike.bodies = []
    with serving(LlamaCppPythonLike) as root:
        yield f"{root}/v1"
