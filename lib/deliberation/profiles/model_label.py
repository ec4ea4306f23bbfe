"""What a profile runs, in words, for every caption, banner and sidecar of its outputs.

A sim profile says ``synthetic (sim backend)``. A real-model profile says which model, in which
quantisation, on which engine and version, and whether its grid is reduced, e.g.
``SmolLM2-135M-Instruct (Q4_1, llama.cpp via llama-cpp-python 0.3.36), reduced grid``.

Everything comes from the repository, never from what is installed: the model and quantisation
from the pinned model file the profile's server loads (:mod:`deliberation.inference.model_files`), the
engine from the server command (or the backend), its version from the exact pin in
``pyproject.toml``'s extras, and "reduced grid" from the profile's ``experiments:``. So a replay
of published responses on a machine without the engine writes byte-identical captions.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel

from deliberation.inference.backends import backend_class
from deliberation.io import paths

# Profiles are typed ``Any`` here: ``params.Profile.label`` calls this module, which must not
# import ``params`` back (tests/test_import_graph.py).
Profile = Any
SYNTHETIC_LABEL = "synthetic (sim backend)"


@dataclass(frozen=True)
class _Engine:
    """An inference engine as readers know it, and the PyPI package whose pin gives its
    version (None: not installed through this project's extras)."""

    name: str
    package: str | None = None


_LLAMA_CPP_PYTHON = _Engine("llama.cpp via llama-cpp-python", "llama-cpp-python")
_LLAMA_SERVER = _Engine("llama.cpp (llama-server)")
_VLLM = _Engine("vLLM", "vllm")


def _engine_of(profile: Profile) -> _Engine | None:
    """The engine behind a profile: the one its backend runs in-process (``Backend.engine``),
    or what its ``server:`` command runs; None for a server the profile does not start (an
    API, Ollama, ...)."""
    in_process = backend_class(profile.backend).engine
    if in_process is not None:
        known = {e.package: e for e in (_VLLM, _LLAMA_CPP_PYTHON)}
        return known.get(in_process, _Engine(in_process, in_process))
    if profile.server is None:
        return None
    command = list(profile.server.command)
    program = Path(command[0]).name
    if "llama_cpp.server" in command:
        return _LLAMA_CPP_PYTHON
    if program == "llama-server":
        return _LLAMA_SERVER
    if program == "vllm" or "vllm.entrypoints.openai.api_server" in command:
        return _VLLM
    return None


_EXACT_PIN = re.compile(r"^\s*([A-Za-z0-9_.-]+)\s*(\[[^\]]*\])?\s*==\s*([^\s,;]+)\s*$")


@functools.cache
def _pins(pyproject: Path) -> dict[str, str]:
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    project = data.get("project", {})
    requirements = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        requirements.extend(extra)
    found = {}
    for requirement in requirements:
        match = _EXACT_PIN.match(requirement)
        if match:
            found[match.group(1).lower().replace("_", "-")] = match.group(3)
    return found


def pinned_version(package: str) -> str | None:
    """The version ``pyproject.toml`` pins ``package`` to with ``==`` (None: a range or absent)."""
    return _pins(paths.repo_root() / "pyproject.toml").get(package.lower().replace("_", "-"))


def reduced_grid(
    experiments: BaseModel, full: BaseModel | None = None, prefix: str = ""
) -> list[str]:
    """The options of ``experiments`` that run less than the full grid (the options' defaults):
    a smaller count, a strict subset of a list, or a choice where the default is "all" (None).
    Options that are not sizes (a budget fraction, a template set) are never a reduction."""
    full = type(experiments)() if full is None else full
    found: list[str] = []
    for name in type(experiments).model_fields:
        mine, default = getattr(experiments, name), getattr(full, name)
        where = f"{prefix}{name}"
        if isinstance(mine, BaseModel):
            found += reduced_grid(mine, default, f"{where}.")
        elif _smaller(mine, default):
            found.append(where)
    return found


def _smaller(mine: Any, default: Any) -> bool:
    if mine == default or mine is None:
        return False
    if default is None:  # None means every value: any choice runs at most as much
        return True
    if isinstance(mine, tuple) and isinstance(default, tuple):
        return set(mine) < set(default) or len(mine) < len(default) and set(mine) <= set(default)
    if isinstance(mine, int) and isinstance(default, int) and not isinstance(mine, bool):
        return mine < default
    return False  # floats (budget fractions), strings (template sets): not sizes


@dataclass(frozen=True)
class _ModelDescription:
    """What a real-model profile runs; :meth:`label` is the words, :meth:`record` the sidecar's
    ``model_description`` entry."""

    model: str
    quantisation: str | None = None
    model_file: str | None = None
    model_file_sha256: str | None = None
    revision: str = ""
    engine: str | None = None
    engine_package: str | None = None
    engine_version: str | None = None
    served_at: str | None = None  # a remote host the profile does not start (an API)
    reduced_grid: tuple[str, ...] = field(default_factory=tuple)

    def label(self) -> str:
        details = [self.quantisation] if self.quantisation else []
        if self.revision and not self.model_file_sha256:
            details.append(f"revision {self.revision}")
        if self.engine:
            details.append(" ".join(p for p in (self.engine, self.engine_version) if p))
        if self.served_at:
            details.append(self.served_at)
        text = f"{self.model} ({', '.join(details)})" if details else self.model
        return f"{text}, reduced grid" if self.reduced_grid else text

    def record(self) -> dict[str, Any]:
        return {
            "label": self.label(),
            "model": self.model,
            "quantisation": self.quantisation,
            "model_file": self.model_file,
            "model_file_sha256": self.model_file_sha256,
            "revision": self.revision,
            "engine": self.engine,
            "engine_package": self.engine_package,
            "engine_version": self.engine_version,
            "served_at": self.served_at,
            "reduced_grid": list(self.reduced_grid),
        }


def describe_model(profile: Profile) -> _ModelDescription:
    """What ``profile`` runs, from the profile, the pinned model files and ``pyproject.toml``."""
    from deliberation.inference.model_files import pinned_model_for

    model, quantisation, file, sha256 = profile.model, None, None, None
    pinned = pinned_model_for(getattr(profile.server, "model_file", None))
    if pinned is not None:
        model, quantisation, file, sha256 = (
            pinned.model,
            pinned.quantisation,
            pinned.file,
            pinned.sha256,
        )
    engine = _engine_of(profile)
    served_at = None
    base_url = getattr(profile.options, "base_url", None)
    if engine is None and isinstance(base_url, str):
        host = urlsplit(base_url).hostname
        served_at = host if host and not _is_loopback(host) else None
    return _ModelDescription(
        model=model,
        quantisation=quantisation,
        model_file=file,
        model_file_sha256=sha256,
        revision=profile.revision,
        engine=engine.name if engine else None,
        engine_package=engine.package if engine else None,
        engine_version=pinned_version(engine.package) if engine and engine.package else None,
        served_at=served_at,
        reduced_grid=tuple(reduced_grid(profile.experiments)),
    )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name
        return False


def profile_label(profile: Profile) -> str:
    """The one label of a profile's model outputs: the synthetic label, or the model's."""
    return SYNTHETIC_LABEL if profile.synthetic else describe_model(profile).label()
