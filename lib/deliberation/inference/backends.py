"""The one backend registry: ``backend: <name>`` in a profile -> the :class:`Backend` class.

Each backend owns its profile section (``Backend.Options``) and says what it is (``synthetic``,
``engine``); nothing else in the library checks a backend by name. A new backend is one module
with its class and one :func:`register_backend` line. vLLM is an optional dependency: its
backend module imports it only when a run builds the engine.
"""

from __future__ import annotations

from deliberation.inference.base import Backend
from deliberation.inference.openai_api import OpenAIBackend
from deliberation.inference.sim import SimBackend
from deliberation.inference.vllm_offline import VLLMBackend

_REGISTRY: dict[str, type[Backend]] = {}


def register_backend(name: str, backend: type[Backend]) -> None:
    """Make ``backend`` available to profiles as ``backend: <name>``."""
    if not name or not all(c.isalnum() or c in "_-" for c in name):
        raise ValueError(f"backend name {name!r}: use letters, digits, '_' and '-'")
    if not (isinstance(backend, type) and issubclass(backend, Backend)):
        raise TypeError(f"backend {name!r}: {backend!r} is not a Backend subclass")
    if _REGISTRY.get(name, backend) is not backend:
        raise ValueError(f"backend {name!r} registered twice")
    backend.name = name
    _REGISTRY[name] = backend


def registered_backends() -> list[str]:
    return sorted(_REGISTRY)


def backend_class(name: str) -> type[Backend]:
    """The class registered as ``name``."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown backend {name!r}; registered: {registered_backends()}") from None


register_backend("sim", SimBackend)
register_backend("openai", OpenAIBackend)
register_backend("vllm", VLLMBackend)
