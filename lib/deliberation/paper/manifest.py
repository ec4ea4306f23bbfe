"""``notebooks/manifest.yaml``: the paper's notebooks, the data each reads and the experiment
function that sends its model calls. A new notebook plugs into ``make paper``, ``deliberation
plan`` and ``make report`` by adding its entry (the file's header documents the fields); the
experiment function of a notebook an experiment record lists (``Experiment.notebooks``) comes
from the record."""

from __future__ import annotations

import glob
import importlib
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from deliberation.io import paths
from deliberation.io.yaml_errors import describe_yaml_error, yaml_error_location

_MANIFEST_NAME = "manifest.yaml"
_NOTEBOOK_PATTERN = re.compile(r"\d\d_[A-Za-z0-9_]+\.ipynb")


class ManifestError(ValueError):
    """A manifest that does not load or does not match the notebooks; names file and entry."""


class NotebookEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(..., description="file name in notebooks/, e.g. 00_smoke.ipynb")
    reads: tuple[str, ...] = ()
    experiment: str | None = None
    kwargs: dict[str, Any] = Field(default_factory=dict)
    # The function an experiment record gives (``experiment`` then names it); not hashed.
    function: Callable[..., Any] | None = Field(None, exclude=True)

    @field_validator("experiment")
    @classmethod
    def _module_colon_function(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[\w.]+:\w+", value):
            raise ValueError(f"{value!r} is not 'package.module:function'")
        return value

    @property
    def stem(self) -> str:
        return self.name.removesuffix(".ipynb")

    def experiment_function(self) -> Callable[..., Any] | None:
        """The experiment function, imported; None for a notebook that calls no model."""
        if self.function is not None or self.experiment is None:
            return self.function
        module, _, function = self.experiment.partition(":")
        try:
            return getattr(importlib.import_module(module), function)
        except (ImportError, AttributeError) as exc:
            raise ManifestError(f"{self.name}: experiment {self.experiment}: {exc}") from None

    def data_files(self) -> list[Path]:
        """Every existing file the ``reads`` globs match, sorted (folders are walked)."""
        return data_files(self.reads)


def data_files(patterns: Sequence[str]) -> list[Path]:
    """Every existing file the globs match, sorted; folders are walked. Globs are relative to
    the repository root; ``{external_data}`` is ``make data``'s folder and ``{shared_data}`` the
    shared test copies (matching nothing when absent)."""
    shared = paths.shared_data_dir()
    places = {"external_data": str(paths.external_data_dir()), "shared_data": str(shared)}
    found: set[Path] = set()
    for pattern in patterns:
        if shared is None and "{shared_data}" in pattern:
            continue
        expanded = pattern.format(**places)
        if not Path(expanded).is_absolute():
            expanded = str(paths.repo_root() / expanded)
        for match in glob.glob(expanded, recursive=True):
            match_path = Path(match)
            if match_path.is_dir():
                found.update(p for p in match_path.rglob("*") if p.is_file())
            elif match_path.is_file():
                found.add(match_path)
    return sorted(found)


def notebooks_dir() -> Path:
    return paths.repo_root() / "notebooks"


def load_manifest(folder: str | Path | None = None) -> list[NotebookEntry]:
    """The entries in notebook order; every numbered notebook in the folder must have one and
    every entry must name an existing notebook (errors name the file and the entry)."""
    folder = Path(folder) if folder is not None else notebooks_dir()
    path = folder / _MANIFEST_NAME
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ManifestError(f"{path}: missing (one entry per notebook)") from None
    except yaml.YAMLError as exc:
        raise ManifestError(
            f"{path}: {yaml_error_location(exc)}: not valid YAML: {describe_yaml_error(exc)}"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("notebooks"), dict):
        raise ManifestError(f"{path}: expected a mapping `notebooks:` of notebook entries")
    from deliberation.experiments import notebook_calls

    calls = notebook_calls()  # the experiment records' notebooks
    entries = []
    for name, fields in data["notebooks"].items():
        fields = dict(fields or {})
        call = calls.get(name) if isinstance(name, str) else None
        if call is not None and "experiment" not in fields:
            function = call.function
            fields.update(
                experiment=f"{function.__module__}:{function.__qualname__}",
                function=function,
                kwargs=dict(call.kwargs),
            )
        if not isinstance(name, str) or not _NOTEBOOK_PATTERN.fullmatch(name):
            raise ManifestError(f"{path}: {name!r} is not a numbered notebook name (NN_name.ipynb)")
        try:
            entries.append(NotebookEntry(name=name, **fields))
        except (ValidationError, TypeError) as exc:
            detail = exc.errors()[0] if isinstance(exc, ValidationError) else {"msg": str(exc)}
            where = ".".join(str(p) for p in detail.get("loc", ()))
            raise ManifestError(f"{path}: notebooks.{name}.{where}: {detail['msg']}") from None
    listed = {e.name for e in entries}
    present = {p.name for p in folder.glob("*.ipynb") if _NOTEBOOK_PATTERN.fullmatch(p.name)}
    if present - listed:
        raise ManifestError(
            f"{path}: no entry for {sorted(present - listed)}: add one per notebook (the data it"
            " reads, and the experiment function that sends its model calls)"
        )
    if listed - present:
        raise ManifestError(f"{path}: entries for missing notebooks {sorted(listed - present)}")
    return sorted(entries, key=lambda e: e.name)


def select(entries: Sequence[NotebookEntry], wanted: Sequence[str] | None) -> list[NotebookEntry]:
    """The entries named in ``wanted`` (file names, stems or two-digit prefixes); all for None."""
    if not wanted:
        return list(entries)
    chosen = []
    for token in wanted:
        matches = [e for e in entries if token in (e.name, e.stem, e.name[:2])]
        if not matches:
            raise ManifestError(f"no notebook {token!r}; known: {[e.name for e in entries]}")
        chosen += [m for m in matches if m not in chosen]
    return sorted(chosen, key=lambda e: e.name)
