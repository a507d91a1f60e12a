"""A rich progress bar with throughput, as a context manager yielding ``advance(n)``; where
stderr is not a terminal, a line of progress at intervals instead.

The bar is drawn on stderr: stdout holds only what a command promises (its tables or JSON), so
``localeval run ... --json | jq`` reads JSON alone.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text


class RateColumn(ProgressColumn):
    """What this invocation has done per second since it started: the units it finished (those
    the cache already held left out) over the time elapsed. Rich's own speed is a moving window
    that a backend reporting a batch at once turns into thousands per second."""

    def __init__(self, unit: str):
        super().__init__()
        self.unit = unit

    def render(self, task: Task) -> Text:
        done = task.completed - task.fields.get("cached", 0)
        elapsed = task.finished_time if task.finished else task.elapsed
        if not done and task.total and task.completed >= task.total:
            return Text("all from the cache")  # a rerun with nothing to run (issue 69)
        if not done or not elapsed:
            return Text(f"- {self.unit}/s")
        return Text(f"{done / elapsed:.2f} {self.unit}/s")


# Where stderr is not a terminal (a log file, a CI job, a pipe), a line every this many
# seconds instead of a bar: rich draws a bar there only when it ends, so a 15-minute run said
# nothing for 15 minutes (issue 53 item 4). LOCALEVAL_PROGRESS_SECONDS sets it.
LINE_SECONDS = 30.0


@contextmanager
def progress_bar(unit: str, total: int, done: int = 0, quiet: bool = False,
                 label: str | None = None) -> Iterator[Callable[[int], None]]:
    """``advance(n)`` of a bar (a line at intervals where stderr is no terminal) named
    ``label`` (default: ``unit``, the rate's unit)."""
    if quiet or total == 0:
        yield _no_bar
        return
    console = Console(stderr=True)
    if not console.is_terminal:
        seconds = float(os.environ.get("LOCALEVAL_PROGRESS_SECONDS") or LINE_SECONDS)
        with progress_lines(unit, total, done, seconds, sys.stderr, label=label) as line:
            yield line
        return
    columns = [TextColumn(f"[bold]{escape(label or unit)}"), BarColumn(), MofNCompleteColumn(),
               RateColumn(unit), TimeElapsedColumn(), TimeRemainingColumn()]
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task(unit, total=total, completed=done, cached=done)

        def advance(n: int = 1) -> None:
            progress.advance(task, n)
        yield advance


@contextmanager
def progress_lines(unit: str, total: int, done: int, seconds: float, out: TextIO,
                   clock: Callable[[], float] = time.monotonic, label: str | None = None
                   ) -> Iterator[Callable[[int], None]]:
    """``advance(n)`` printing, at most every ``seconds``, one line of what is done: the
    count, the rate of this invocation (answers the cache held left out) and the time left;
    and a last line when the work ends."""
    start = last = clock()
    cached, count, shown = done, done, None

    def line() -> None:
        nonlocal shown
        shown = count
        elapsed = clock() - start
        rate = (count - cached) / elapsed if elapsed > 0 else 0.0
        left = f", about {_clock_time((total - count) / rate)} left" if rate and \
            count < total else ""
        # a rerun the cache answered whole has no rate to give (issue 69: "0.00 questions/s")
        speed = "all from the cache" if count == cached == total else f"{rate:.2f} {unit}/s"
        print(f"{label or unit}: {count}/{total} done ({100 * count / total:.0f}%), {speed}{left}",
              file=out, flush=True)

    def advance(n: int = 1) -> None:
        nonlocal count, last
        count += n
        if clock() - last >= seconds:
            last = clock()
            line()
    yield advance
    if shown != count:
        line()


def _clock_time(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


def _no_bar(n: int = 1) -> None:
    """``advance(n)`` when no bar is drawn."""
