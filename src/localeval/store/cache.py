"""A SQLite cache of finished requests, keyed by backend identity + request.

A killed run loses nothing it finished: rerunning the same command reads those answers back and
computes only the rest. Failed requests are not cached, so a rerun retries them.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from ..backends.base import Request, Response, request_key


class RequestCache:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path)
        self.db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, body TEXT)")

    def get_many(self, identity: dict, requests: list[Request]) -> list[Response | None]:
        out: list[Response | None] = []
        for r in requests:
            row = self.db.execute("SELECT body FROM responses WHERE key = ?",
                                  (request_key(identity, r),)).fetchone()
            out.append(Response.from_json(json.loads(row[0])) if row else None)
        return out

    def put_many(self, identity: dict, pairs: list[tuple[Request, Response]]) -> None:
        rows = [(request_key(identity, r), json.dumps(resp.to_json(), ensure_ascii=False))
                for r, resp in pairs if resp.error is None]
        with self.db:
            self.db.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?)", rows)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> RequestCache:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
