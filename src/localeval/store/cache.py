"""A SQLite cache of finished requests, keyed by backend identity + request.

A killed run loses nothing it finished: each response is stored as soon as its request
finishes (committed in small batches, so a kill loses at most the requests in flight and the
last fraction of a second), and rerunning the same command reads those answers back and
computes only the rest. Failed requests are never stored, so a rerun retries them.

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

from ..backends.base import Request, Response, request_key
from ..errors import LocalevalError
from .files import check_own

BUSY_TIMEOUT_S = 60.0


class CacheError(LocalevalError):
    """The request cache cannot be opened, read or written (a full disk, a damaged file)."""


class RequestCache:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for part in ("", "-wal", "-shm"):  # SQLite would write through a link to any file
            check_own(self.path.with_name(self.path.name + part))
        self.lock = threading.Lock()
        with self._failing("open"):
            self.db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S,
                                      check_same_thread=False)
            with self.lock:
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, "
                                "body TEXT)")
                self.db.commit()

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

    def get_many(self, identity: dict, requests: list[Request]) -> list[Response | None]:
        out: list[Response | None] = []
        with self.lock, self._failing("read"):
            for r in requests:
                row = self.db.execute("SELECT body FROM responses WHERE key = ?",
                                      (request_key(identity, r),)).fetchone()
                out.append(Response.from_json(json.loads(row[0])) if row else None)
        return out

    def put_many(self, identity: dict, pairs: list[tuple[Request, Response]]) -> None:
        rows = [(request_key(identity, r), json.dumps(resp.to_json(), ensure_ascii=False))
                for r, resp in pairs if resp.error is None]
        if not rows:
            return
        with self.lock, self._failing("write"), self.db:
            self.db.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?)", rows)

    def close(self) -> None:
        with self.lock:
            self.db.close()

    def __enter__(self) -> RequestCache:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
