"""A starter profile for a running OpenAI-compatible server (``deliberation profile new``).

Copying a shipped profile by hand leaves a newcomer guessing the server's structured-output
dialect and its model name, and keeps a grid sized for a GPU. Here the server is asked instead:
``GET /models`` names the model, the pre-flight's dialect search
(:meth:`~deliberation.inference.openai_api.OpenAIBackend.working_structured_mode`) names the
mode that keeps its answers inside a constraint, and the grid is small on purpose (one policy,
one budget, one tag mode, two templates), so the first ``deliberation run`` and ``make plan``
take minutes, not days. The text is checked by the profile loader before it is written.
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
from deliberation.profiles.profile import NAME_PATTERN, load_profile

# The grid of a starter profile (the `experiments:` section): enough to see every experiment
# run end to end on a slow server; params/smollm2-135m-llamacpp.yaml shows a paper-sized one.
STARTER_EXPERIMENTS = """\
# A starter grid, small on purpose: one policy, one budget, one tag mode, two templates (each
# `deliberation run` sends tens of calls, not thousands). The paper's notebooks compare
# policies: before `make paper`, widen the policies (notebooks 03-05 compare R1, B4, Random,
# R1-rel, oracle-rel, all, empty; see params/smollm2-135m-llamacpp.yaml) and check `make plan`.
experiments:
  smoke_items: 6
  crossprofile:
    limit: 2               # the first 2 main templates (x 8 ownership variants = 16 tasks)
    budgets: [0.6]         # the primary budget
    item_limit: 0          # no fixed-item-count control rows
    policies: [R1]
    tags: [keep]
    n_resamples: 2000
  hiddenbench:
    limit: 2
    budgets: [0.6]
    item_limit: 0
    policies: [R1]
    tags: [keep]
    n_resamples: 2000
  natural:
    benchmarks: [crossprofile]
    variants: [plain]
    limit: 1
    rounds: 1
    policies: [R1, all]
    n_resamples: 2000
  dhd:
    benchmarks: [synthetic]
    problems: 2
    repeated_problems: 1
    blocks: 1
    n_resamples: 2000
    n_permutations: 2000
    masking_cases: 1
    masking_replicates: 1
"""


@dataclass(frozen=True)
class ServerFacts:
    """What the server answered: the models it lists, the one the profile names, and the
    structured-output mode that kept its answer inside the pre-flight's constraint."""

    base_url: str
    listed: tuple[str, ...]
    model: str
    structured_output: str


def ask_server(
    base_url: str, *, model: str | None = None, api_key_env: str | None = None
) -> ServerFacts:
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
    return ServerFacts(probe.base_url, tuple(listed), model, mode)


def default_name(model: str) -> str:
    """A profile name from a served model name: its last path part, lower case, characters
    a file stem cannot carry replaced (``Qwen/Qwen2.5-7B-Instruct`` -> ``qwen2.5-7b-instruct``)."""
    stem = model.rsplit("/", 1)[-1].lower()
    stem = re.sub(r"[^a-z0-9._-]+", "-", stem).strip("-.")
    return stem or "my-model"


def _quoted(text: str) -> str:
    """A YAML scalar for any text (a JSON string is a double-quoted YAML scalar)."""
    return json.dumps(text)


def profile_text(
    facts: ServerFacts, *, name: str, api_key_env: str | None, name_line: bool = False
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
        "  concurrency: 4         # requests in flight: 1 for llama.cpp on a laptop, 64 for vLLM",
        "  max_retries: 3",
        "  timeout_s: 300",
        f"  structured_output: {facts.structured_output}   # {mode_note}",
        "# cost:   # optional, for `make plan` (changes no answer): measure and fill in",
        "#   gpu:",
        "#     gpus: 1",
        "#     device: CPU",
        "#     prompt_tokens_per_s: 100",
        "#     completion_tokens_per_s: 30",
        '#     basis: "what you measured, on what machine"',
    ]
    return "\n".join(lines) + "\n" + STARTER_EXPERIMENTS


def write_profile(text: str, out: Path, *, force: bool = False) -> Path:
    """Write the profile to ``out`` once the loader accepts it (nothing half-written; an
    existing file is kept unless ``force``)."""
    if out.exists() and not force:
        raise CommandError(f"{out} exists: choose another --name or --out, or --force", BAD_INPUT)
    with tempfile.TemporaryDirectory() as folder:
        trial = Path(folder) / out.name
        trial.write_text(text, encoding="utf-8")
        load_profile(trial)  # a ProfileError here is a bug in profile_text, named by the loader
    return atomic_write_text(out, text)


def new_profile(
    base_url: str,
    *,
    name: str | None = None,
    out: Path | None = None,
    model: str | None = None,
    api_key_env: str | None = None,
    force: bool = False,
) -> tuple[Path, ServerFacts]:
    """Ask the server, then write ``params/<name>.yaml`` (or ``out``); returns both."""
    if name is not None and not NAME_PATTERN.fullmatch(name):
        raise CommandError(
            f"--name {name!r}: only letters, digits, '.', '_' and '-' (it names folders)",
            BAD_INPUT,
        )
    facts = ask_server(base_url, model=model, api_key_env=api_key_env)
    stem = name or (out.stem if out is not None else default_name(facts.model))
    target = out if out is not None else paths.params_dir() / f"{stem}.yaml"
    text = profile_text(
        facts,
        name=name or target.stem,
        api_key_env=api_key_env,
        name_line=name is not None and name != target.stem,  # else the file stem names it
    )
    return write_profile(text, target, force=force), facts
