"""``deliberation profile new --base-url URL`` writes a profile that runs as written against the
server it asked: serve-sim (vLLM's dialect) and the llama-cpp-python stand-in (which refuses
``json_schema`` and ignores vLLM's fields), each with the served model name, the mode the server
keeps to and a starter grid of one policy, one budget and one tag mode."""

from __future__ import annotations

import contextlib

import pandas as pd
import pytest
from helpers.json_handler import JsonHandler, serving
from helpers.llama_like import SERVED_MODEL, llama_like_server
from helpers.serve_sim import SIM_MODEL

from deliberation import exit_codes
from deliberation.cli import main
from deliberation.experiments.grid_needs import starter_grid, unmet_needs
from deliberation.profiles.profile import load_profile
from deliberation.profiles.starter import default_name
from deliberation.testing import sim_server_in_thread


@contextlib.contextmanager
def _servers():
    with sim_server_in_thread() as sim, llama_like_server() as llama:
        yield {"serve-sim": sim.base_url, "llama-like": llama}


@pytest.mark.parametrize(
    ("server", "model", "mode", "concurrency"),
    [("serve-sim", SIM_MODEL, "structured_outputs", 4),
     ("llama-like", SERVED_MODEL, "json_object_schema", 1)],
)  # fmt: skip
def test_the_profile_names_what_the_server_serves_and_the_mode_it_keeps_to(
    tmp_path, capsys, server, model, mode, concurrency
) -> None:
    out = tmp_path / "my-model.yaml"
    with _servers() as urls:
        code = main(["profile", "new", "--base-url", urls[server], "--out", str(out)])
        assert code == 0, capsys.readouterr()
        profile = load_profile(out)
        assert profile.name == "my-model" and "name:" not in out.read_text()  # the stem names it
        assert profile.model == model and profile.options.base_url == urls[server]
        assert profile.options.structured_output == mode
        # llama.cpp answers one request at a time (its mode names it); serve-sim is no engine
        assert profile.options.concurrency == concurrency
        assert profile.options.timeout_s == (900 if concurrency == 1 else 300)
        assert profile.synthetic is False and (server == "serve-sim") == (
            "The server is serve-sim" in out.read_text()
        )
    # The grid: each experiment's smallest try, widened to every notebook's needs, so the
    # plan accepts it (tests/notebooks/test_starter_paper.py builds the paper on it).
    assert unmet_needs(profile) == []
    for section, options in starter_grid().items():
        for option, starter in options.items():
            assert getattr(getattr(profile.experiments, section), option) == starter.value
    grid = profile.experiments.crossprofile
    # tags removed beside kept: notebook 04's ablation (its grid runs what the profile lists)
    assert (grid.budgets, grid.tags, grid.limit) == ((0.6,), ("keep", "remove"), 2)
    printed = capsys.readouterr().out
    assert f"structured_output: {mode}" in printed and f"--profile {out}" in printed
    assert f"make plan PROFILE={out}" in printed


def test_a_run_of_the_written_profile_passes_the_preflight_and_answers(tmp_path, capsys) -> None:
    out = tmp_path / "served.yaml"
    rows = tmp_path / "rows.csv"
    with sim_server_in_thread() as sim:
        assert main(["profile", "new", "--base-url", sim.base_url, "--out", str(out)]) == 0
        code = main([
            "run", "crossprofile", "--profile", str(out), "--limit", "1", "--no-progress",
            "--cache", str(tmp_path / "c.sqlite"), "--out", str(rows),
        ])  # fmt: skip
    assert code == 0, capsys.readouterr()
    frame = pd.read_csv(rows)
    assert len(frame) == 8 and set(frame["policy"]) == {"R1"}  # 8 variants x one cell
    assert (frame["outcome"] == "answered").mean() > 0.5  # answers inside the constraint


def test_several_models_need_model_and_a_model_not_listed_is_refused(tmp_path, capsys) -> None:
    with _listing(["a/Model-One", "model-two"]) as url:
        assert main(["profile", "new", "--base-url", url, "--out", str(tmp_path / "x.yaml")]) == (
            exit_codes.BAD_INPUT
        )
        assert "'a/Model-One', 'model-two'" in capsys.readouterr().err
        code = main(
            [
                "profile",
                "new",
                "--base-url",
                url,
                "--model",
                "three",
                "--out",
                str(tmp_path / "x.yaml"),
            ]
        )
        assert code == exit_codes.MODEL_MISMATCH
        assert not (tmp_path / "x.yaml").exists()  # nothing written on a refusal
        assert main(["profile", "new", "--base-url", url, "--model", "model-two",
                     "--out", str(tmp_path / "x.yaml")]) == 0  # fmt: skip
    # No mode kept its answer inside the constraint (this server answers none): free text.
    assert load_profile(tmp_path / "x.yaml").options.structured_output == "none"


def test_nothing_answering_is_unreachable_and_an_existing_file_is_kept(tmp_path, capsys) -> None:
    out = tmp_path / "kept.yaml"
    out.write_text("mine\n")
    with sim_server_in_thread() as sim:
        assert main(["profile", "new", "--base-url", sim.base_url, "--out", str(out)]) == 2
        dead = sim.base_url
    assert out.read_text() == "mine\n" and "--force" in capsys.readouterr().err
    assert main(["profile", "new", "--base-url", dead, "--out", str(tmp_path / "n.yaml")]) == (
        exit_codes.SERVER_UNREACHABLE
    )
    assert main(["profile", "new", "--base-url", dead, "--name", "../up"]) == exit_codes.BAD_INPUT


def test_a_server_refusing_a_plain_request_stops_with_its_complaint(tmp_path, capsys) -> None:
    out = tmp_path / "x.yaml"
    with _listing(["m"], status=401) as url:
        code = main(["profile", "new", "--base-url", url, "--out", str(out)])
    assert code == exit_codes.PREFLIGHT_REFUSED and not out.exists()
    assert "invalid api key" in capsys.readouterr().err  # not a profile with mode "none"


def test_default_names_are_file_stems() -> None:
    assert default_name("Qwen/Qwen2.5-7B-Instruct") == "qwen2.5-7b-instruct"
    assert default_name("llama3.1:8b") == "llama3.1-8b"
    assert default_name("///") == "my-model"


@contextlib.contextmanager
def _listing(models: list[str], status: int = 200):
    """A server that lists ``models`` and answers every chat request with an empty string (or,
    with another ``status``, refuses it)."""

    class Listing(JsonHandler):
        def do_GET(self) -> None:
            self.send_json(200, {"object": "list", "data": [{"id": m} for m in models]})

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            if status != 200:
                self.send_json(status, {"error": {"message": "invalid api key"}})
                return
            self.send_json(200, {
                "id": "x", "object": "chat.completion", "created": 0, "model": models[-1],
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": ""}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            })  # fmt: skip

    with serving(Listing) as root:
        yield f"{root}/v1"
