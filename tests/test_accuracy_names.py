"""Issue 51 item 4: one name per number. A multiple-choice run has three accuracies (the TMLU
paper's "Average", the mean of the discipline columns; "micro", every question pooled; "macro",
the mean of the subjects), and the report card, the leaderboard, the viewer and the exports
each name them alike: before, the card said "accuracy" for the pooled number and the
leaderboard "accuracy" for the Average. A store whose runs were recorded under the old name is
migrated by the next command that writes it, and read as migrated by the viewer meanwhile."""

from __future__ import annotations

import json
import sqlite3

import pytest
from offline_runs import AlwaysLetter, as_before_average
from starlette.testclient import TestClient

from localeval import evaluate
from localeval.cli import main
from localeval.store.results_db import task_runs, writable
from localeval.views.mcq import MCQView
from localeval.views.registry import protocol_facts
from localeval.web.app import make_app
from localeval.web.catalog import Catalog


def _two_disciplines(shared, folder, letter, store):
    """CMMLU's agronomy (Other, 169 questions) and anatomy (STEM, 148): a micro accuracy that
    is not the mean of the two discipline columns."""
    return evaluate(task="cmmlu", model=AlwaysLetter(letter), data=shared / "data" / "cmmlu",
                    subjects=["agronomy", "anatomy"], quiet=True, output=folder, store=store)


def _exam(path, answers):
    path.write_text("".join(json.dumps({"id": str(i), "subject": f"s{i % 2}",
                                        "question": f"Q{i}?", "A": "a", "B": "b", "C": "c",
                                        "D": "d", "answer": a}) + "\n"
                            for i, a in enumerate(answers)), encoding="utf-8")
    return path


def _board(task, store, capsys):
    assert main(["leaderboard", "--any-protocol", "--task", task, "--store", str(store),
                 "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _card_values(results) -> dict[str, str]:
    """The cards by the name their label starts with ("average", "micro")."""
    return {card.label.split()[0].rstrip(":"): card.value for card in MCQView().cards(results)}


def test_the_card_and_the_leaderboard_give_one_name_one_number(shared, tmp_path, capsys):
    store = tmp_path / "store.sqlite"
    record = _two_disciplines(shared, tmp_path / "run", "A", store)
    m = record.results.metrics
    assert round(m.micro.acc, 4) != round(m.discipline_average, 4)  # two numbers, really
    board = _board("cmmlu", store, capsys)
    (row,) = board["rows"]
    cards = _card_values(record.results)
    for name, value in row["values"].items():  # a name the board shows means one number
        if name in cards:
            assert cards[name] == f"{100 * value:.2f}%", (name, cards, row["values"])
    assert board["rank_by"] == "average" and "accuracy" not in board["columns"]
    assert {"average", "micro"} <= set(cards)
    assert row["values"]["average"] == pytest.approx(m.discipline_average)
    assert row["values"]["micro"] == pytest.approx(m.micro.acc)
    assert "average = the paper's Average" in board["unit"]


def test_a_run_without_disciplines_has_no_average_and_ranks_by_micro(tmp_path, capsys):
    store = tmp_path / "store.sqlite"
    data = _exam(tmp_path / "exam.jsonl", "AAAB")
    for letter in "AB":
        record = evaluate(task="my-exam", model=AlwaysLetter(letter), data=data, shots=0,
                          quiet=True, output=tmp_path / letter, store=store)
    names = [str(name) for name, _, _ in MCQView().store_metrics(record.results)]
    assert "average" not in names and "micro" in names  # never micro under another name
    assert [c.label.split()[0] for c in MCQView().cards(record.results)] == ["micro:", "macro:"]
    board = _board("my-exam", store, capsys)
    assert board["rank_by"] == "micro" and board["columns"] == ["micro", "macro"]
    assert [r["model"] for r in board["rows"]] == ["always-A", "always-B"]
    assert "no discipline columns" in board["unit"]


def _metric_names(store) -> dict[str, set[str]]:
    with sqlite3.connect(store) as db:
        out: dict[str, set[str]] = {}
        for model, name in db.execute("SELECT r.model, m.name FROM metrics m JOIN runs r "
                                      "ON r.run_id = m.run_id"):
            out.setdefault(model, set()).add(name)
        return out


def test_an_old_store_is_migrated_and_old_and_new_runs_rank_together(shared, tmp_path,
                                                                      capsys):
    store = tmp_path / "store.sqlite"
    _two_disciplines(shared, tmp_path / "old-A", "A", store)
    _two_disciplines(shared, tmp_path / "old-B", "B", store)
    data = _exam(tmp_path / "exam.jsonl", "AAAB")
    evaluate(task="my-exam", model=AlwaysLetter("A"), data=data, shots=0, quiet=True,
             output=tmp_path / "exam-A", store=store)
    evaluate(task="sea-safeguard", model=_guard(), data=_safety(), output=tmp_path / "guard",
             quiet=True, n_resamples=20, store=store)
    new_board = _board("cmmlu", store, capsys)
    with sqlite3.connect(store) as db:  # another kind's metric of that name is not ours
        (guard_run,) = db.execute("SELECT run_id FROM runs WHERE task = 'sea-safeguard'"
                                  ).fetchone()
        db.execute("INSERT INTO metrics VALUES (?, 'accuracy', 0.5, 10)", (guard_run,))
    for model in ("always-A", "always-B"):
        as_before_average(store, model)
    old = _metric_names(store)
    assert "accuracy" in old["always-A"] and "average" not in old["always-A"]
    assert "accuracy" in old["hashed-guard"]

    # the viewer opens it read-only: it says how to upgrade, and reads the old name as new
    before = store.read_bytes()
    client = TestClient(make_app(Catalog(store)), base_url="http://127.0.0.1")
    page = client.get("/leaderboard", params={"task": "cmmlu", "any_protocol": "1"}).text
    assert "localeval leaderboard --task TASK" in page
    assert ">average<" in page and ">accuracy<" not in page
    assert store.read_bytes() == before

    # the next command that writes migrates it; a new run ranks with the old ones
    _two_disciplines(shared, tmp_path / "new-C", "C", store)
    migrated = _metric_names(store)
    for model in ("always-A", "always-B", "always-C"):
        assert "accuracy" not in migrated[model] and "average" in migrated[model]
    assert "accuracy" in migrated["hashed-guard"]  # left alone
    board = _board("cmmlu", store, capsys)
    assert board["rank_by"] == "average"
    assert [r["rank"] for r in board["rows"]] == [1, 2, 3]
    old_rows = {r["model"]: r["values"] for r in board["rows"] if r["model"] != "always-C"}
    assert old_rows == {r["model"]: r["values"] for r in new_board["rows"]}  # as recorded
    exam = task_runs("my-exam", store)
    assert "accuracy" not in exam[0]["metrics"] and "average" not in exam[0]["metrics"]
    with sqlite3.connect(store) as db:
        names = {json.loads(n).count("accuracy") for (n,) in db.execute(
            "SELECT metric_names FROM run_summary WHERE task != 'sea-safeguard'")}
    assert names == {0}
    with writable(store, protocol_facts) as db:  # summaries all current again
        from localeval.store.results_db import has_summaries

        assert has_summaries(db)


def _guard():
    from offline_runs import HashedGuard

    return HashedGuard()


def _safety():
    from localeval.demo.safety import SAMPLE_SAFETY

    return SAMPLE_SAFETY
