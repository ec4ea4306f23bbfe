"""Where ``make paper`` writes: a profile whose results are published keeps its committed
``figures/`` and ``tables/`` untouched unless the build publishes (``PUBLISH=1``)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from deliberation.inference.published import published_path
from deliberation.io import paths
from deliberation.paper.build import OUTPUT_ROOT_ENV, output_folders
from deliberation.profiles.profile import load_profile

PUBLISHED = "smollm2-135m-llamacpp"  # results/<profile>/responses.jsonl.gz is committed


def test_a_build_of_a_published_profile_writes_under_build_unless_it_publishes(
    monkeypatch,
) -> None:
    monkeypatch.delenv(OUTPUT_ROOT_ENV)
    assert published_path(PUBLISHED, paths.repo_root()).is_file()
    profile = load_profile(PUBLISHED)
    said: list[str] = []
    with output_folders(profile, publish=False, out=said.append) as root:
        assert root == paths.build_dir() / "outputs"
        assert paths.output_root() == root and os.environ[OUTPUT_ROOT_ENV] == str(root)
    assert OUTPUT_ROOT_ENV not in os.environ  # the kernels' environment restored after the build
    (line,) = said
    assert f"{root}/tables/{PUBLISHED}/" in line and "PUBLISH=1" in line
    with output_folders(profile, publish=True, out=said.append) as root:
        assert root == paths.repo_root() and OUTPUT_ROOT_ENV not in os.environ
    with output_folders(load_profile("sim"), publish=False, out=said.append) as root:
        assert root == paths.repo_root()  # nothing published: figures/sim/, tables/sim/
    assert len(said) == 1


def test_an_output_root_already_chosen_is_kept(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(OUTPUT_ROOT_ENV, str(tmp_path))
    with output_folders(load_profile(PUBLISHED), publish=False, out=print) as root:
        assert root == tmp_path


def test_make_paper_passes_publish() -> None:
    makefile = (paths.repo_root() / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"\$\(filter 1 yes true,\$\(PUBLISH\)\),--publish", makefile)
