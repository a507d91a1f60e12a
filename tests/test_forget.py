"""``localeval forget`` (issue 63 item 6): an empty reference (an unset shell variable) removed
every run and a 1-digit one every run starting so, exit 0, though ``--help`` asks for 6+ hex
digits. Now both are refused in one line, nothing removed, while the references it is for still
work: a run folder (there or gone), the ids ``leaderboard --json`` prints and their first 6+
hex digits."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from localeval.cli import main
from localeval.store.results_db import record_run, task_runs
from localeval.store.runs import load_run
from localeval.views.registry import protocol_facts, view_for

RUN = Path(__file__).parent / "fixtures" / "runs-a9a91f9" / "cmmlu-likelihood"


@pytest.fixture
def store(tmp_path):
    """Three recorded runs of one task, each from its own folder (copies of a fixture run)."""
    store = tmp_path / "store.sqlite"
    for name in ("one", "two", "three"):
        shutil.copytree(RUN, tmp_path / name)
        record = replace(load_run(tmp_path / name), folder=tmp_path / name)
        record_run(record, view_for(record.results).store_metrics(record.results), store,
                   protocol_of=protocol_facts)
    return store


def _ids(store) -> list[str]:
    return sorted(r["run_id"] for r in task_runs("cmmlu", store))


@pytest.mark.parametrize("ref", ["", " ", "0", "abc", "g" * 8, "first digit"])
def test_an_empty_or_short_reference_is_refused_and_removes_nothing(store, ref, capsys):
    before = _ids(store)
    ref = before[0][:1] if ref == "first digit" else ref  # a prefix some run has
    assert main(["forget", ref, "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and len(err.strip().splitlines()) == 1, err
    assert "6 to 16 hex digits" in err and "nothing removed" in err
    assert _ids(store) == before


def test_one_bad_reference_among_good_ones_removes_nothing(store, capsys):
    before = _ids(store)
    assert main(["forget", before[0], "", "--store", str(store)]) == 2
    assert _ids(store) == before


def test_a_prefix_of_several_runs_is_refused(store, tmp_path, capsys):
    import sqlite3

    with sqlite3.connect(store) as db:  # ids that share their first 6 digits
        for i, (old,) in enumerate(db.execute("SELECT run_id FROM runs").fetchall()):
            new = f"abcdef{i:010d}"
            for table in ("run_summary", "metrics", "runs"):
                db.execute(f"UPDATE {table} SET run_id = ? WHERE run_id = ?", (new, old))
    assert main(["forget", "abcdef", "--store", str(store)]) == 2
    assert "several runs" in capsys.readouterr().err and len(_ids(store)) == 3
    assert main(["forget", "abcdef0000000001", "--store", str(store)]) == 0
    assert len(_ids(store)) == 2


def test_what_forget_is_for_still_works(store, tmp_path, capsys, monkeypatch):
    assert main(["leaderboard", "--task", "cmmlu", "--any-protocol", "--json", "--store",
                 str(store)]) == 0
    printed = [r["run_id"] for r in json.loads(capsys.readouterr().out)["rows"]]
    assert sorted(printed) == _ids(store)
    assert main(["forget", printed[0], "--store", str(store)]) == 0  # an id as printed
    assert main(["forget", printed[1][:6], "--store", str(store)]) == 0  # its first 6 digits
    assert _ids(store) == [printed[2]]
    (folder,) = [r["folder"] for r in task_runs("cmmlu", store)]
    shutil.rmtree(folder)  # a folder gone is still a reference to its run
    monkeypatch.chdir(tmp_path)
    assert main(["forget", Path(folder).name, "--store", str(store)]) == 0
    assert _ids(store) == []
    assert "forgot 1 run(s)" in capsys.readouterr().err
