"""A results view: everything that shows or compares one kind of task's results.

Each view declares the results schema it reads (``schema``) and its typed record (``Results``);
:mod:`.registry` finds the view of a run from its results. The console, ``export``, the HTML
report, the results store (through the run lifecycle), the leaderboard and ``compare`` ask the
view; none of them branches on the kind of task. A view reads typed results (and, to compare,
the samples) only: it never recomputes a number that the task's ``summarise`` wrote.

A new kind of task subclasses :class:`ResultsView` and overrides what it has: ``tables`` (data
tables: the console's, ``export``'s and the report's), ``notes``, ``cards`` (the report's
summary), ``figures``, ``store_metrics`` and ``ranking`` (the leaderboard), ``compare``,
``comparison_tables`` and ``comparison_notes`` (what ``compare`` prints, and the viewer's compare
page and the report of two runs show).

How a run is named wherever one is shown (the report's headings, chart legends, the compare
page): its spec's name (``tasks/run_spec.py``, the one namer), made distinct among several by
:func:`distinct_names`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from rich.console import Console
from rich.text import Text as RichText

from ..errors import LocalevalError
from ..records import Results as AnyResults
from ..records.comparison import Comparison
from ..records.metric_names import MetricName
from ..render.cards import Card as Card  # the views' cards, named from here too
from ..render.figures import Figure
from ..render.formats import print_table
from ..render.table import DataTable
from ..store.runs import RunRecord, load_run
from ..tasks.options import TaskOptions
from ..tasks.run_spec import RunSpec

Metric = tuple[MetricName, "float | None", "int | None"]  # (name, value, n) for the results store
Run = str | Path | RunRecord  # a run folder, or its record already loaded
KindT = TypeVar("KindT", bound=AnyResults)


@dataclass(frozen=True)
class Ranking:
    """How the leaderboard ranks a task's runs: its metric columns, the one that ranks (None:
    no ranking), whether lower is better, and how a stored value is printed: times ``scale``
    with ``digits`` decimals (shares are stored 0-1 and printed as percent, the default;
    Table 2 cells are stored in points already, ``scale`` 1). ``titles`` names columns for
    people (a column without one is shown by its metric name); ``unit`` is the table's
    caption: what its numbers are."""

    columns: list[str]
    rank_by: str | None
    lower_is_better: bool = False
    scale: float = 100.0
    digits: int = 2
    titles: dict[str, str] = field(default_factory=dict)
    unit: str = "%"
    # the range a stored value lies in (shares 0-1; Table 2 points 0-100); None: any finite
    # number (a mean log-prob). A value outside it is a hand edit of the store, never ranked.
    bounds: tuple[float, float] | None = (0.0, 1.0)

    def title(self, column: str) -> str:
        return self.titles.get(column, column)

    def problem(self, value: object) -> str | None:
        """Why a stored value cannot be shown or ranked, or None (None itself: no value)."""
        if value is None:
            return None
        wanted = "a finite number" if self.bounds is None else \
            f"a number from {self.bounds[0]:g} to {self.bounds[1]:g}"
        if isinstance(value, bool) or not isinstance(value, int | float) or \
                not math.isfinite(value):
            return f"is {value!r}, not {wanted}"
        if self.bounds is not None and not self.bounds[0] <= value <= self.bounds[1]:
            return f"is {value!r}, not {wanted}"
        return None


class ResultsView(Generic[KindT]):
    """The default view: no tables, cards, figures or metrics of its own; no comparison. A
    subclass names the record it reads: ``class MCQView(ResultsView[MCQResults])``."""

    kind = "results"  # how messages name the kind of run ("an mcq run": words.with_article)
    schema = ""  # the results schema this view reads ("localeval.mcq/1")
    Results: type[AnyResults] = AnyResults  # its typed record (KindT)
    compares = False  # whether it has ``compare`` (two runs, sample by sample)
    # the options of its kind of task: their protocol-role fields are its runs' protocol facts
    Options: type[TaskOptions] | None = None

    def tables(self, results: KindT) -> list[DataTable]:
        """Every table of a run, in report order (the console, ``export`` and the report)."""
        return []

    def headline(self, results: KindT) -> int:
        """How many of :meth:`tables` are the headline (the paper's main table): ``run``
        prints those, and the report keeps them open."""
        return 1

    def notes(self, results: KindT) -> list[RichText]:
        """Lines the console prints after the tables (counts, policies, caveats)."""
        return []

    def print(self, results: KindT, console: Console, everything: bool = True) -> int:
        """The tables (all, or the headline ones) and the notes; how many tables were left
        out."""
        tables = self.tables(results)
        shown = tables if everything else tables[:self.headline(results)]
        for table in shown:
            print_table(console, table)
        for line in self.notes(results):
            console.print(line)
        return len(tables) - len(shown)

    def cards(self, results: KindT) -> list[Card]:
        """The headline numbers of the report's summary (before the sample counts)."""
        return []

    def figures(self, results: KindT, folder: Path | None) -> list[Figure]:
        return []

    def side_by_side(self, runs: list[tuple[str, KindT]],
                     folder: Path | None) -> list[DataTable | Figure]:
        """Tables and figures of several runs of this kind at once (the report of several
        runs); ``runs`` are (label, results) pairs."""
        return []

    def store_metrics(self, results: KindT) -> list[Metric]:
        """(name, value, n) of the numbers a leaderboard ranks by."""
        return []

    def ranking(self, names: list[str]) -> Ranking:
        """The leaderboard's columns, given the metric names the store holds for the task."""
        return Ranking(names, None)

    def protocol(self, config: dict[str, Any]) -> dict[str, str]:
        """What makes a run comparable with another on the leaderboard, from its config.json:
        its :class:`~localeval.tasks.run_spec.RunSpec`'s protocol facts (its protocol revision,
        each protocol-role option of its kind as it is shown, "prompt style": "tmlu", the data
        by its contents, the subjects out of the dataset's, a guard's reading)."""
        return RunSpec.from_config(config, self.Options).protocol_facts()

    def paper_protocol(self, task: str) -> dict[str, str] | None:
        """The facts of the task's paper protocol (its full built-in data, the paper's method
        and options), which the leaderboard ranks by; None: the task has none (its own data),
        and runs are ranked with the one that scored the most items."""
        return None

    def compare(self, run_a: Run, run_b: Run) -> Comparison:
        raise LocalevalError(f"compare does not handle {self.kind} runs; it compares "
                             "multiple-choice and safeguard runs")

    def comparison_tables(self, comparison: Any) -> list[DataTable]:
        """The tables of what this view's ``compare`` returned (its own Comparison record):
        the console's, the viewer's compare page's and the report's of two runs."""
        raise LocalevalError(f"compare does not handle {self.kind} runs")

    def comparison_figures(self, comparison: Any, labels: tuple[str, str],
                           folder: Path | None) -> list[Figure]:
        """Figures of that comparison, runs A and B named by ``labels``."""
        return []

    def comparison_notes(self, comparison: Any) -> list[str]:
        """Lines said after those tables (which run is A and B, what was shared)."""
        return []

    def print_comparison(self, comparison: Any, console: Console) -> None:
        """Print what this view's ``compare`` returned: its tables, then its notes."""
        for table in self.comparison_tables(comparison):
            print_table(console, table)
        for line in self.comparison_notes(comparison):
            console.print(RichText(line))


DATA_BY_PATH = "data matched by its path (a run from before runs recorded their data's sha256)"


def distinct_names(runs: Sequence[RunRecord]) -> list[str]:
    """Each run's name (:attr:`RunSpec.name <localeval.tasks.run_spec.RunSpec.name>`), told
    apart where two coincide (the same protocol run twice): by the run's folder name, else by
    its place ("run 2")."""
    names = [RunSpec.name_of(r.config.data(), r.results.model) for r in runs]
    folders = [r.folder.name if r.folder is not None else "" for r in runs]
    out = []
    for k, (name, folder) in enumerate(zip(names, folders), start=1):
        if names.count(name) == 1:
            out.append(name)
        elif folder and sum(f == folder for n, f in zip(names, folders) if n == name) == 1:
            out.append(f"{name} · {folder}")
        else:
            out.append(f"{name} · run {k}")
    return out


def finished_run(run: Run) -> RunRecord:
    """A finished run: a folder is read once (one that has not finished is refused there); a
    record already read is used as it is."""
    return run if isinstance(run, RunRecord) else load_run(run)


def with_sample_fields(record: RunRecord[KindT], fields: tuple[str, ...]) -> RunRecord[KindT]:
    """``record`` if every sample has ``fields`` (what a comparison reads), else one line
    naming samples.jsonl, the line and the field."""
    samples = "samples.jsonl" if record.folder is None else record.folder / "samples.jsonl"
    for number, sample in enumerate(record.samples, start=1):
        missing = next((f for f in fields if f not in sample), None)
        if missing is not None:
            raise LocalevalError(f"{samples}: line {number}: field {missing}: missing")
    return record


def of_kind(record: RunRecord, results_type: type[KindT], what: str) -> RunRecord[KindT]:
    """``record``, typed as a run of ``results_type`` if its results are one, else one line
    saying what it is."""
    results = record.results
    if not isinstance(results, results_type):
        raise LocalevalError(f"{record.folder} is not {what} (its results.json has schema "
                             f"{results.schema_!r})")
    return RunRecord(config=record.config, results=results, samples=record.samples,
                     folder=record.folder, started_at=record.started_at,
                     finished_at=record.finished_at)
