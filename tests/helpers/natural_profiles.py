"""Sim profiles with planted natural-discussion parameters, and a client that records requests."""

from __future__ import annotations

from pathlib import Path

import yaml

from deliberation.inference import make_client
from deliberation.profiles.profile import load_profile


def sim_profile(tmp_path: Path, name: str, seed: int = 0, natural: dict | None = None, **planted):
    """The shipped sim profile with ``planted`` sim parameters, its own seed and an
    ``experiments.natural`` section."""
    base = load_profile("sim")
    parameters = {**base.options.parameters, **planted}
    path = tmp_path / f"{name}-{seed}.yaml"
    document = {
        "name": f"{name}-{seed}",
        "backend": "sim",
        "model": base.model,
        "seed": seed,
        "sim": {"parameters": parameters},
        "experiments": {"natural": natural or {}},
    }
    path.write_text(yaml.safe_dump(document))
    return load_profile(path)


class RecordingClient:
    """A cached client that keeps every request it is asked to answer."""

    def __init__(self, profile, cache_file: Path):
        self.inner = make_client(profile, cache_file=cache_file, progress=False)
        self.requests = []

    def generate(self, requests, **kwargs):
        self.requests.extend(requests)
        return self.inner.generate(requests, **kwargs)

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def prompts(self, stage: str) -> list[str]:
        return [r.messages[-1].content for r in self.requests if r.stage == stage]
