"""Issue 33 item 7: a task name never puts the default run folder outside runs/; ``demo`` writes
only into a new, empty or earlier demo's folder (as ``run`` refuses ``--output /``); an error
line echoes a name of any length cut to a readable size."""

from __future__ import annotations

from pathlib import Path

import pytest
from offline_runs import AlwaysLetter, stand_in_model

import localeval.run
from localeval.cli import main
from localeval.demo.run import DEMO_ENTRIES, check_demo_output

STAND_IN = stand_in_model()  # a model folder the checks accept; never loaded


@pytest.mark.parametrize("task", ["..", ".", "../..", "..hidden", "a/../../b"])
def test_the_default_folder_of_any_task_name_is_under_runs(task, shared, tmp_path, monkeypatch,
                                                           capsys):
    monkeypatch.setattr(localeval.run, "load_backend", lambda spec, **kw: AlwaysLetter("A"))
    assert main(["run", "--task", task, "--data", str(shared / "data" / "cmmlu"), "--subjects",
                 "agronomy", "--limit", "1", "--model", STAND_IN, "--no-store", "--quiet"]) == 0
    # the test runs in tmp_path: before, `--task ..` wrote runs/../tmp-<hash>/ there
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"], capsys.readouterr().err
    (kind,) = (tmp_path / "runs").iterdir()
    assert not kind.name.startswith(".") and len(list(kind.iterdir())) == 1


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


def test_an_error_line_echoes_a_name_of_any_length_cut_short(capsys):
    name = "x" * 100_000
    assert main(["run", "--task", name, "--model", STAND_IN]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and len(err) < 1000, len(err)  # before: 100,227
    assert " characters]…" in err
