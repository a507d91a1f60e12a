"""The results store at team size (issue 53 item 1): how long ``localeval leaderboard`` and the
viewer's pages spend on a store of 100, 1,000 and 20,000 runs, on SQLite and PostgreSQL.

The store is built without running a model: each kind of run in ``tests/fixtures/runs-a9a91f9``
(multiple choice, safeguard with and without cultural awareness, LLM safety, contamination) is
recorded once through the store's own record path (``record_run``), then its rows are copied
by direct inserts, each copy under another id, folder, model name (50 models) and finish time,
until the store holds N runs (PostgreSQL then ANALYZEd, as autovacuum would have
by the time a store holds that many). Each command is timed in this process (the CLI's start-up
aside), best of ``--repeats``; the viewer's pages through Starlette's TestClient (no socket),
with the bytes each sent. The last column is the growth ratio from the smallest size.

    python bench/store_size.py                      # SQLite and PostgreSQL, 100/1000/20000
    python bench/store_size.py --sizes 100 1000 --engines sqlite
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE.parent / "tests"))

FIXTURES = HERE.parent / "tests" / "fixtures" / "runs-a9a91f9"
KINDS = ("cmmlu-likelihood", "cmmlu-generation", "sea-safeguard", "sea-safeguard-aware",
         "safety-prompts", "llm-safety", "contamination")
MODELS = 50
CHANGED = ("model", "folder", "finished_at", "started_at")  # per copy, where a table has them


def build(store: str | Path, size: int) -> None:
    from localeval.store.database import opened
    from localeval.store.results_db import COLUMNS, SCHEMA, record_run
    from localeval.store.runs import load_run
    from localeval.views.registry import protocol_facts, view_for

    templates = []
    for kind in KINDS:
        record = load_run(FIXTURES / kind)
        templates.append(record_run(record, view_for(record.results).store_metrics(
            record.results), store, protocol_of=protocol_facts))
    with opened(store, SCHEMA, COLUMNS) as db:
        tables = [t for t in ("runs", "metrics", "run_summary") if _has_table(db, t)]
        names: dict[str, list[str]] = {}
        rows: dict[tuple[str, str], list[tuple]] = {}
        for table in tables:
            for template in templates:
                cursor = db.execute(f"SELECT * FROM {table} WHERE run_id = ?", (template,))
                names[table] = [d[0] for d in cursor.description]
                rows[table, template] = cursor.fetchall()
        with db.writing("bench"):
            for i in range(len(templates), size):
                template = templates[i % len(templates)]
                changed = {"run_id": f"{i:016x}", "model": f"org/model-{i % MODELS}",
                           "folder": f"/bench/runs/{i}",
                           "finished_at": f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T"
                                          f"{i % 24:02d}:00:{i % 60:02d}+00:00",
                           "started_at": "2026-01-01T00:00:00+00:00"}
                for table in tables:
                    batch = [tuple(changed[n] if n in changed and n in ("run_id", *CHANGED)
                                   else v for n, v in zip(names[table], row))
                             for row in rows[table, template]]
                    if batch:
                        db.executemany(f"INSERT INTO {table} ({', '.join(names[table])}) "
                                       f"VALUES ({', '.join('?' * len(names[table]))})", batch)
        if db.postgres:  # the planner's statistics, as autovacuum keeps them on a store in use
            db.execute("ANALYZE")


def _has_table(db, table: str) -> bool:
    if db.postgres:
        return bool(db.execute("SELECT 1 FROM information_schema.tables WHERE table_name = ?",
                               (table,)).fetchall())
    return bool(db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                           (table,)).fetchall())


def best(repeats: int, step) -> tuple[float, int]:
    times, size = [], 0
    for _ in range(repeats):
        start = time.perf_counter()
        size = step()
        times.append(time.perf_counter() - start)
    return min(times), size


def commands(store: str | Path) -> dict[str, object]:
    from starlette.testclient import TestClient

    from localeval.cli import main
    from localeval.web.app import make_app
    from localeval.web.catalog import Catalog

    client = TestClient(make_app(Catalog(store=store)), base_url="http://127.0.0.1")

    def cli(task: str):
        def step() -> int:
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                assert main(["leaderboard", "--task", task, "--json", "--store",
                             str(store)]) == 0
            return len(out.getvalue().encode())
        return step

    def page(path: str):
        def step() -> int:
            response = client.get(path)
            assert response.status_code == 200, (path, response.text[:300])
            return len(response.content)
        return step

    return {"leaderboard cmmlu (CLI)": cli("cmmlu"),
            "leaderboard sea-safeguard (CLI)": cli("sea-safeguard"),
            "view: runs page /": page("/"),
            "view: /leaderboard?task=cmmlu": page("/leaderboard?task=cmmlu"),
            "view: /leaderboard?task=sea-safeguard": page("/leaderboard?task=sea-safeguard"),
            "view: /compare (picker)": page("/compare")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 20000])
    parser.add_argument("--engines", nargs="+", default=["sqlite", "postgresql"],
                        choices=["sqlite", "postgresql"])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    for engine in args.engines:
        with tempfile.TemporaryDirectory() as tmp, _server(engine) as server:
            results: dict[str, list[tuple[float, int]]] = {}
            for size in args.sizes:
                store = _new_store(engine, server, Path(tmp), size)
                start = time.perf_counter()
                build(store, size)
                print(f"[{engine}] {size} runs built in {time.perf_counter() - start:.1f} s",
                      file=sys.stderr, flush=True)
                for name, step in commands(store).items():
                    results.setdefault(name, []).append(best(args.repeats, step))
            _table(engine, args.sizes, results)


def _table(engine: str, sizes: list[int], results: dict[str, list[tuple[float, int]]]) -> None:
    head = " | ".join(f"{s:>6} runs" for s in sizes)
    print(f"\n{engine}: seconds (bytes sent) per command, best of the repeats\n")
    print(f"| command | {head} | growth {sizes[0]}->{sizes[-1]} |")
    print("|---|" + "---|" * len(sizes) + "---|")
    for name, cells in results.items():
        shown = " | ".join(f"{t:.3f} s ({n / 1e3:,.0f} kB)" for t, n in cells)
        print(f"| {name} | {shown} | {cells[-1][0] / cells[0][0]:.1f}x |")
    sys.stdout.flush()


@contextlib.contextmanager
def _server(engine: str):
    if engine == "sqlite":
        yield None
        return
    from postgres_server import PostgresServer, _bin_dir

    bindir = _bin_dir()
    if bindir is None:
        raise SystemExit("PostgreSQL's initdb is not installed (Debian package postgresql)")
    server = PostgresServer(bindir)
    try:
        server.init()
        server.start()
        yield server
    finally:
        server.remove()


def _new_store(engine: str, server, tmp: Path, size: int) -> str | Path:
    if engine == "sqlite":
        return tmp / f"store-{size}.sqlite"
    import psycopg

    admin = server.url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE bench_{size}")
    return server.url.rsplit("/", 1)[0] + f"/bench_{size}"


if __name__ == "__main__":
    main()
