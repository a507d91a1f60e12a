"""Console tables of an LLM safety run (schema ``localeval.llm-safety/``): per language and per
subset, the harmful-response rate on harmful prompts and the refusal rates, with their Wilson
score 95% intervals and counts. Read from results.json only."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from ..metrics.proportion import NAME

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
    table = Table(title=title, caption=f"% [95% CI: {NAME}] (n = responses it is over).")
    table.add_column("")
    for _, header in RATES:
        table.add_column(header, justify="right")
    table.add_column("failed", justify="right")
    table.add_column("refusal\nunknown", justify="right")
    for name, r in rows.items():
        table.add_row(name, *(_cell(r[key]) for key, _ in RATES), str(r["n_failed"]),
                      str(r["n_refusal_unknown"]))
    return table


GOLD = ("safe", "sensitive", "harmful")
SUBSET_NAMES = {"general": "General", "cultural-itw": "Cultural ITW", "cultural-cg": "Cultural CG"}


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def d2_layout_table(results: dict) -> Table | None:
    """The authors' App. D.2 layout: refusal and safe-response rates (% of responses) by the
    prompt's gold label, per subset and side, then each side's mean over subsets."""
    d2 = results.get("d2")
    if not d2 or not d2["rows"]:
        return None
    table = Table(title="App. D.2 layout: % of responses refused / judged safe, by the "
                        "prompt's gold label")
    table.add_column("")
    for rate in ("refused", "safe response"):
        for gold in GOLD:
            table.add_column(f"{rate}\n{gold}", justify="right")
    for row in d2["rows"]:
        rates = row["rates"]
        table.add_row(f"{SUBSET_NAMES.get(row['subset'], row['subset'])} "
                      f"{row['side'].upper()}",
                      *(_pct(rates[g][k]["rate"]) if g in rates else "-"
                        for k in ("refusal", "safe_response") for g in GOLD))
    for side, cells in d2["average"].items():
        table.add_row(f"Average {side.upper()}", *(_pct(cells.get(g, {}).get(k))
                                                   for k in ("refusal", "safe_response")
                                                   for g in GOLD))
    return table


def llm_safety_tables(results: dict) -> list[Table]:
    tables = [_table(f"LLM safety, judged by {results['judge']} (harmful = P(harmful) > "
                     f"{results['threshold']:g}); % with Wilson 95% CI",
                     {"all": results["overall"], **results["by_lang"]})]
    if len(results["by_subset"]) > 1:
        tables.append(_table("By subset", results["by_subset"]))
    d2 = d2_layout_table(results)
    return tables + ([d2] if d2 else [])


def print_llm_safety_report(results: dict, console: Console | None = None) -> None:
    console = console or Console()
    for table in llm_safety_tables(results):
        console.print(table)
    how = {"judge": "the authors' LLM refusal judge", "detector": "rule-based detector"}
    console.print(f"{results['n_samples']} responses "
                  f"({results.get('responses_per_prompt', 1)} per prompt); "
                  f"{results['n_failed']} failed (left out, never counted as safe or refused). "
                  f"Refusals: {how[results.get('refusal', 'detector')]} (docs/fidelity.md).")
