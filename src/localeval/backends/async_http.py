"""What every HTTP backend needs around its requests: which failures to retry and how long to
wait (exponential backoff with jitter, or the server's ``Retry-After``), a requests-per-second
pacer, and running a coroutine from synchronous code."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from email.utils import parsedate_to_datetime

from ..errors import LocalevalError

RETRY_STATUS = {408, 409, 425, 429}  # and every 5xx
MAX_RETRY_AFTER = 60.0  # seconds: a longer Retry-After is capped


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
    """Exponential backoff with jitter: base·2^attempt, capped, times a random 0.5–1.5."""
    return min(cap, base * 2**attempt) * random.uniform(0.5, 1.5)


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


def check_positive(**values) -> None:
    for name, value in values.items():
        if value is not None and value <= 0:
            raise LocalevalError(f"--{name.replace('_', '-')} must be positive, not {value}")


def run_coroutine(coroutine):
    """``asyncio.run``, also from code that already runs an event loop (a notebook): then in a
    thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    result: dict = {}

    def target() -> None:
        try:
            result["value"] = asyncio.run(coroutine)
        except BaseException as e:  # re-raised in the caller's thread
            result["error"] = e

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["value"]
