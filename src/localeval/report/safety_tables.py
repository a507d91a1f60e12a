"""Console tables of a safety run. They only read results.json; they never recompute a number."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

SHORT = {"general": "General", "cultural-itw": "ITW", "cultural-cg": "CG"}


def _num(value: Any, scale: float = 1.0, digits: int = 1) -> str:
    return "-" if value is None else f"{value * scale:.{digits}f}"


def _model(name: str) -> str:
    return str(name or "(model)").rstrip("/").split("/")[-1]


def table2_tables(results: dict) -> list[Table]:
    """The paper's Table 2 layout (AUPRC points), one table per task (prompt, response) so it
    fits a terminal; empty when no cell has a value."""
    t2 = results.get("table2") or {}
    if not any(v is not None for row in t2.get("rows", []) for v in row["values"].values()):
        return []
    tables = []
    for kind in dict.fromkeys(c.split("/")[0] for c in t2["columns"]):
        cols = [c for c in t2["columns"] if c.startswith(kind + "/")]
        table = Table(title=f"{results['task']} · guard {results['guard']} · {kind} "
                            "classification · AUPRC (Table 2 layout)")
        table.add_column("Model")
        for col in cols:
            _, *rest = col.split("/")
            title = "Avg" if rest == ["avg"] else f"{SHORT.get(rest[0], rest[0])}\n{rest[1].upper()}"
            table.add_column(title, justify="right")
        for row in t2["rows"]:
            table.add_row(_model(row["model"]), *[_num(row["values"][c]) for c in cols])
        table.caption = (f"SEA = {t2.get('sea', 'macro')} mean over local languages; Avg = mean "
                         "of the row's cells" + ("; the response is judged with its prompt."
                                                 if kind == "response" else "."))
        tables.append(table)
    return tables


def per_language_table(results: dict, contexts: tuple[str, ...] = ("with_prompt",
                                                                    "without_prompt")) -> Table:
    """AUPRC with its 95% bootstrap CI, ROC AUC and counts per kind, context, subset, language
    (rows of the given response ``contexts``)."""
    table = Table(title="Per language · AUPRC % [95% CI] · ROC AUC %")
    for col in ("task", "subset", "lang", "n", "harmful", "AUPRC", "95% CI", "ROC AUC",
                "failed", "excluded"):
        table.add_column(col, justify="left" if col in ("task", "subset", "lang") else "right")
    for r in results.get("per_language", []):
        if r["context"] not in contexts:
            continue
        task = r["kind"] + (" (no prompt)" if r["context"] == "without_prompt" else "")
        ci = "-" if r["low"] is None else f"[{_num(r['low'], 100)}, {_num(r['high'], 100)}]"
        table.add_row(task, SHORT.get(r["subset"], r["subset"]), r["lang"], str(r["n"]),
                      str(r["n_harmful"]), _num(r["auprc"], 100), ci, _num(r["roc_auc"], 100),
                      str(r["n_failed"]), str(r["n_excluded"]))
    return table


def language_gap_table(results: dict) -> Table | None:
    """EN minus each local language on paired items (AUPRC points) with the paired 95% CI."""
    rows = results.get("language_gap") or []
    if not rows:
        return None
    table = Table(title="Language gap · EN − local, paired items · AUPRC points")
    for col in ("task", "subset", "lang", "EN", "local", "EN − local", "95% CI", "pairs"):
        table.add_column(col, justify="left" if col in ("task", "subset", "lang") else "right")
    for r in rows:
        ci = "-" if r.get("low") is None else f"[{_num(r['low'], 100)}, {_num(r['high'], 100)}]"
        table.add_row(r["kind"], SHORT.get(r["subset"], r["subset"]), r["lang"],
                      _num(r.get("en"), 100), _num(r.get("sea"), 100), _num(r["gap"], 100), ci,
                      str(r["n_pairs"]))
    return table


def cultural_gap_table(results: dict) -> Table | None:
    """General minus CG per task and side (AUPRC points), read from Table 2."""
    rows = results.get("cultural_gap") or []
    if not rows:
        return None
    table = Table(title="Cultural gap · General − CG · AUPRC points")
    for col in ("model", "task", "side", "General", "CG", "General − CG"):
        table.add_column(col, justify="left" if col in ("model", "task", "side") else "right")
    for r in rows:
        table.add_row(_model(r["model"]), r["kind"], r["side"].upper(), _num(r["general"]),
                      _num(r["cg"]), _num(r["gap"]))
    return table


def print_safety_report(results: dict, console: Console | None = None,
                        contexts: tuple[str, ...] = ("with_prompt", "without_prompt")) -> None:
    """Table 2 (when the run has its subsets), the per-language table, gaps and counts."""
    console = console or Console()
    for table in (*table2_tables(results), per_language_table(results, contexts),
                  language_gap_table(results), cultural_gap_table(results)):
        if table is not None:
            console.print(table)
    for line in results.get("label_policy", {}).values():
        console.print(f"Label policy: {line}")
    console.print(f"{results['n_samples']} samples; {results['n_failed']} failed (left out, "
                  f"never counted as safe); {results['n_excluded']} excluded by the label policy.")
