"""The view of multiple-choice runs (TMLU, TMMLU+, CMMLU, custom): the TMLU paper's Table 3
layout and breakdowns, accuracy cards and figures, leaderboard by the paper's Average, and two
runs compared per subject with an exact McNemar test."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text as RichText

from ..data.catalog import BUILTIN_TASKS
from ..errors import LocalevalError
from ..metrics.paired import mcnemar_exact
from ..records import RecordError, mcq
from ..records.mcq import MCQComparison, MCQResults, PairedAccuracy, mcq_samples
from ..records.metric_names import metric
from ..records.samples import MCQSample
from ..render.figures import Figure
from ..render.table import Column, DataTable, Row, Text
from ..store.runs import RunRecord
from ..tasks.base import MCQ_PROTOCOL
from ..tasks.benchmarks import dataset_of
from ..tasks.mcq_options import MCQOptions
from ..tasks.run_spec import RunSpec
from .base import (
    Card,
    Metric,
    Ranking,
    ResultsView,
    Run,
    distinct_names,
    finished_run,
    of_kind,
    with_sample_fields,
)
from .mcq_figures import mcq_comparison_figure, mcq_figures
from .mcq_robustness import robustness_cards, robustness_metrics, robustness_tables
from .mcq_tables import (
    comparison_notes,
    comparison_table,
    discipline_table,
    mcq_notes,
    mcq_tables,
)

# The three accuracies of a run, each with one name wherever a person reads it (issue 51 item
# 4): the card, the terminal and HTML reports, the leaderboard, the viewer, the Parquet export
# and the results store, whose metric names these are.
AVERAGE = "average = the paper's Average (mean of the discipline columns)"
MICRO = "micro = every question pooled"
MACRO = "macro = mean of the subjects"


class MCQView(ResultsView[MCQResults]):
    kind = "mcq"
    schema = mcq.SCHEMA
    Results = MCQResults
    Options = MCQOptions
    compares = True

    def tables(self, results: MCQResults) -> list[DataTable]:
        """The headline table, then the robustness table of a run made with
        --permute-options or --repeats (what such a run was for: headline too), then the
        breakdowns."""
        first, *rest = mcq_tables(results)
        return [first, *robustness_tables(results), *rest]

    def headline(self, results: MCQResults) -> int:
        return 1 + len(robustness_tables(results))

    def notes(self, results: MCQResults) -> list[RichText]:
        return mcq_notes(results)

    def cards(self, results: MCQResults) -> list[Card]:
        """The run's accuracies, each under the one name the leaderboard, the viewer and the
        exports give it (issue 51 item 4), the ranked one first."""
        m, avg = results.metrics, results.average
        cards = []
        if avg is not None:
            cards.append(Card(f"{100 * avg:.2f}%", "average: mean of the discipline columns "
                                                   "(the paper's Average)"))
        if m.micro.acc is not None:
            cards.append(Card(f"{100 * m.micro.acc:.2f}%",
                              f"micro: every question pooled ({m.micro.n} questions)"))
        if m.macro is not None and m.macro.acc is not None:
            many = f" ({m.macro.n_subjects} subjects)" if m.macro.n_subjects else ""
            cards.append(Card(f"{100 * m.macro.acc:.2f}%", f"macro: mean of the subjects{many}"))
        return cards + robustness_cards(results)

    def figures(self, results: MCQResults, folder: Path | None) -> list[Figure]:
        return list(mcq_figures(results, folder))

    def side_by_side(self, runs: list[tuple[str, MCQResults]],
                     folder: Path | None) -> list[DataTable | Figure]:
        if len(runs) < 2:
            return []
        figure = mcq_comparison_figure(runs, folder)
        return [table3_rows(runs), *([figure] if figure is not None else [])]

    def store_metrics(self, results: MCQResults) -> list[Metric]:
        m, avg = results.metrics, results.average
        out: list[Metric] = [(metric("average"), avg, m.micro.n)] if avg is not None else []
        out += [(metric("micro"), m.micro.acc, m.micro.n),
                (metric("macro"), m.macro.acc if m.macro else None, None)]
        return out + [(metric("subject", s), r.acc, r.n) for s, r in m.by_subject.items()] + \
            robustness_metrics(results)

    def ranking(self, names: list[str]) -> Ranking:
        """By the paper's Average; a task whose runs have none (a custom task: no discipline
        columns) by micro, and the caption says so."""
        if "average" in names:
            return Ranking(["average", "micro", "macro"], "average",
                           unit=f"accuracy %: {AVERAGE}, {MICRO}, {MACRO}")
        return Ranking(["micro", "macro"], "micro",
                       unit=f"accuracy %: {MICRO}, {MACRO}; ranked by micro (no discipline "
                            "columns, so no average)")

    def paper_protocol(self, task: str) -> dict[str, str] | None:
        """TMLU, CMMLU, TMMLU+ and a benchmark over one (tmlu-cot): the facts of the run of
        the task's paper protocol (:meth:`RunSpec.paper`) over the dataset's Hub data."""
        spec = BUILTIN_TASKS.get(dataset_of(task))
        if spec is None:
            return None
        return RunSpec.paper(task, MCQ_PROTOCOL, f"hf://{spec.hub_id}").protocol_facts()

    def compare(self, run_a: Run, run_b: Run) -> MCQComparison:
        return compare_mcq_runs(run_a, run_b)

    def comparison_tables(self, comparison: MCQComparison) -> list[DataTable]:
        return [comparison_table(comparison)]

    def comparison_notes(self, comparison: MCQComparison) -> list[str]:
        return comparison_notes(comparison)


def table3_rows(runs: list[tuple[str, MCQResults]]) -> DataTable:
    """The TMLU paper's Table 3 with one row per run (direct and CoT rows, as the paper has)."""
    tables = [discipline_table(results) for _, results in runs]
    first = tables[0]
    rows = [Row((Text(label), *t.rows[0].cells[1:])) for (label, _), t in zip(runs, tables)
            if t.header == first.header]
    return DataTable("Accuracy % by discipline, run by run", (Column("Run"), *first.columns[1:]),
                     tuple(rows), "Runs whose discipline columns differ are left out.")


def _paired(pairs: list[tuple[MCQSample, MCQSample]]) -> PairedAccuracy:
    n = len(pairs)
    a_right = sum(a.correct is True for a, _ in pairs)
    b_right = sum(b.correct is True for _, b in pairs)
    a_only = sum(a.correct is True and not b.correct for a, b in pairs)
    b_only = sum(b.correct is True and not a.correct for a, b in pairs)
    return PairedAccuracy(n=n, acc_a=a_right / n, acc_b=b_right / n,
                          diff=(b_right - a_right) / n, a_only=a_only, b_only=b_only,
                          p_mcnemar=mcnemar_exact(a_only, b_only))


MCQRun = RunRecord[MCQResults, MCQSample]


def typed_samples(record: RunRecord[MCQResults]) -> MCQRun:
    """``record`` with its samples as multiple-choice sample records: a folder's are already;
    a script's (a record kept in memory, its samples JSON data) are read into them, or one
    line naming samples.jsonl, the line and the field."""
    file = "samples.jsonl" if record.folder is None else record.folder / "samples.jsonl"
    try:
        samples = mcq_samples(record.samples, str(file))
    except RecordError as e:
        raise LocalevalError(str(e)) from None
    return RunRecord(config=record.config, results=record.results, samples=samples,
                     folder=record.folder, started_at=record.started_at,
                     finished_at=record.finished_at)


def consistent_samples(record: MCQRun) -> MCQRun:
    """``record`` if its samples and results agree (``MCQResults.disagreement``: a folder is
    checked as it is read, a record kept in memory here), else one line naming the file."""
    found = record.results.disagreement(record.samples)
    if found:
        file, problem = found
        where = file if record.folder is None else record.folder / file
        raise LocalevalError(f"{where}: {problem}")
    return record


def compare_mcq_runs(run_a: Run, run_b: Run) -> MCQComparison:
    """B minus A micro accuracy overall and per subject, on the questions both runs answered (failed
    requests left out), with the exact McNemar p-value of each difference."""
    a, b = (consistent_samples(typed_samples(with_sample_fields(
        of_kind(finished_run(r), MCQResults, "a multiple-choice run"), ("id", "subject"))))
        for r in (run_a, run_b))
    dir_a, dir_b = a.folder, b.folder
    theirs = {s.id: s for s in b.samples if s.correct is not None}
    pairs = [(s, theirs[s.id]) for s in a.samples if s.correct is not None and s.id in theirs]
    if not pairs:
        raise LocalevalError(f"{dir_a} and {dir_b} share no answered question (same task and "
                             "data?)")
    subjects: dict[str, list[tuple[MCQSample, MCQSample]]] = {}
    for pair in pairs:
        subjects.setdefault(str(pair[0].subject), []).append(pair)
    name_a, name_b = distinct_names([a, b])
    return MCQComparison(
        a=str(dir_a), b=str(dir_b), name_a=name_a, name_b=name_b, model_a=a.results.model,
        model_b=b.results.model,
        task=a.results.task, n_only_a=len(a.samples) - len(pairs),
        n_only_b=len(b.samples) - len(pairs), overall=_paired(pairs),
        by_subject={name: _paired(group) for name, group in sorted(subjects.items())})
