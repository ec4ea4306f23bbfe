"""``deliberation serve-sim``: options, and serving until SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from deliberation.inference.secrets import MissingAPIKeyError
from deliberation.inference.serve_sim.faults import FaultOptions
from deliberation.inference.serve_sim.server import (
    DEFAULT_HEAD_TIMEOUT_S,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_READ_TIMEOUT_S,
    SimServer,
    build_state,
    check_loopback,
)


def _port_number(text: str) -> int:
    """An argparse type: a TCP port, 0 (pick a free one) to 65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port: use 0 to 65535 (0: a free one)")
    return port


def add_arguments(parser: argparse.ArgumentParser, load_profile: Callable[[str], Any]) -> None:
    """Options of ``deliberation serve-sim``; ``load_profile`` turns ``--profile`` into the
    profile whose sim parameters are served (the caller's loader: ``deliberation.profiles.profile``)."""
    parser.set_defaults(load_profile=load_profile)
    parser.add_argument("--port", type=_port_number, default=8001, help="port (0: pick a free one)")
    parser.add_argument(
        "--host", default="127.0.0.1", help="loopback address to bind (127.0.0.1, ::1, localhost)"
    )
    parser.add_argument("--profile", default="sim", help="profile whose sim parameters to serve")
    parser.add_argument(
        "--served-model-name", default=None, help="model id to serve (default: the profile's model)"
    )
    parser.add_argument(
        "--require-key-env",
        default=None,
        metavar="VAR",
        help="answer 401 unless the bearer token equals the value of this environment variable",
    )
    parser.add_argument("--latency-ms", type=float, default=0.0, help="delay before each response")
    parser.add_argument("--fault-429", type=float, default=0.0, help="rate of 429 + Retry-After")
    parser.add_argument("--fault-500", type=float, default=0.0, help="rate of 500 responses")
    parser.add_argument("--fault-hang", type=float, default=0.0, help="rate of hung responses")
    parser.add_argument(
        "--fault-malformed", type=float, default=0.0, help="rate of 200s with a non-JSON body"
    )
    parser.add_argument("--retry-after", type=float, default=1.0, help="Retry-After seconds on 429")
    parser.add_argument("--hang-s", type=float, default=30.0, help="how long a hung response hangs")
    parser.add_argument("--fault-seed", type=int, default=0, help="seed of the fault draws")
    parser.add_argument(
        "--max-body-bytes",
        type=int,
        default=DEFAULT_MAX_BODY_BYTES,
        help="refuse larger request bodies with 413",
    )
    parser.add_argument(
        "--read-timeout",
        type=float,
        default=DEFAULT_READ_TIMEOUT_S,
        help="seconds a connection may wait for its request head (however slowly it trickles"
        " in) or stay silent before it is closed",
    )
    parser.add_argument(
        "--head-timeout",
        type=float,
        default=DEFAULT_HEAD_TIMEOUT_S,
        help="seconds a request head may take from its first byte",
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        default=None,
        help="connections served at once; more get a 503 (default: 256, or a quarter of the"
        " file-descriptor limit if lower)",
    )


def _faults_from_args(args: argparse.Namespace) -> FaultOptions:
    return FaultOptions(
        latency_ms=args.latency_ms,
        rate_429=args.fault_429,
        rate_500=args.fault_500,
        rate_hang=args.fault_hang,
        rate_malformed=args.fault_malformed,
        retry_after_s=args.retry_after,
        hang_s=args.hang_s,
        seed=args.fault_seed,
    )


def server_from_args(args: argparse.Namespace) -> SimServer:
    """The (not yet started) server the parsed options describe."""
    check_loopback(args.host)
    # The command's parser carries the profile loader (set_defaults(load_profile=...)).
    profile = args.load_profile(args.profile) if args.profile else None
    state = build_state(
        profile=profile,
        faults=_faults_from_args(args),
        served_model=args.served_model_name,
        api_key_env=args.require_key_env,
        max_body_bytes=args.max_body_bytes,
        read_timeout_s=args.read_timeout,
        head_timeout_s=args.head_timeout,
        max_connections=args.max_connections,
    )
    return SimServer(state, host=args.host, port=args.port)


def run_from_args(args: argparse.Namespace) -> int:
    """Serve until SIGINT/SIGTERM. The first stdout line names the URL (and so the port)."""
    try:
        server = server_from_args(args)
    except (ValueError, KeyError, OSError, MissingAPIKeyError) as exc:
        print(f"serve-sim: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    server.start()
    print(
        f"serve-sim listening on {server.base_url} (model {server.state.served_model})",
        flush=True,
    )
    try:
        while not stop.wait(0.1):
            pass
    finally:
        server.stop()
    return 0
