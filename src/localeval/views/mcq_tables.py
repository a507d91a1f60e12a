"""Tables of a multiple-choice run, built from its typed results: the TMLU paper's Table 3
layout, then accuracy by level, year and subject; and two runs compared per subject. They only
read results; they never recompute."""

from __future__ import annotations

from rich.text import Text as RichText

from ..metrics.proportion import NAME
from ..records.mcq import Accuracy, Macro, MCQComparison, MCQResults, has_average
from ..render.cells import interval
from ..render.table import Column, DataTable, Interval, Number, TableBuilder, Text, columns

# Column titles of the TMLU paper's Table 3.
DISCIPLINE_SHORT = {"Social Science": "Social Sci.", "Taiwan Specific": "Taiwan Spe."}

# Accuracy is a proportion: its interval is the Wilson score interval that results.json keeps
# (``low``/``high``), honest at 0 of n and n of n, where the standard error is 0.
CI_NOTE = f"95% CI = {NAME}"


def _with_ci(row: Accuracy | Macro | None) -> str:
    """Accuracy % and its stored interval, for a caption; a run from before intervals were
    stored (or the macro mean, which is not a proportion) shows the accuracy alone."""
    if row is None or row.acc is None:
        return "-"
    ci = interval(row.low, row.high) if isinstance(row, Accuracy) else "-"
    return f"{100 * row.acc:.2f}" + ("" if ci == "-" else f" {ci}")


def _acc(row: Accuracy | None) -> Number:
    return Number(None if row is None else row.acc, digits=2, scale=100)


def discipline_table(results: MCQResults) -> DataTable:
    """One row per model, columns = disciplines + Average (mean of discipline scores); a
    custom task's one placeholder column without an Average (it would be micro again)."""
    m = results.metrics
    shown = [d for d in results.disciplines if d in m.by_discipline]
    micro = m.micro
    paper = f" ({results.paper_table})" if results.paper_table else ""
    averaged = has_average(results.disciplines)
    said = f"Average = mean of the discipline columns{paper}. " if averaged else \
        "One discipline (a custom task), so no Average. "
    table = TableBuilder(
        f"{results.task} · {results.method} · {results.shots}-shot"
        f"{' CoT' if results.cot else ''} · accuracy %",
        [Column("Model"), *(Column(DISCIPLINE_SHORT.get(d, d), True, d) for d in shown),
         *([Column("Average", True)] if averaged else [])],
        f"{said}Micro {_with_ci(micro)} over {micro.n} questions ({CI_NOTE}); macro "
        f"{_with_ci(m.macro)}: mean of the subjects.")
    model = str(results.model or "").rstrip("/").split("/")[-1]
    table.add(model, *(_acc(m.by_discipline[d]) for d in shown),
              *([Number(results.average, digits=2, scale=100)] if averaged else []))
    return table.build()


def breakdown_table(rows: dict[str, Accuracy], title: str) -> DataTable | None:
    if not rows:
        return None
    first = title.split()[0]
    table = TableBuilder(title, columns(first, "n", "accuracy %", "95% CI", "unanswered"),
                         f"{CI_NOTE}.")
    for name, row in rows.items():
        table.add(name, row.n, _acc(row), Interval(row.low, row.high), row.n_unanswered)
    return table.build()


def mcq_tables(results: MCQResults, subjects: bool = True) -> list[DataTable]:
    """The TMLU paper's Table 3 layout, then accuracy by level, year and subject."""
    m = results.metrics
    breakdowns = [(m.by_level, "Level breakdown"), (m.by_year, "Year breakdown")]
    if subjects:
        breakdowns.append((m.by_subject, "Subject accuracy"))
    tables = [breakdown_table(rows, title) for rows, title in breakdowns]
    return [discipline_table(results), *(t for t in tables if t is not None)]


def mcq_notes(results: MCQResults) -> list[RichText]:
    """What the console says after the tables: failed and unanswered questions."""
    from ..store.executor import rerun_advice  # a rerun helps only a transient failure

    notes = []
    if results.failed:
        notes.append(RichText(
            f"{results.n_failed or len(results.failed)} question(s) failed (the request, not "
            f"the model) and are left out of accuracy; {rerun_advice(results.data())} (first: "
            f"{', '.join(results.failed[:5])})", style="red"))
    if results.unanswered:
        notes.append(RichText(
            f"{len(results.unanswered)} question(s) unanswered (no extractable answer, counted "
            f"wrong); see 'error' in samples.jsonl (first: {', '.join(results.unanswered[:5])})",
            style="yellow"))
    return notes


def comparison_table(comparison: MCQComparison) -> DataTable:
    """B minus A accuracy per subject on shared questions, with exact McNemar p-values: each
    is micro (every shared question pooled), as the cards name it (issue 51 item 4)."""
    table = TableBuilder(f"{comparison.task}: B − A micro accuracy on the questions both "
                         "answered (exact McNemar)",
                         columns("subject", "n", "A %", "B %", "B − A", "A right,\nB wrong",
                                 "B right,\nA wrong", "p"))
    rows = {"all": comparison.overall, **comparison.by_subject}
    for name, r in rows.items():
        table.add(name, r.n, Number(r.acc_a, 2, 100), Number(r.acc_b, 2, 100),
                  Number(r.diff, 2, 100, sign=True), r.a_only, r.b_only, p_value(r.p_mcnemar))
    return table.build()


def p_value(p: float) -> Number | Text:
    """A p-value as papers print it: three decimals, "<0.001" below that."""
    return Text("<0.001") if p < 0.001 else Number(p, 3)


def comparison_notes(c: MCQComparison) -> list[str]:
    # "only" had two meanings in one output (issue 69): the columns' discordant pairs and the
    # questions one run lacks; each is now said in its own words
    return [f"A: {c.a} ({c.name_a or c.model_a})", f"B: {c.b} ({c.name_b or c.model_b}); questions "
            f"the other run lacks: {c.n_only_a} (A), {c.n_only_b} (B)"]

