"""Requests through the cache: :class:`CachedExecutor` is the ``execute`` every task gets. Finished
requests are read back from the cache; the rest run on the backend and are stored as each
finishes (:class:`CacheWriter`), so a killed run resumes where it stopped.

Failed requests are never stored, so a rerun runs them again; whether that can help is counted
here (``failures``: ``transient``, a rerun may succeed; ``permanent``, the backend says the
request fails the same way every time) and told by :func:`rerun_advice`. Candidates that can
never be told apart on the backend's tokenizer stop the run before anything runs."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, Protocol

from ..backends.base import (
    Backend,
    Embed,
    Failed,
    Request,
    Response,
    candidate_problem,
    distinct,
    with_defaults,
)
from ..backends.failures import ModelError
from ..backends.reply_checks import checked
from ..errors import LocalevalError, env_number
from ..progress import progress_bar
from .cache import RequestCache
from .embed_cache import SharedEmbeddings, new_counts
from .usage import BUDGET_CHUNK, MODEL, Budget, BudgetReached, Usage

CHUNK = 512  # requests per backend call: big enough for prefix sharing, small enough to lose little


class Roles(Protocol):
    """The run's second models by role, each loaded when first asked for."""

    def get(self, role: str) -> Backend | None: ...


class CachedExecutor:
    """``execute(requests)``: finished requests are read back from the cache and the rest run
    on the backend, which reports each response as it finishes (``progress(i, response)``);
    each is stored at once (:class:`CacheWriter`), so a killed run resumes where it stopped,
    losing at most the requests in flight. ``on(other)`` runs another backend (a guard's helper
    model) through the same cache.

    ``Embed`` requests missing from ``cache`` are looked up in ``embeddings`` too (the cache
    the embedding commands share, :mod:`.embed_cache`), copied into ``cache`` when found there,
    and stored in both when computed; ``embedded`` counts them (``embeddings``,
    ``embeddings_cached``: read back from either cache)."""

    def __init__(self, backend: Backend, cache: RequestCache | None, quiet: bool, unit: str,
                 counts: dict[str, int] | None = None, roles: Roles | None = None,
                 failures: dict[str, int] | None = None,
                 failure_kinds: dict[str, int] | None = None, budget: Budget | None = None,
                 usage: Usage | None = None, role_name: str = MODEL,
                 embeddings: SharedEmbeddings | None = None,
                 embedded: dict[str, int] | None = None):
        self.backend = with_defaults(backend)
        self.cache = cache
        self.quiet = quiet
        self.unit = unit
        # Tokens per model role (store/usage.py), and the invocation's budget, if any.
        self.budget = budget
        self.usage = usage or Usage()
        self.role_name = role_name
        # Requests read back from the cache, and run (on any backend): the run's timing.
        self.counts = counts if counts is not None else {"requests_cached": 0, "requests_run": 0}
        self.roles = roles  # the run's second models by role (a judge, a translator)
        # Requests that failed (on any backend), by whether a rerun may fix them.
        self.failures = failures if failures is not None else {"transient": 0, "permanent": 0}
        # ... and by the kind of failure (backends/failures.py: timeout, http, bad_reply …)
        self.failure_kinds = failure_kinds if failure_kinds is not None else {}
        self.embeddings = embeddings
        self.embedded = embedded if embedded is not None else new_counts()

    def on(self, backend: Backend, role: str | None = None) -> CachedExecutor:
        """``execute`` for another backend (a guard's helper model), through the same cache."""
        return CachedExecutor(backend, self.cache, self.quiet, self.unit, self.counts,
                              self.roles, self.failures, self.failure_kinds, self.budget,
                              self.usage, role or self.role_name, self.embeddings,
                              self.embedded)

    def progress_label(self) -> str:
        """What the progress bar or line is of: the unit, and the model role where the run has
        more than one (issue 69: llm-safety printed two lines of "requests", the model's and
        the judge's, alike)."""
        several = self.role_name != MODEL or bool(getattr(self.roles, "models", None))
        return f"{self.unit} ({self.role_name})" if several else self.unit

    def role(self, name: str) -> CachedExecutor | None:
        """``execute`` for the model of role ``name`` (None: the run has none)."""
        backend = self.roles.get(name) if self.roles else None
        return self.on(backend, name) if backend is not None else None

    def __call__(self, requests: Sequence[Request]) -> list[Response]:
        backend, cache = self.backend, self.cache
        firsts, where = distinct(list(requests))  # identical requests run (and count) once
        unique = [requests[f] for f in firsts]
        responses: list[Response | None] = (cache.get_many(backend.identity, unique) if cache
                                            else [None] * len(unique))
        embeds = [i for i, r in enumerate(unique) if isinstance(r, Embed)]
        shared = self.embeddings.get() if embeds and self.embeddings else None
        if shared is not None:
            _read_shared(shared, cache, backend.identity, unique, embeds, responses)
        todo = [i for i, r in enumerate(responses) if r is None]
        if embeds:
            self.embedded["embeddings"] += len(embeds)
            self.embedded["embeddings_cached"] += sum(responses[i] is not None for i in embeds)
        for r in responses:
            if r is not None:
                self.usage.add(self.role_name, r, cached=True)
        problem = candidate_problem(backend, [unique[i] for i in todo])
        if problem:  # every request with these candidates would fail alone: say it once
            raise LocalevalError(f"{problem}: every request with these candidates would fail "
                                 "the same way on this model, so none was run")
        _say_duplicates(len(requests), len(unique), self.quiet)
        self.counts["requests_run"] += len(todo)
        self.counts["requests_cached"] += len(unique) - len(todo)
        with progress_bar(self.unit, total=len(unique), done=len(unique) - len(todo),
                          quiet=self.quiet, label=self.progress_label()) as advance, \
                CacheWriter(cache, backend.identity) as writer, \
                CacheWriter(shared, backend.identity) as shared_writer:
            def store(request: Request, response: Response) -> None:
                writer.add(request, response)
                if isinstance(request, Embed):
                    shared_writer.add(request, response)
            for part, needed in self._parts(backend, todo, unique):
                _run_part(backend, part, needed, _reporter(part, unique, responses, store,
                                                           advance), unique, responses)
                self._count(part, needed, responses)
                # after each backend call, the last one too (a run of one chunk was never
                # checked, issue 63 item 4): nothing half-done, the answers already cached
                self.usage.check(self.budget)
        done = _all_answered(responses)
        for i in todo:
            answer = done[i]
            if isinstance(answer, Failed):
                reason = answer.reason
                self.failures["permanent" if reason.permanent else "transient"] += 1
                self.failure_kinds[reason.kind] = self.failure_kinds.get(reason.kind, 0) + 1
        return [done[w] for w in where]


    def _parts(self, backend: Backend, todo: list[int],
               unique: list[Request]) -> Iterator[tuple[list[int], list[bool] | None]]:
        """The backend calls: :func:`_chunks`, or under a budget, batches (``backend.chunk``)
        whose upper bound fits what is left, sized as each comes (a batch is paid whole)."""
        budget = self.budget
        if backend.spreads and (budget is None or not budget.limits):
            # one call: the backend cuts it into the chunks below and keeps every worker busy
            # (under a budget, parts as a local run's, so no more is in flight than there)
            left = set(todo)
            if todo:
                yield (list(range(len(unique))), [i in left for i in range(len(unique))]) \
                    if backend.plans_over_all else (todo, None)
            return
        if budget is None or not budget.limits or not backend.chunk \
                or backend.plans_over_all:
            yield from _chunks(backend, todo, len(unique), self._chunk())
            return
        start = 0
        while start < len(todo):
            self.usage.check(budget)
            money, tokens = self.usage.left(budget)
            if self.role_name != MODEL:
                money = None  # --max-spend prices the run's own model
            part: list[int] = []
            cost = sent = 0.0
            bound: tuple[int, int] | None = (0, 0)
            for i in todo[start:start + backend.chunk]:
                bound = backend.cost_bound(unique[i])
                if bound is None:
                    raise LocalevalError(f"{type(unique[i]).__name__} requests cannot be costed "
                                         "before a batch is submitted: drop --batch, or the "
                                         "budget (--max-spend, --max-tokens-total)")
                cost, sent = cost + budget.cost(*bound), sent + sum(bound)
                if (money is not None and cost > money) or (tokens is not None
                                                            and sent > tokens):
                    break
                part.append(i)
            if not part:
                raise BudgetReached(_unaffordable(budget, money, tokens, bound or (0, 0)))
            yield part, None
            start += len(part)

    def _chunk(self) -> int:
        """Requests per backend call: fewer under a budget, so it stops close to it."""
        return BUDGET_CHUNK if self.budget is not None and self.budget.limits else CHUNK

    def _count(self, part: list[int], needed: list[bool] | None,
               responses: list[Response | None]) -> None:
        """The tokens of the responses a backend call just made."""
        for k, i in enumerate(part):
            answer = responses[i]
            if (needed is None or needed[k]) and answer is not None:
                self.usage.add(self.role_name, answer, cached=False)


def _read_shared(shared: RequestCache, cache: RequestCache | None, identity: dict[str, Any],
                 unique: list[Request], embeds: list[int],
                 responses: list[Response | None]) -> None:
    """The embeddings missing from the command's cache, read from the shared one (and copied
    into the command's, which then holds every answer it used: rescore reads it)."""
    missing = [i for i in embeds if responses[i] is None]
    if not missing:
        return
    copied: list[tuple[Request, Response]] = []
    for i, found in zip(missing, shared.get_many(identity, [unique[i] for i in missing]),
                        strict=True):
        if found is not None:
            responses[i] = found
            copied.append((unique[i], found))
    if cache is not None and copied:
        cache.put_many(identity, copied)


def _unaffordable(budget: Budget, money: float | None, tokens: int | None,
                  bound: tuple[int, int]) -> str:
    """Why the next batch is not submitted: its first request's upper bound passes what is
    left."""
    if money is not None and budget.cost(*bound) > money:
        over = (f"{budget.cost(*bound):.4f} at most for the next request, {money:.4f} left of "
                f"--max-spend {budget.max_spend:g}")
    else:
        over = (f"{sum(bound)} tokens at most for the next request, {tokens} left of "
                f"--max-tokens-total {budget.max_tokens}")
    return (f"budget reached: {over} (a batch is costed before it is submitted: its prompts' "
            "UTF-8 bytes at the input price, max_tokens at the output price); the answers so "
            "far are cached: rerun the command (with a larger budget) to go on")


def _all_answered(responses: list[Response | None]) -> list[Response]:
    """Every request's response, once the backend calls are done: one a backend left out is
    a failure of that backend, never a hole a score reads."""
    return [Failed(ModelError("the backend returned no response for this request"))
            if r is None else r for r in responses]


def _run_part(backend: Backend, part: list[int], needed: list[bool] | None,
              report: Reporter, unique: list[Request],
              responses: list[Response | None]) -> None:
    """One backend call: requests ``part`` (those ``needed``), each response reported."""
    asked = [unique[i] for i in part]
    out: Sequence[Response | None] = (backend.run(asked, progress=report) if needed is None
                                      else backend.run_planned(asked, needed, progress=report))
    for k, (i, resp) in enumerate(zip(part, out, strict=True)):
        if responses[i] is None and (needed is None or needed[k]) and resp is not None:
            report(k, resp)  # a backend that did not report this one


def _chunks(backend: Backend, todo: list[int], n: int,
            chunk: int = CHUNK) -> Iterator[tuple[list[int], list[bool] | None]]:
    """(request indices, needed flags or None) per backend call. A backend that plans over
    every request (``plans_over_all``: the hf prefix tree) gets the same chunks of all of them
    as a clean run, each with the cached ones flagged not needed, so a resumed run computes
    what is left exactly as the clean run did; chunks with nothing left are skipped."""
    if not backend.plans_over_all:
        chunk = backend.chunk or chunk  # --batch: one batch for the lot
        for start in range(0, len(todo), chunk):
            yield todo[start : start + chunk], None
        return
    left = set(todo)
    for start in range(0, n, chunk):
        part = list(range(start, min(start + chunk, n)))
        needed = [i in left for i in part]
        if any(needed):
            yield part, needed


def _say_duplicates(n_requests: int, n_unique: int, quiet: bool) -> None:
    """Why the bar stops short of the questions (1361/1361 for 1362): identical requests are
    sent once."""
    if n_unique < n_requests and not quiet:
        print(f"note: {n_requests - n_unique} of {n_requests} requests repeat another's prompt "
              "exactly (the same question twice in the data): each is sent once, so the bar "
              f"counts {n_unique}, and both get the answer", file=sys.stderr)


def rerun_advice(results: Mapping[str, Any]) -> str:
    """What to say about a run's failed samples: rerun when some request failed in a way a rerun
    may fix (a timeout, a dropped connection, a server error). Otherwise a rerun fails the same
    way: the backend said so, or nothing failed to run at all (an unparseable answer is read
    from a cached response, the same next time). Results from before the count: rerun."""
    failures = results.get("request_failures")
    if failures is None or failures.get("transient"):
        return "rerun the command to retry them"
    return "a rerun would fail the same way (see 'error' in samples.jsonl)"


# what a backend call reports to: ``report(k, response)`` as its k-th request finishes
Reporter = Callable[[int, Response], None]


def _reporter(part: list[int], requests: list[Request], responses: list[Response | None],
              store: Callable[[Request, Response], None],
              advance: Callable[[int], None]) -> Reporter:
    """The ``progress`` callback a backend gets: ``progress(k, response)`` as its k-th request
    finishes (from any thread). Every response is checked (:func:`.reply_checks.checked`)
    before it is used or stored: an invalid value is a failed request, whichever backend gave
    it."""
    def report(k: int, response: Response) -> None:
        i = part[k]
        response = checked(requests[i], response)
        responses[i] = response
        store(requests[i], response)
        advance(1)
    return report


def commit_interval() -> float:
    """Seconds between cache commits: $LOCALEVAL_CACHE_COMMIT_SECONDS (checked), default 1."""
    return env_number("LOCALEVAL_CACHE_COMMIT_SECONDS", 1.0, low=0, high=3600)


class CacheWriter:
    """Stores finished responses in the cache in small batches: at least every ``interval``
    seconds or ``batch`` responses, and whatever is left on exit (even on an exception, so a
    Ctrl-C keeps what finished). Thread-safe: backends report from worker threads."""

    def __init__(self, cache: RequestCache | None, identity: dict[str, Any], batch: int = 64,
                 interval: float | None = None):
        if interval is None:  # a kill loses at most this many seconds of finished requests
            interval = commit_interval()
        self.cache = cache
        self.identity = identity
        self.batch = batch
        self.interval = interval
        self.pending: list[tuple[Request, Response]] = []
        self.lock = threading.Lock()
        self.last = time.monotonic()

    def add(self, request: Request, response: Response) -> None:
        if self.cache is None:
            return
        with self.lock:
            self.pending.append((request, response))
            due = len(self.pending) >= self.batch or \
                time.monotonic() - self.last >= self.interval
        if due:
            self.flush()

    def flush(self) -> None:
        with self.lock:
            pairs, self.pending, self.last = self.pending, [], time.monotonic()
        if pairs and self.cache is not None:
            self.cache.put_many(self.identity, pairs)

    def __enter__(self) -> CacheWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.flush()


def open_cache(path: str | Path | None) -> AbstractContextManager[RequestCache | None]:
    return RequestCache(path) if path else nullcontext()
