"""A backend that answers by rule and counts what it was sent (cache and client tests)."""

from __future__ import annotations

from collections.abc import Sequence

from deliberation.inference.base import Backend, BackendIdentity, ChatRequest, ChatResponse


class CountingBackend(Backend):
    """Answers with the prompt upper-cased; fails prompts listed in ``fail``; can crash after
    ``crash_after`` answers to imitate a killed run."""

    name = "counting"

    def __init__(self, fail=(), crash_after=None, stream=True):
        self.sent: list[str] = []
        self.fail = set(fail)
        self.crash_after = crash_after
        self.stream = stream

    @property
    def identity(self):
        return BackendIdentity(backend="counting", model="upper")

    def request_payload(self, request):
        return {"messages": request.messages_as_dicts()}

    def generate(self, requests: Sequence[ChatRequest], on_response=None):
        out = []
        for index, request in enumerate(requests):
            if self.crash_after is not None and len(self.sent) >= self.crash_after:
                raise KeyboardInterrupt("killed")
            prompt = request.messages[-1].content
            self.sent.append(prompt)
            if prompt in self.fail:
                response = ChatResponse(text="", error="HTTP 500 after 2 attempts", attempts=2)
            else:
                response = ChatResponse(text=prompt.upper(), prompt_tokens=1, completion_tokens=1)
            if on_response is not None and self.stream:
                on_response(index, response)
            out.append(response)
        return out


def requests_for(prompts):
    return [ChatRequest.from_prompt(p, stage="t") for p in prompts]
