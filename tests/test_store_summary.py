"""Issue 53 item 1 and issue 51 item 1: the results store keeps a summary per run (task, model,
guard, protocol options, protocol facts, data, metric names), written with the run; the
leaderboard ranked from it in the database gives the rows the Python path gives; the viewer's
pages read it a page at a time and show the guard and the protocol options as columns and
filters; a store from before the summary is migrated by the writer and only named by the
viewer (which opens it read-only)."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from offline_runs import AlwaysLetter, HashedGuard, as_before_data_files
from starlette.testclient import TestClient

from localeval import evaluate
from localeval.cli import main
from localeval.report.leaderboard import leaderboard, store_leaderboard
from localeval.store.results_db import task_runs, writable
from localeval.views.registry import protocol_facts
from localeval.web.app import make_app
from localeval.web.catalog import Catalog


def _exam(path, answers):
    path.write_text("".join(json.dumps({"id": str(i), "subject": "s", "question": f"Q{i}?",
                                        "A": "a", "B": "b", "C": "c", "D": "d",
                                        "answer": a}) + "\n" for i, a in enumerate(answers)),
                    encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A mixed store: one model under two guards (and cultural awareness), safeguard runs on
    a limit, and a custom exam on two data files, one run from before the fingerprint."""
    root = tmp_path_factory.mktemp("summary")
    store = root / "store.sqlite"
    for name, options in (("zs", {}), ("lg", {"guard": "llamaguard3"}),
                          ("aware", {"guard_options": {"cultural_awareness": True}}),
                          ("limited", {"limit": 12})):
        guard = options.pop("guard", "zero-shot")
        evaluate(task="sea-safeguard", model=HashedGuard("mymodel"), guard=guard,
                 data=safeguard_data(), output=root / name, quiet=True, n_resamples=20,
                 store=store, **options)
    one, two = _exam(root / "one.jsonl", "AAAB"), _exam(root / "two.jsonl", "BBBA")
    for letter, data in (("A", one), ("B", one), ("C", two), ("D", one)):
        evaluate(task="my-exam", model=AlwaysLetter(letter), data=data, shots=0,
                 output=root / f"exam-{letter}", quiet=True, store=store)
    as_before_data_files(store, "always-D")  # a run from before data_files existed
    return store


def safeguard_data():
    from localeval.demo.safety import SAMPLE_SAFETY

    return SAMPLE_SAFETY


def _count(text: str) -> int:
    return int(re.search(r'class="count" data-matching="(\d+)"', text).group(1))


def test_filtering_the_runs_by_guard_finds_them(store):
    client = TestClient(make_app(Catalog(store)), base_url="http://127.0.0.1")
    page = client.get("/", params={"guard": "llamaguard3"}).text
    assert _count(page) == 1, page
    assert _count(client.get("/", params={"guard": "zero-shot"}).text) == 3
    assert _count(client.get("/", params={"guard": "none"}).text) == 4
    every = client.get("/").text
    assert ">llamaguard3<" in every and ">zero-shot<" in every  # a column of its own
    assert "cultural awareness" in every  # the protocol options too
    picker = client.get("/compare").text
    assert re.search(r"<option [^>]*>llamaguard3 on mymodel · sea-safeguard", picker), picker


def test_the_leaderboard_says_the_guard(store, capsys):
    assert main(["leaderboard", "--task", "sea-safeguard", "--any-protocol", "--json",
                 "--store", str(store)]) == 0
    board = json.loads(capsys.readouterr().out)
    assert sorted(r["guard"] for r in board["rows"]) == ["llamaguard3"] + ["zero-shot"] * 3
    assert main(["leaderboard", "--task", "sea-safeguard", "--any-protocol", "--store",
                 str(store)]) == 0
    assert "llamaguard3" in capsys.readouterr().out


@pytest.mark.parametrize("task", ["sea-safeguard", "my-exam"])
@pytest.mark.parametrize("any_protocol", [False, True])
def test_ranked_in_the_database_as_in_python(store, task, any_protocol):
    with writable(store, protocol_facts) as db:  # migrates always-D's summary
        for reference in (None, *(r["run_id"] for r in task_runs(task, store))):
            python = leaderboard(task, task_runs(task, store), any_protocol, reference)
            ranked = store_leaderboard(task, db, any_protocol, reference)
            assert ranked.pop("ranked_total") == len(python["rows"])
            assert ranked.pop("apart_total") == len(python["apart"])
            for part in ("rows", "apart"):
                for ours, theirs in zip(ranked[part], python[part], strict=True):
                    assert ours == theirs, {k: (ours[k], theirs[k]) for k in ours
                                            if ours[k] != theirs.get(k)}
            assert ranked == python


def test_the_viewer_names_an_old_store_and_still_shows_it(store, tmp_path):
    old = tmp_path / "old.sqlite"
    old.write_bytes(store.read_bytes())
    with sqlite3.connect(old) as db:
        db.execute("DROP TABLE run_summary")
    before = old.read_bytes()
    client = TestClient(make_app(Catalog(old)), base_url="http://127.0.0.1")
    page = client.get("/", params={"guard": "llamaguard3"}).text
    assert _count(page) == 1 and "predates the run summary" in page
    board = client.get("/leaderboard", params={"task": "my-exam"})
    assert board.status_code == 200 and "predates the run summary" in board.text
    assert old.read_bytes() == before  # never migrated by the viewer
    with writable(old, protocol_facts):
        pass
    page = TestClient(make_app(Catalog(old)), base_url="http://127.0.0.1").get("/").text
    assert "predates" not in page and _count(page) == 8


@pytest.fixture(scope="module")
def postgres():
    from postgres_server import running_postgres

    yield from running_postgres()


@pytest.mark.slow
@pytest.mark.postgres
def test_a_postgres_store_from_before_is_migrated_and_ranks_as_in_python(store, postgres):
    """The mixed store's runs and metrics copied into PostgreSQL without their summaries (a
    store from before them): the viewer names it and still shows every run; the writer
    summarises it; then the database's ranking is the Python path's, and the guard filter and
    the runs pages read the summaries."""
    import psycopg

    from localeval.store.database import opened
    from localeval.store.results_db import COLUMNS, SCHEMA

    # runs and metrics: no summary (nor the summary's later columns)
    kept = tuple(c for c in COLUMNS if c[0] in ("runs", "metrics"))
    with opened(postgres.url, SCHEMA[:3], kept) as db:
        with sqlite3.connect(store) as source:
            for table in ("runs", "metrics"):
                cursor = source.execute(f"SELECT * FROM {table}")
                names = [d[0] for d in cursor.description]
                db.executemany(f"INSERT INTO {table} ({', '.join(names)}) VALUES "
                               f"({', '.join('?' * len(names))})", cursor.fetchall())
    client = TestClient(make_app(Catalog(postgres.url)), base_url="http://127.0.0.1")
    page = client.get("/", params={"guard": "llamaguard3"}).text
    assert _count(page) == 1 and "predates the run summary" in page
    with psycopg.connect(postgres.url) as conn:
        assert conn.execute("SELECT to_regclass('run_summary')").fetchone() == (None,)
    with writable(postgres.url, protocol_facts) as db:
        for task in ("sea-safeguard", "my-exam"):
            for reference in (None, *(r["run_id"] for r in task_runs(task, store))):
                for any_protocol in (False, True):
                    python = leaderboard(task, task_runs(task, store), any_protocol, reference)
                    ranked = store_leaderboard(task, db, any_protocol, reference)
                    del ranked["ranked_total"], ranked["apart_total"]
                    assert ranked == python
    page = client.get("/", params={"guard": "llamaguard3"}).text
    assert _count(page) == 1 and "predates" not in page
    assert _count(client.get("/", params={"guard": "none", "model": "ALWAYS"}).text) == 4


def test_the_summary_says_each_run_as_its_run_spec_and_an_older_one_is_migrated(store):
    """Issue 61: the store's name, guard and options columns are the run's RunSpec's (one
    namer; a multiple-choice run's shots and method among its options), and a summary of an
    earlier revision (or a store without the name column's value) is summarised again by the
    next command that writes."""
    from localeval.store.results_db import SUMMARY_REVISION
    from localeval.tasks.run_spec import RunSpec

    with writable(store, protocol_facts):
        pass
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT s.name, s.guard, s.options, r.config FROM run_summary s "
                          "JOIN runs r ON r.run_id = s.run_id").fetchall()
        assert len(rows) == 8
        for name, guard, options, config in rows:
            spec = RunSpec.from_config(json.loads(config))
            assert (name, guard, options) == (spec.name, spec.guard or "none",
                                              " · ".join(spec.said))
        assert {o.split(" · ")[0] for _, g, o, _ in rows if g == "none"} == \
            {"0-shot likelihood"}  # the viewer's options column says an exam's shots and method
        db.execute("UPDATE run_summary SET revision = ?, name = NULL", (SUMMARY_REVISION - 1,))
    with writable(store, protocol_facts):  # any writer migrates
        pass
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT COUNT(*) FROM run_summary WHERE revision = ? AND name IS NOT "
                          "NULL", (SUMMARY_REVISION,)).fetchone() == (8,)


# --------------------------------------------- issue 63 item 5: a version from before the summary
FIXTURE_RUN = Path(__file__).parent / "fixtures" / "runs-a9a91f9" / "cmmlu-likelihood"


def _recorded(root: Path, names: str, store) -> dict[str, str]:
    """Runs named by letters, recorded in ``store`` from folders under ``root`` (copies of a
    fixture run): their ids by letter."""
    import shutil
    from dataclasses import replace

    from localeval.store.results_db import record_run
    from localeval.store.runs import load_run
    from localeval.views.registry import view_for

    ids = {}
    for name in names:
        shutil.copytree(FIXTURE_RUN, root / name)
        record = replace(load_run(root / name), folder=root / name)
        ids[name] = record_run(record, view_for(record.results).store_metrics(record.results),
                               store, protocol_of=protocol_facts)
    return ids


def _as_an_old_version(execute, forget: str, record: str, source) -> None:
    """What a localeval from before the run summary does to a shared store: ``forget`` run
    deleted with its metrics only (its summary stays), ``record`` run (its rows copied from
    the SQLite store ``source``) inserted without a summary."""
    execute("DELETE FROM metrics WHERE run_id = ?", (forget,))
    execute("DELETE FROM runs WHERE run_id = ?", (forget,))
    with sqlite3.connect(source) as db:
        for table in ("runs", "metrics"):
            cursor = db.execute(f"SELECT * FROM {table} WHERE run_id = ?", (record,))
            names = [d[0] for d in cursor.description]
            for row in cursor.fetchall():
                execute(f"INSERT INTO {table} ({', '.join(names)}) VALUES "
                        f"({', '.join('?' * len(names))})", row)


def _board_ids(store, capsys) -> list[str]:
    assert main(["leaderboard", "--task", "cmmlu", "--any-protocol", "--json", "--store",
                 str(store)]) == 0
    return sorted(r["run_id"] for r in json.loads(capsys.readouterr().out)["rows"])


def _viewer_ids(store) -> tuple[list[str], list[str]]:
    """The runs the viewer's runs page and the task's leaderboard page show."""
    client = TestClient(make_app(Catalog(store)), base_url="http://127.0.0.1")
    listed = re.findall(r'<tr data-run="([0-9a-f]+)"', client.get("/").text)
    board = client.get("/leaderboard", params={"task": "cmmlu", "any_protocol": "1"}).text
    return sorted(listed), sorted(set(re.findall(r"/runs/([0-9a-f]{16})/report", board)))


def test_a_store_shared_with_a_version_from_before_the_summary_loses_no_run(tmp_path, capsys):
    """The old version forgets run A and records run C: the summaries (A, B) and the runs (B,
    C) are as many, so the summary was taken as whole and the leaderboard and the viewer
    showed A and never C, even after later writes. Now the viewer reads around it and any
    writer puts it right: summaries of exactly the runs present."""
    store, elsewhere = tmp_path / "store.sqlite", tmp_path / "elsewhere.sqlite"
    ids = _recorded(tmp_path, "AB", store) | _recorded(tmp_path, "C", elsewhere)
    with sqlite3.connect(store) as db:
        _as_an_old_version(db.execute, ids["A"], ids["C"], elsewhere)
    present = sorted([ids["B"], ids["C"]])
    assert _viewer_ids(store) == (present, present)  # read-only: read around the summary
    assert _board_ids(store, capsys) == present  # a writer summarises C and drops A's
    with sqlite3.connect(store) as db:
        assert sorted(r for (r,) in db.execute("SELECT run_id FROM run_summary")) == present
    assert _viewer_ids(store) == (present, present)


@pytest.mark.slow
@pytest.mark.postgres
def test_a_postgres_store_shared_with_a_version_from_before_the_summary(tmp_path, postgres,
                                                                         capsys):
    """The same on PostgreSQL. Its foreign key refuses the old version's forget while the
    summary names the run, so the summary that outlives its run is made here with the
    foreign key's triggers off (a store restored without its constraints has none)."""
    import psycopg

    from localeval.store.database import opened
    from localeval.store.results_db import COLUMNS, SCHEMA

    root = postgres.url.rsplit("/", 1)[0]  # a database of its own: the module's has its store
    with psycopg.connect(f"{root}/postgres", autocommit=True) as conn:
        conn.execute("CREATE DATABASE shared_versions")
    url, elsewhere = f"{root}/shared_versions", tmp_path / "elsewhere.sqlite"
    ids = _recorded(tmp_path, "AB", url) | _recorded(tmp_path, "C", elsewhere)
    with opened(url, SCHEMA, COLUMNS) as db:
        db.execute("SET session_replication_role = replica")
        _as_an_old_version(db.execute, ids["A"], ids["C"], elsewhere)
    present = sorted([ids["B"], ids["C"]])
    assert _viewer_ids(url) == (present, present)
    assert _board_ids(url, capsys) == present
    with opened(url, SCHEMA, COLUMNS) as db:
        assert sorted(r for (r,) in db.execute("SELECT run_id FROM run_summary")) == present
    assert _viewer_ids(url) == (present, present)


def test_a_metric_name_is_a_key_stored_in_todays_text_form():
    """Issue 71 item 1: the store's metric names are keys (family and parts), parsed in one
    place; the text the store holds is today's, so every store written before reads as it
    did, and a plugin view's plain text name is stored as it is."""
    from localeval.records.metric_names import MetricName, metric

    for text in ("average", "subject/CAP_civics", "table2/prompt/avg",
                 "auprc/response/without_prompt/all", "min_k/members/20/median"):
        assert str(MetricName.parse(text)) == text
    assert MetricName.parse("table2/prompt/avg") == metric("table2", "prompt", "avg")
    assert MetricName.parse("table2/prompt/avg").rest == "prompt/avg"
    assert MetricName.parse("average") == MetricName("average")
