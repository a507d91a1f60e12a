"""Console tables of a contamination run (schema ``localeval.contamination/``): per k, each
dataset's median (and mean) Min-K% Prob and Min-K%++, the median gap, and ROC-AUC when
membership labels were given. Read from results.json only."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

TITLES = {"min_k": "Min-K% Prob", "min_k_pp": "Min-K%++"}


def _score_table(results: dict, score: str) -> Table | None:
    sources = results["sources"]
    names = [n for n in results.get("source_order", sources) if sources[n].get(score)]
    if not names:
        return None
    table = Table(title=f"{TITLES[score]}: median (mean) per dataset; higher = more likely seen "
                        "in training")
    table.add_column("k %", justify="right")
    for name in names:
        table.add_column(f"{name} (n={sources[name][score][results['k'][0]]['n']})",
                         justify="right")
    gaps = {g: v[score] for g, v in results.get("median_gaps", {}).items() if score in v}
    for gap in gaps:
        table.add_column(f"median {gap}", justify="right")
    for k in results["k"]:
        cells = [f"{sources[n][score][k]['median']:.3f} ({sources[n][score][k]['mean']:.3f})"
                 for n in names]
        table.add_row(k, *cells, *(f"{gaps[g][k]:+.3f}" for g in gaps))
    return table


def _auc_table(results: dict) -> Table | None:
    auc = results.get("roc_auc")
    if not auc or "min_k" not in auc:
        return None
    table = Table(title=f"ROC-AUC, members vs non-members (n={auc['n']}, "
                        f"{auc['n_members']} members)")
    table.add_column("k %", justify="right")
    for score in ("min_k", "min_k_pp"):
        table.add_column(TITLES[score], justify="right")
    for k in results["k"]:
        table.add_row(k, *(f"{auc[s][k]:.3f}" if auc.get(s) else "unavailable"
                           for s in ("min_k", "min_k_pp")))
    return table


def contamination_tables(results: dict) -> list[Table]:
    tables = (_score_table(results, "min_k"), _score_table(results, "min_k_pp"),
              _auc_table(results))
    return [t for t in tables if t is not None]


def print_contamination_report(results: dict, console: Console | None = None) -> None:
    console = console or Console()
    for table in contamination_tables(results):
        console.print(table)
    if not any(s.get("min_k_pp") for s in results["sources"].values()):
        console.print("Min-K%++ unavailable: the backend gives no next-token distribution "
                      "(an HTTP server); Min-K% is exact.")
    console.print(f"Scores are mean log-probs (<= 0); the TMLU paper reports their negation. "
                  f"{results['n_samples']} texts, {results['n_failed']} failed.")
    if results.get("roc_auc", {}).get("note"):
        console.print(f"ROC-AUC: {results['roc_auc']['note']}")
