"""backends/async_http.py's helpers that every HTTP backend shares: the retries' backoff, and
running the client's coroutine from code that already runs an event loop (a notebook)."""

from __future__ import annotations

import asyncio

import pytest

from localeval.backends.async_http import backoff, run_coroutine


# attempt -> the wait before jitter: 0.5 s doubled each attempt, at most 20 s
@pytest.mark.parametrize("attempt, middle", [(0, 0.5), (1, 1.0), (5, 16.0), (6, 20.0),
                                             (40, 20.0), (1023, 20.0), (1024, 20.0),
                                             (5000, 20.0)])
def test_backoff_stays_within_its_cap_at_any_attempt(attempt, middle):
    """--max-retries has no upper bound: before, attempt 1024 raised OverflowError (0.5·2^1024
    is past a float) and ended the run."""
    for _ in range(20):
        assert 0.5 * middle <= backoff(attempt) <= 1.5 * middle


async def _answer(value: int) -> int:
    await asyncio.sleep(0)
    return value


async def _fail() -> int:
    await asyncio.sleep(0)
    raise KeyError("from the coroutine")


def test_run_coroutine_returns_its_result_with_and_without_a_running_loop():
    assert run_coroutine(_answer(3)) == 3

    async def inside_a_loop() -> int:  # as a notebook calls it: in a thread of its own
        return run_coroutine(_answer(4))

    assert asyncio.run(inside_a_loop()) == 4


def test_run_coroutine_raises_the_coroutines_error_in_the_callers_thread():
    async def inside_a_loop() -> int:
        return run_coroutine(_fail())

    with pytest.raises(KeyError, match="from the coroutine"):
        asyncio.run(inside_a_loop())
    with pytest.raises(KeyError, match="from the coroutine"):
        run_coroutine(_fail())
