"""One connection type for the results store, whether it is a SQLite file or a PostgreSQL
server, so that :mod:`localeval.store.results_db` has one code path for both.

A target is a path (SQLite) or a ``postgresql://`` / ``postgres://`` URL (psycopg 3, the
``postgresql`` extra). What differs between the two lives here and nowhere else:

* the parameter marker (SQLite ``?``, psycopg ``%s``): statements are written with ``?``;
* how a write transaction starts: SQLite takes its write lock first (``BEGIN IMMEDIATE``, so two
  writers never deadlock on a lock upgrade); PostgreSQL takes a transaction-scoped advisory lock
  on the run's id, so two processes replacing the same run wait for each other instead of
  failing on the primary key;
* creating the schema: PostgreSQL's ``CREATE TABLE IF NOT EXISTS`` is not safe against a second
  process doing the same at the same moment, so it runs under an advisory lock.

Every driver error becomes one :class:`StoreError` line, and a URL's password never appears in
it: messages show the URL with the password (and secret query values) replaced by ``***``.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from ..backends.secrets import redact_url, url_secrets
from ..errors import LocalevalError

URL_SCHEMES = ("postgresql://", "postgres://")
BUSY_TIMEOUT_S = 60.0
CONNECT_TIMEOUT_S = 10
SCHEMA_LOCK = 7_201_925  # any fixed number: the advisory lock held while creating the schema


class StoreError(LocalevalError):
    """The results store could not be opened, read or written."""


def is_url(target: str | Path) -> bool:
    return str(target).startswith(URL_SCHEMES)


def shown(target: str | Path) -> str:
    """The target as it may be printed: a URL's password replaced by ``***``, and the values
    of secret query parameters (``?password=``) too (:func:`~localeval.backends.secrets.
    redact_url`)."""
    return redact_url(str(target), keep_user=True) if is_url(target) else str(target)


@dataclass
class Database:
    """An open store: ``execute`` statements written with ``?`` markers on either engine."""

    conn: Any
    postgres: bool
    target: str | Path

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        return self.conn.execute(self._sql(sql), params)

    def executemany(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        if self.postgres:
            with self.conn.cursor() as cursor:
                cursor.executemany(self._sql(sql), rows)
        else:
            self.conn.executemany(sql, rows)

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.postgres else sql

    @contextmanager
    def writing(self, key: str) -> Iterator[None]:
        """One transaction: all of it is written, or none of it."""
        if self.postgres:
            with self.conn.transaction():
                self.execute("SELECT pg_advisory_xact_lock(hashtext(?))", (key,))
                yield
            return
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    def create(self, schema: tuple[str, ...]) -> None:
        if not self.postgres:
            for statement in schema:
                self.conn.execute(statement)
            return
        # Only what is missing, checked before any lock: CREATE INDEX IF NOT EXISTS takes a
        # ShareLock on its table even when the index exists, so a second writer re-running the
        # schema while the first records a run (RowExclusive on runs, metrics, run_summary in
        # turn) deadlocks with it.
        if not self._missing(schema):
            return
        with self.conn.transaction():
            self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            for statement in self._missing(schema):
                self.conn.execute(statement)

    def _missing(self, schema: tuple[str, ...]) -> list[str]:
        """The statements of ``schema`` whose table or index the PostgreSQL store lacks (each
        ``CREATE … IF NOT EXISTS name``; a statement naming none is always run)."""
        out = []
        for statement in schema:
            named = re.search(r"IF NOT EXISTS (\w+)", statement)
            if named is None or self.conn.execute(
                    "SELECT to_regclass(%s)", (named.group(1),)).fetchone()[0] is None:
                out.append(statement)
        return out

    def add_columns(self, columns: tuple[tuple[str, str, str], ...]) -> None:
        """Migration: each (table, column, SQL type) a store made before the column existed
        lacks is added. A column there already is looked up, never altered: ALTER TABLE
        waits for every transaction on the table, so a store in use (a teammate's run being
        written) would hold up every reader. PostgreSQL adds a missing one with ``ADD COLUMN
        IF NOT EXISTS`` under the schema lock; on SQLite a second process adding it at the
        same moment is no error. Rows are written by column name (their order may differ)."""
        for table, column, kind in columns:
            if column in self._columns(table):
                continue
            if self.postgres:
                with self.conn.transaction():
                    self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
                    self.conn.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS "
                                      f"{column} {kind}")
                continue
            try:
                self.conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
            except sqlite3.OperationalError as e:
                if "duplicate column" not in str(e):
                    raise

    def _columns(self, table: str) -> set[str]:
        if self.postgres:
            return {row[0] for row in self.conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = %s",
                (table,))}
        return {row[1] for row in self.conn.execute(f"PRAGMA table_info({table})")}

    def close(self) -> None:
        self.conn.close()


def _connect_sqlite(path: Path, read_only: bool = False) -> Database:
    if read_only:  # never created, migrated nor written: SQLite refuses every write itself
        if not path.is_file():
            raise StoreError(f"{path}: no such results store")
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True,
                               timeout=BUSY_TIMEOUT_S, isolation_level=None)
        return Database(conn, postgres=False, target=path)
    if path.is_file() and path.stat().st_size:
        with path.open("rb") as f:
            if f.read(16) != b"SQLite format 3\x00":
                # SQLite would take a stray file for a new database and write over it
                raise StoreError(f"results store {path} is not a SQLite database; give "
                                 "another --store")
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
    until_unlocked(lambda: _switch_to_wal(conn))
    return Database(conn, postgres=False, target=path)


def _switch_to_wal(conn: sqlite3.Connection) -> None:
    """WAL mode, or "database is locked" to try again: a switch that another process's lock
    prevented leaves the file in rollback mode, where SQLite answers some lock contention at
    once instead of waiting (its busy handler is not called where waiting could deadlock)."""
    (mode,) = conn.execute("PRAGMA journal_mode=WAL").fetchone()
    if str(mode).lower() != "wal":
        raise sqlite3.OperationalError("database is locked (still in rollback mode)")


def until_unlocked(step: Callable[[], None], seconds: float = BUSY_TIMEOUT_S) -> None:
    """``step()`` again until no "database is locked" stops it, for at most ``seconds``. For
    the idempotent set-up of a SQLite store (WAL mode, the schema, its columns), where two
    processes opening a new store at the same moment meet the cases SQLite does not wait out
    itself: a statement that read the schema before the other process wrote it cannot upgrade
    to a write (SQLITE_BUSY_SNAPSHOT), and rollback mode's deadlock guard."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            step()
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
        time.sleep(0.02)


def _connect_postgres(url: str, read_only: bool = False) -> Database:
    try:
        import psycopg
    except ImportError:
        raise StoreError(f"the results store {shown(url)} is PostgreSQL, which needs psycopg 3: "
                         "pip install 'localeval[postgresql]'") from None
    # read-only: the server refuses every write of the session, autocommit statements too
    extra: dict[str, Any] = {"options": "-c default_transaction_read_only=on"} if read_only \
        else {}
    conn = psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S,
                           application_name="localeval", **extra)
    return Database(conn, postgres=True, target=url)


def driver_errors() -> tuple[type[BaseException], ...]:
    """The exceptions a store operation may raise that mean "the store failed"."""
    errors: tuple[type[BaseException], ...] = (OSError, sqlite3.Error)
    try:
        import psycopg
    except ImportError:
        return errors
    return (*errors, psycopg.Error)


def one_line(error: BaseException, target: str | Path) -> str:
    """The driver's message on one line, without the URL's password."""
    text = re.sub(r"\s+", " ", str(error)).strip() or type(error).__name__
    for secret in url_secrets(str(target)) if is_url(target) else ():
        text = text.replace(secret, "***")
    return text


@contextmanager
def opened(target: str | Path, schema: tuple[str, ...],
           columns: tuple[tuple[str, str, str], ...] = (),
           read_only: bool = False) -> Iterator[Database]:
    """The store at ``target`` with its schema created and ``columns`` added where missing
    (:meth:`Database.add_columns`), closed after; a driver error is one :class:`StoreError`
    line naming the store. ``read_only`` (``localeval view``): the store as it is, neither
    created nor migrated, on a connection that cannot write."""
    db = None
    try:
        db = _connect_postgres(str(target), read_only) if is_url(target) else \
            _connect_sqlite(Path(target), read_only)
        if not read_only:
            until_unlocked(partial(db.create, schema))
            until_unlocked(partial(db.add_columns, columns))
        yield db
    except driver_errors() as e:
        raise StoreError(f"results store {shown(target)}: {one_line(e, target)}") from None
    finally:
        if db is not None:
            try:
                db.close()
            except driver_errors():
                pass  # the server went away: there is nothing left to close
