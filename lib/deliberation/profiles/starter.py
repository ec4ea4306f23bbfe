"""A starter profile for a running OpenAI-compatible server (``deliberation profile new``).

Copying a shipped profile by hand leaves a newcomer guessing the server's structured-output
dialect and its model name, and keeps a grid sized for a GPU. Here the server is asked instead:
``GET /models`` names the model, the pre-flight's dialect search
(:meth:`~deliberation.inference.openai_api.OpenAIBackend.working_structured_mode`) names the
mode that keeps its answers inside a constraint (and with it the engine, which sets how many
requests to keep in flight), and the grid is the smallest every notebook can analyse
(:func:`deliberation.experiments.grid_needs.starter_grid`), so ``make paper`` builds the whole
paper on it in minutes, not days. The text is checked by the profile loader before it is written.
"""

from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from deliberation.exit_codes import BAD_INPUT, MODEL_MISMATCH, CommandError
from deliberation.inference.openai_api import OpenAIBackend
from deliberation.inference.secrets import read_api_key
from deliberation.io import paths
from deliberation.io.atomic import atomic_write_text
from deliberation.profiles.model_label import SYNTHETIC_LABEL
from deliberation.profiles.profile import NAME_PATTERN, load_profile

# Notebook 00's arithmetic items in a starter profile (a handful: they only check the plumbing).
STARTER_SMOKE_ITEMS = 6


@dataclass(frozen=True)
class Engine:
    """What the structured-output mode a server kept to says of its engine: its name, the
    requests to keep in flight and how long one may take."""

    name: str
    concurrency: int
    timeout_s: int


# llama.cpp answers one request at a time on a laptop's CPU, where a 2,048-token summary takes
# minutes (measured: 374 s for SmolLM2-135M on 2 loaded cores); vLLM batches many on a GPU.
ENGINES = {
    "json_object_schema": Engine("llama-cpp-python's server", 1, 900),
    "grammar": Engine("llama.cpp's llama-server", 1, 900),
    "structured_outputs": Engine("vLLM", 64, 300),
    "guided": Engine("vLLM", 64, 300),
}
UNKNOWN_ENGINE = Engine("", 4, 300)  # a hosted API, Ollama, LM Studio, serve-sim


def starter_experiments() -> str:
    """The ``experiments:`` section of a starter profile: the smallest grid every notebook can
    analyse (:func:`deliberation.experiments.grid_needs.starter_grid`), each value needed by a
    notebook saying which and why."""
    from deliberation.experiments.grid_needs import starter_grid

    lines = [
        "# The smallest grid every notebook can analyse (`make paper` builds the whole paper on",
        "# it): each experiment's smallest try, widened where a notebook needs more (said beside",
        "# the value). Widen it for results worth reading, then `make plan` prices the run and",
        "# checks the grid again; params/smollm2-135m-llamacpp.yaml shows a larger one.",
        "experiments:",
        f"  smoke_items: {STARTER_SMOKE_ITEMS}",
    ]
    for section, options in starter_grid().items():
        lines.append(f"  {section}:")
        for option, starter in options.items():
            for need in starter.needed_by:  # why the value is what it is, above it
                lines.append(f"    # notebook {need.notebook.split('_')[0]}: {need.why}")
            lines.append(f"    {option}: {_flow(starter.value)}")
    return "\n".join(lines) + "\n"


def _flow(value: object) -> str:
    """A YAML scalar or flow list (``[R1, B4]``) as a person would type it."""
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    return f"{value:g}" if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class _ServerFacts:
    """What the server answered: the models it lists, the one the profile names, and the
    structured-output mode that kept its answer inside the pre-flight's constraint."""

    base_url: str
    listed: tuple[str, ...]
    model: str
    structured_output: str
    synthetic: bool = False  # the server is serve-sim (the sim mechanism, not a model)

    @property
    def engine(self) -> Engine:
        if self.synthetic:  # serve-sim speaks vLLM's dialect but is no batching engine
            return UNKNOWN_ENGINE
        return ENGINES.get(self.structured_output, UNKNOWN_ENGINE)

    def concurrency_note(self) -> str:
        if self.synthetic:
            return "serve-sim answers at once: a few in flight keep it busy"
        engine = self.engine
        if not engine.name:
            return "a guess for this server: raise it for a batching server, 1 for llama.cpp"
        if engine.concurrency == 1:
            return f"{engine.name} (its mode says so) answers one request at a time"
        return f"{engine.name} (its mode says so) batches the requests in flight"


def _ask_server(
    base_url: str, *, model: str | None = None, api_key_env: str | None = None
) -> _ServerFacts:
    """The model the server serves (``model`` when given, else the one it lists) and the first
    structured-output mode of the pre-flight's search that it keeps to (``none`` if none)."""
    key = read_api_key(api_key_env, field="--api-key-env")
    probe = OpenAIBackend(model=model or "", base_url=base_url, api_key=key, timeout_s=60.0)
    listed = probe.served_models() or []
    if model is None:
        if len(listed) != 1:
            found = f"lists {listed}" if listed else "gave no list of models (GET /models)"
            raise CommandError(
                f"the server at {probe.base_url} {found}: name the one to use with --model",
                BAD_INPUT,
            )
        model = listed[0]
    elif listed and model not in listed:
        raise CommandError(
            f"the server at {probe.base_url} lists {listed}, not --model {model}", MODEL_MISMATCH
        )
    searcher = OpenAIBackend(
        model=model, base_url=base_url, api_key=key, structured_output="none", timeout_s=60.0
    )
    # A plain request first: a server that refuses even that (a key, the seed, the model's
    # name) stops here with the run's pre-flight message and exit code, not with mode "none".
    searcher.preflight()
    # "none" is outside the search order, so every mode is tried (strongest constraint first).
    mode = searcher.working_structured_mode() or "none"
    return _ServerFacts(probe.base_url, tuple(listed), model, mode, probe.server_is_synthetic())


def default_name(model: str) -> str:
    """A profile name from a served model name: its last path part, lower case, characters
    a file stem cannot carry replaced (``Qwen/Qwen2.5-7B-Instruct`` -> ``qwen2.5-7b-instruct``)."""
    stem = model.rsplit("/", 1)[-1].lower()
    stem = re.sub(r"[^a-z0-9._-]+", "-", stem).strip("-.")
    return stem or "my-model"


def _quoted(text: str) -> str:
    """A YAML scalar for any text (a JSON string is a double-quoted YAML scalar)."""
    return json.dumps(text)


def _profile_text(
    facts: _ServerFacts, *, name: str, api_key_env: str | None, name_line: bool = False
) -> str:
    """The profile's YAML, commented for the person who edits it next; ``name:`` only with
    ``name_line`` (the file stem names a profile that has none)."""
    mode_note = {
        "none": "no mode kept the answers inside a constraint: free text, read by the parser",
    }.get(facts.structured_output, "the mode this server kept to when asked (pre-flight search)")
    lines = [
        f"# A profile for the server at {facts.base_url}, written by `deliberation profile new`",
        "# from what the server answered. Try it: deliberation run crossprofile --profile"
        f" {name} --limit 1",
        "# Every option: docs/profiles.md. Changing model, revision, sampling, seed or",
        "# structured_output changes every cache key (answers already cached are not reused).",
    ]
    if facts.synthetic:
        lines += [
            "# The server is serve-sim: the sim mechanism model, not a language model. Every",
            f"# output made with this profile is labelled {SYNTHETIC_LABEL!r}.",
        ]
    if name_line:
        lines.append(f"name: {_quoted(name)}")
    lines += [
        f"description: {_quoted(f'{facts.model} at {facts.base_url} (profile new)')}",
        "backend: openai",
        f"model: {_quoted(facts.model)}   # what GET /models lists: sent with every request",
        '# revision: "sha256:..."   # the weights\' version or hash: part of every cache key',
        "seed: 0",
        "sampling:",
        "  temperature: 0.0",
        "  top_p: 1.0",
        "  max_tokens: 256        # free text (discussion turns, DHD reasoning) is cut here",
        "openai:",
        f"  base_url: {_quoted(facts.base_url)}",
        f"  api_key_env: {_quoted(api_key_env) if api_key_env else 'null'}"
        "   # the variable holding the key (never the key)",
        f"  concurrency: {facts.engine.concurrency}   # requests in flight:"
        f" {facts.concurrency_note()}",
        "  max_retries: 3",
        f"  timeout_s: {facts.engine.timeout_s}   # seconds one request may take"
        + ("; a long answer on a CPU takes minutes" if facts.engine.timeout_s > 300 else ""),
        f"  structured_output: {facts.structured_output}   # {mode_note}",
        "# cost:   # optional: `make check-real` measures the throughput `make plan` prices",
        "#         # the time with; state it here to keep it (changes no answer)",
        "#   gpu:",
        "#     gpus: 1",
        "#     device: CPU",
        "#     prompt_tokens_per_s: 100",
        "#     completion_tokens_per_s: 30",
        '#     basis: "what you measured, on what machine"',
    ]
    return "\n".join(lines) + "\n" + starter_experiments()


def _write_profile(text: str, out: Path, *, force: bool = False) -> Path:
    """Write the profile to ``out`` once the loader accepts it (nothing half-written; an
    existing file is kept unless ``force``)."""
    if out.exists() and not force:
        raise CommandError(f"{out} exists: choose another --name or --out, or --force", BAD_INPUT)
    with tempfile.TemporaryDirectory() as folder:
        trial = Path(folder) / out.name
        trial.write_text(text, encoding="utf-8")
        load_profile(trial)  # a ProfileError here is a bug in _profile_text, named by the loader
    return atomic_write_text(out, text)


def new_profile(
    base_url: str,
    *,
    name: str | None = None,
    out: Path | None = None,
    model: str | None = None,
    api_key_env: str | None = None,
    force: bool = False,
) -> tuple[Path, _ServerFacts]:
    """Ask the server, then write ``params/<name>.yaml`` (or ``out``); returns both."""
    if name is not None and not NAME_PATTERN.fullmatch(name):
        raise CommandError(
            f"--name {name!r}: only letters, digits, '.', '_' and '-' (it names folders)",
            BAD_INPUT,
        )
    facts = _ask_server(base_url, model=model, api_key_env=api_key_env)
    stem = name or (out.stem if out is not None else default_name(facts.model))
    target = out if out is not None else paths.params_dir() / f"{stem}.yaml"
    text = _profile_text(
        facts,
        name=name or target.stem,
        api_key_env=api_key_env,
        name_line=name is not None and name != target.stem,  # else the file stem names it
    )
    return _write_profile(text, target, force=force), facts
