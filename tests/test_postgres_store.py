"""The results store on a real PostgreSQL server (a throwaway initdb cluster on loopback): the
same records and leaderboard as SQLite, two processes recording 40 runs each at once, the server
stopped in the middle of a write, and a wrong password."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from postgres_server import PASSWORD, running_postgres
from test_results_store import WRITER, Always

from localeval import evaluate
from localeval.cli import main
from localeval.store.results_db import SUMMARY_REVISION, record_run, task_runs
from localeval.views.mcq import MCQView
from localeval.views.registry import protocol_facts

pytestmark = pytest.mark.slow
TESTS_ON_PATH = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}


@pytest.fixture(scope="module")
def postgres():
    yield from running_postgres()


def _run(shared, folder, letter, store, limit=30):
    return evaluate(task="cmmlu", model=Always(letter), data=shared / "data" / "cmmlu",
                    subjects=["agronomy"], limit=limit, quiet=True, output=folder, store=store)


def _psql(postgres, sql, params=()):
    import psycopg

    with psycopg.connect(postgres.url, autocommit=True) as conn:
        cursor = conn.execute(sql, params)
        return cursor.fetchall() if cursor.description else []


def test_same_records_and_leaderboard_as_sqlite(shared, tmp_path, postgres, capsys):
    sqlite = tmp_path / "store.sqlite"
    for letter in "ABCD":
        record = _run(shared, tmp_path / f"run-{letter}", letter, postgres.url)
        record_run(record, MCQView().store_metrics(record.results), sqlite,
                   protocol_of=protocol_facts)
    from_server, from_file = task_runs("cmmlu", postgres.url), task_runs("cmmlu", sqlite)
    assert len(from_server) == 4 and from_server == from_file
    boards = []
    for store in (postgres.url, str(sqlite)):
        assert main(["leaderboard", "--any-protocol", "--task", "cmmlu", "--store", store,
                     "--json"]) == 0
        boards.append(json.loads(capsys.readouterr().out))
    assert boards[0] == boards[1] and len(boards[0]["rows"]) == 4
    # show and compare find a run by its id in the server's store
    first, second = (row["run_id"] for row in boards[0]["rows"][:2])
    assert main(["show", first, "--store", postgres.url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_samples"] == 30
    assert main(["compare", first, second, "--store", postgres.url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["overall"]["n"] == 30


def test_a_store_from_before_gains_the_data_files_column(shared, tmp_path, postgres):
    """Issue 32 item 4: the data fingerprint's column, added by migration to a store made
    before it (the column dropped again here, as such a store is)."""
    _run(shared, tmp_path / "first", "A", postgres.url)
    _psql(postgres, "ALTER TABLE runs DROP COLUMN data_files")
    record = _run(shared, tmp_path / "second", "B", postgres.url)
    rows = dict(_psql(postgres, "SELECT folder, data_files FROM runs WHERE folder LIKE %s",
                      (str(tmp_path) + "%",)))
    assert rows[str((tmp_path / "first").resolve())] is None  # recorded before the column
    assert json.loads(rows[str((tmp_path / "second").resolve())]) == \
        record.config["data_files"]


def test_two_processes_record_40_runs_each_at_once(tmp_path, postgres):
    _psql(postgres, "DROP TABLE IF EXISTS run_summary, metrics, runs")  # both processes create the schema
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path / "runs"), name,
                               postgres.url], stderr=subprocess.PIPE, text=True)
             for name in ("first", "second")]
    errors = [p.communicate()[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors
    assert _psql(postgres, "SELECT COUNT(*) FROM runs") == [(80,)]
    assert _psql(postgres, "SELECT COUNT(*) FROM metrics") == [(80 * 23,)]
    counts = dict(_psql(postgres, "SELECT model, COUNT(*) FROM runs GROUP BY model"))
    assert counts == {"first": 40, "second": 40}


RERUN = """
import sys
from pathlib import Path
from localeval import evaluate
from test_results_store import Always
evaluate(task="cmmlu", model=Always("A"), data=Path(sys.argv[1]) / "data" / "cmmlu",
         subjects=["agronomy"], limit=30, quiet=True, output=Path(sys.argv[2]),
         store=sys.argv[3])
"""


def _wait_until_blocked(postgres, statement, timeout_s=60.0):
    """Until a localeval connection waits on a lock in ``statement`` (it has begun writing)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        rows = _psql(postgres, "SELECT query FROM pg_stat_activity WHERE application_name = "
                     "'localeval' AND wait_event_type = 'Lock'")
        if any(query.startswith(statement) for (query,) in rows):
            return
        time.sleep(0.1)
    raise AssertionError(f"no localeval connection blocked in {statement!r}")


def test_server_stopped_mid_write_leaves_no_half_recorded_run(shared, tmp_path, postgres):
    import psycopg

    folder = tmp_path / "run"
    _run(shared, folder, "A", postgres.url)
    (run_id,) = _psql(postgres, "SELECT run_id FROM runs WHERE folder = %s",
                      (str(folder.resolve()),))[0]
    n_metrics = _psql(postgres, "SELECT COUNT(*) FROM metrics WHERE run_id = %s", (run_id,))
    # Hold the run's row: the rerun's record deletes its old metrics, then waits to delete
    # the run's row, in the middle of its transaction. Then the server goes down.
    holder = psycopg.connect(postgres.url)
    holder.execute("SELECT run_id FROM runs WHERE run_id = %s FOR UPDATE", (run_id,))
    rerun = subprocess.Popen([sys.executable, "-c", RERUN, str(shared), str(folder),
                              postgres.url], stderr=subprocess.PIPE, text=True, env=TESTS_ON_PATH)
    try:
        _wait_until_blocked(postgres, "DELETE FROM runs")
        postgres.stop("immediate")
        err = rerun.communicate(timeout=120)[1]
    finally:
        rerun.kill()
        holder.close()
        postgres.start()
    assert rerun.returncode == 0, err
    warnings = [line for line in err.splitlines() if line.strip()]
    assert len(warnings) == 1 and warnings[0].startswith("warning: the run is complete in"), err
    assert PASSWORD not in err
    results = json.loads((folder / "results.json").read_text())
    assert results["metrics"]["micro"]["n"] == 30
    # The earlier record is whole: its row and every metric; no metric without its run.
    assert _psql(postgres, "SELECT COUNT(*) FROM metrics WHERE run_id = %s",
                 (run_id,)) == n_metrics
    assert _psql(postgres, "SELECT COUNT(*) FROM metrics WHERE run_id NOT IN "
                 "(SELECT run_id FROM runs)") == [(0,)]


def test_wrong_password_is_one_line_without_the_password(shared, tmp_path, postgres):
    wrong = "Not-The-Pw-987"
    url = postgres.url.replace(PASSWORD, wrong)
    board = subprocess.run([sys.executable, "-m", "localeval.cli", "leaderboard", "--task",
                            "cmmlu", "--store", url], capture_output=True, text=True)
    assert board.returncode == 2
    lines = board.stderr.strip().splitlines()
    assert len(lines) == 1 and "password authentication failed" in lines[0], board.stderr
    assert wrong not in board.stderr and "localeval:***@127.0.0.1" in lines[0]
    record = subprocess.run([sys.executable, "-c", RERUN, str(shared), str(tmp_path / "r"), url],
                            capture_output=True, text=True, env=TESTS_ON_PATH)
    assert record.returncode == 0 and (tmp_path / "r" / "results.json").exists()
    assert wrong not in record.stderr and "not recorded" in record.stderr


def test_an_old_store_s_accuracy_is_renamed_average(shared, tmp_path, postgres, capsys):
    """Issue 51 item 4 on PostgreSQL: a multiple-choice run recorded under the old name
    (``accuracy`` for the paper's Average, its summary of revision 1) is renamed ``average`` by
    the next run recorded, and ranks with it; a safeguard run's metric so named is left alone.
    """
    from offline_runs import HashedGuard

    from localeval.demo.safety import SAMPLE_SAFETY

    _run(shared, tmp_path / "old", "A", postgres.url)
    evaluate(task="sea-safeguard", model=HashedGuard("pg-guard"), data=SAMPLE_SAFETY,
             output=tmp_path / "guard", quiet=True, n_resamples=20, store=postgres.url)
    ((old,),) = _psql(postgres, "SELECT run_id FROM runs WHERE folder = %s",
                      (str((tmp_path / "old").resolve()),))
    ((guard,),) = _psql(postgres, "SELECT run_id FROM runs WHERE model = 'pg-guard'")
    _psql(postgres, "UPDATE metrics SET name = 'accuracy' WHERE run_id = %s AND "
          "name = 'average'", (old,))
    _psql(postgres, "INSERT INTO metrics VALUES (%s, 'accuracy', 0.5, 10)", (guard,))
    _psql(postgres, "UPDATE run_summary SET revision = 1, metric_names = REPLACE("
          "metric_names, '\"average\"', '\"accuracy\"') WHERE run_id = %s", (old,))
    _run(shared, tmp_path / "new", "B", postgres.url)
    names = dict(_psql(postgres, "SELECT run_id, STRING_AGG(name, ',') FROM metrics WHERE "
                       "run_id IN (%s, %s) AND name IN ('accuracy', 'average') GROUP BY run_id",
                       (old, guard)))
    assert names == {old: "average", guard: "accuracy"}
    assert _psql(postgres, "SELECT COUNT(*) FROM run_summary WHERE revision != %s",
                 (SUMMARY_REVISION,)) == [(0,)]  # every summary migrated to today's
    assert main(["leaderboard", "--any-protocol", "--task", "cmmlu", "--store", postgres.url,
                 "--json"]) == 0
    board = json.loads(capsys.readouterr().out)
    ranked = {r["run_id"]: r["rank"] for r in board["rows"]}
    assert board["rank_by"] == "average" and ranked[old] is not None
    assert all(rank is not None for rank in ranked.values())
