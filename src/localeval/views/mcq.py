"""The view of multiple-choice runs (TMLU, TMMLU+, CMMLU, custom): the TMLU paper's Table 3
layout and breakdowns, accuracy cards and figures, leaderboard by accuracy, and two runs compared
per subject with an exact McNemar test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from ..errors import LocalevalError
from ..metrics.paired import mcnemar_exact
from ..report.export import PlainTable, plain
from ..report.figures import Figure, mcq_comparison_figure, mcq_figures
from ..report.mcq_tables import (
    discipline_table,
    mcq_tables,
    print_mcq_comparison,
    print_mcq_report,
)
from ..tasks.registry import view_for
from .base import Card, Metric, Ranking, ResultsView, Run, finished_run


class MCQView(ResultsView):
    kind = "mcq"

    def tables(self, results: dict) -> list[Table]:
        return mcq_tables(results)

    def print(self, results: dict, console: Console) -> None:
        print_mcq_report(results, console)

    def cards(self, results: dict) -> list[Card]:
        metrics = results.get("metrics") or {}
        micro, avg = metrics.get("micro") or {}, metrics.get("discipline_average")
        cards = []
        if micro.get("acc") is not None:
            cards.append((f"{100 * micro['acc']:.2f}%", f"accuracy over {micro['n']} questions",
                          False))
        if avg is not None:
            cards.append((f"{100 * avg:.2f}%", "mean of the discipline columns", False))
        return cards

    def figures(self, results: dict, folder: Path | None) -> list[Figure]:
        return list(mcq_figures(results, folder))

    def side_by_side(self, runs: list[tuple[str, dict]],
                     folder: Path | None) -> list[PlainTable | Figure]:
        if len(runs) < 2:
            return []
        figure = mcq_comparison_figure(runs, folder)
        return [table3_rows(runs), *([figure] if figure is not None else [])]

    def store_metrics(self, results: dict) -> list[Metric]:
        m = results.get("metrics") or {}
        micro = m.get("micro") or {}
        out = [("accuracy", m.get("discipline_average", micro.get("acc")), micro.get("n")),
               ("micro", micro.get("acc"), micro.get("n")),
               ("macro", (m.get("macro") or {}).get("acc"), None)]
        return out + [(f"subject/{s}", r.get("acc"), r.get("n"))
                      for s, r in (m.get("by_subject") or {}).items()]

    def ranking(self, names: list[str]) -> Ranking:
        return Ranking(["accuracy", "micro", "macro"], "accuracy",
                       unit="accuracy %: accuracy = the paper's Average (mean of the "
                            "discipline columns), micro = every question pooled, macro = mean "
                            "of the subjects")

    def compare(self, run_a: Run, run_b: Run) -> dict[str, Any]:
        return compare_mcq_runs(run_a, run_b)

    def print_comparison(self, comparison: dict, console: Console) -> None:
        print_mcq_comparison(comparison, console)


def table3_rows(runs: list[tuple[str, dict]]) -> PlainTable:
    """The TMLU paper's Table 3 with one row per run (direct and CoT rows, as the paper has)."""
    tables = [plain(discipline_table(results)) for _, results in runs]
    header = tables[0].header
    rows = [[label, *t.rows[0][1:]] for (label, _), t in zip(runs, tables) if t.header == header]
    return PlainTable("Accuracy % by discipline, run by run", ["Run", *header[1:]], rows,
                      tables[0].right, "Runs whose discipline columns differ are left out.")


def _paired(pairs: list[tuple[dict, dict]]) -> dict[str, Any]:
    n = len(pairs)
    a_right = sum(bool(a["correct"]) for a, _ in pairs)
    b_right = sum(bool(b["correct"]) for _, b in pairs)
    a_only = sum(bool(a["correct"]) and not b["correct"] for a, b in pairs)
    b_only = sum(bool(b["correct"]) and not a["correct"] for a, b in pairs)
    return {"n": n, "acc_a": a_right / n, "acc_b": b_right / n, "diff": (b_right - a_right) / n,
            "a_only": a_only, "b_only": b_only, "p_mcnemar": mcnemar_exact(a_only, b_only)}


def compare_mcq_runs(run_a: Run, run_b: Run) -> dict[str, Any]:
    """B minus A accuracy overall and per subject, on the questions both runs answered (failed
    requests left out), with the exact McNemar p-value of each difference."""
    a, b = finished_run(run_a), finished_run(run_b)
    run_a, run_b = a.folder, b.folder
    for record, folder in ((a, run_a), (b, run_b)):
        if not isinstance(view_for(record.results), MCQView):
            raise LocalevalError(f"{folder} is not a multiple-choice run")
    theirs = {s["id"]: s for s in b.samples if s.get("correct") is not None}
    pairs = [(s, theirs[s["id"]]) for s in a.samples
             if s.get("correct") is not None and s["id"] in theirs]
    if not pairs:
        raise LocalevalError(f"{run_a} and {run_b} share no answered question (same task and "
                             "data?)")
    subjects: dict[str, list] = {}
    for pair in pairs:
        subjects.setdefault(pair[0]["subject"], []).append(pair)
    return {"a": str(run_a), "b": str(run_b), "model_a": a.results.get("model"),
            "model_b": b.results.get("model"), "task": a.results.get("task"),
            "n_only_a": len(a.samples) - len(pairs), "n_only_b": len(b.samples) - len(pairs),
            "overall": _paired(pairs),
            "by_subject": {name: _paired(group) for name, group in sorted(subjects.items())}}
