"""The project's own files: environment.yml agrees with pyproject.toml; the CLI and make targets exist."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib

import yaml

from deliberation.io.paths import repo_root

ROOT = repo_root()


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _spec(requirement: str) -> tuple[str, str]:
    name = _name(requirement)
    return name, requirement.strip()[len(name) :].replace(" ", "")


def test_environment_yml_names_the_same_dependencies_as_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    wanted = {_spec(r) for r in project["dependencies"] + extras["dev"] + extras["lab"]}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda, pip = set(), []
    for entry in env["dependencies"]:
        if isinstance(entry, dict):
            pip.extend(entry["pip"])
        elif _name(entry) not in {"python", "pip"}:
            conda.add(_spec(entry))
    pip_specs = {_spec(r) for r in pip if not r.startswith("-e")}
    assert conda | pip_specs == wanted
    assert any(r.startswith("-e .") for r in pip), "environment.yml must install the package itself"


def test_cli_lists_its_commands():
    out = subprocess.run(
        [sys.executable, "-m", "deliberation", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for command in ("serve-sim", "cache"):
        assert command in out


def test_ci_runs_the_readme_test_command():
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "make paper" in readme and "make test" in readme
    makefile = (ROOT / "Makefile").read_text()
    for target in (
        "setup",
        "paper",
        "test",
        "lint",
        "unit",
        "notebooks",
        "lab",
        "data",
        "bench",
        "clean",
    ):
        assert re.search(rf"^{target}:", makefile, re.M), target
    clean = makefile.split("\nclean:")[1]
    assert "figures" not in clean and "tables" not in clean


def _make(folder, *args, stdin=""):
    return subprocess.run(
        ["make", "--no-print-directory", "-C", str(folder), *args],
        input=stdin,
        capture_output=True,
        text=True,
    )


def test_make_clean_keeps_the_response_cache_and_clean_cache_asks_first(tmp_path):
    """The probe: `make clean` used to delete .cache/ (paid answers) without a word."""
    (tmp_path / "Makefile").write_text((ROOT / "Makefile").read_text())
    paid = tmp_path / ".cache" / "deepseek.sqlite"
    paid.parent.mkdir()
    paid.write_bytes(b"paid answers")
    (tmp_path / "build").mkdir()

    assert _make(tmp_path, "clean").returncode == 0
    assert paid.read_bytes() == b"paid answers" and not (tmp_path / "build").exists()

    refused = _make(tmp_path, "clean-cache", stdin="")  # no answer (e.g. CI, no terminal)
    assert refused.returncode != 0 and "CONFIRM=1" in refused.stdout and paid.exists()
    declined = _make(tmp_path, "clean-cache", stdin="y\n")  # only the word "yes" deletes
    assert declined.returncode != 0 and paid.exists()

    assert _make(tmp_path, "clean-cache", stdin="yes\n").returncode == 0
    assert not paid.parent.exists()
    paid.parent.mkdir()
    paid.write_bytes(b"again")
    assert _make(tmp_path, "clean-cache", "CONFIRM=1").returncode == 0
    assert not paid.parent.exists()


def _fake_tool(path, log):
    """An executable that appends its name and arguments to ``log`` and succeeds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/bash\necho "$(basename "$0") $*" >> {log}\n')
    path.chmod(0o755)


def test_make_lab_installs_once_and_passes_profile_and_arguments_to_the_cli(tmp_path):
    """The probe: `make lab` failed as root, reinstalled on every call and took no arguments;
    now it installs once (registering the venv's kernel) and passes arguments to the CLI."""
    for name in ("Makefile", "pyproject.toml"):
        (tmp_path / name).write_text((ROOT / name).read_text())
    log = tmp_path / "calls.log"
    _fake_tool(tmp_path / "venv" / "bin" / "python", log)

    def lab(*args):
        env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
        done = subprocess.run(
            ["make", "--no-print-directory", "-C", str(tmp_path), "lab", f"VENV={tmp_path}/venv",
             *args],
            capture_output=True, text=True, env=env,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        calls = log.read_text().splitlines()
        log.unlink()
        return calls

    first = lab("LAB_ARGS=--port 8890 --no-browser")
    assert sum("pip install" in c and "[dev,lab]" in c for c in first) == 1
    # The venv's Python registered as the lab's python3 kernel (it has the package).
    assert sum("ipykernel install --sys-prefix --name python3" in c for c in first) == 1
    assert (
        first[-1] == "python -m deliberation lab --profile sim --lab-args=--port 8890 --no-browser"
    )
    again = lab("PROFILE=smoke")
    assert again == ["python -m deliberation lab --profile smoke --lab-args="]  # installed once


def test_the_lab_opens_on_notebooks_with_this_environments_kernels_first(monkeypatch) -> None:
    """What `make lab` runs (deliberation lab): JupyterLab rooted at the repository, opening
    on notebooks/, kernels from this environment first, the profile for the kernels, and
    --allow-root only as root."""
    import os
    import sys

    from deliberation.paper.lab import lab_command

    monkeypatch.setenv("JUPYTER_PATH", "/elsewhere")
    argv, env = lab_command("smoke", ["--port", "8890"], root=ROOT)
    assert argv[:3] == [sys.executable, "-m", "jupyterlab"]
    assert f"--ServerApp.root_dir={ROOT}" in argv and argv[-2:] == ["--port", "8890"]
    assert "--LabApp.default_url=/lab/tree/notebooks" in argv
    assert ("--allow-root" in argv) == (os.geteuid() == 0)
    assert env["DELIBERATION_PROFILE"] == "smoke"
    assert env["JUPYTER_PATH"].split(os.pathsep) == [f"{sys.prefix}/share/jupyter", "/elsewhere"]


def test_make_test_runs_every_lane_after_one_fails_and_still_fails(tmp_path):
    """The real `test` target over stand-in lanes (a Makefile that includes the project's)."""
    (tmp_path / "pyproject.toml").write_text("")
    stamp = tmp_path / "venv" / ".setup-stamp"
    stamp.parent.mkdir()
    stamp.write_text("")  # newer than pyproject.toml: `setup` has nothing to do
    (tmp_path / "Makefile").write_text(
        f"include {ROOT / 'Makefile'}\n"
        "broken: setup\n\t@echo ran-broken; exit 3\n"
        "fine: setup\n\t@echo ran-fine\n"
    )
    venv = f"VENV={stamp.parent}"
    failed = _make(tmp_path, "test", venv, "LANES=broken fine")
    assert failed.returncode != 0
    assert "ran-broken" in failed.stdout and "ran-fine" in failed.stdout
    assert "FAILED: broken" in failed.stdout and "FAILED: broken fine" not in failed.stdout
    passed = _make(tmp_path, "test", venv, "LANES=fine fine")
    assert passed.returncode == 0 and "make test: passed" in passed.stdout
