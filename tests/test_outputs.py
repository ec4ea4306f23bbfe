"""Tables and figures: written atomically, reproducible byte for byte, sim outputs labelled."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from deliberation.io.atomic import atomic_path
from deliberation.profiles.profile import load_profile
from deliberation.publish.plots import Figure, save_figure
from deliberation.publish.provenance import SYNTHETIC_LABEL
from deliberation.publish.tables import write_table

FRAME = pd.DataFrame({"policy": ["R1", "B4"], "accuracy": [0.6412, 0.5]})


def test_sim_table_is_labelled_synthetic_everywhere_a_reader_looks():
    files = write_table(
        FRAME, "t", profile=load_profile("smoke"), caption="Accuracy", notebook="nb"
    )
    assert SYNTHETIC_LABEL in files["md"].read_text()
    assert SYNTHETIC_LABEL in files["tex"].read_text()
    sidecar = json.loads(files["provenance"].read_text())
    assert sidecar["synthetic"] is True and sidecar["label"] == SYNTHETIC_LABEL
    assert sidecar["profile"] == "smoke" and sidecar["backend"] == "sim"
    assert set(sidecar["files"]) == {"t.csv", "t.md", "t.tex"}
    # The CSV says it too, on every row of its last column, and stays plain data.
    written = pd.read_csv(files["csv"])
    assert list(written.columns) == [*FRAME.columns, "source"]
    assert set(written["source"]) == {SYNTHETIC_LABEL}
    assert written.drop(columns="source").equals(FRAME)


def test_model_table_is_not_labelled_synthetic():
    files = write_table(
        FRAME, "t", profile=load_profile("qwen2.5-7b-vllm"), caption="Accuracy", notebook="nb"
    )
    assert SYNTHETIC_LABEL not in files["md"].read_text()
    sidecar = json.loads(files["provenance"].read_text())
    assert sidecar["synthetic"] is False and sidecar["model"] == "Qwen/Qwen2.5-7B-Instruct"
    assert set(pd.read_csv(files["csv"])["source"]) == {sidecar["label"]}


def test_tables_are_byte_identical_when_rewritten():
    profile = load_profile("smoke")
    first = {
        k: p.read_bytes()
        for k, p in write_table(FRAME, "t", profile=profile, caption="c", notebook="n").items()
    }
    second = {
        k: p.read_bytes()
        for k, p in write_table(FRAME, "t", profile=profile, caption="c", notebook="n").items()
    }
    assert first == second


def test_figures_are_labelled_and_reproducible():
    profile = load_profile("smoke")
    outputs = []
    for _ in range(2):
        fig = Figure()
        ax = fig.subplots()
        ax.plot([0, 1], [0, 1])
        fig.suptitle("Accuracy by lead")
        saved = save_figure(fig, "f", profile=profile, caption="Accuracy", notebook="nb")
        assert SYNTHETIC_LABEL in fig.get_suptitle()
        outputs.append({k: p.read_bytes() for k, p in saved.files.items()})
        # A notebook shows the file that was written, and names it and its caption in text.
        assert saved._repr_png_() == outputs[-1]["png"]
        assert repr(saved) == "Figure figures/smoke/f.png (and .pdf): Accuracy"
    assert outputs[0] == outputs[1]
    assert outputs[0]["png"].startswith(b"\x89PNG") and outputs[0]["pdf"].startswith(b"%PDF")


def test_a_failed_write_leaves_neither_the_target_nor_a_temp_file(tmp_path):
    target = tmp_path / "table.csv"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half a ta")
        raise RuntimeError("crash mid-write")
    assert list(tmp_path.iterdir()) == []


def test_tables_that_call_no_model_say_so_instead_of_claiming_a_model_or_the_sim():
    files = write_table(
        FRAME,
        "card",
        profile=load_profile("smoke"),
        caption="Bank",
        notebook="nb",
        uses_model=False,
    )
    sidecar = json.loads(files["provenance"].read_text())
    assert SYNTHETIC_LABEL not in files["md"].read_text()
    assert sidecar["uses_model"] is False and sidecar["synthetic"] is False
    assert sidecar["label"] == "benchmark description (no model calls)"


def _rendered_rows(markdown: str) -> list[list[str]]:
    """The cells of every row of the first table, as a Markdown renderer reads them."""
    mistune = pytest.importorskip("mistune")  # nbconvert's Markdown renderer
    html = mistune.create_markdown(plugins=["table"])(markdown)
    import re

    rows = re.findall(r"<tr>(.*?)</tr>", html, flags=re.S)
    return [re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, flags=re.S) for row in rows]


def test_markdown_tables_escape_pipes_render_every_cell_and_round_numbers():
    frame = pd.DataFrame(
        {
            "measure": ["labelled relevant | support", "(R1 - B4 | decoy shared) - (...)"],
            "estimate": [62.916666666667, 0.000123456789],
            "p_holm": [0.5, float("nan")],
            "n_clusters": [60, 60],
        }
    )
    files = write_table(
        frame, "t", profile=load_profile("smoke"), caption="A | B", notebook="nb",
        float_format="%.10g",
    )  # fmt: skip
    text = files["md"].read_text()
    rows = _rendered_rows(text)
    assert [len(r) for r in rows] == [4, 4, 4]  # header + 2 rows, no cell split at a "|"
    assert rows[1][0] == "labelled relevant | support"
    assert rows[2][2] == "" and "nan" not in text  # a missing value is blank
    assert "62.92" in text and "62.9166" not in text and "0.0001235" in text
    assert "62.91666667" in files["csv"].read_text()  # the CSV keeps its own precision
    assert pd.read_csv(files["csv"])["measure"].tolist() == frame["measure"].tolist()


def test_row_dumps_are_csv_only():
    files = write_table(FRAME, "nb_rows", profile=load_profile("smoke"), caption="c", notebook="n")
    assert set(files) == {"csv", "provenance"}
    with pytest.raises(ValueError, match="CSV only"):
        write_table(
            FRAME, "nb_rows", profile=load_profile("smoke"), caption="c", notebook="n",
            markdown=True,
        )  # fmt: skip


def test_released_results_name_their_models_and_source_never_the_sim():
    from deliberation.publish.provenance import ReleasedSource

    source = ReleasedSource(
        models=("gpt-oss-120b", "gemma-4-31B-it"),
        repository="owner/repo",
        commit="a" * 40,
        licence="MIT",
        files=("figures/x.csv",),
    )
    profile = load_profile("smoke")
    files = write_table(FRAME, "ref", profile=profile, caption="Released", notebook="nb",
                        source=source)  # fmt: skip
    sidecar = json.loads(files["provenance"].read_text())
    assert sidecar["backend"] is None and sidecar["model"] == "gpt-oss-120b, gemma-4-31B-it"
    assert sidecar["synthetic"] is False and sidecar["revision"] == "a" * 40
    assert sidecar["source"]["repository"] == "https://github.com/owner/repo"
    assert sidecar["source"]["files"] == ["figures/x.csv"]
    for text in (sidecar["label"], sidecar["caption"], files["md"].read_text()):
        assert SYNTHETIC_LABEL not in text and "sim" not in text.split("[")[-1]
        assert "gpt-oss-120b" in text and "owner/repo" in text
    fig = Figure()
    ax = fig.subplots()
    ax.plot([0, 1])
    figure = save_figure(fig, "ref", profile=profile, caption="c", notebook="nb", source=source)
    figure_sidecar = json.loads(figure.files["provenance"].read_text())
    assert figure_sidecar["backend"] is None and not figure_sidecar["synthetic"]
    assert SYNTHETIC_LABEL not in fig.get_suptitle()
