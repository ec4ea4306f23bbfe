"""Prefix order against a real llama.cpp server: calls per second and prompt tokens per second.

Starts ``python -m llama_cpp.server`` with the SmolLM2-135M-Instruct GGUF on a free loopback
port and sends the same two dozen CrossProfile decision prompts (built by the smoke profile's
own pipeline, sim answers for the earlier stages) through :class:`CachedClient` twice, each time
into a fresh cache: in the order the experiment builds them (``send_in_prefix_order = False``)
and in :func:`~deliberation.inference.client.prefix_order` (the default). The server reuses the
previous prompt's KV cache, so prompts sorted by their shared prefix are processed faster.
Side by side, in the same run: llama.cpp's own raw prompt-processing rate on this machine
(``llama_cpp.Llama.eval`` over one such prompt from an empty KV cache, the same model and
default threads): the limit that the server's prompt tokens per second approach when nothing
is reused.

The model: ``$DELIBERATION_MODEL_FILE``, else ``models/SmolLM2-135M-Instruct.Q4_1.gguf``
(``make models``). Without llama_cpp (``pip install 'llama-cpp-python[server]'``) or the model
the benchmark writes one row saying why it was skipped.

Usage: ``python benchmarks/bench_prefix_order.py [--prompts 24] [--max-tokens 4]``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.util
import logging
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path

from deliberation.inference.base import ChatRequest
from deliberation.inference.cache import ResponseCache
from deliberation.inference.client import CachedClient
from deliberation.inference.openai_api import OpenAIBackend
from deliberation.inference.sim import SimBackend
from deliberation.io import paths
from deliberation.paper.bench import BenchRow, write_rows

MODEL_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
DECISION_STAGE = "crossprofile.decision"


def model_file() -> Path:
    configured = os.environ.get("DELIBERATION_MODEL_FILE")
    return Path(configured) if configured else paths.repo_root() / "models" / MODEL_NAME


def skip_reason(model: Path) -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama_cpp is not installed (pip install 'llama-cpp-python[server]')"
    if importlib.util.find_spec("llama_cpp.server") is None:
        return "llama_cpp.server is missing (pip install 'llama-cpp-python[server]')"
    if not model.is_file():
        return f"no model file {model} (make models, or set DELIBERATION_MODEL_FILE)"
    return None


def without_extra_buffer_types() -> None:
    """Load models without llama.cpp's extra CPU buffer types (AMX, repacked weights): a
    llama.cpp built for a CPU that advertises AMX dies with SIGILL where a VM forbids it."""
    import llama_cpp.llama as llama_module
    import llama_cpp.llama_cpp as bindings

    defaults = bindings.llama_model_default_params

    def params():
        value = defaults()
        value.use_extra_bufts = False
        return value

    bindings.llama_model_default_params = params
    llama_module.llama_cpp.llama_model_default_params = params


def extra_buffer_types_work(model: Path) -> bool:
    """Whether prompt processing survives with the default buffer types (in a child process:
    an illegal instruction kills it, not this benchmark)."""
    probe = (
        "import sys; from llama_cpp import Llama; m = Llama(model_path=sys.argv[1], n_ctx=256,"
        " verbose=False); m.eval(m.tokenize(b'hello world ' * 20))"
    )
    done = subprocess.run([sys.executable, "-c", probe, str(model)], capture_output=True)
    return done.returncode == 0


class _Recording(SimBackend):
    """The sim, keeping every request it answers (to take the decision prompts from)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.seen: list[ChatRequest] = []

    def generate(self, requests, on_response=None):
        self.seen.extend(requests)
        return super().generate(requests, on_response)


def decision_prompts(count: int, max_tokens: int) -> list[ChatRequest]:
    """The first ``count`` distinct CrossProfile decision requests of the smoke profile, in the
    order its pipeline builds them, unconstrained and with a short answer (prompt-bound)."""
    from deliberation.experiments.memory import run_from_profile
    from deliberation.profiles.profile import load_profile

    profile = load_profile("smoke")
    sim = _Recording(model=profile.model, parameters=profile.options.parameters, seed=profile.seed)
    with tempfile.TemporaryDirectory() as folder:
        cache = ResponseCache(Path(folder) / "prompts.sqlite")
        client = CachedClient(sim, cache, profile="bench", progress=False)
        run_from_profile("crossprofile", profile, limit=1, client=client, progress=False)
        cache.close()
    decisions = [r for r in sim.seen if r.stage == DECISION_STAGE]
    if len(decisions) < count:
        raise RuntimeError(f"only {len(decisions)} decision prompts from the smoke profile")
    return [
        dataclasses.replace(r, structured=None, max_tokens=max_tokens, temperature=0.0)
        for r in decisions[:count]
    ]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def llama_server(
    model: Path, n_ctx: int, *, extra_bufts: bool, timeout_s: float = 300.0
) -> Iterator[str]:
    """A llama.cpp server on a free loopback port; its base URL. Always stopped.
    ``extra_bufts=False``: the server runs through this script (``--serve``), which loads the
    model without extra buffer types first."""
    port = free_port()
    start = ["-m", "llama_cpp.server"] if extra_bufts else [__file__, "--serve"]
    command = [sys.executable, *start, "--model", str(model),
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx)]  # fmt: skip
    base_url = f"http://127.0.0.1:{port}/v1"
    with tempfile.TemporaryFile() as log_file:
        server = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + timeout_s
            while True:
                if server.poll() is not None:
                    log_file.seek(0)
                    tail = log_file.read().decode(errors="replace")[-2000:]
                    raise RuntimeError(f"llama_cpp.server exited ({server.returncode}): {tail}")
                try:
                    with urllib.request.urlopen(f"{base_url}/models", timeout=5):
                        break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"llama_cpp.server not up in {timeout_s:g} s") from None
                    time.sleep(0.5)
            yield base_url
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


@dataclasses.dataclass(frozen=True)
class Timed:
    calls: int
    prompt_tokens: int
    seconds: float

    @property
    def calls_per_s(self) -> float:
        return self.calls / self.seconds

    @property
    def prompt_tokens_per_s(self) -> float:
        return self.prompt_tokens / self.seconds


def timed_batch(backend: OpenAIBackend, requests: Sequence[ChatRequest], prefix: bool) -> Timed:
    """One batch through a fresh cache, in prefix or arrival order; every call must succeed."""
    with tempfile.TemporaryDirectory() as folder:
        cache = ResponseCache(Path(folder) / "bench.sqlite")
        client = CachedClient(backend, cache, profile="bench", progress=False)
        client.send_in_prefix_order = prefix
        started = time.perf_counter()
        responses = client.generate(requests)
        elapsed = time.perf_counter() - started
        cache.close()
    failed = [r.error for r in responses if not r.ok]
    if failed:
        raise RuntimeError(f"{len(failed)} calls failed, e.g. {failed[0]}")
    return Timed(len(responses), sum(r.prompt_tokens for r in responses), elapsed)


def raw_prompt_rate(
    model: Path, n_ctx: int, text: str, *, extra_bufts: bool, repeats: int = 3
) -> tuple[float, int]:
    """llama.cpp's own prompt processing (``Llama.eval`` from an empty KV cache), tokens per
    second (the best of ``repeats``), and the prompt's length in tokens."""
    if not extra_bufts:
        without_extra_buffer_types()
    from llama_cpp import Llama

    llm = Llama(model_path=str(model), n_ctx=n_ctx, verbose=False)
    tokens = llm.tokenize(text.encode())[: n_ctx - 16]
    best = 0.0
    for _ in range(repeats):
        llm.reset()
        started = time.perf_counter()
        llm.eval(tokens)
        best = max(best, len(tokens) / (time.perf_counter() - started))
    llm.close()
    return best, len(tokens)


def serve(argv: list[str]) -> None:
    """``--serve ARGS``: ``python -m llama_cpp.server ARGS`` without extra buffer types."""
    import runpy

    without_extra_buffer_types()
    sys.argv = ["llama_cpp.server", *argv]
    runpy.run_module("llama_cpp.server", run_name="__main__")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=24, help="decision prompts per order")
    parser.add_argument("--max-tokens", type=int, default=4, help="answer length per call")
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--rows", help="write this benchmark's rows of the make-bench table here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    model = model_file()
    reason = skip_reason(model)
    if reason:
        print(f"bench_prefix_order: skipped: {reason}")
        write_rows(args.rows, [BenchRow("llama.cpp prefix order", "skipped", reason)])
        return 0

    requests = decision_prompts(args.prompts, args.max_tokens)
    # The raw rate on prompts of the same length as the server's (attention grows with length).
    longest = max(requests, key=lambda r: sum(len(m.content) for m in r.messages))
    typical = "\n\n".join(m.content for m in longest.messages)
    extra_bufts = extra_buffer_types_work(model)
    if not extra_bufts:
        print("bench_prefix_order: this llama.cpp dies with its extra CPU buffer types (AMX?);"
              " server and raw rate both load the model without them")  # fmt: skip
    raw_rate, raw_tokens = raw_prompt_rate(model, args.n_ctx, typical, extra_bufts=extra_bufts)
    with llama_server(model, args.n_ctx, extra_bufts=extra_bufts) as base_url:
        backend = OpenAIBackend(
            model=model.name, base_url=base_url, concurrency=1, max_retries=1, timeout_s=300.0
        )
        backend.generate([ChatRequest.from_prompt("Say hi.", max_tokens=2)])  # warm up
        arrival = timed_batch(backend, requests, prefix=False)
        backend.generate([ChatRequest.from_prompt("Say bye.", max_tokens=2)])  # drop the reuse
        prefix = timed_batch(backend, requests, prefix=True)

    load = os.getloadavg()[0]
    rows = [
        ("calls/s, arrival order", f"{arrival.calls_per_s:.2f}", f"{arrival.seconds:.1f} s"),
        ("calls/s, prefix order", f"{prefix.calls_per_s:.2f}", f"{prefix.seconds:.1f} s"),
        ("  speed-up", f"{prefix.calls_per_s / arrival.calls_per_s:.2f}x", ""),
        ("prompt tok/s, arrival", f"{arrival.prompt_tokens_per_s:,.0f}", ""),
        ("prompt tok/s, prefix", f"{prefix.prompt_tokens_per_s:,.0f}", ""),
        ("raw prompt tok/s (Llama.eval)", f"{raw_rate:,.0f}", f"{raw_tokens} tokens, best of 3"),
    ]
    print(
        f"bench_prefix_order: {model.name}, {len(requests)} CrossProfile decision prompts"
        f" ({arrival.prompt_tokens:,} prompt tokens), max_tokens {args.max_tokens},"
        f" 1-minute load average {load:.1f} on {os.cpu_count()} CPUs"
    )
    for measure, value, note in rows:
        print(f"{measure:<32} {value:>10}  {note}")
    note = f"{len(requests)} decision prompts, load average {load:.1f}"
    if not extra_bufts:
        note += ", without extra buffer types (AMX)"
    write_rows(
        args.rows,
        [
            BenchRow(
                "llama.cpp server calls/s, prefix order (SmolLM2-135M Q4_1)",
                f"{prefix.calls_per_s:.2f} /s",
                f"arrival order: {arrival.calls_per_s:.2f} /s"
                f" ({prefix.calls_per_s / arrival.calls_per_s:.2f}x); {note}",
            ),
            BenchRow(
                "llama.cpp server prompt tokens/s, prefix order",
                f"{prefix.prompt_tokens_per_s:,.0f} /s",
                f"arrival order {arrival.prompt_tokens_per_s:,.0f} /s; llama.cpp raw prompt"
                f" processing {raw_rate:,.0f} /s (the limit without reuse)",
            ),
        ],
    )
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(sys.argv[2:])
    else:
        sys.exit(main())
