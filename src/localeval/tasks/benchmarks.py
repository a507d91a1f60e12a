"""Multiple-choice benchmarks declared by name, apart from the kind of task that runs them: a
benchmark is the data it reads (a dataset of the catalog: its loader, subjects and disciplines)
and the options it fixes (its prompt style and scorer: method, chain of thought, extraction).
Each is a task name of its own (``--task tmlu-cot``, ``localeval tasks``). Its options are the
run's defaults: an option not given is the benchmark's, never the kind's default (issue 61: the
command line once passed every default and so ran tmlu-cot as likelihood without CoT). An option
it fixes that acts on the requests (method, CoT, prompt style) cannot be given another value:
that is another protocol, refused in one line; a rescorable one (the extraction rule) may, as
``rescore`` does. Its runs record every option as any multiple-choice run does, so ``rescore``
and the leaderboard read them alike.

A new one is one declaration in :data:`BENCHMARKS`::

    "tmlu-cot": Benchmark("tmlu", "TMLU, 5-shot chain of thought ...",
                          {"method": "generation", "cot": True}),
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from ..data.catalog import BUILTIN_TASKS
from ..errors import LocalevalError
from .mcq_options import MCQOptions
from .options import declared_value, flag_of, make_options


@dataclass(frozen=True)
class Benchmark:
    dataset: str  # the catalog's dataset it reads (data/catalog.py BUILTIN_TASKS)
    description: str
    options: Mapping[str, Any] = field(default_factory=dict)  # MCQOptions fields it fixes

    def __post_init__(self) -> None:
        if self.dataset not in BUILTIN_TASKS:
            raise ValueError(f"benchmark over unknown dataset {self.dataset!r}")
        unknown = set(self.options) - {f.name for f in fields(MCQOptions)}
        if unknown:
            raise ValueError(f"benchmark options that MCQOptions lacks: {sorted(unknown)}")


BENCHMARKS: dict[str, Benchmark] = {
    # TMLU §4: the CoT rows, with the paper's prompt and MiuLab's answer rules
    "tmlu-cot": Benchmark("tmlu", "TMLU, 5-shot chain of thought (the paper's CoT rows): "
                          "generation, the paper's prompt, MiuLab's answer rules",
                          {"method": "generation", "cot": True, "prompt_style": "tmlu",
                           "extract": "tmlu"}),
}


def dataset_of(task: str) -> str:
    """The catalog dataset a multiple-choice task reads: a benchmark's, else its own name (a
    built-in dataset, or a custom task's name)."""
    benchmark = BENCHMARKS.get(task)
    return benchmark.dataset if benchmark else task


def benchmark_defaults(task: str) -> Mapping[str, Any]:
    """The options a benchmark sets (empty for any other task): the defaults of its runs."""
    benchmark = BENCHMARKS.get(task)
    return benchmark.options if benchmark else {}


def benchmark_options(task: str, given: Mapping[str, Any]) -> MCQOptions:
    """The options of a run of ``task``: those given, else the benchmark's own, else the
    kind's defaults. A given value that contradicts a choice the benchmark fixes (any of its
    options but a rescorable one) is one line: a run with it is not that benchmark."""
    own = benchmark_defaults(task)
    # None is "not given" (an Optional option's default): the benchmark's own value stands
    given = {k: v for k, v in given.items() if not (k in own and v is None)}
    fields = {f.name: f for f in dataclasses.fields(MCQOptions)}
    for name, value in own.items():  # before the options are made: their checks come second
        f = fields[name]
        given_value = declared_value(MCQOptions, f, given[name], name) if name in given \
            else value
        if not f.metadata.get("rescorable") and given_value != value:
            raise LocalevalError(
                f"{_said(f, given_value)} is not {task}, which fixes {_said(f, value)} (its "
                f"protocol): for another, run --task {BENCHMARKS[task].dataset} with the "
                "options you want")
    return make_options(MCQOptions, task, {**own, **given})


def _said(f: dataclasses.Field[Any], value: Any) -> str:
    """An option's value as its flag says it: ``--method likelihood``, ``--cot off``."""
    return f"{flag_of(f)} {'on' if value is True else 'off' if value is False else value}"
