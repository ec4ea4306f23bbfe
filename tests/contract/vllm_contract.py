"""The vLLM contract lane (``make contract``; issue 34): vLLM's own code checks what the backends
build, on a CPU, without a model. Not collected by pytest; two steps in two environments:

``export CASES.json`` (the project's venv): for every shipped vLLM profile, one request of every
stage (built by the plan at smoke size, :mod:`deliberation.paper.stage_examples`), and

* offline profiles (``backend: vllm``): the requests and the ``LLM(...)`` keyword arguments;
* profiles that talk to ``vllm serve`` (``openai`` backend in a vLLM dialect): the request body
  of every stage in every vLLM structured-output mode, and for a profile that starts the server
  itself, its ``vllm serve`` command line.

``check CASES.json`` (a venv with one vLLM release, ``make contract`` builds it): builds every
``SamplingParams`` with :func:`deliberation.inference.vllm_offline.sampling_kwargs` over vLLM's
real ``vllm.sampling_params``; validates each body with vLLM's ``ChatCompletionRequest`` and
lists every key it does not define (vLLM's models accept and drop unknown keys: a field it does
not define is a constraint silently lost), then turns it into ``SamplingParams`` as the server
does and checks the constraint arrived; parses the ``vllm serve`` command with vLLM's own
argument parser; checks the ``LLM(...)`` keywords against ``EngineArgs``. It prints one row per
version, profile, stage and check, and exits 1 when vLLM refuses what the backends build, or a
mode behaves otherwise than ``structured.py`` documents for that release (a request refused or
its constraint dropped where the mode should work; a mode documented as dropped that works).
A profile's own mode that the release drops is no failure of the lane: the pre-flight asks the
server's release and stops such a run (``vllm_server_mode_problem``).

When a release cannot be imported on a CPU, ``check --source DIR`` reads its source with ``ast``
instead (fields of ``ChatCompletionRequest``, ``SamplingParams``, ``GuidedDecodingParams`` /
``StructuredOutputsParams`` and ``EngineArgs``): names are checked, nothing is constructed, and
the rows say so.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib
import inspect
import json
import os
import re
import sys
import warnings
from pathlib import Path
from typing import Any

# The vLLM dialects of the openai backend.
VLLM_MODES = ("structured_outputs", "guided", "response_format", "none")
# A verdict that contradicts structured.py's dialect notes for the release fails the lane.
OTHERWISE = " (structured.py documents otherwise for this release)"
CONSTRAINED_MODES = ("structured_outputs", "guided", "response_format")


# -- export (the project's venv) ------------------------------------------------------------------


def talks_to_vllm(profile: Any) -> bool:
    """An openai-backend profile in one of vLLM's own dialects (vllm serve behind the URL)."""
    return profile.backend == "openai" and profile.options.structured_output in (
        "structured_outputs",
        "guided",
    )


def export(out: Path) -> int:
    from deliberation.inference.model_server import ManagedServer
    from deliberation.inference.openai_api import OpenAIBackend
    from deliberation.paper.stage_examples import request_to_dict, stage_examples
    from deliberation.profiles.profile import load_profile, shipped_profiles

    cases = []
    planned: dict[tuple[str, int], dict] = {}  # one plan per sampling section and seed

    def examples_of(profile: Any) -> dict:
        key = (profile.sampling.model_dump_json(), profile.seed)
        if key not in planned:
            planned[key] = stage_examples(profile)
        return planned[key]

    for name in shipped_profiles():
        profile = load_profile(name)
        if profile.backend == "vllm":
            examples = examples_of(profile)
            cases.append({
                "profile": name, "kind": "offline", "seed": profile.seed,
                "engine_kwargs": profile.options.engine_kwargs(
                    profile.model, profile.revision or None, profile.seed),
                "stages": [{"stage": stage, "constraint": kind, "request": request_to_dict(r)}
                           for (stage, kind), r in examples.items()],
            })  # fmt: skip
        elif talks_to_vllm(profile):
            examples = examples_of(profile)
            backends = {}
            for mode in VLLM_MODES:
                backends[mode] = OpenAIBackend.for_planning(profile)
                backends[mode].structured_output = mode
            argv = None
            if profile.server is not None and list(profile.server.command[:2]) == ["vllm", "serve"]:
                argv = ManagedServer(profile).argv
            cases.append({
                "profile": name, "kind": "server", "mode": profile.options.structured_output,
                "serve_argv": argv, "model": profile.model,
                "stages": [{"stage": stage, "constraint": kind,
                            "bodies": {m: b.request_body(r) for m, b in backends.items()}}
                           for (stage, kind), r in examples.items()],
            })  # fmt: skip
    out.write_text(json.dumps({"cases": cases}, indent=1))
    print(f"exported {len(cases)} vLLM profiles to {out}")
    return 0


# -- check (a vLLM venv) --------------------------------------------------------------------------


def request_from_dict(data: dict[str, Any]) -> Any:
    """The inverse of :func:`deliberation.paper.stage_examples.request_to_dict`."""
    from deliberation.inference.base import ChatRequest, Message, StructuredOutput

    fields = dict(data)
    fields["messages"] = tuple(Message(m["role"], m["content"]) for m in data["messages"])
    structured = data.get("structured")
    if structured is not None:
        choices = structured.get("choices")
        fields["structured"] = StructuredOutput(
            choices=None if choices is None else tuple(choices),
            json_schema=structured.get("json_schema"),
        )
    return ChatRequest(**fields)


def honoured(mode: str, version: str) -> bool:
    """Whether structured.py documents ``mode`` as honoured by vLLM ``version``'s server."""
    from deliberation.inference.structured import vllm_server_mode_problem

    return vllm_server_mode_problem(version, mode) is None


def dropped_keys(given: Any, parsed: Any, path: str = "body") -> list[str]:
    """Keys of ``given`` (a JSON value) that the validated vLLM model ``parsed`` has no field
    for, at any depth through pydantic models and dataclasses (free-form dicts: not walked)."""
    from pydantic import BaseModel

    if isinstance(given, list) and isinstance(parsed, list | tuple):
        return [k for i, (g, p) in enumerate(zip(given, parsed, strict=False))
                for k in dropped_keys(g, p, f"{path}[{i}]")]  # fmt: skip
    if not isinstance(given, dict):
        return []
    if isinstance(parsed, BaseModel):
        names: dict[str, str] = {}
        for field_name, field in type(parsed).model_fields.items():
            names[field_name] = field_name
            if field.alias:
                names[field.alias] = field_name
    elif dataclasses.is_dataclass(parsed):
        names = {f.name: f.name for f in dataclasses.fields(parsed)}
    else:
        return []
    found = []
    for key, value in given.items():
        if key not in names:
            found.append(f"{path}.{key}")
        else:
            found += dropped_keys(value, getattr(parsed, names[key], None), f"{path}.{key}")
    return found


def constraint_of(params: Any) -> Any:
    """The structured-output constraint a SamplingParams carries (either API), or None."""
    return getattr(params, "structured_outputs", None) or getattr(params, "guided_decoding", None)


def protocol_module() -> Any:
    for name in ("vllm.entrypoints.openai.chat_completion.protocol",  # 0.2x and later
                 "vllm.entrypoints.openai.protocol"):  # fmt: skip
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError:
            continue
    raise ModuleNotFoundError("no ChatCompletionRequest module in this vLLM")


def server_sampling_params(request: Any, max_tokens: int) -> Any:
    """``request.to_sampling_params`` as the server calls it (its signature varies by release)."""
    method = request.to_sampling_params
    wanted = inspect.signature(method).parameters
    offered = {"max_tokens": max_tokens, "default_sampling_params": {},
               "logits_processor_pattern": None}  # fmt: skip
    return method(**{k: v for k, v in offered.items() if k in wanted})


def serve_parser() -> Any:
    """``vllm serve``'s own argument parser (``vllm`` with its ``serve`` subcommand). Its
    defaults need a device type: on a machine without a GPU, releases that ignore
    ``VLLM_TARGET_DEVICE=cpu`` (0.10.2) get "cpu" set on their platform object."""
    platform = importlib.import_module("vllm.platforms").current_platform
    if not getattr(platform, "device_type", "set"):
        platform.device_type = "cpu"
    serve = importlib.import_module("vllm.entrypoints.cli.serve")
    try:
        parser_module = importlib.import_module("vllm.utils.argparse_utils")
    except ModuleNotFoundError:  # older releases
        parser_module = importlib.import_module("vllm.utils")
    parser = parser_module.FlexibleArgumentParser(prog="vllm")
    subparsers = parser.add_subparsers(dest="subparser")
    serve.ServeSubcommand().subparser_init(subparsers)
    return parser


class Lane:
    def __init__(self, version: str) -> None:
        self.version = version
        self.rows: list[tuple[str, ...]] = []
        self.failed = 0

    def row(self, profile: str, stage: str, check: str, verdict: str, *, counts: bool) -> None:
        """One line of the table; ``counts``: a verdict other than ok fails the lane."""
        bad = counts and (not verdict.startswith("ok") or verdict.endswith(OTHERWISE))
        self.failed += bad
        self.rows.append((self.version, profile, stage, check, ("FAIL " if bad else "") + verdict))


def check_offline(lane: Lane, case: dict, vllm: Any) -> None:
    from deliberation.inference.vllm_offline import sampling_kwargs

    module = importlib.import_module("vllm.sampling_params")
    for stage in case["stages"]:
        request = request_from_dict(stage["request"])
        try:
            params = vllm.SamplingParams(**sampling_kwargs(request, case["seed"], module))
        except Exception as exc:  # any refusal is a finding
            verdict = f"refused: {type(exc).__name__}: {str(exc)[:160]}"
        else:
            lost = request.structured is not None and constraint_of(params) is None
            verdict = "constraint lost" if lost else f"ok ({stage['constraint']})"
        lane.row(case["profile"], stage["stage"], "SamplingParams", verdict, counts=True)
    engine_args = importlib.import_module("vllm.engine.arg_utils").EngineArgs
    fields = {f.name for f in dataclasses.fields(engine_args)}
    unknown = sorted(set(case["engine_kwargs"]) - fields)
    verdict = f"not EngineArgs fields: {unknown}" if unknown else "ok"
    if not unknown:
        try:
            engine_args(**case["engine_kwargs"])
        except Exception as exc:
            verdict = f"EngineArgs(...) refused: {type(exc).__name__}: {str(exc)[:160]}"
    lane.row(case["profile"], "-", "LLM(...) kwargs", verdict, counts=True)


def check_server(lane: Lane, case: dict) -> None:
    model = protocol_module().ChatCompletionRequest
    for stage in case["stages"]:
        for mode, body in stage["bodies"].items():
            documented = honoured(mode, lane.version)
            try:
                parsed = model.model_validate(body)
            except Exception as exc:
                verdict = f"refused: {str(exc).splitlines()[0][:60]}: {_errors(exc)}"
                counts = documented  # a refusal (HTTP 400) where the mode should work
                lane.row(
                    case["profile"], stage["stage"], f"request[{mode}]", verdict, counts=counts
                )
                continue
            dropped = dropped_keys(body, parsed)
            constrained = stage["constraint"] != "free" and mode in CONSTRAINED_MODES
            try:
                arrived = constraint_of(server_sampling_params(parsed, body["max_tokens"]))
            except Exception as exc:
                arrived, note = None, f"to_sampling_params: {type(exc).__name__}: {exc}"[:160]
            else:
                note = ""
            if dropped:
                verdict = f"ignored {dropped}"
            elif constrained and arrived is None:
                verdict = f"constraint lost {note}".strip()
            else:
                verdict = f"ok ({stage['constraint']})"
            # A free-text stage sends no constraint: nothing for a release to drop.
            as_documented = verdict.startswith("ok") == (documented or not constrained)
            if not as_documented:
                verdict += OTHERWISE
            elif constrained and not documented:
                verdict += " (as documented; the pre-flight stops a run in this mode)"
            lane.row(case["profile"], stage["stage"], f"request[{mode}]", verdict,
                     counts=not as_documented)  # fmt: skip
    if case["serve_argv"]:
        argv = case["serve_argv"]
        try:
            parser = serve_parser()
            args = parser.parse_args(argv[1:])
        except SystemExit:
            verdict = f"vllm's parser refused {argv[1:]}"
        except Exception as exc:  # the parser's module does not import here
            verdict = f"no parser: {type(exc).__name__}: {str(exc)[:120]}"
        else:
            named = getattr(args, "model_tag", None) or getattr(args, "model", None)
            verdict = "ok" if named == case["model"] else f"model parsed as {named!r}"
        lane.row(case["profile"], "-", "vllm serve argv", verdict, counts=True)


def _errors(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)[:160]
    return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors())[:200]


def check(cases_file: Path, table: Path | None = None) -> int:
    warnings.simplefilter("ignore", DeprecationWarning)  # reading max_tokens warns on 0.3x
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")  # no GPU: vLLM's CPU platform
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")  # it logs every dropped field
    os.environ.setdefault("VLLM_CONFIGURE_LOGGING", "0")  # what it still logs: to stderr
    cases = json.loads(cases_file.read_text())["cases"]
    vllm = importlib.import_module("vllm")
    lane = Lane(vllm.__version__)
    for case in cases:
        if case["kind"] == "offline":
            check_offline(lane, case, vllm)
        else:
            check_server(lane, case)
    return report(lane, table)


def report(lane: Lane, table: Path | None = None) -> int:
    """The full table (to ``table``, else printed), then one line per profile and check with
    how many stages passed and what the others said, then every failure."""
    lines = ["| vLLM | profile | stage | check | verdict |", "| --- | --- | --- | --- | --- |"]
    lines += ["| " + " | ".join(row) + " |" for row in lane.rows]
    if table is None:
        print("\n".join(lines))
    else:
        table.write_text("\n".join(lines) + "\n")
        print(f"vLLM {lane.version}: every row in {table}")
    groups: dict[tuple[str, str], list[str]] = {}
    for _, profile, _, check, verdict in lane.rows:
        groups.setdefault((profile, check), []).append(verdict)
    for (profile, check), verdicts in groups.items():
        ok = sum(v.startswith("ok") for v in verdicts)
        other = sorted(
            {re.sub(r"\(\w+\)", "", v).strip() for v in verdicts if not v.startswith("ok")}
        )
        shown = f"; {len(verdicts) - ok}: {' / '.join(other)}" if other else ""
        print(f"  {profile:26} {check:30} {ok}/{len(verdicts)} ok{shown}")
    for row in lane.rows:
        if row[-1].startswith("FAIL"):
            print("  " + " | ".join(row))
    print(f"== vLLM {lane.version} contract: {len(lane.rows)} checks, {lane.failed} failed")
    return 1 if lane.failed else 0


# -- check --source (a release that cannot be imported on a CPU) ---------------------------------


def class_fields(tree: ast.Module, name: str) -> set[str] | None:
    """Annotated field names of class ``name`` in ``tree`` (None when it is not defined)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == name:
            return {
                item.target.id
                for item in node.body
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
            }
    return None


def check_source(cases_file: Path, root: Path, version: str, table: Path | None = None) -> int:
    """Field names only, from the source files of a release (``root``: its ``vllm`` folder)."""
    cases = json.loads(cases_file.read_text())["cases"]
    lane = Lane(f"{version} (source via ast, not imported)")

    def parsed(relative: str) -> ast.Module:
        return ast.parse((root / relative).read_text())

    protocol = parsed("entrypoints/openai/protocol.py")
    request_fields = class_fields(protocol, "ChatCompletionRequest") or set()
    sampling = parsed("sampling_params.py")
    sampling_fields = class_fields(sampling, "SamplingParams") or set()
    constraint_class = "StructuredOutputsParams"
    constraint_fields = class_fields(sampling, constraint_class)
    if constraint_fields is None:
        constraint_class = "GuidedDecodingParams"
        constraint_fields = class_fields(sampling, constraint_class) or set()
    engine_fields = class_fields(parsed("engine/arg_utils.py"), "EngineArgs") or set()
    for case in cases:
        if case["kind"] == "offline":
            from deliberation.inference.vllm_offline import sampling_fields as plain

            for stage in case["stages"]:
                request = request_from_dict(stage["request"])
                unknown = sorted(set(plain(request, case["seed"])) - sampling_fields)
                api = "structured_outputs" if constraint_class == "StructuredOutputsParams" else (
                    "guided_decoding")  # fmt: skip
                missing = [] if api in sampling_fields else [api]
                key = "choice" if stage["constraint"] == "choice" else "json"
                absent = [] if stage["constraint"] == "free" or key in constraint_fields else [key]
                bad = unknown + missing + absent
                verdict = f"unknown {bad}" if bad else f"ok ({stage['constraint']}, names)"
                lane.row(case["profile"], stage["stage"], "SamplingParams", verdict, counts=True)
            unknown = sorted(set(case["engine_kwargs"]) - engine_fields)
            verdict = f"not EngineArgs fields: {unknown}" if unknown else "ok (names)"
            lane.row(case["profile"], "-", "LLM(...) kwargs", verdict, counts=True)
            continue
        for stage in case["stages"]:
            for mode, body in stage["bodies"].items():
                unknown = sorted(set(body) - request_fields)
                verdict = f"ignored {unknown}" if unknown else f"ok ({stage['constraint']}, names)"
                expected = honoured(mode, version) or stage["constraint"] == "free"
                as_documented = verdict.startswith("ok") == expected
                if not as_documented:
                    verdict += OTHERWISE
                elif not verdict.startswith("ok"):
                    verdict += " (as documented; the pre-flight stops a run in this mode)"
                lane.row(case["profile"], stage["stage"], f"request[{mode}]", verdict,
                         counts=not as_documented)  # fmt: skip
    return report(lane, table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("export").add_argument("cases", type=Path)
    checking = commands.add_parser("check")
    checking.add_argument("cases", type=Path)
    checking.add_argument("--source", type=Path, help="a release's vllm/ folder, read with ast")
    checking.add_argument("--version", default="", help="that release's version (with --source)")
    checking.add_argument("--table", type=Path, help="write the full table here (markdown)")
    args = parser.parse_args(argv)
    if args.command == "export":
        return export(args.cases)
    if args.source is not None:
        return check_source(args.cases, args.source, args.version, args.table)
    return check(args.cases, args.table)


if __name__ == "__main__":
    sys.exit(main())
