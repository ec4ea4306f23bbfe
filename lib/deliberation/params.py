"""Profiles: one YAML file per model setup in ``params/`` (``sim.yaml``, ``qwen2.5-7b-vllm.yaml``, ...).

A profile names the backend, the model and every option the run depends on. Loading validates
it strictly: an unknown key or a wrong type is an error naming the file and the key. A profile
may ``extends:`` another (by name); the child's keys are merged over the parent's.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from deliberation import paths

BackendName = Literal["sim", "openai", "vllm"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Sampling(_Strict):
    temperature: float = Field(0.0, ge=0.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    max_tokens: int = Field(512, gt=0)


class OpenAIOptions(_Strict):
    base_url: str
    api_key_env: str | None = Field(
        None, description="name of the environment variable holding the key (never the key)"
    )
    concurrency: int = Field(16, gt=0)
    max_retries: int = Field(6, ge=0)
    timeout_s: float = Field(120.0, gt=0)
    backoff_base_s: float = Field(1.0, ge=0)
    backoff_max_s: float = Field(60.0, ge=0)
    # How structured outputs travel (see inference/structured.py): vLLM >= 0.10.2 servers take
    # "structured_outputs"; older vLLM "guided"; OpenAI-style APIs "response_format"; APIs with
    # only JSON mode (DeepSeek) "json_object"; "none" leaves the format to the prompt.
    structured_output: Literal[
        "structured_outputs", "guided", "response_format", "json_object", "none"
    ] = "structured_outputs"
    send_seed: bool = True


class VLLMOptions(_Strict):
    tensor_parallel_size: int = Field(1, gt=0)
    pipeline_parallel_size: int = Field(1, gt=0)
    distributed_executor_backend: Literal["mp", "ray"] | None = None
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1)
    max_model_len: int | None = None
    dtype: str = "auto"
    trust_remote_code: bool = False
    enforce_eager: bool = False
    # Requests per engine call; each chunk is cached as it finishes (does not change answers).
    chunk_size: int = Field(512, gt=0)


class SimOptions(_Strict):
    """Mechanism parameters of the sim backend (see ``inference/sim.py``); each experiment's
    behaviour documents the names it reads."""

    parameters: dict[str, float] = Field(default_factory=dict)


class ExperimentOptions(_Strict):
    """Sizes that differ between a full run and a smoke run."""

    n_resamples: int = Field(10_000, gt=0)
    smoke_items: int = Field(20, gt=0)


class Profile(_Strict):
    name: str
    description: str = ""
    backend: BackendName
    model: str
    revision: str = ""
    seed: int = 0
    smoke: bool = False
    sampling: Sampling = Sampling()
    openai: OpenAIOptions | None = None
    vllm: VLLMOptions | None = None
    sim: SimOptions = SimOptions()
    experiments: ExperimentOptions = ExperimentOptions()
    source: str = Field("", description="file the profile was loaded from")

    @field_validator("openai")
    @classmethod
    def _openai_key_is_a_name(cls, value: OpenAIOptions | None) -> OpenAIOptions | None:
        if value is not None and value.api_key_env and value.api_key_env.startswith("sk-"):
            raise ValueError("api_key_env must name an environment variable, not hold a key")
        return value

    @property
    def synthetic(self) -> bool:
        """True when results come from the sim mechanism model, not a language model."""
        return self.backend == "sim"

    @property
    def params_hash(self) -> str:
        """Short hash of everything that can change results (not the file path)."""
        payload = self.model_dump(exclude={"source", "description"})
        blob = json.dumps(payload, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:12]


class ProfileError(ValueError):
    """A profile file that does not load; the message names the file and the key."""


def _deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise ProfileError(f"{path}:{where}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ProfileError(f"{path}: expected a mapping of keys at the top level")
    return data


def _resolve(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    if path in seen:
        raise ProfileError(f"{path}: extends: cycle through {[str(p) for p in seen]}")
    data = _read_yaml(path)
    parent = data.pop("extends", None)
    if parent is None:
        return data
    parent_path = path.parent / f"{parent}.yaml"
    if not parent_path.is_file():
        raise ProfileError(f"{path}: extends: no profile named {parent!r} at {parent_path}")
    return _deep_merge(_resolve(parent_path, (*seen, path)), data)


def load_profile(name_or_path: str | Path) -> Profile:
    """Load ``params/<name>.yaml`` (or a path), merging ``extends:`` parents, strictly validated."""
    candidate = Path(name_or_path)
    if candidate.suffix not in {".yaml", ".yml"}:
        candidate = paths.params_dir() / f"{name_or_path}.yaml"
    if not candidate.is_file():
        available = sorted(p.stem for p in paths.params_dir().glob("*.yaml"))
        raise ProfileError(f"{candidate}: no such profile; available: {available}")
    data = _resolve(candidate)
    data.setdefault("name", candidate.stem)
    data["source"] = str(candidate)
    try:
        profile = Profile.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<top>'}: {err['msg']}"
            for err in exc.errors()
        )
        raise ProfileError(f"{candidate}: {problems}") from None
    _check_backend_options(profile, candidate)
    return profile


def _check_backend_options(profile: Profile, path: Path) -> None:
    if profile.backend == "openai" and profile.openai is None:
        raise ProfileError(f"{path}: openai: required when backend is 'openai'")
    if profile.backend == "vllm" and profile.vllm is None:
        raise ProfileError(f"{path}: vllm: required when backend is 'vllm'")


def available_profiles() -> list[str]:
    return sorted(p.stem for p in paths.params_dir().glob("*.yaml"))
