"""What every HTTP backend needs around its requests: :class:`JsonClient` posts JSON bodies,
``concurrency`` at a time over async httpx clients (pools of ``SHARD_CONNECTIONS``), retrying what can succeed on a
second try (408, 429, 5xx, timeouts, connection errors, truncated or non-JSON bodies, and what a
backend's parser marks with :class:`Retry`) with exponential backoff and jitter or as long as the
server's ``Retry-After`` asks, at most ``rate_limit`` starts per second; each result is reported
as it finishes. Every reply is read up to ``max_reply_mb`` (a longer one is a failed request), so
memory stays bounded whatever a server sends. The OpenAI-compatible backend and the moderation
APIs share it.

Why this module is over 300 lines: what is done to every request (the deadline, the bounded
read, retries and failover, scrubbing secrets from server text, checking server URLs) is one
policy; split apart, each piece would need the client's settings passed to it.
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
import re
import threading
import time
import urllib.parse
from collections.abc import Callable, Coroutine, Iterable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..errors import LocalevalError
from .base import Failed
from .config import DEFAULT_MAX_REPLY_MB
from .failures import (
    BadReply,
    ErrorReply,
    HTTPStatus,
    OverLimit,
    RequestFailure,
    Timeout,
    Unclassified,
    Unreachable,
)
from .secrets import redact_url

if TYPE_CHECKING:  # imported where a client starts (its import is slow)
    import httpx

RETRY_STATUS = {408, 409, 425, 429}  # and every 5xx
MAX_RETRY_AFTER = 60.0  # seconds: a longer Retry-After is capped
SHARD_CONNECTIONS = 16  # connections per httpx client (pool); more in flight = more clients


class Pacer:
    """At most ``rate`` request starts per second (None: no limit)."""

    def __init__(self, rate: float | None):
        self.interval = 1.0 / rate if rate else 0.0
        self.next = 0.0
        self.lock = asyncio.Lock()

    async def wait(self) -> None:
        if not self.interval:
            return
        async with self.lock:
            now = time.monotonic()
            start = max(now, self.next)
            self.next = start + self.interval
        if start > now:
            await asyncio.sleep(start - now)


def backoff(attempt: int, base: float = 0.5, cap: float = 20.0) -> float:
    """Exponential backoff with jitter: base·2^attempt, capped, times a random 0.5–1.5. The
    exponent stops at 64, long past the cap: 2^1024 is past a float (--max-retries has no upper
    bound, and attempt 1024 raised OverflowError, ending the run)."""
    return min(cap, base * 2.0 ** min(attempt, 64)) * random.uniform(0.5, 1.5)


def retry_after(value: str | None) -> float:
    """Seconds a Retry-After header asks for (a number or an HTTP date), capped; 0 = none."""
    if not value:
        return 0
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return 0
    return max(0.0, min(seconds, MAX_RETRY_AFTER)) or 0.001


def public_url(url: str) -> str:
    """``url`` as it is recorded or printed (:func:`.secrets.redact_url`)."""
    return redact_url(url)


def base_urls(value: str) -> list[str]:
    """The comma-separated server URLs of ``value``, each checked (http or https, a host, a port
    in range): one line for a bad one, before anything connects (httpx's InvalidURL is a
    traceback of its own)."""
    urls = [u.strip().rstrip("/") for u in str(value).split(",") if u.strip()]
    for url in urls:
        parts = urllib.parse.urlsplit(url)
        try:
            parts.port  # noqa: B018 - parsing the port is the check (ValueError if bad)
        except ValueError as e:
            raise LocalevalError(f"--base-url {public_url(url)}: {e}") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise LocalevalError(f"--base-url {public_url(url)} is not an http(s) URL with a "
                                 "host, e.g. http://127.0.0.1:8000/v1")
    if not urls:
        raise LocalevalError("--base-url is empty; give the server's URL, e.g. "
                             "http://127.0.0.1:8000/v1")
    return urls


def secret_forms(secret: str) -> set[str]:
    """The forms a server may echo a secret in: as it is, JSON-escaped, URL-encoded, base64
    (standard and URL-safe, with and without padding); case is ignored when scrubbing."""
    forms = {secret, secret.replace("/", "\\/"), urllib.parse.quote(secret, safe=""),
             urllib.parse.quote_plus(secret)}
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        coded = encode(secret.encode()).decode()
        forms |= {coded, coded.rstrip("=")}
    return {f for f in forms if f}


def scrub_form(text: str, form: str, shortest: int = 8) -> str:
    """``text`` with ``form`` replaced by [key], in any case, and also any start of it of at
    least ``shortest`` characters (a server that echoes only part of a key)."""
    low, target = text.lower(), form.lower()
    n = min(shortest, len(target))
    out, done = [], 0
    start = low.find(target[:n])
    while start != -1:
        end = start + n
        while end < len(text) and end - start < len(target) and low[end] == target[end - start]:
            end += 1
        out.append(text[done:start] + "[key]")
        done = end
        start = low.find(target[:n], end)
    return "".join(out) + text[done:]


def scrub_secrets(text: str, secrets: list[str], limit: int = 200) -> str:
    """Server text made safe to store or print: each secret in every form a server may echo it
    (:func:`secret_forms`, any case, or its first 8+ characters) and anything shaped like a key
    or a bearer token removed, whitespace collapsed, cut to ``limit`` characters."""
    for secret in secrets:
        for form in sorted(secret_forms(secret), key=len, reverse=True) if secret else ():
            text = scrub_form(text, form)
    text = re.sub(r"(?i)(bearer|authorization|api[-_]?key|x-api-key|subscription-key)"
                  r"([\"':= ]+)\S+", r"\1\2[key]", text)
    text = re.sub(r"\b(sk|pk|rk)-[A-Za-z0-9_\-]{8,}", "[key]", text)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check_positive(**values: float | None) -> None:
    for name, value in values.items():
        if value is not None and not 0 < value < float("inf"):  # NaN too
            raise LocalevalError(f"--{name.replace('_', '-')} must be positive, not {value}")


R = TypeVar("R")  # what a coroutine returns


def run_coroutine(coroutine: Coroutine[Any, Any, R]) -> R:
    """``asyncio.run``, also from code that already runs an event loop (a notebook): then in a
    thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    value: list[R] = []
    error: list[BaseException] = []

    def target() -> None:
        try:
            value.append(asyncio.run(coroutine))
        except BaseException as e:  # re-raised in the caller's thread
            error.append(e)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if error:
        raise error[0]
    return value[0]


class TooLarge(Exception):
    """A reply longer than the client's ``max_reply_bytes``."""


class Retry(Exception):
    """Raised by a parser: the reply was read but cannot be used (no log-probs, say); ask
    again, and fail with this message if the retries run out."""


class Invalid(Exception):
    """Raised by a parser: the reply was read and is not a valid answer (a NaN or positive
    log-prob, a string for a number); the request fails at once and for good, with this reason,
    since the same request reads the same reply again."""


class Malformed(ValueError):
    """Raised by a parser: the reply has the wrong shape (a missing field, two ``choices`` for
    one prompt, a null text); its message names the field. Retried as malformed, and if every
    try is malformed, the request fails for good with this reason."""


class RepeatedName(ValueError):
    """A JSON object that repeats a name: which value is meant cannot be known (Python's json
    keeps the last, other readers the first), so the reply is refused, never read."""


def _without_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in pairs:
        if name in out:
            raise RepeatedName(f"a JSON object repeats the name {name!r}")
        out[name] = value
    return out


def load_json(text: str | bytes) -> Any:
    """A reply's JSON; :class:`RepeatedName` for an object that repeats a name, ValueError for
    text that is not JSON."""
    return json.loads(text, object_pairs_hook=_without_repeats)


MALFORMED = "malformed reply"  # JSON of the wrong shape: a missing field, a list for an object


def malformed_why(error: Exception, scrub: Callable[[str], str]) -> str:
    """What a parser found wrong, scrubbed: a :class:`Malformed` message whole (it names the
    field), else the exception's type and the start of its text."""
    if isinstance(error, Malformed):
        return scrub(str(error))
    return f"{type(error).__name__}: {scrub(str(error))[:60]}"


def join_url(base: str, path: str) -> str:
    """``path`` appended to ``base``'s path, its query (a gateway's ``?api_key=``) kept."""
    parts = urllib.parse.urlsplit(base)
    return urllib.parse.urlunsplit(parts._replace(path=parts.path.rstrip("/") + path))


def server_root(base: str) -> str:
    """A base URL less its ``/v1``: where vLLM and llama-cpp-python put their tokenize
    endpoints."""
    parts = urllib.parse.urlsplit(base)
    return urllib.parse.urlunsplit(parts._replace(path=parts.path.removesuffix("/v1")))


def origin(url: str) -> str:
    """scheme://host:port of ``url``, without a password: which replica served a call."""
    parts = urllib.parse.urlsplit(public_url(url))
    return f"{parts.scheme}://{parts.netloc}"


T = TypeVar("T")  # what a call's parser makes of a reply (a response, a part of one)


@dataclass(frozen=True)
class Call(Generic[T]):
    """One POST: where, the JSON body, and how to turn the reply's JSON into a response (a
    parser raises :class:`Retry` to ask again, :class:`Invalid` for a value that is not valid,
    :class:`Malformed` (or ``KeyError``/``TypeError``/``IndexError``) on a reply of the wrong
    shape, which is retried
    as malformed and, if every try is malformed, fails for good with the reason)."""

    url: str
    body: dict[str, Any]
    parse: Callable[[Any], T]
    # the same call on the other replicas: a replica that stops answering (connection refused
    # or reset, a timeout) is left for the next one, so a run outlives a replica that dies
    fallbacks: tuple[str, ...] = ()
    counted: bool = True  # in ``served_by`` (a request of the run, not a set-up call)
    # the k-th draw of a sampled request (Generate.sample): every draw has the same body, so
    # --batch tells them apart by this (:func:`.openai_batch.custom_id`)
    draw: int | None = None


class JsonClient:
    """Posts each :class:`Call` with retries; ``scrub`` cleans any server text before it is kept
    (it must remove every secret). ``stats`` counts HTTP calls and retries."""

    def __init__(self, *, headers: dict[str, str], timeout: float, max_retries: int,
                 concurrency: int, rate_limit: float | None, scrub: Callable[[str], str],
                 max_reply_mb: float = DEFAULT_MAX_REPLY_MB):
        check_positive(concurrency=concurrency, timeout=timeout, rate_limit=rate_limit,
                       max_reply_mb=max_reply_mb)
        self.max_reply_bytes = int(max_reply_mb * 2**20)
        if max_retries < 0:
            raise LocalevalError(f"--max-retries must be 0 or more, not {max_retries}")
        self.headers, self.timeout, self.max_retries = headers, timeout, max_retries
        self.concurrency, self.rate_limit, self.scrub = concurrency, rate_limit, scrub
        # counters (int) and served_by (origin -> calls), read live by the timing record
        self.stats: dict[str, Any] = {"http_calls": 0, "retries": 0, "bytes_received": 0,
                            "served_by": {}}

    def post_all(self, calls: Sequence[Call[T]],
                 progress: Callable[[int, T | Failed], None] | None = None,
                 order: Sequence[int] | None = None) -> list[T | Failed]:
        """Every call (sent in ``order``, default as given); responses in the calls' order,
        ``progress(i, response)`` as call ``i`` finishes."""
        if not calls:
            return []
        return run_coroutine(self._post_all(calls, progress, order or range(len(calls))))

    async def _post_all(self, calls: Sequence[Call[T]],
                        progress: Callable[[int, T | Failed], None] | None,
                        order: Iterable[int]) -> list[T | Failed]:
        import httpx

        out: list[T | Failed | None] = [None] * len(calls)
        pace = Pacer(self.rate_limit)
        # httpcore scans every connection of a pool each time a request starts or ends, so one
        # pool of 128 connections costs more per request than 8 pools of 16 (measured: the
        # bench in bench/openai_client_overhead.py). Requests go round-robin over the shards.
        # No more connections (nor clients, each with its TLS context) than calls to make: the
        # cost follows the requests in flight, not the flag (--concurrency 100000, 15 requests)
        width = min(self.concurrency, len(calls))
        shards = -(-width // SHARD_CONNECTIONS)
        sizes = [width // shards + (k < width % shards) for k in range(shards)]
        async with AsyncExitStack() as stack:
            clients = [await stack.enter_async_context(httpx.AsyncClient(
                timeout=self.timeout, headers=self.headers,
                limits=httpx.Limits(max_connections=n, max_keepalive_connections=n)))
                for n in sizes]
            gates = [asyncio.Semaphore(n) for n in sizes]

            async def one(rank: int, i: int) -> None:
                async with gates[rank % shards]:
                    answer = await self._one(clients[rank % shards], calls[i], pace)
                out[i] = answer
                if progress:
                    progress(i, answer)

            tasks = [asyncio.ensure_future(one(rank, i)) for rank, i in enumerate(order)]
            try:
                await asyncio.gather(*tasks)
            except BaseException:
                # one call's progress failed (a full disk under the cache, Ctrl-C): end the
                # others here, before the clients close under them, so the one error is all
                # that is said (not a traceback per task at asyncio.run's shutdown)
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise
        return out  # type: ignore[return-value]

    async def _one(self, client: httpx.AsyncClient, call: Call[T], pace: Pacer) -> T | Failed:
        content = json.dumps(call.body, ensure_ascii=False).encode()
        urls, at = (call.url, *call.fallbacks), 0
        last: RequestFailure = Unclassified("no attempt")
        for attempt in range(self.max_retries + 1):
            await pace.wait()
            self.stats["http_calls"] += 1
            attempted = await self._attempt(client, call, urls[at], content)
            outcome, wait = attempted
            if not isinstance(outcome, RequestFailure):
                if call.counted and not isinstance(outcome, Failed):
                    served = self.stats["served_by"]
                    served[origin(urls[at])] = served.get(origin(urls[at]), 0) + 1
                return outcome
            last = outcome
            if wait is None:  # a 4xx other than 408/429: the server refuses this request
                return Failed(last)
            if attempt == self.max_retries:
                break
            self.stats["retries"] += 1
            if len(urls) > 1 and isinstance(outcome, Timeout | Unreachable):
                at = (at + 1) % len(urls)  # another replica, at once
                continue
            await asyncio.sleep(wait if wait > 0 else backoff(attempt))
        # a reply read but of the wrong shape on the last try (BadReply): the server answers
        # this way; a timeout or a 5xx may pass later
        return Failed(last)

    async def _attempt(self, client: httpx.AsyncClient, call: Call[T], target: str,
                       content: bytes) -> tuple[T | Failed | RequestFailure, float | None]:
        """(the response, or why it failed and how long to wait before a retry: 0 = the
        backoff, None = do not retry)."""
        import httpx

        url = public_url(target)
        try:
            # the whole request's deadline: httpx's own timeout is per read, so a server that
            # trickles bytes would keep a request alive for ever
            status, headers, body = await asyncio.wait_for(
                self._read(client, target, content), self.timeout)
        except (TimeoutError, httpx.TimeoutException):
            return Timeout(f"timeout after {self.timeout:g} s from {url}"), 0
        except TooLarge as e:  # the same request gets the same reply: do not ask again
            return Failed(OverLimit(
                f"the reply from {url} is {e}, over the limit of "
                f"{self.max_reply_bytes / 2**20:g} MB; raise --max-reply-mb if it is meant to "
                "be")), None
        except httpx.HTTPError as e:  # connection refused/reset, truncated body, protocol error
            return Unreachable(f"connection error with {url}: "
                               f"{self.scrub(f'{type(e).__name__}: {e}')}"), 0
        text = body.decode("utf-8", errors="replace")
        if status != 200:
            error = HTTPStatus(f"HTTP {status} from {url}: {self.scrub(text)}", status=status)
            if status in RETRY_STATUS or status >= 500:
                return error, retry_after(headers.get("retry-after"))
            return error, None
        return self._parsed(call, url, body, text)

    async def _read(self, client: httpx.AsyncClient, target: str,
                    content: bytes) -> tuple[int, dict[str, str], bytes]:
        """POST and read the reply's body, at most ``max_reply_bytes`` of it (:class:`TooLarge`
        past that, said by Content-Length or found while reading): memory stays bounded."""
        async with client.stream("POST", target, content=content) as resp:
            declared = resp.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > self.max_reply_bytes:
                raise TooLarge(f"{int(declared):,} bytes (Content-Length)")
            body = bytearray()
            async for chunk in resp.aiter_bytes():  # decoded: a gzip bomb is bounded too
                body += chunk
                if len(body) > self.max_reply_bytes:
                    raise TooLarge(f"more than {self.max_reply_bytes:,} bytes")
            self.stats["bytes_received"] += len(body)  # what a scoring mode costs (bench/)
            return resp.status_code, dict(resp.headers), bytes(body)

    def _parsed(self, call: Call[T], url: str, body: bytes,
                text: str) -> tuple[T | Failed | RequestFailure, float | None]:
        try:
            reply = load_json(body)
        except RepeatedName as e:  # the same request gets the same reply: do not ask again
            return Failed(BadReply(f"invalid reply from {url}: {e}")), None
        except ValueError:  # truncated or not JSON: a broken transfer as often as not
            return ErrorReply(f"not JSON, a reply from {url}: {self.scrub(text)[:80]!r}"), 0
        try:
            return call.parse(reply), None
        except Retry as e:
            return ErrorReply(str(e)), 0
        except Invalid as e:
            return Failed(BadReply(f"invalid reply from {url}: "
                                   f"{self.scrub(str(e))}")), None
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as e:
            if isinstance(reply, dict) and "error" in reply:  # a 200 that says it failed:
                return ErrorReply(f"error reply from {url}: {self.scrub(text)}"), 0  # like a 5xx
            return BadReply(f"{MALFORMED} from {url} ({malformed_why(e, self.scrub)}): "
                            f"{self.scrub(text)[:80]!r}"), 0
