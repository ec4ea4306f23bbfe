"""Profiles: one YAML file per model setup in ``params/`` (``sim.yaml``, ``qwen2.5-7b-vllm.yaml``, ...).

A profile names the backend, the model and every option the run depends on. Loading validates
it strictly, and every problem is an error naming the file and the key: an unknown or repeated
key, a wrong type (no coercion: ``seed: true`` and ``temperature: "0.5"`` are refused), a
non-finite number (``.nan``, ``.inf``), a section for another backend than the profile's, and a
sim parameter that no sim behaviour declares, a value listed twice in an experiment grid, and
any YAML alias (see :mod:`deliberation.io.yaml_errors`). A profile
may ``extends:`` another by name: a profile in the same folder (``params/``), never a path, so
no profile can pull in a file from elsewhere. The child's keys are merged over the parent's, except
``name``, which is never inherited: it is the file stem unless the file gives one, and only
letters, digits, ``.``, ``_`` and ``-`` (it names output folders).

The backend's own section (``openai:``, ``vllm:``, ``sim:``: the key is the backend's name) is
validated by that backend's options model (``Backend.Options``) and available as
``profile.options``; a file may not hold a section for another backend, but one inherited
through ``extends:`` from a parent with another backend is dropped.
``sampling`` holds the profile's defaults for every request; a stage overrides them where it
must (see :mod:`deliberation.inference.generation`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)

# The experiments registry: every experiment's sim behaviours (and the parameters they declare) are
# known before a profile's sim.parameters are checked.
from deliberation.experiments import experiment_options, experiment_smoke_sizes
from deliberation.inference.backends import backend_class, registered_backends
from deliberation.inference.model_server import LOCAL_HOSTS, ServerOptions
from deliberation.io import paths
from deliberation.io.yaml_errors import describe_yaml_error, load_strict, yaml_error_location
from deliberation.profiles.cost import CostModel

NAME_PATTERN = re.compile(r"[A-Za-z0-9._-]+")
# A profile name names output folders and files (<name>.sqlite, <name>.yaml): well under the
# file systems' 255 bytes.
NAME_MAX = 100
# The largest max_tokens any profile may ask for (no served model has a longer context; it also
# bounds each reply's size, see openai_api.reply_byte_limit).
MAX_TOKENS_MAX = 1_000_000
# Whole numbers a profile holds (seeds included) fit in 64 bits.
INT_LIMIT = 2**63


def _control_character(value: str, *, lines: bool = False) -> str | None:
    """The first control or format character of ``value`` (NUL, escape, a right-to-left
    override, a zero-width joiner ...), as U+XXXX; tabs and line breaks are allowed where
    ``lines``. None when there is none."""
    for char in value:
        if lines and char in "\t\n\r":
            continue
        if unicodedata.category(char) in ("Cc", "Cf", "Cs", "Co", "Cn"):
            return f"U+{ord(char):04X}"
    return None


def _leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, value) of every scalar in YAML data, and of every mapping key (as text)."""
    if isinstance(value, dict):
        for key, child in value.items():
            where = f"{path}.{key}" if path else str(key)
            yield where, str(key)
            yield from _leaves(child, where)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _leaves(child, f"{path}[{index}]")
    else:
        yield path, value


def _first_problem(data: Any) -> str | None:
    """The first value in YAML data no field may hold, as ``key: why``: a non-finite number, a
    whole number past 64 bits, a control or format character (free-text fields ``description``
    and ``basis`` may break lines)."""
    for where, value in _leaves(data):
        if isinstance(value, float) and not math.isfinite(value):
            return f"{where}: expected a finite number, got .nan or .inf"
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= INT_LIMIT:
            return f"{where}: a whole number past 64 bits; give a smaller one"
        if isinstance(value, str):
            lines = where.rsplit(".", 1)[-1] in ("description", "basis")
            found = _control_character(value, lines=lines)
            if found is not None:
                return (
                    f"{where}: holds the control or format character {found} (NUL, escape, a"
                    " right-to-left override, ...): write it without"
                )
    return None


def check_profile_name(name: str, what: str = "profile") -> str:
    """``name`` when it can name a profile (letters, digits, ``.``, ``_``, ``-``; at most
    ``NAME_MAX`` characters); a ``ValueError`` naming ``what`` otherwise."""
    shown = name if len(name) <= 60 else f"{name[:40]}... ({len(name)} characters)"
    where = f"{what}: " if what else ""
    if len(name) > NAME_MAX:
        raise ValueError(
            f"{where}{shown!r} is too long for a profile name: at most {NAME_MAX} characters"
            " (it names output folders and files)"
        )
    if not NAME_PATTERN.fullmatch(name) or set(name) == {"."}:
        raise ValueError(
            f"{where}{shown!r} is not a profile name: use letters, digits, '.', '_' and '-'"
            " only (it names output folders)"
        )
    return name


class Strict(BaseModel):
    """A profile section: unknown keys refused, values frozen (experiments' options use it)."""

    # hide_input_in_errors: a value in the error could be a key pasted into the wrong field.
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)


class Sampling(Strict):
    """The profile's request defaults; :func:`deliberation.inference.generation.generation_settings`
    merges a stage's own values over them."""

    temperature: float = Field(0.0, ge=0.0, le=100.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    max_tokens: int = Field(512, gt=0, le=MAX_TOKENS_MAX)


def check_distinct(values: Sequence[Any] | None, field: str = "") -> Sequence[Any] | None:
    """``values`` when no value repeats; a repeat in a grid would run its cells twice and
    weigh them double, so it is a ``ValueError`` naming the field and the value."""
    if values is None:
        return values
    values = list(values) if not isinstance(values, tuple) else values
    repeated = list(dict.fromkeys(str(v) for v in values if values.count(v) > 1))
    if repeated:
        where = f"{field}: " if field else ""
        raise ValueError(
            f"{where}{', '.join(repeated)} listed more than once; list each value once"
        )
    return values


def check_limit(limit: int | None, field: str = "limit") -> int | None:
    """``limit`` when it is None (no limit) or a positive count: 0 and negative numbers would
    select nothing, or act like a slice from the end, instead of what was asked."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"{field}: must be a positive count, got {limit!r}")
    return limit


def distinct_values(values: tuple[Any, ...] | None) -> tuple[Any, ...] | None:
    check_distinct(values)
    return values


class _ExperimentOptions(Strict):
    """The profile's ``experiments:`` section: sizes that differ between a full run and a smoke
    run, and one section per registered experiment (``crossprofile``, ``hiddenbench``,
    ``natural``, ``dhd``: see ``deliberation.experiments.experiment_options``), each validated by the
    options model its experiment package registered. :func:`_experiment_options_model` adds
    those sections as fields."""

    smoke_items: int = Field(20, gt=0)


_EXPERIMENT_MODELS: dict[tuple[tuple[str, type[BaseModel]], ...], type[_ExperimentOptions]] = {}


def _experiment_options_model() -> type[_ExperimentOptions]:
    """:class:`_ExperimentOptions` with a field per registered experiment section (built once
    per set of registrations)."""
    sections = tuple(experiment_options().items())
    if sections not in _EXPERIMENT_MODELS:
        fields: dict[str, Any] = {name: (model, model()) for name, model in sections}
        _EXPERIMENT_MODELS[sections] = create_model(
            "ExperimentOptions", __base__=_ExperimentOptions, **fields
        )
    return _EXPERIMENT_MODELS[sections]


_YAML_TYPE_NAMES = {bool: "a boolean", str: "a string", int: "an integer", float: "a number",
                    list: "a list", dict: "a mapping", type(None): "null"}  # fmt: skip


def _format_validation_error(exc: ValidationError, prefix: str = "") -> str:
    """``a.b: message; c: message`` for every problem pydantic found (type errors say which
    YAML type was given, never the value: it could be a key pasted into the wrong field)."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in (prefix, *err["loc"]) if p != "")
        message = err["msg"]
        if err["type"] == "value_error":  # our own validators already name the field
            message = str(err.get("ctx", {}).get("error", message))
        elif err["type"].endswith("_type") and "input" in err:
            given = _YAML_TYPE_NAMES.get(type(err["input"]), type(err["input"]).__name__)
            message = f"{message} (got {given})"
        parts.append(f"{loc}: {message}" if loc else message)
    return "; ".join(parts)


class Profile(Strict):
    name: str
    description: str = ""
    backend: str
    model: str
    revision: str = ""
    seed: int = 0
    smoke: bool = False
    sampling: Sampling = Sampling()
    options: SerializeAsAny[BaseModel] = Field(
        description="the backend's own section (validated by backend_class(backend).Options)"
    )
    experiments: SerializeAsAny[_ExperimentOptions] = Field(
        default_factory=lambda: _experiment_options_model()(),
        description="sizes and each registered experiment's section (deliberation.experiments)",
    )
    cost: CostModel = Field(
        CostModel(), description="throughput or prices for `deliberation plan`; changes no answer"
    )
    server: ServerOptions | None = Field(
        None, description="how to start the server openai.base_url names (inference/model_server)"
    )
    served_by_sim: bool = Field(
        False,
        description="set by make_client when the server says it is serve-sim; never from YAML",
    )
    source: str = Field("", description="file the profile was loaded from")

    @model_validator(mode="before")
    @classmethod
    def _backend_section(cls, data: Any) -> Any:
        """Validate the section named after the backend with that backend's options model;
        drop sections of other registered backends (inherited from an ``extends:`` parent)."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        backend = data.get("backend")
        if not isinstance(backend, str) or backend not in registered_backends():
            raise ValueError(f"backend: {backend!r} is not one of {registered_backends()}")
        for other in registered_backends():
            if other != backend and other in data:
                raise ValueError(
                    f"{other}: a section for backend {other!r}, but the profile's backend is"
                    f" {backend!r}"
                )
        section = data.pop(backend, None)
        if section is None:  # built in code: Profile(..., options=<the backend's Options>)
            section = data.pop("options", None)
        options_model = backend_class(backend).Options
        if isinstance(section, options_model):
            data["options"] = section
            return data
        if section is not None and not isinstance(section, dict):
            raise ValueError(f"{backend}: expected a mapping of options")
        try:
            data["options"] = options_model.model_validate(section or {})
        except ValidationError as exc:
            raise ValueError(_format_validation_error(exc, backend)) from None
        return data

    @model_validator(mode="before")
    @classmethod
    def _experiment_sections(cls, data: Any) -> Any:
        """Validate ``experiments:`` with every registered experiment's options model, so an
        error names the section and field (``experiments.crossprofile.budgets: ...``)."""
        if not isinstance(data, dict) or isinstance(data.get("experiments"), _ExperimentOptions):
            return data
        section = data.get("experiments")
        if section is not None and not isinstance(section, dict):
            raise ValueError("experiments: expected a mapping of experiment sections")
        try:
            experiments = _experiment_options_model().model_validate(section or {})
        except ValidationError as exc:
            raise ValueError(_format_validation_error(exc, "experiments")) from None
        return {**data, "experiments": experiments}

    @model_validator(mode="after")
    def _server_matches_base_url(self) -> Profile:
        """A ``server:`` section starts the server ``openai.base_url`` names, on this machine."""
        if self.server is None:
            return self
        if not hasattr(self.options, "base_url"):  # the backend talks to no server
            raise ValueError(f"server: needs backend openai (the profile's is {self.backend!r})")
        url = urlsplit(self.options.base_url)
        if url.hostname not in LOCAL_HOSTS:
            raise ValueError(
                f"server: starts a server on this machine, but openai.base_url names host"
                f" {url.hostname!r}; use 127.0.0.1 (or drop the server: section)"
            )
        if self.server.port is not None and url.port != self.server.port:
            raise ValueError(
                f"server.port: {self.server.port} differs from the port of openai.base_url"
                f" ({self.options.base_url}); give one port in both"
            )
        return self

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        return check_profile_name(value, "")  # the error's location names the field

    @property
    def min_interval_clusters(self) -> int:
        """The cluster floor: measured, not a setting (deliberation.stats.small_samples)."""
        from deliberation.stats.small_samples import MIN_CLUSTERS

        return MIN_CLUSTERS

    @property
    def synthetic(self) -> bool:
        """True when results come from the sim mechanism model, not a language model: the
        backend is synthetic (``sim``) or the server said it is serve-sim."""
        return bool(backend_class(self.backend).synthetic) or self.served_by_sim

    @property
    def label(self) -> str:
        """What this profile runs, as every caption, banner and sidecar of its model outputs
        says it (``deliberation.profiles.model_label``): the synthetic label, or model, quantisation,
        engine and version, and "reduced grid"."""
        from deliberation.profiles.model_label import profile_label

        return profile_label(self)

    @property
    def params_hash(self) -> str:
        """Short hash of everything that can change results (not the file path)."""
        payload = self.model_dump(exclude={"source", "description", "cost"})
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
        data = load_strict(path.read_text())
    except yaml.YAMLError as exc:
        raise ProfileError(
            f"{path}: {yaml_error_location(exc)}: not valid YAML: {describe_yaml_error(exc)}"
        ) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ProfileError(f"{path}: expected a mapping of keys at the top level")
    return data


def _parent_path(path: Path, parent: Any) -> Path:
    """The file ``extends: <parent>`` names: ``<parent>.yaml`` beside ``path``. Only a profile
    name is accepted (no path, no ``..``), so a profile never reaches outside its folder."""
    if (
        not isinstance(parent, str)
        or not NAME_PATTERN.fullmatch(parent)
        or set(parent) == {"."}
        or Path(parent).name != parent
    ):
        shown = parent if isinstance(parent, str) else _yaml_type(parent)
        raise ProfileError(
            f"{path}: extends: {shown!r} is not a profile name; name a profile in the same"
            f" folder ({path.parent}) by its file stem, e.g. extends: sim (no paths)"
        )
    return path.parent / f"{parent}.yaml"


def profile_files(name_or_path: str | Path) -> list[Path]:
    """The profile's file and every file it ``extends:``, child first."""
    path = _profile_path(name_or_path)
    files = [path]
    while (parent := _read_yaml(files[-1]).get("extends")) is not None:
        try:
            files.append(_parent_path(files[-1], parent))
        except ProfileError:
            break  # load_profile reports the bad name
        if files[-1] in files[:-1] or not files[-1].is_file():
            break  # load_profile reports the cycle or the missing parent
    return files


def _profile_path(name_or_path: str | Path) -> Path:
    candidate = Path(name_or_path)
    if candidate.suffix not in {".yaml", ".yml"}:
        try:
            check_profile_name(str(name_or_path))
        except ValueError as exc:
            raise ProfileError(str(exc)) from None
        candidate = paths.params_dir() / f"{name_or_path}.yaml"
    try:
        found = candidate.is_file()
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte
        raise ProfileError(
            f"profile: {str(candidate)[:80]!r}: not a readable path ({exc})"
        ) from None
    if not found:
        available = sorted(p.stem for p in paths.params_dir().glob("*.yaml"))
        raise ProfileError(f"{candidate}: no such profile; available: {available}")
    return candidate


def _resolve(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The file's keys merged over its parents' (``name`` never comes from a parent)."""
    if path in seen:
        raise ProfileError(f"{path}: extends: cycle through {[str(p) for p in seen]}")
    data = _read_yaml(path)
    parent = data.pop("extends", None)
    if parent is None:
        merged = data
    else:
        parent_path = _parent_path(path, parent)
        if not parent_path.is_file():
            raise ProfileError(f"{path}: extends: no profile named {parent!r} at {parent_path}")
        inherited = _resolve(parent_path, (*seen, path))
        inherited.pop("name", None)
        if data.get("smoke") is True and inherited.get("smoke") is not True:
            # The first smoke profile runs each experiment at its record's smoke size.
            inherited = _deep_merge(inherited, {"experiments": experiment_smoke_sizes()})
        merged = _deep_merge(inherited, data)
    backend = merged.get("backend")
    for key in data:
        if key in registered_backends() and key != backend:
            raise ProfileError(
                f"{path}: {key}: a section for backend {key!r}, but this profile's backend is"
                f" {backend!r}"
            )
    # A parent's section for the backend this file replaced does not apply.
    return {k: v for k, v in merged.items() if k not in registered_backends() or k == backend}


def _yaml_type(value: Any) -> str:
    return _YAML_TYPE_NAMES.get(type(value), type(value).__name__)


def _converted(given: Any, validated: Any, path: str = "") -> list[str]:
    """Where validation converted a YAML scalar into another type (``true`` -> 1, ``"0.5"`` ->
    0.5, ``10.0`` -> 10, ``1`` -> True): each is an error, since the file did not say what it
    meant. An integer for a number field is no conversion. Compares the file's values with the
    validated profile's JSON dump, key by key."""
    if isinstance(given, dict) and isinstance(validated, dict):
        problems = []
        for key, value in given.items():
            if key in validated:
                where = f"{path}.{key}" if path else str(key)
                problems += _converted(value, validated[key], where)
        return problems
    if isinstance(given, list) and isinstance(validated, list) and len(given) == len(validated):
        return [
            problem
            for index, (a, b) in enumerate(zip(given, validated, strict=True))
            for problem in _converted(a, b, f"{path}[{index}]")
        ]
    if given is None or validated is None or isinstance(given, dict | list):
        return []
    same = (
        type(given) is type(validated)
        or (type(given) is int and type(validated) is float)  # 180 for a float field
        or (isinstance(given, dt.date) and validated == given.isoformat())  # a YAML date
    )
    if same:
        return []
    return [f"{path}: expected {_yaml_type(validated)} (got {_yaml_type(given)}; not converted)"]


def load_profile(name_or_path: str | Path) -> Profile:
    """Load ``params/<name>.yaml`` (or a path), merging ``extends:`` parents, strictly validated."""
    if not isinstance(name_or_path, str | Path) or isinstance(name_or_path, bool):
        # A notebook parameter arrives as papermill parsed it: `-p profile 123` gives an int.
        raise ProfileError(
            f"profile: expected a profile name or a path to a profile file, got"
            f" {type(name_or_path).__name__} {name_or_path!r} (with papermill, `-r profile NAME`"
            " passes the name as text)"
        )
    candidate = _profile_path(name_or_path)
    data = _resolve(candidate)
    if "served_by_sim" in data or "options" in data:
        key = "served_by_sim" if "served_by_sim" in data else "options"
        raise ProfileError(f"{candidate}: {key}: not a profile key")
    problem = _first_problem(data)
    if problem is not None:
        raise ProfileError(f"{candidate}: {problem}")
    data.setdefault("name", candidate.stem)
    data["source"] = str(candidate)
    try:
        profile = Profile.model_validate(data)
    except ValidationError as exc:
        raise ProfileError(f"{candidate}: {_format_validation_error(exc)}") from None
    validated = profile.model_dump(mode="json")
    validated[profile.backend] = validated.pop("options")  # as the file spells it
    converted = _converted(data, validated)
    if converted:
        raise ProfileError(f"{candidate}: {'; '.join(converted)}")
    return profile


def available_profiles() -> list[str]:
    """Every profile in ``params/``: the shipped ones and any a user added."""
    return sorted(p.stem for p in paths.params_dir().glob("*.yaml"))


_SHIPPED_LIST = "shipped.txt"


def shipped_profiles() -> list[str]:
    """The profiles this repository ships (``params/shipped.txt``, one name a line). Tests hold
    these to the project's standards (a real model prices its calls); a profile a user adds
    beside them is held only to what the README promises, so it never breaks ``make test``."""
    listing = paths.params_dir() / _SHIPPED_LIST
    if not listing.is_file():
        return []
    names = [
        line.split("#", 1)[0].strip() for line in listing.read_text(encoding="utf-8").splitlines()
    ]
    return sorted(name for name in names if name)
