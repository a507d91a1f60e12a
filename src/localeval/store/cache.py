"""A SQLite cache of finished requests, keyed by backend identity + request.

A killed run loses nothing it finished: each response is stored as soon as its request
finishes (committed in small batches, so a kill loses at most the requests in flight and the
last fraction of a second), and rerunning the same command reads those answers back and
computes only the rest. Failed requests are never stored, so a rerun retries them; nor is a
response that is not a valid answer (:mod:`..backends.reply_checks`), and a stored one that no
longer reads as one (stored before the check, or damaged) is treated as missing: recomputed.

SQLite does the hard parts: every commit is atomic (a kill mid-write leaves the previous
state), WAL mode lets two runs share one cache file, and a busy timeout makes a writer wait for
the other instead of failing. Responses arrive from backend worker threads, so the connection
is shared across threads behind a lock.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..backends.base import (
    Failed,
    Request,
    Response,
    request_key,
    response_from_json,
    response_json,
)
from ..backends.reply_checks import response_problem
from ..errors import LocalevalError
from .files import check_own

BUSY_TIMEOUT_S = 60.0
SQLITE_HEADER = b"SQLite format 3\x00"


class CacheError(LocalevalError):
    """The request cache cannot be used (not SQLite, damaged, a folder) or written (a full
    disk)."""


def check_cache_file(path: str | Path) -> None:
    """One line if ``path`` cannot be a cache: a folder, a special file, a file that is not
    SQLite (SQLite would take it for a new database, or fail with a traceback). Read, not
    stat'ed: /proc files say size 0 and still hold text."""
    path = Path(path)
    if path.is_dir():
        raise CacheError(f"cache {path} is a folder, not a file; give --cache a file path")
    if not path.exists():
        return
    if not path.is_file():
        raise CacheError(f"cache {path} is not a regular file; give another --cache")
    try:
        with path.open("rb") as f:
            head = f.read(len(SQLITE_HEADER))
    except OSError as e:
        raise CacheError(f"cache {path} cannot be read ({e.strerror or e}); give another "
                         "--cache") from None
    if head and head != SQLITE_HEADER:
        raise CacheError(f"cache {path} is not a SQLite database; give another --cache, or "
                         "delete it to start an empty cache")


def _damaged(path: Path, error: sqlite3.Error) -> CacheError:
    return CacheError(f"cache {path} is damaged or unusable ({' '.join(str(error).split())}); "
                      "delete it (its requests are run again) or give another --cache")


class RequestCache:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        check_cache_file(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for part in ("", "-wal", "-shm"):  # SQLite would write through a link to any file
            check_own(self.path.with_name(self.path.name + part))
        self.lock = threading.Lock()
        try:
            self.db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S,
                                      check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, "
                            "body TEXT)")
            self.db.commit()
            # a truncated or overwritten file can pass the header and the schema: read every
            # page once (a linear pass, well under a second for 100k responses)
            (verdict,) = self.db.execute("PRAGMA quick_check(1)").fetchone()
        except sqlite3.DatabaseError as e:
            raise _damaged(self.path, e) from None
        if verdict != "ok":
            self.db.close()
            raise _damaged(self.path, sqlite3.DatabaseError(verdict))

    @contextmanager
    def _failing(self, doing: str) -> Iterator[None]:
        """A SQLite error (a full disk: "database or disk is full") as one line naming the
        cache; what was committed before stays in it."""
        try:
            yield
        except sqlite3.Error as e:
            raise CacheError(f"cannot {doing} the request cache {self.path}: {e}; what "
                             "finished before is kept in it, rerun the command once this is "
                             "fixed") from None

    def get_many(self, identity: dict[str, Any],
                 requests: list[Request]) -> list[Response | None]:
        out: list[Response | None] = []
        with self.lock:
            try:
                for r in requests:
                    row = self.db.execute("SELECT body FROM responses WHERE key = ?",
                                          (request_key(identity, r),)).fetchone()
                    out.append(_stored(r, row[0]) if row else None)
            except sqlite3.DatabaseError as e:
                raise _damaged(self.path, e) from None
        return out

    def put_many(self, identity: dict[str, Any],
                 pairs: list[tuple[Request, Response]]) -> None:
        rows = [(request_key(identity, r), json.dumps(response_json(resp), ensure_ascii=False))
                for r, resp in pairs
                if not isinstance(resp, Failed) and response_problem(r, resp) is None]
        if not rows:
            return
        with self.lock, self._failing("write"), self.db:
            self.db.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?)", rows)

    def add_from(self, other: Path) -> int:
        """Every answer of the cache file ``other`` that this one lacks (``localeval merge``:
        the shards' caches into the merged run's); how many were added."""
        check_cache_file(other)
        with self.lock, self._failing("write"):
            before = self.db.total_changes
            self.db.execute("ATTACH DATABASE ? AS other", (str(other),))
            try:
                with self.db:
                    self.db.execute("INSERT OR IGNORE INTO responses "
                                    "SELECT key, body FROM other.responses")
            finally:
                self.db.execute("DETACH DATABASE other")
            return int(self.db.total_changes - before)

    def close(self) -> None:
        with self.lock:
            self.db.close()

    def __enter__(self) -> RequestCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _stored(request: Request, body: str) -> Response | None:
    """The stored response, or None (recompute it) if it is not a valid answer to ``request``."""
    try:
        data = json.loads(body)
        response = response_from_json(request, data) if isinstance(data, dict) else None
    except (ValueError, TypeError):  # not JSON, or fields its answer type does not have
        return None
    if response is None or isinstance(response, Failed) or response_problem(request, response):
        return None
    return response
