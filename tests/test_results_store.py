"""The results store: every finished run recorded, two processes recording at the same moment,
the leaderboard checked against accuracies computed by hand from the runs' samples."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys

import pytest
from offline_runs import AlwaysLetter

from localeval import evaluate
from localeval.cli import main
from localeval.store.results_db import store_path, task_runs

Always = AlwaysLetter  # answers ``letter`` to every question


def _run(shared, tmp_path, letter):
    return evaluate(task="cmmlu", model=Always(letter), data=shared / "data" / "cmmlu",
                    subjects=["agronomy"], limit=30, quiet=True,
                    output=tmp_path / f"run-{letter}")


def test_leaderboard_by_hand(shared, tmp_path, capsys):
    records = {letter: _run(shared, tmp_path, letter) for letter in "ABCD"}
    by_hand = {f"always-{k}": sum(s["correct"] for s in r.samples) / len(r.samples)
               for k, r in records.items()}
    assert main(["leaderboard", "--any-protocol", "--task", "cmmlu", "--json"]) == 0
    board = json.loads(capsys.readouterr().out)
    assert board["rank_by"] == "average"
    assert [r["model"] for r in board["rows"]] == sorted(by_hand, key=lambda m: -by_hand[m])
    for row in board["rows"]:
        # one subject, one discipline: the Average is the pooled accuracy here
        assert row["values"]["average"] == pytest.approx(by_hand[row["model"]])
        assert row["values"]["micro"] == pytest.approx(by_hand[row["model"]])
    # A rerun in the same folder replaces its record; the store keeps one per folder.
    _run(shared, tmp_path, "A")
    assert len(task_runs("cmmlu")) == 4
    assert main(["leaderboard", "--any-protocol", "--task", "cmmlu", "--format", "md"]) == 0
    md = capsys.readouterr().out
    best = board["rows"][0]
    assert md.startswith("**cmmlu leaderboard, by average (highest first)**")
    assert f"| 1 | {best['model']} | {best['items']} | " \
        f"{100 * best['values']['average']:.2f} |" in md


def test_no_store_and_an_unwritable_store(shared, tmp_path, monkeypatch, capsys):
    evaluate(task="cmmlu", model=Always("A"), data=shared / "data" / "cmmlu",
             subjects=["agronomy"], limit=3, quiet=True, output=tmp_path / "x", store=False)
    assert not store_path().exists()
    blocked = tmp_path / "a-folder"
    blocked.mkdir()
    monkeypatch.setenv("LOCALEVAL_STORE", str(blocked))  # a folder: SQLite cannot open it
    record = evaluate(task="cmmlu", model=Always("A"), data=shared / "data" / "cmmlu",
                      subjects=["agronomy"], limit=3, quiet=True, output=tmp_path / "y")
    assert record.status == "finished" and (tmp_path / "y" / "results.json").exists()
    assert "is not recorded" in capsys.readouterr().err
    assert main(["leaderboard", "--task", "nothing", "--store", str(tmp_path / "s.db")]) == 2


WRITER = """
import sys
from pathlib import Path
from localeval.store.results_db import record_run
from localeval.views.registry import protocol_facts
from localeval.store.runs import finished_record
from localeval.views.mcq import MCQView
results = {"schema": "localeval.mcq/1", "task": "t", "n_samples": 40, "method": "likelihood",
           "shots": 0, "disciplines": ["STEM", "Other"], "metrics": {
    "micro": {"acc": 0.5, "n": 2}, "discipline_average": 0.5,
    "by_subject": {f"s{k}": {"acc": 0.5, "n": 2} for k in range(20)}}}
for i in range(40):
    folder = Path(sys.argv[1]) / f"{sys.argv[2]}-{i}"
    folder.mkdir(parents=True)
    record = finished_record({"task": "t", "model": sys.argv[2]}, results, [], folder=folder)
    record_run(record, MCQView().store_metrics(record.results), sys.argv[3],
               protocol_of=protocol_facts)
"""


def test_two_processes_record_at_the_same_moment(tmp_path):
    store = tmp_path / "store.sqlite"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path / "runs"), name,
                               str(store)], stderr=subprocess.PIPE, text=True)
             for name in ("first", "second")]
    errors = [p.communicate()[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors
    with sqlite3.connect(store) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("SELECT COUNT(*) FROM runs").fetchone() == (80,)
        assert db.execute("SELECT COUNT(*) FROM metrics").fetchone() == (80 * 23,)
        models = dict(db.execute("SELECT model, COUNT(*) FROM runs GROUP BY model"))
    assert models == {"first": 40, "second": 40}


def test_compare_mcq_runs_by_hand(shared, tmp_path, capsys):
    from math import comb

    a = _run(shared, tmp_path, "A")
    _run(shared, tmp_path, "B")
    golds = [s["gold"] for s in a.samples]
    a_only, b_only = golds.count("A"), golds.count("B")  # each answers one letter
    n = a_only + b_only
    p = min(1.0, 2 * sum(comb(n, i) for i in range(min(a_only, b_only) + 1)) / 2**n)
    assert main(["compare", str(tmp_path / "run-A"), str(tmp_path / "run-B"), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    overall = result["overall"]
    assert overall["n"] == 30 and (overall["a_only"], overall["b_only"]) == (a_only, b_only)
    assert overall["diff"] == pytest.approx((b_only - a_only) / 30)
    assert overall["p_mcnemar"] == pytest.approx(p)
    assert set(result["by_subject"]) == {"agronomy"}
    assert main(["compare", str(tmp_path / "run-A"), str(tmp_path / "run-B")]) == 0
    assert "exact McNemar" in capsys.readouterr().out


def _safety_run(folder, guard, scores):
    from localeval.records.samples import SafetySample
    from localeval.store.runs import finished_record, save_run

    folder.mkdir()
    samples = [SafetySample.model_validate(
        {"id": f"q{i}", "lang": lang, "subset": "file", "kind": "prompt",
         "context": "with_prompt", "label": label, "score": score})
        for i, (lang, label, score) in enumerate(scores)]
    save_run(finished_record({"task": "safety-prompts"},
                             {"schema": "localeval.safety/1", "guard": guard,
                              "n_samples": len(samples), "auprc": "trapezoid",
                              "sensitive": None},
                             samples, folder=folder))


def test_compare_safety_runs_by_hand(tmp_path, capsys):
    from sklearn.metrics import auc, precision_recall_curve

    rows_a = [("en", 1, 0.9), ("en", 0, 0.2), ("en", 1, 0.4), ("th", 1, 0.3), ("th", 0, 0.6),
              ("th", 0, 0.1)]
    rows_b = [(lang, label, 0.5 + 0.4 * (2 * label - 1) * (1 if lang == "th" else 0.5))
              for lang, label, _ in rows_a]
    _safety_run(tmp_path / "a", "g1", rows_a)
    _safety_run(tmp_path / "b", "g2", rows_b)
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)

    def trapezoid(rows):
        p, r, _ = precision_recall_curve([x[1] for x in rows], [x[2] for x in rows])
        return auc(r, p)

    by_lang = {r["lang"]: r for r in result["rows"]}
    assert set(by_lang) == {"all", "en", "th"} and result["n_shared"] == 6
    for lang, subset in (("all", slice(0, 6)), ("en", slice(0, 3)), ("th", slice(3, 6))):
        row = by_lang[lang]
        assert row["auprc_a"] == pytest.approx(trapezoid(rows_a[subset]))
        assert row["auprc_b"] == pytest.approx(trapezoid(rows_b[subset]))
        assert row["diff"] == pytest.approx(row["auprc_b"] - row["auprc_a"])
        assert row["low"] <= row["diff"] <= row["high"]
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert "paired bootstrap" in capsys.readouterr().out


def test_a_file_that_is_not_a_store_is_refused_and_left_alone(tmp_path, capsys):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    assert main(["leaderboard", "--task", "cmmlu", "--store", str(notes)]) == 2
    assert "is not a SQLite database" in capsys.readouterr().err
    assert notes.read_text() == "my notes\n"


def test_show_compare_and_report_read_a_run_by_its_store_id(shared, tmp_path, capsys):
    """A teammate's run, found by the id `leaderboard --json` gives (a prefix will do): the same
    output as from its folder; an unknown id is one line."""
    for letter in "AB":
        _run(shared, tmp_path, letter)
    assert main(["leaderboard", "--any-protocol", "--task", "cmmlu", "--json"]) == 0
    ids = {row["model"]: row["run_id"] for row in json.loads(capsys.readouterr().out)["rows"]}
    a, b = ids["always-A"][:8], ids["always-B"]
    assert main(["compare", str(tmp_path / "run-A"), str(tmp_path / "run-B"), "--json"]) == 0
    by_folder = capsys.readouterr().out
    assert main(["compare", a, b, "--json"]) == 0
    assert capsys.readouterr().out == by_folder
    assert main(["show", a, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown == json.loads((tmp_path / "run-A" / "results.json").read_text())
    assert main(["report", b, "--output", str(tmp_path / "b.html")]) == 0
    assert (tmp_path / "b.html").exists()
    capsys.readouterr()
    assert main(["show", "abcdef12"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "abcdef12: no run folder and no run id in the results store" in err[0]


def test_the_leaderboard_ranks_only_runs_on_the_papers_protocol(shared, tmp_path, capsys):
    """A 2-question run used to rank #1: runs that are not on the paper's protocol (here every
    CMMLU run covers 2 of 67 subjects; the 2-question one has a --limit too) are listed apart
    with how they differ, and --any-protocol ranks them together, saying so."""
    for letter, limit in (("A", 2), ("B", None)):
        evaluate(task="cmmlu", model=Always(letter), data=shared / "data" / "cmmlu",
                 subjects=["agronomy", "arts"], limit=limit, quiet=True,
                 output=tmp_path / letter)
    assert main(["leaderboard", "--task", "cmmlu", "--json"]) == 0
    board = json.loads(capsys.readouterr().out)
    assert board["rows"] == [] and board["reference_is"] == "the paper's protocol"
    differs = {r["items"]: r["differs"] for r in board["apart"]}
    assert "limit 2 (ranked: none)" in differs[4] and "subjects 2 of 67 (ranked: 67 of 67)" \
        in differs[4]
    assert main(["leaderboard", "--task", "cmmlu"]) == 0
    printed = capsys.readouterr().out
    assert "runs listed apart" in printed and "limit 2 (ranked: none)" in printed
    assert main(["leaderboard", "--any-protocol", "--task", "cmmlu", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["rows"]) == 2


def test_forget_a_run_and_prune_only_this_machines_gone_folders(shared, tmp_path, capsys):
    for letter in "AB":
        evaluate(task="cmmlu", model=Always(letter), data=shared / "data" / "cmmlu",
                 subjects=["agronomy"], limit=2, quiet=True, output=tmp_path / letter)
    store = tmp_path / "results-store.sqlite"
    with sqlite3.connect(store) as db:  # B was recorded by a teammate's machine
        db.execute("UPDATE runs SET host = 'teammate' WHERE folder = ?",
                   (str((tmp_path / "B").resolve()),))
    shutil.rmtree(tmp_path / "A")
    shutil.rmtree(tmp_path / "B")
    assert main(["forget", "--missing"]) == 0
    assert "forgot 1 run(s)" in capsys.readouterr().err
    assert [r["folder"] for r in task_runs("cmmlu")] == [str((tmp_path / "B").resolve())]
    (run_id,) = [r["run_id"] for r in task_runs("cmmlu")]
    assert main(["forget", run_id[:8]]) == 0 and task_runs("cmmlu") == []
