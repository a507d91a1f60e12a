"""Issue 32, item 4: a run records the data it used (each file's bytes and sha256) in
config.json, and a rerun on edited data is a run with other settings: refused in one line naming
the file, replaced with --overwrite (the request cache kept). A folder written before the
fingerprint existed is accepted once and gains it. No model is built."""

from __future__ import annotations

import hashlib
import json

import pytest
from offline_runs import AlwaysLetter

from localeval import evaluate
from localeval.errors import LocalevalError


def _write(path, answers):
    path.write_text("".join(json.dumps({"id": str(i), "question": f"q{i}", "A": "a", "B": "b",
                                        "C": "c", "D": "d", "answer": a}) + "\n"
                            for i, a in enumerate(answers)))


def _run(data, folder, cache, **more):
    return evaluate(task="mine", model=AlwaysLetter("A"), data=str(data), shots=0,
                    output=folder, cache=cache, quiet=True, store=False, **more)


def test_a_rerun_on_edited_data_is_a_run_with_other_settings(tmp_path):
    """Before: 100 gold answers changed, the same command replaced the results (accuracy 0.25
    -> 0.50) with exit 0, and config.json named only the file."""
    data, folder, cache = tmp_path / "test.jsonl", tmp_path / "run", tmp_path / "c.sqlite"
    answers = ["ABCD"[i % 4] for i in range(400)]
    _write(data, answers)
    first = _run(data, folder, cache)
    assert first.results["metrics"]["micro"]["acc"] == 0.25
    stored = json.loads((folder / "config.json").read_text())["data_files"]
    assert stored == {str(data): {"bytes": data.stat().st_size,
                                  "sha256": hashlib.sha256(data.read_bytes()).hexdigest()}}
    edited = list(answers)
    for i in [i for i, a in enumerate(answers) if a != "A"][:100]:
        edited[i] = "A"
    _write(data, edited)
    with pytest.raises(LocalevalError) as e:
        _run(data, folder, cache)
    message = str(e.value)
    assert "\n" not in message and f"data changed: {data} (sha256 " in message
    assert "--overwrite to replace it" in message
    assert json.loads((folder / "results.json").read_text())["metrics"]["micro"]["acc"] == 0.25
    again = _run(data, folder, cache, overwrite=True)
    assert again.results["metrics"]["micro"]["acc"] == 0.5
    assert again.results["timing"]["requests_cached"] == 400  # the cache was kept


def test_the_same_data_resumes_and_a_folder_from_before_gains_the_fingerprint(tmp_path,
                                                                              capsys):
    data, folder, cache = tmp_path / "test.jsonl", tmp_path / "run", tmp_path / "c.sqlite"
    _write(data, ["A", "B", "C", "D"])
    _run(data, folder, cache)
    assert _run(data, folder, cache).results["history"]  # a rerun, not a refusal
    config = json.loads((folder / "config.json").read_text())
    del config["data_files"]  # as a folder written before fingerprints
    (folder / "config.json").write_text(json.dumps(config))
    capsys.readouterr()
    _run(data, folder, cache)
    err = capsys.readouterr().err
    said = [line for line in err.splitlines() if "fingerprint" in line]  # (and the custom-task note)
    assert len(said) == 1 and "written before runs recorded their data's fingerprint" in said[0]
    assert str(data) in json.loads((folder / "config.json").read_text())["data_files"]
    _write(data, ["B", "B", "C", "D"])  # from now on, an edit is refused
    with pytest.raises(LocalevalError, match="data changed"):
        _run(data, folder, cache)


def test_a_store_from_before_gains_the_data_files_column(tmp_path):
    """The results store keeps the fingerprint in a column of its own, added by migration to a
    store made before it (SQLite here; PostgreSQL in test_postgres_store.py)."""
    import sqlite3

    from localeval.store.results_db import SCHEMA, record_run
    from localeval.views.registry import protocol_facts

    store = tmp_path / "store.sqlite"
    with sqlite3.connect(store) as db:  # a store as it was: the SCHEMA's ten columns, one run
        for statement in SCHEMA:
            db.execute(statement)
        db.execute("INSERT INTO runs VALUES ('old', 'mine', 's', 'm', NULL, NULL, NULL, NULL, "
                   "'{}', '{}')")
    data = tmp_path / "test.jsonl"
    _write(data, ["A", "B"])
    record = _run(data, tmp_path / "run", None)
    record_run(record, [], store, protocol_of=protocol_facts)
    record_run(record, [], store, protocol_of=protocol_facts)  # again: the column is there already
    with sqlite3.connect(store) as db:
        rows = dict(db.execute("SELECT run_id, data_files FROM runs"))
    assert rows.pop("old") is None
    (fingerprint,) = rows.values()
    assert json.loads(fingerprint) == record.config["data_files"]
