"""``--batch``: the run's requests to an OpenAI-compatible server as Batch API jobs, half the price
and far higher rate limits on api.openai.com (its guide "Batch API": upload a JSONL file to
``/v1/files`` with ``purpose=batch``, create ``/v1/batches`` with the endpoint and a 24 h window,
poll ``/v1/batches/{id}``, read ``output_file_id`` and ``error_file_id`` through
``/v1/files/{id}/content``, rows matched by ``custom_id``).

- One batch per endpoint (the API takes one per batch). A request's ``custom_id`` is a hash of
  its endpoint and body, and of its draw number for a sampled draw after the first (the draws of
  ``--repeats`` have the same body; the body is never changed: strict APIs refuse unknown
  fields, and a seed changes the sampling): the same request gets the same id in every run, so
  a rerun can match rows of a batch an earlier run submitted, one from before draws were
  numbered included.
- The batch id is written to the ledger (the run folder's ``batches.json``,
  :mod:`..store.batches`) as soon as the batch exists: a run killed while it is in flight
  re-attaches to it instead of submitting again. A batch leaves the ledger once its rows have
  been handed on (and so cached); a rerun then submits only the requests still missing.
- Each row goes through the same parse and checks as a direct reply (the call's ``parse``): a
  row in the error file, a non-200 row, an invalid body, and a request without a row (the batch
  expired, was cancelled, failed validation, or completed without it) fail alone, with the
  reason, and are never scored; those a rerun may fix are marked so (``permanent`` None). So
  does a request whose custom_id is in more than one row of the output and error files: which
  row is its answer cannot be told (the other rows are keyed by their own ids and still read).
- Polling backs off from 1 s to ``LOCALEVAL_BATCH_POLL_MAX_S`` (default 60 s).
"""

from __future__ import annotations

import hashlib
import json
import time
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ..errors import LocalevalError, env_number
from .async_http import (
    MALFORMED,
    Call,
    Invalid,
    Retry,
    backoff,
    join_url,
    load_json,
    malformed_why,
    public_url,
)
from .base import Failed
from .failures import BadReply, ErrorReply, HTTPStatus

T = TypeVar("T")

RUNNING = ("validating", "in_progress", "finalizing", "cancelling")
DONE = ("completed", "expired", "cancelled", "failed")
WINDOW = "24h"


class MemoryLedger:
    """The ledger of a run without a folder: a kill loses the batch id (nothing to re-attach)."""

    def __init__(self) -> None:
        self.batches: list[dict] = []

    def load(self) -> list[dict]:
        return list(self.batches)

    def save(self, batches: list[dict]) -> None:
        self.batches = list(batches)


class BatchError(LocalevalError):
    """The batch routes cannot be used (upload, create or poll failed after the retries)."""


def custom_id(endpoint: str, body: dict, draw: int | None = None) -> str:
    """The id of a batch line; draws 0 and None keep the id they had before draws were
    numbered, so a batch submitted then still re-attaches."""
    key: list = [endpoint, body, draw] if draw else [endpoint, body]
    payload = json.dumps(key, sort_keys=True, ensure_ascii=False)
    return "le-" + hashlib.sha256(payload.encode()).hexdigest()[:32]


class BatchPoster:
    def __init__(self, httpx, base_url: str, headers: dict, scrub: Callable[[str], str],
                 max_retries: int, timeout: float):
        self.httpx, self.base_url, self.headers, self.scrub = httpx, base_url, headers, scrub
        self.max_retries, self.timeout = max_retries, timeout
        self.ledger = MemoryLedger()
        self.poll_max = env_number("LOCALEVAL_BATCH_POLL_MAX_S", 60.0, low=0.01)
        self.stats = {"batches_submitted": 0, "batches_reattached": 0}

    # ---------------------------------------------------------------- the run's calls
    def post_all(self, calls: Sequence[Call[T]],
                 progress: Callable[[int, T | Failed], None] | None = None) -> list[T | Failed]:
        """Every call answered through batches; responses in the calls' order, ``progress(i,
        response)`` as each is read back."""
        wanted: dict[str, list[int]] = {}
        for k, call in enumerate(calls):
            wanted.setdefault(custom_id(self._endpoint(call), call.body, call.draw),
                              []).append(k)
        batches = self.ledger.load()
        attached = [b for b in batches if wanted.keys() & set(b["custom_ids"])]
        self.stats["batches_reattached"] += len(attached)
        covered = {i for b in attached for i in b["custom_ids"]}
        for endpoint, ids in self._by_endpoint(calls, wanted, covered).items():
            lines = [{"custom_id": i, "method": "POST", "url": endpoint,
                      "body": calls[wanted[i][0]].body} for i in ids]
            batch = {"id": self._submit(endpoint, lines), "endpoint": endpoint,
                     "custom_ids": ids}
            batches.append(batch)
            self.ledger.save(batches)  # before waiting: a killed run re-attaches
            attached.append(batch)
        out: list[T | Failed | None] = [None] * len(calls)
        for batch in attached:
            rows = self._rows(batch)
            for i in batch["custom_ids"]:
                for k in wanted.get(i, []):
                    answer = _answer(calls[k], rows.get(i), batch, self.scrub)
                    out[k] = answer
                    if progress:
                        progress(k, answer)
            batches = [b for b in self.ledger.load() if b["id"] != batch["id"]]
            self.ledger.save(batches)  # handed on (cached): never read again
        return out  # type: ignore[return-value]

    def _endpoint(self, call: Call[Any]) -> str:
        """The batch line's ``url``: the call's path under the base URL's, below ``/v1``."""
        base = urllib.parse.urlsplit(self.base_url).path.rstrip("/")
        return "/v1" + urllib.parse.urlsplit(call.url).path[len(base):]

    def _by_endpoint(self, calls, wanted, covered) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for i, ks in wanted.items():
            if i not in covered:
                out.setdefault(self._endpoint(calls[ks[0]]), []).append(i)
        return out

    # ---------------------------------------------------------------- the routes
    def _submit(self, endpoint: str, lines: list[dict]) -> str:
        data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()
        upload = self._http("POST", "/files", files={
            "file": ("localeval-batch.jsonl", data, "application/jsonl")},
            data={"purpose": "batch"})
        created = self._http("POST", "/batches", json={
            "input_file_id": _text_field(upload, "id", "the uploaded file"),
            "endpoint": endpoint, "completion_window": WINDOW})
        self.stats["batches_submitted"] += 1
        return _text_field(created, "id", "the created batch")

    def _rows(self, batch: dict) -> dict[str, dict | str]:
        """Each custom_id's row (the ``response``/``error`` of its line), from the output and
        error files of the batch once it is done; a str for the whole batch: why none came."""
        state = self._wait(batch["id"])
        rows: dict[str, dict | str] = {}
        twice = (f"this request's custom_id is in more than one row of batch {batch['id']}'s "
                 "output and error files (which is its answer cannot be told); a rerun "
                 "submits it again")
        for key in ("output_file_id", "error_file_id"):
            file_id = state.get(key)
            if isinstance(file_id, str) and file_id:
                for row in _lines(self._http("GET", f"/files/{file_id}/content", raw=True)):
                    rows[row["custom_id"]] = twice if row["custom_id"] in rows else row
        status = state["status"]
        if status != "completed":
            why = _errors(state) or ("a rerun submits it again" if status != "failed" else "")
            gone = f"batch {batch['id']} {status} before this request ran" + (
                f" ({self.scrub(why)})" if why else "")
            rows = {i: rows.get(i, gone) for i in batch["custom_ids"]}
        return rows

    def _wait(self, batch_id: str) -> dict:
        delay = min(1.0, self.poll_max)
        while True:
            state = self._http("GET", f"/batches/{batch_id}")
            status = state.get("status")
            if status in DONE:
                return state
            if status not in RUNNING:
                raise BatchError(f"batch {batch_id} at {public_url(self.base_url)} has status "
                                 f"{self.scrub(str(status))[:40]!r}, not one of the Batch API's")
            time.sleep(delay)
            delay = min(delay * 2, self.poll_max)

    def _http(self, method: str, path: str, raw: bool = False, **kwargs):
        """One call to a batch route, retried with backoff on 408/429/5xx and dropped
        connections; its JSON (``raw``: its text), or BatchError naming the route."""
        url, last = join_url(self.base_url, path), ""
        headers = {k: v for k, v in self.headers.items() if k != "Content-Type"}
        for attempt in range(self.max_retries + 1):
            try:
                resp = self.httpx.request(method, url, headers=headers, timeout=self.timeout,
                                          **kwargs)
                if resp.status_code == 200:
                    return resp.text if raw else _object(resp.json(), path)
                last = f"HTTP {resp.status_code}: {self.scrub(resp.text)}"
                if resp.status_code not in (408, 429) and resp.status_code < 500:
                    break
            except (self.httpx.HTTPError, ValueError) as e:
                last = self.scrub(f"{type(e).__name__}: {e}")
            if attempt < self.max_retries:
                time.sleep(backoff(attempt))
        raise BatchError(f"{method} {public_url(url)} failed ({last}); the batch ids are kept "
                         "in the run folder's batches.json: rerun to re-attach")


def _object(value, path: str) -> dict:
    if not isinstance(value, dict):
        raise ValueError(f"{path} replied a JSON {type(value).__name__}, not an object")
    return value


def _text_field(reply: dict, key: str, what: str) -> str:
    value = reply.get(key)
    if not isinstance(value, str) or not value:
        raise BatchError(f"the server's reply for {what} has no {key!r}: {str(reply)[:80]!r}")
    return value


def _errors(state: dict) -> str:
    data = (state.get("errors") or {}).get("data") if isinstance(state.get("errors"), dict) \
        else None
    if isinstance(data, list) and data and isinstance(data[0], dict):
        return str(data[0].get("message", ""))[:200]
    return ""


def _lines(text: str) -> list[dict]:
    """A batch file's rows; a line that is not a row with a custom_id is left out (its
    request then has no row, and fails with that reason)."""
    rows = []
    for line in text.splitlines():
        try:
            row = load_json(line)  # a row that repeats a name is left out too, never read
        except ValueError:
            continue
        if isinstance(row, dict) and isinstance(row.get("custom_id"), str):
            rows.append(row)
    return rows


def _answer(call: Call[T], row: dict[str, Any] | str | None, batch: dict[str, Any],
            scrub: Callable[[str], str]) -> T | Failed:
    """One request's response from its row, checked as a direct reply is."""
    where = f"batch {batch['id']}"
    if row is None:
        return Failed(ErrorReply(f"no row for this request in {where}'s output or error file; "
                                 "a rerun submits it again"))
    if isinstance(row, str):
        return Failed(ErrorReply(row))
    if row.get("error"):
        error = row["error"]
        text = error.get("message", error) if isinstance(error, dict) else error
        return Failed(ErrorReply(f"{where}: {scrub(str(text))}"))
    response = row["response"] if isinstance(row.get("response"), dict) else {}
    status, body = response.get("status_code"), response.get("body")
    if status != 200:
        message = f"HTTP {status} in {where}: {scrub(json.dumps(body))}"
        if isinstance(status, int) and not isinstance(status, bool):
            return Failed(HTTPStatus(message, status=status))
        return Failed(ErrorReply(message))
    try:
        return call.parse(body)
    except Retry as e:
        return Failed(ErrorReply(f"{where}: {scrub(str(e))}"))
    except Invalid as e:
        return Failed(BadReply(f"invalid reply in {where}: {scrub(str(e))}"))
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as e:
        return Failed(BadReply(f"{MALFORMED} in {where} ({malformed_why(e, scrub)})"))
