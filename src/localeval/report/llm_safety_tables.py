"""Console tables of an LLM safety run (schema ``localeval.llm-safety/``): per language and per
subset, the harmful-response rate on harmful prompts and the refusal rates, with 95% CIs and
counts. Read from results.json only."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

RATES = (("harmful_response_rate", "harmful responses\n(harmful prompts)"),
         ("refusal_rate_harmful", "refusals\n(harmful prompts)"),
         ("refusal_rate_safe", "over-refusals\n(safe prompts)"))


def _cell(rate: dict) -> str:
    if rate["rate"] is None:
        return "-"
    ci = f" [{100 * rate['low']:.1f}, {100 * rate['high']:.1f}]" if rate["low"] is not None \
        else ""
    return f"{100 * rate['rate']:.1f}{ci} (n={rate['n']})"


def _table(title: str, rows: dict[str, dict]) -> Table:
    table = Table(title=title)
    table.add_column("")
    for _, header in RATES:
        table.add_column(header, justify="right")
    table.add_column("failed", justify="right")
    table.add_column("refusal\nunknown", justify="right")
    for name, r in rows.items():
        table.add_row(name, *(_cell(r[key]) for key, _ in RATES), str(r["n_failed"]),
                      str(r["n_refusal_unknown"]))
    return table


def llm_safety_tables(results: dict) -> list[Table]:
    tables = [_table(f"LLM safety, judged by {results['judge']} (harmful = P(harmful) > "
                     f"{results['threshold']:g}); % with 95% CI",
                     {"all": results["overall"], **results["by_lang"]})]
    if len(results["by_subset"]) > 1:
        tables.append(_table("By subset", results["by_subset"]))
    return tables


def print_llm_safety_report(results: dict, console: Console | None = None) -> None:
    console = console or Console()
    for table in llm_safety_tables(results):
        console.print(table)
    console.print(f"{results['n_samples']} prompts; {results['n_failed']} failed (left out, "
                  "never counted as safe or refused). Refusals: rule-based detector "
                  "(docs/fidelity.md).")
