"""Inference layer: request/response types, backends (``sim``, ``openai``, ``vllm``), the
response cache and the client that puts them together.

Notebooks and runners call ``open_run(profile)`` (or ``make_client(profile)``) for the client,
and build each stage's requests with :mod:`deliberation.inference.generation`.
"""

from __future__ import annotations

from pathlib import Path

from deliberation.inference.backends import backend_class, register_backend, registered_backends
from deliberation.inference.base import (
    Backend,
    BackendIdentity,
    BackendUnavailableError,
    ChatRequest,
    ChatResponse,
    Message,
    RunProfile,
    StructuredOutput,
    sending_forbidden,
)
from deliberation.inference.cache import ResponseCache, request_key
from deliberation.inference.client import CachedClient
from deliberation.inference.model_server import before_send
from deliberation.io import paths

__all__ = [
    "Backend",
    "BackendIdentity",
    "CachedClient",
    "ChatRequest",
    "ChatResponse",
    "Message",
    "ResponseCache",
    "StructuredOutput",
    "backend_class",
    "cache_path",
    "make_client",
    "open_run",
    "preflight_now",
    "register_backend",
    "registered_backends",
    "request_key",
    "require_backend",
    "served_profile",
]


def _build_backend(profile: RunProfile) -> Backend:
    """Construct the backend a profile names (imported on first use; it reads its own options).
    A backend whose optional dependency is missing fails naming the profile, in one paragraph."""
    try:
        return backend_class(profile.backend).from_profile(profile)
    except BackendUnavailableError as exc:
        where = f" ({profile.source})" if profile.source else ""
        raise BackendUnavailableError(f"profile {profile.name}{where}: {exc}") from None


def require_backend(profile: RunProfile) -> None:
    """Fail at once, in one paragraph naming the profile, when this machine cannot run the
    profile's backend (``make paper PROFILE=<a vLLM profile>`` without vLLM)."""
    try:
        backend_class(profile.backend).check_available()
    except BackendUnavailableError as exc:
        where = f" ({profile.source})" if profile.source else ""
        raise BackendUnavailableError(f"profile {profile.name}{where}: {exc}") from None


def preflight_now(profile: RunProfile) -> None:
    """Inside :func:`~.model_server.model_server`: make the server the profile's backend talks to
    answer (starting it if needed) and pre-flight it now (``make paper`` does this once, before
    its notebooks); nothing for a backend that talks to no server."""
    if getattr(profile.options, "base_url", None) is None:
        return
    backend = _build_backend(profile)
    try:
        before_send(backend)
    finally:
        backend.close()


def cache_path(profile: RunProfile) -> Path:
    return paths.cache_dir() / f"{profile.name}.sqlite"


def make_client(
    profile: RunProfile, *, cache_file: str | Path | None = None, progress: bool = True
) -> CachedClient:
    backend = _build_backend(profile)
    cache = ResponseCache(cache_file or cache_path(profile))
    return CachedClient(backend, cache, profile=profile.name, progress=progress)


def open_run(
    profile: RunProfile, *, cache_file: str | Path | None = None, progress: bool = True
) -> tuple[RunProfile, CachedClient]:
    """The client for a run and the profile its outputs must carry: marked synthetic
    (``served_by_sim``) when the server says it is serve-sim, whatever the profile says.
    Notebooks call this, then pass the returned profile to ``write_table``/``save_figure``.
    A replay (sending forbidden) asks no server: its outputs are labelled from the profile
    alone, whatever happens to listen at the profile's URL."""
    client = make_client(profile, cache_file=cache_file, progress=progress)
    return served_profile(profile, client.backend), client


def served_profile(profile: RunProfile, backend: Backend | None = None) -> RunProfile:
    """``profile`` marked synthetic (``served_by_sim``) when the server it names says it is
    serve-sim, so every line and output about it carries the one synthetic label. A replay
    (sending forbidden) asks nothing; a server that does not answer is taken at the profile's
    word."""
    if profile.synthetic or sending_forbidden():
        return profile
    # The planning backend asks nothing of a key or an engine (an offline vLLM loads none).
    asked = backend or backend_class(profile.backend).for_planning(profile)
    if asked.server_is_synthetic():
        return profile.model_copy(update={"served_by_sim": True})
    return profile
