"""Inference layer: request/response types, backends (``sim``, ``openai``, ``vllm``), the
response cache and the client that puts them together.

``make_client(profile)`` is what notebooks and runners call.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING

from deliberation import paths
from deliberation.inference.base import (
    Backend,
    BackendIdentity,
    ChatRequest,
    ChatResponse,
    Message,
    StructuredOutput,
    backend_class,
    register_backend,
    registered_backends,
)
from deliberation.inference.cache import ResponseCache, request_key
from deliberation.inference.client import CachedClient

if TYPE_CHECKING:
    from deliberation.params import Profile

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
    "build_backend",
    "cache_path",
    "make_client",
    "register_backend",
    "registered_backends",
    "request_key",
]


# Where each backend registers itself; imported only when a profile asks for it, so the sim
# path never imports an HTTP client and nothing imports vllm until it is needed.
BACKEND_MODULES = {
    "sim": "deliberation.inference.sim",
    "openai": "deliberation.inference.openai_api",
    "vllm": "deliberation.inference.vllm_offline",
}


def build_backend(profile: Profile) -> Backend:
    """Construct the backend a profile names (each backend reads its own options)."""
    importlib.import_module(BACKEND_MODULES[profile.backend])
    return backend_class(profile.backend).from_profile(profile)


def cache_path(profile: Profile) -> Path:
    return paths.cache_dir() / f"{profile.name}.sqlite"


def make_client(
    profile: Profile, *, cache_file: str | Path | None = None, progress: bool = True
) -> CachedClient:
    backend = build_backend(profile)
    cache = ResponseCache(cache_file or cache_path(profile))
    return CachedClient(backend, cache, profile=profile.name, progress=progress)
