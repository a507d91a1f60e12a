"""Multiple-choice benchmarks declared by name, apart from the kind of task that runs them: a
benchmark is the data it reads (a dataset of the catalog: its loader, subjects and disciplines)
and the options it fixes (its prompt style and scorer: method, chain of thought, extraction).
Each is a task name of its own (``--task tmlu-cot``, ``localeval tasks``); options given with it
override its own, and its runs record every option as any multiple-choice run does, so
``rescore`` and the leaderboard read them alike.

A new one is one declaration in :data:`BENCHMARKS`::

    "tmlu-cot": Benchmark("tmlu", "TMLU, 5-shot chain of thought ...",
                          {"method": "generation", "cot": True}),
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from ..data.catalog import BUILTIN_TASKS
from .mcq_options import MCQOptions


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


def with_benchmark_options(task: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """The options of a run of ``task``: a benchmark's own, overridden by those given."""
    benchmark = BENCHMARKS.get(task)
    return {**(benchmark.options if benchmark else {}), **given}
