"""Console tables of a multiple-choice run. They only read results.json; they never recompute."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from ..metrics.proportion import NAME
from .cells import interval

# Column titles of the TMLU paper's Table 3.
DISCIPLINE_SHORT = {"Social Science": "Social Sci.", "Taiwan Specific": "Taiwan Spe."}


# Accuracy is a proportion: its interval is the Wilson score interval that results.json keeps
# (``low``/``high``), honest at 0 of n and n of n, where the standard error is 0.
CI_NOTE = f"95% CI = {NAME}"


def _with_ci(row: dict | None) -> str:
    """Accuracy % and its stored interval; a run from before intervals were stored (or the
    macro mean, which is not a proportion) shows the accuracy alone."""
    if not row or row.get("acc") is None:
        return "-"
    ci = interval(row.get("low"), row.get("high"))
    return f"{100 * row['acc']:.2f}" + ("" if ci == "-" else f" {ci}")


def discipline_table(results: dict) -> Table:
    """One row per model, columns = disciplines + Average (mean of discipline scores)."""
    m = results["metrics"]
    table = Table(title=f"{results['task']} · {results['method']} · {results['shots']}-shot"
                        f"{' CoT' if results.get('cot') else ''} · accuracy %")
    table.add_column("Model")
    shown = [d for d in results["disciplines"] if d in m["by_discipline"]]
    for d in shown:
        table.add_column(DISCIPLINE_SHORT.get(d, d), justify="right")
    table.add_column("Average", justify="right")
    avg = m.get("discipline_average")
    model = str(results.get("model") or "").rstrip("/").split("/")[-1]
    table.add_row(model, *[_acc(m["by_discipline"][d]) for d in shown],
                  f"{100 * avg:.2f}" if avg is not None else "-")
    paper = f" ({results['paper_table']})" if results.get("paper_table") else ""
    table.caption = (f"Average = mean of the discipline columns{paper}. "
                     f"Micro {_with_ci(m['micro'])} over {m['micro']['n']} questions "
                     f"({CI_NOTE}); macro {_with_ci(m.get('macro'))}: mean of the subjects.")
    return table


def _acc(row: dict | None) -> str:
    return "-" if not row or row.get("acc") is None else f"{100 * row['acc']:.2f}"


def breakdown_table(results: dict, key: str, title: str) -> Table | None:
    rows = results["metrics"].get(key) or {}
    if not rows:
        return None
    table = Table(title=title, caption=f"{CI_NOTE}.")
    for col in (title.split()[0], "n", "accuracy %", "95% CI", "unanswered"):
        table.add_column(col, justify="left" if col == title.split()[0] else "right")
    for name, row in rows.items():
        table.add_row(name, str(row["n"]), _acc(row), interval(row.get("low"), row.get("high")),
                      str(row.get("n_unanswered", 0)))
    return table


def mcq_tables(results: dict, subjects: bool = True) -> list[Table]:
    """The TMLU paper's Table 3 layout, then accuracy by level, year and subject."""
    breakdowns = [("by_level", "Level breakdown"), ("by_year", "Year breakdown")]
    if subjects:
        breakdowns.append(("by_subject", "Subject accuracy"))
    tables = [breakdown_table(results, key, title) for key, title in breakdowns]
    return [discipline_table(results), *(t for t in tables if t is not None)]


def print_mcq_report(results: dict, console: Console | None = None, subjects: bool = True) -> None:
    console = console or Console()
    for table in mcq_tables(results, subjects):
        console.print(table)
    failed = results.get("failed") or []
    if failed:
        from ..store.executor import rerun_advice  # a rerun helps only a transient failure

        console.print(f"[red]{results.get('n_failed', len(failed))} question(s) failed (the "
                      f"request, not the model) and are left out of accuracy; "
                      f"{rerun_advice(results)} (first: {', '.join(failed[:5])})")
    missing = results.get("unanswered") or []
    if missing:
        console.print(f"[yellow]{len(missing)} question(s) had no extractable answer and count as "
                      f"wrong; see 'error' in samples.jsonl (first: {', '.join(missing[:5])})")


def print_mcq_comparison(comparison: dict, console: Console | None = None) -> None:
    """B minus A accuracy per subject on shared questions, with exact McNemar p-values."""
    console = console or Console()
    table = Table(title=f"{comparison['task']}: B − A accuracy on the questions both answered "
                        "(exact McNemar)")
    for col in ("subject", "n", "A %", "B %", "B − A", "A only", "B only", "p"):
        table.add_column(col, justify="left" if col == "subject" else "right")
    rows = {"all": comparison["overall"], **comparison["by_subject"]}
    for name, r in rows.items():
        table.add_row(name, str(r["n"]), f"{100 * r['acc_a']:.2f}", f"{100 * r['acc_b']:.2f}",
                      f"{100 * r['diff']:+.2f}", str(r["a_only"]), str(r["b_only"]),
                      f"{r['p_mcnemar']:.3g}")
    console.print(table)
    console.print(f"A: {comparison['a']} ({comparison['model_a']})\nB: {comparison['b']} "
                  f"({comparison['model_b']}); questions in one run only: "
                  f"{comparison['n_only_a']} (A), {comparison['n_only_b']} (B)")
