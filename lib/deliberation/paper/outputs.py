"""The outputs the paper promises: the machine-read table in ``figures/README.md``.

Format (documented in that file): between the lines ``<!-- outputs:begin -->`` and
``<!-- outputs:end -->``, a Markdown table with one row per file and the columns

1. the notebook (its stem, e.g. ``00_smoke``);
2. one file it writes, relative to the output root with ``{profile}`` for the profile's name
   (e.g. ``tables/{profile}/smoke_arithmetic.csv``);
3. *only if* (may be empty): data the file needs, as globs in the manifest's ``reads`` syntax
   separated by `` or ``; the file is expected only when one of them matches a file (e.g. a table
   of the authors' released data, written when ``make data`` fetched it);
4. and further columns: free text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from deliberation.io import paths
from deliberation.paper.manifest import data_files

BEGIN, END = "<!-- outputs:begin -->", "<!-- outputs:end -->"


class OutputListError(ValueError):
    """The README's output table does not parse; the message names the file and line."""


@dataclass(frozen=True)
class _ExpectedOutput:
    notebook: str  # notebook stem
    pattern: str  # e.g. figures/{profile}/x.png
    only_if: tuple[str, ...] = ()  # data globs; expected only when one matches

    def expected(self) -> bool:
        return not self.only_if or bool(data_files(self.only_if))

    def path(self, profile: str, root: Path | None = None) -> Path:
        return (root or paths.output_root()) / self.pattern.format(profile=profile)


def readme_path() -> Path:
    return paths.repo_root() / "figures" / "README.md"


def expected_outputs(readme: str | Path | None = None) -> list[_ExpectedOutput]:
    """Every row of the README's output table, in file order."""
    path = Path(readme) if readme is not None else readme_path()
    lines = path.read_text().splitlines()
    try:
        start, stop = lines.index(BEGIN), lines.index(END)
    except ValueError:
        raise OutputListError(f"{path}: no '{BEGIN}' ... '{END}' table of outputs") from None
    rows = []
    for number, line in enumerate(lines[start + 1 : stop], start=start + 2):
        if not line.strip():
            continue
        cells = [c.strip().strip("`").strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or set(cells[0]) <= {"-", ":"} or cells[0] == "notebook":
            continue  # header and separator rows
        notebook, pattern = cells[0], cells[1]
        if "{profile}" not in pattern or pattern.split("/")[0] not in ("figures", "tables"):
            raise OutputListError(
                f"{path}:{number}: {pattern!r}: expected figures/{{profile}}/... or"
                " tables/{profile}/..."
            )
        try:
            pattern.format(profile="x")
        except (KeyError, IndexError, ValueError):
            raise OutputListError(
                f"{path}:{number}: {pattern!r}: only {{profile}} may be a field"
            ) from None
        condition = cells[2] if len(cells) > 2 else ""
        only_if = tuple(c.strip().strip("`") for c in condition.split(" or ") if c.strip())
        rows.append(_ExpectedOutput(notebook.removesuffix(".ipynb"), pattern, only_if))
    return rows


def missing_outputs(
    profile: str,
    notebooks: Iterable[str] | None = None,
    *,
    readme: str | Path | None = None,
    root: Path | None = None,
) -> list[Path]:
    """Files the README promises for ``profile`` (only for ``notebooks``' stems when given)
    that do not exist."""
    wanted = None if notebooks is None else {n.removesuffix(".ipynb") for n in notebooks}
    return [
        e.path(profile, root)
        for e in expected_outputs(readme)
        if (wanted is None or e.notebook in wanted)
        and not e.path(profile, root).is_file()
        and e.expected()
    ]


def unlisted_outputs(
    profile: str, *, readme: str | Path | None = None, root: Path | None = None
) -> list[Path]:
    """Files under figures/<profile>/ and tables/<profile>/ that the README does not list
    (provenance sidecars excepted): an output someone forgot to document."""
    root = root or paths.output_root()
    listed = {e.path(profile, root) for e in expected_outputs(readme)}
    found: Sequence[Path] = [
        p
        for kind in ("figures", "tables")
        for p in sorted((root / kind / profile).glob("*"))
        if p.is_file() and not p.name.endswith(".provenance.json")
    ]
    return [p for p in found if p not in listed]
