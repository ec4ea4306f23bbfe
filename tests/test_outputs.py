"""Tables and figures: written atomically, reproducible byte for byte, sim outputs labelled."""

from __future__ import annotations

import json

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from deliberation.atomic import atomic_path
from deliberation.params import load_profile
from deliberation.plots import save_figure
from deliberation.provenance import SYNTHETIC_LABEL
from deliberation.tables import write_table

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
    assert pd.read_csv(files["csv"]).equals(FRAME)


def test_model_table_is_not_labelled_synthetic():
    files = write_table(
        FRAME, "t", profile=load_profile("qwen2.5-7b-vllm"), caption="Accuracy", notebook="nb"
    )
    assert SYNTHETIC_LABEL not in files["md"].read_text()
    sidecar = json.loads(files["provenance"].read_text())
    assert sidecar["synthetic"] is False and sidecar["model"] == "Qwen/Qwen2.5-7B-Instruct"


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
        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, 1])
        fig.suptitle("Accuracy by lead")
        files = save_figure(fig, "f", profile=profile, caption="Accuracy", notebook="nb")
        assert SYNTHETIC_LABEL in fig._suptitle.get_text()
        plt.close(fig)
        outputs.append({k: p.read_bytes() for k, p in files.items()})
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
