"""``deliberation serve-sim``: the sim backend behind the OpenAI chat-completions protocol.

Serves ``POST /v1/chat/completions`` and ``GET /v1/models`` on loopback only, answering each
request with :meth:`~deliberation.inference.sim.SimBackend.answer` on a request rebuilt from the fields on the wire (messages,
sampling fields, seed, structured output in any of vLLM's ``structured_outputs``, the older
``guided_*`` or OpenAI's ``response_format`` forms) and the stage from the
``X-Deliberation-Stage`` header, so an answer over HTTP equals the in-process answer. For tests
and benchmarks it can add latency and inject faults at given rates (429 with Retry-After, 500,
hung responses, malformed bodies), and it counts what arrives: ``GET /stats``
(``POST /stats/reset`` zeroes the counters).

Modules: :mod:`.faults` (what is injected), :mod:`.wire` (body -> request; structured output
is decoded in ``inference/structured.py`` beside its encoder), :mod:`.server` (HTTP),
:mod:`.cli` (the command). Tests and benchmarks start a server with
:func:`deliberation.testing.running_sim_server` (a subprocess) or
:func:`~deliberation.testing.sim_server_in_thread` (in-process).
"""

from __future__ import annotations

from deliberation.inference.serve_sim.faults import FaultOptions
from deliberation.inference.serve_sim.server import SimServer, SimServerState, check_loopback

__all__ = ["FaultOptions", "SimServer", "SimServerState", "check_loopback"]
