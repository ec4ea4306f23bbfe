"""A throwaway paper (two tiny notebooks, a manifest, an output table) for the build's tests."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from deliberation.paper import build, outputs

WRITE_TABLE = """\
import pandas as pd
from deliberation.profiles.profile import load_profile
from deliberation.publish.tables import write_table
settings = load_profile(profile)
write_table(pd.DataFrame({{"x": [{value}]}}), "{table}", profile=settings, caption="t",
            notebook="{stem}", latex=False)
"""


def notebook(path: Path, *cells: str) -> None:
    """A notebook whose first code cell is the papermill `parameters` cell."""
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('profile = "smoke"')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, *(nbformat.v4.new_code_cell(c) for c in cells)]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, path)


def toy_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """Two notebooks: 00_a writes a table; 01_b reads a data file and writes another."""
    monkeypatch.setenv("DELIBERATION_BUILD_DIR", str(tmp_path / "build"))
    folder = tmp_path / "notebooks"
    folder.mkdir()
    data = tmp_path / "data" / "input.txt"
    data.parent.mkdir()
    data.write_text("1\n")
    notebook(folder / "00_a.ipynb", WRITE_TABLE.format(value=1, table="a", stem="00_a"))
    notebook(
        folder / "01_b.ipynb",
        f"value = int(open({str(data)!r}).read())",
        WRITE_TABLE.format(value="value", table="b", stem="01_b"),
    )
    (folder / "manifest.yaml").write_text(
        f"notebooks:\n  00_a.ipynb: {{}}\n  01_b.ipynb:\n    reads: ['{tmp_path}/data/*.txt']\n"
    )
    readme = tmp_path / "README.md"
    readme.write_text(
        "# outputs\n\n"
        f"{outputs.BEGIN}\n| notebook | file |\n| --- | --- |\n"
        "| 00_a | `tables/{profile}/a.csv` |\n| 01_b | `tables/{profile}/b.csv` |\n"
        f"{outputs.END}\n"
    )
    return {"folder": folder, "data": data, "readme": readme, "root": tmp_path}


def run(project: dict, **kwargs):
    """Build the toy project (no plan); the result and the printed text."""
    lines: list[str] = []
    result = build.build_paper(
        "smoke",
        folder=project["folder"],
        readme=project["readme"],
        plan=False,
        out=lines.append,
        **kwargs,
    )
    return result, "\n".join(lines)
