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
- The output and error files are streamed a line at a time, each row at most ``max_reply_mb``
  (``--max-reply-mb``), never the whole file: a longer row fails its request alone with that
  reason, and each row is turned into its request's response as it is read (issue 47 item 10).
- Polling backs off from 1 s to ``LOCALEVAL_BATCH_POLL_MAX_S`` (default 60 s), with one line on
  stderr each time (terminal or not). A batch still running after ``deadline_h`` hours
  (``--batch-deadline``, by default 25 h: the provider's 24 h window and a margin) stops the
  run with :class:`BatchPending`, one line naming the batch; it stays in the ledger, so the same
  command re-attaches to it later.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import sys
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypedDict, TypeVar

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
from .config import DEFAULT_BATCH_DEADLINE_H
from .failures import BadReply, ErrorReply, HTTPStatus, OverLimit

if TYPE_CHECKING:  # the module is handed in by the backend, which imports it (slow) at start
    import httpx

T = TypeVar("T")
# a JSON object the server replied (a batch's state, a row of its files): read field by field,
# each checked where it is used
Json = dict[str, Any]

RUNNING = ("validating", "in_progress", "finalizing", "cancelling")
DONE = ("completed", "expired", "cancelled", "failed")
WINDOW = "24h"
ROW_ID = re.compile(rb'"custom_id"\s*:\s*"([^"\\]{1,200})"')  # an over-long row's, at its head


class Submitted(TypedDict):
    """A batch in the ledger: its id, the endpoint its lines go to, and their custom_ids (the
    shape :mod:`..store.batches` checks where it reads ``batches.json``)."""

    id: str
    endpoint: str
    custom_ids: list[str]


class Line(TypedDict):
    """One line of a batch's input file (the Batch API's request input object)."""

    custom_id: str
    method: Literal["POST"]
    url: str
    body: dict[str, Any]


class Ledger(Protocol):
    """Where the batches in flight are kept: :class:`MemoryLedger`, or the run folder's
    (:class:`..store.batches.BatchLedger`)."""

    def load(self) -> list[Submitted]: ...

    def save(self, batches: list[Submitted]) -> None: ...


class MemoryLedger:
    """The ledger of a run without a folder: a kill loses the batch id (nothing to re-attach)."""

    def __init__(self) -> None:
        self.batches: list[Submitted] = []

    def load(self) -> list[Submitted]:
        return list(self.batches)

    def save(self, batches: list[Submitted]) -> None:
        self.batches = list(batches)


class BatchError(LocalevalError):
    """The batch routes cannot be used (upload, create or poll failed after the retries)."""


class BatchPending(LocalevalError):
    """A batch still running at ``--batch-deadline``: kept in the ledger, a rerun re-attaches."""

    exit_code = 5


def custom_id(endpoint: str, body: dict[str, Any], draw: int | None = None) -> str:
    """The id of a batch line; draws 0 and None keep the id they had before draws were
    numbered, so a batch submitted then still re-attaches."""
    key: list[object] = [endpoint, body, draw] if draw else [endpoint, body]
    payload = json.dumps(key, sort_keys=True, ensure_ascii=False)
    return "le-" + hashlib.sha256(payload.encode()).hexdigest()[:32]


class BatchPoster:
    def __init__(self, httpx: ModuleType, base_url: str, headers: dict[str, str],
                 scrub: Callable[[str], str], max_retries: int, timeout: float,
                 max_reply_bytes: int = 64 * 2**20, deadline_h: float = DEFAULT_BATCH_DEADLINE_H):
        self.httpx, self.base_url, self.headers, self.scrub = httpx, base_url, headers, scrub
        self.max_retries, self.timeout = max_retries, timeout
        self.max_reply_bytes, self.deadline_h = max_reply_bytes, deadline_h
        self.ledger: Ledger = MemoryLedger()
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
            lines = [Line(custom_id=i, method="POST", url=endpoint,
                          body=calls[wanted[i][0]].body) for i in ids]
            batch = Submitted(id=self._submit(endpoint, lines), endpoint=endpoint,
                              custom_ids=ids)
            batches.append(batch)
            self.ledger.save(batches)  # before waiting: a killed run re-attaches
            attached.append(batch)
        out: list[T | Failed | None] = [None] * len(calls)
        for batch in attached:
            answers = self._answers(batch, calls, wanted)
            for i in batch["custom_ids"]:
                for k, answer in zip(wanted.get(i, []), answers[i], strict=True):
                    out[k] = answer
                    if progress:
                        progress(k, answer)
            batches = [b for b in self.ledger.load() if b["id"] != batch["id"]]
            self.ledger.save(batches)  # handed on (cached): never read again
        # every call has its answer: each custom_id wanted is in a batch attached above
        return out  # type: ignore[return-value]

    def _endpoint(self, call: Call[Any]) -> str:
        """The batch line's ``url``: the call's path under the base URL's, below ``/v1``."""
        base = urllib.parse.urlsplit(self.base_url).path.rstrip("/")
        return "/v1" + urllib.parse.urlsplit(call.url).path[len(base):]

    def _by_endpoint(self, calls: Sequence[Call[T]], wanted: dict[str, list[int]],
                     covered: set[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for i, ks in wanted.items():
            if i not in covered:
                out.setdefault(self._endpoint(calls[ks[0]]), []).append(i)
        return out

    # ---------------------------------------------------------------- the routes
    def _submit(self, endpoint: str, lines: list[Line]) -> str:
        data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()
        upload = self._http("POST", "/files", files={
            "file": ("localeval-batch.jsonl", data, "application/jsonl")},
            data={"purpose": "batch"})
        created = self._http("POST", "/batches", json={
            "input_file_id": _text_field(upload, "id", "the uploaded file"),
            "endpoint": endpoint, "completion_window": WINDOW})
        self.stats["batches_submitted"] += 1
        return _text_field(created, "id", "the created batch")

    def _answers(self, batch: Submitted, calls: Sequence[Call[T]],
                 wanted: dict[str, list[int]]) -> dict[str, list[T | Failed]]:
        """The responses of each of the batch's custom_ids (one per call that has it), read
        from its output and error files, a row at a time, once the batch is done."""
        state = self._wait(batch["id"])

        def answered(i: str, row: Json | str | Failed | None) -> list[T | Failed]:
            out: list[T | Failed] = []
            for k in wanted.get(i, []):
                answer = _answer(calls[k], row, batch, self.scrub)
                out.append(answer)
            return out

        got: dict[str, list[T | Failed]] = {}
        seen: set[str] = set()
        over = 0  # rows past the limit whose custom_id could not be read
        twice = (f"this request's custom_id is in more than one row of batch {batch['id']}'s "
                 "output and error files (which is its answer cannot be told); a rerun "
                 "submits it again")
        for i, read in self._rows(batch, state):
            if i is None:
                over += 1
                continue
            row: Json | str | Failed = twice if i in seen else read
            seen.add(i)
            if i in wanted:
                got[i] = answered(i, row)  # the row itself is let go here
        gone = self._gone(batch, state)
        for i in batch["custom_ids"] if gone else ():
            if i not in seen:
                got[i] = answered(i, gone)
        missing = None if not over else (
            f"no row for this request could be read in batch {batch['id']}'s files: {over} "
            f"row(s) were over the limit of {self.max_reply_bytes / 2**20:g} MB and left "
            "unread; raise --max-reply-mb if they are meant to be, and rerun")
        return {i: got[i] if i in got else answered(i, missing) for i in batch["custom_ids"]}

    def _rows(self, batch: Submitted, state: Json) -> Iterator[tuple[str | None, Json | Failed]]:
        """Each row of the batch's output and error files with its custom_id: a row over the
        limit as a failure (its id read from its head; None where that cannot be read)."""
        for key in ("output_file_id", "error_file_id"):
            file_id = state.get(key)
            if not isinstance(file_id, str) or not file_id:
                continue
            for line in self._file_rows(f"/files/{file_id}/content"):
                if isinstance(line, dict):
                    yield line["custom_id"], line
                elif found := ROW_ID.search(line):  # the head of a row over the limit
                    yield found.group(1).decode(errors="replace"), self._too_long(batch)
                else:
                    yield None, self._too_long(batch)

    def _gone(self, batch: Submitted, state: Json) -> str | None:
        """Why a request of a batch that did not complete has no row, or None (completed)."""
        status = state["status"]
        if status == "completed":
            return None
        why = _errors(state) or ("a rerun submits it again" if status != "failed" else "")
        return f"batch {batch['id']} {status} before this request ran" + (
            f" ({self.scrub(why)})" if why else "")

    def _too_long(self, batch: Submitted) -> Failed:
        """A row over the limit: the same reply on a rerun, so never asked again."""
        return Failed(OverLimit(
            f"this request's row in batch {batch['id']}'s file is over the limit of "
            f"{self.max_reply_bytes / 2**20:g} MB; raise --max-reply-mb if it is meant to be"))

    def _file_rows(self, path: str) -> Iterator[Json | bytes]:
        """A batch file's rows, streamed: a line at a time, at most ``max_reply_bytes`` of it
        held (a longer one yields its first bytes, the rest is skipped unread); a line that is
        not a row with a custom_id is left out (its request then has no row, and fails with
        that reason)."""
        line, skipping = bytearray(), False
        with self._opened(path) as resp:
            try:
                for chunk in resp.iter_bytes():  # decoded: a gzip bomb is bounded too
                    while chunk:
                        head, newline, chunk = chunk.partition(b"\n")
                        if not skipping:
                            line += head[:self.max_reply_bytes + 1 - len(line)]
                            if len(line) > self.max_reply_bytes:
                                yield bytes(line[:1000])
                                line, skipping = bytearray(), True
                        if newline:
                            if not skipping and (row := _row(line)) is not None:
                                yield row
                            line, skipping = bytearray(), False
            except self.httpx.HTTPError as e:
                raise BatchError(f"reading {public_url(join_url(self.base_url, path))} "
                                 f"failed partway ({self.scrub(f'{type(e).__name__}: {e}')}); "
                                 "the batch is kept in the run folder's batches.json: rerun "
                                 "to re-attach") from None
        if not skipping and (row := _row(line)) is not None:
            yield row

    def _wait(self, batch_id: str) -> Json:
        """The batch's state once it is done, polled with a line on stderr each time; past the
        deadline, :class:`BatchPending` (the batch stays in the ledger)."""
        delay, start = min(1.0, self.poll_max), time.monotonic()
        deadline = self.deadline_h * 3600
        while True:
            state = self._http("GET", f"/batches/{batch_id}")
            status = state.get("status")
            if status in DONE:
                return state
            if status not in RUNNING:
                raise BatchError(f"batch {batch_id} at {public_url(self.base_url)} has status "
                                 f"{self.scrub(str(status))[:40]!r}, not one of the Batch API's")
            waited = time.monotonic() - start
            print(f"batch {batch_id}: {status}{_counts(state)}, waited {_hms(waited)} of the "
                  f"--batch-deadline {self.deadline_h:g} h", file=sys.stderr, flush=True)
            if waited >= deadline:
                raise BatchPending(
                    f"batch {batch_id} is still {status} after {_hms(waited)} (--batch-deadline "
                    f"{self.deadline_h:g} h); it is kept in the run folder's batches.json: rerun "
                    "the same command later to re-attach to it (it is not submitted again)")
            time.sleep(max(0.0, min(delay, deadline - waited)))
            delay = min(delay * 2, self.poll_max)

    @contextlib.contextmanager
    def _opened(self, path: str) -> Iterator[httpx.Response]:
        """A GET of a batch file, its status 200 (retried as :meth:`_http`), body unread."""
        url, last = join_url(self.base_url, path), ""
        headers = {k: v for k, v in self.headers.items() if k != "Content-Type"}
        resp: httpx.Response
        for attempt in range(self.max_retries + 1):
            try:
                with self.httpx.stream("GET", url, headers=headers,
                                       timeout=self.timeout) as resp:
                    if resp.status_code == 200:
                        yield resp
                        return
                    last = f"HTTP {resp.status_code}: {self.scrub(_head(resp))}"
                if resp.status_code not in (408, 429) and resp.status_code < 500:
                    break
            except self.httpx.HTTPError as e:
                last = self.scrub(f"{type(e).__name__}: {e}")
            if attempt < self.max_retries:
                time.sleep(backoff(attempt))
        raise BatchError(f"GET {public_url(url)} failed ({last}); the batch ids are kept "
                         "in the run folder's batches.json: rerun to re-attach")

    def _http(self, method: str, path: str, **kwargs: Any) -> Json:
        """One call to a batch route, retried with backoff on 408/429/5xx and dropped
        connections; its JSON, or BatchError naming the route."""
        url, last = join_url(self.base_url, path), ""
        headers = {k: v for k, v in self.headers.items() if k != "Content-Type"}
        for attempt in range(self.max_retries + 1):
            try:
                resp: httpx.Response = self.httpx.request(method, url, headers=headers,
                                                          timeout=self.timeout, **kwargs)
                if resp.status_code == 200:
                    return _object(resp.json(), path)
                last = f"HTTP {resp.status_code}: {self.scrub(resp.text)}"
                if resp.status_code not in (408, 429) and resp.status_code < 500:
                    break
            except (self.httpx.HTTPError, ValueError) as e:
                last = self.scrub(f"{type(e).__name__}: {e}")
            if attempt < self.max_retries:
                time.sleep(backoff(attempt))
        raise BatchError(f"{method} {public_url(url)} failed ({last}); the batch ids are kept "
                         "in the run folder's batches.json: rerun to re-attach")


def _object(value: object, path: str) -> Json:
    if not isinstance(value, dict):
        raise ValueError(f"{path} replied a JSON {type(value).__name__}, not an object")
    return value


def _text_field(reply: Json, key: str, what: str) -> str:
    value = reply.get(key)
    if not isinstance(value, str) or not value:
        raise BatchError(f"the server's reply for {what} has no {key!r}: {str(reply)[:80]!r}")
    return value


def _errors(state: Json) -> str:
    data = (state.get("errors") or {}).get("data") if isinstance(state.get("errors"), dict) \
        else None
    if isinstance(data, list) and data and isinstance(data[0], dict):
        return str(data[0].get("message", ""))[:200]
    return ""


def _row(line: bytes | bytearray) -> Json | None:
    """One line of a batch file as a row with a custom_id, else None."""
    try:
        row = load_json(bytes(line))  # a row that repeats a name is left out too, never read
    except ValueError:
        return None
    return row if isinstance(row, dict) and isinstance(row.get("custom_id"), str) else None


def _head(resp: httpx.Response) -> str:
    """The first few kB of an error reply's body, never all of it."""
    head = b""
    for chunk in resp.iter_bytes():
        head += chunk
        if len(head) > 4096:
            break
    return head[:4096].decode("utf-8", errors="replace")


def _counts(state: Json) -> str:
    counts = state.get("request_counts")
    if not isinstance(counts, dict) or not all(
            isinstance(counts.get(k), int) for k in ("total", "completed", "failed")):
        return ""
    return (f", {counts['completed']}/{counts['total']} requests done"
            + (f" ({counts['failed']} failed)" if counts["failed"] else ""))


def _hms(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}h{s % 3600 // 60:02d}m{s % 60:02d}s" if s >= 3600 else \
        f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{seconds:.1f}s"


def _answer(call: Call[T], row: Json | str | Failed | None, batch: Submitted,
            scrub: Callable[[str], str]) -> T | Failed:
    """One request's response from its row, checked as a direct reply is."""
    where = f"batch {batch['id']}"
    if row is None:
        return Failed(ErrorReply(f"no row for this request in {where}'s output or error file; "
                                 "a rerun submits it again"))
    if isinstance(row, Failed):
        return row
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
