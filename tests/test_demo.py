"""``localeval demo`` (demo/run.py): it writes only into a new, empty or earlier
demo's folder, and its rerun recomputes nothing (the demo's runs keep their request cache)."""

from __future__ import annotations

from pathlib import Path

import pytest

from localeval.cli import main
from localeval.demo.run import DEMO_ENTRIES, check_demo_output


@pytest.mark.parametrize("where", ["/", "a home folder"])
def test_the_demo_refuses_a_folder_that_holds_other_files(where, tmp_path, capsys):
    folder = Path("/") if where == "/" else tmp_path / "home"
    if where != "/":
        folder.mkdir()
        (folder / "notes.txt").write_text("mine")
    before = sorted(p.name for p in folder.iterdir())
    assert main(["demo", "--output", str(folder), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds other files" in err[0], err
    assert sorted(p.name for p in folder.iterdir()) == before  # before: 4 folders more


def test_the_demo_reuses_a_new_empty_or_earlier_demo_folder(tmp_path):
    check_demo_output(tmp_path / "new")
    check_demo_output(tmp_path)
    for name in DEMO_ENTRIES:
        (tmp_path / name).mkdir()
    check_demo_output(tmp_path)


@pytest.mark.slow
def test_the_demo_rerun_recomputes_nothing(tmp_path):
    """The demo kept no cache: its rerun recomputed every request (36 s)."""
    import json

    from localeval.demo.run import run_demo

    for _ in range(2):
        run_demo(tmp_path / "demo", quiet=True)
    for run in ("tmlu-likelihood", "sea-safeguard"):
        results = json.loads((tmp_path / "demo" / run / "results.json").read_text())
        rerun = results["history"][-1]
        assert rerun["requests_run"] == 0 and rerun["requests_cached"] > 0, (run, rerun)


def test_building_the_demo_model_prints_nothing(tmp_path, capfd):
    """Issue 69: three blank lines after the demo's banner: the tokenizer trainer's progress,
    written to stdout where it is no terminal."""
    from localeval.demo.model import build_demo_model

    build_demo_model(tmp_path / "model", ["a few words of sample text"] * 5)
    assert capfd.readouterr().out == ""
