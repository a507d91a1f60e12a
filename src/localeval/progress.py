"""A rich progress bar with throughput, as a context manager yielding ``advance(n)``.

The bar is drawn on stderr: stdout holds only what a command promises (its tables or JSON), so
``localeval run ... --json | jq`` reads JSON alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
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
        if not done or not elapsed:
            return Text(f"- {self.unit}/s")
        return Text(f"{done / elapsed:.2f} {self.unit}/s")


@contextmanager
def progress_bar(unit: str, total: int, done: int = 0, quiet: bool = False
                 ) -> Iterator[Callable[[int], None]]:
    if quiet or total == 0:
        yield _no_bar
        return
    columns = [TextColumn(f"[bold]{unit}"), BarColumn(), MofNCompleteColumn(), RateColumn(unit),
               TimeElapsedColumn(), TimeRemainingColumn()]
    with Progress(*columns, console=Console(stderr=True), transient=False) as progress:
        task = progress.add_task(unit, total=total, completed=done, cached=done)

        def advance(n: int = 1) -> None:
            progress.advance(task, n)
        yield advance


def _no_bar(n: int = 1) -> None:
    """``advance(n)`` when no bar is drawn."""
