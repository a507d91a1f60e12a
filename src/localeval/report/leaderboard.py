"""The leaderboard of a task's recorded runs (from the results store): which numbers rank them
(accuracy, the paper's "Average", for multiple choice; PR-AUC per Table 2 column, or the overall
PR-AUC without the paper's subsets, for safeguards; the harmful-response rate, lowest first, for
LLM safety), best first, runs without the number last."""

from __future__ import annotations

from typing import Any

from .export import PlainTable


def _columns(runs: list[dict[str, Any]]) -> tuple[list[str], str | None, bool]:
    """(metric columns, the one that ranks, whether lower is better)."""
    names = list(dict.fromkeys(n for r in runs for n in r["metrics"]))
    schema = runs[0]["schema"] if runs else ""
    if schema.startswith("localeval.safety/"):
        table2 = [n for n in names if n.startswith("table2/")]
        cols = table2 or [n for n in names if n.startswith("auprc/")]
        rank = "table2/prompt/avg" if "table2/prompt/avg" in cols else (cols[0] if cols else None)
        return cols, rank, False
    if schema.startswith("localeval.llm-safety/"):
        return names, "harmful_response_rate", True
    if schema.startswith("localeval.contamination/"):
        return names, None, False
    return ["accuracy", "micro", "macro"], "accuracy", False


def leaderboard(runs: list[dict[str, Any]]) -> dict[str, Any]:
    columns, rank_by, lower = _columns(runs)

    def key(run: dict) -> tuple:
        value = run["metrics"].get(rank_by) if rank_by else None
        return (value is None, (value if lower else -value) if value is not None else 0)

    ordered = sorted(runs, key=key) if rank_by else runs
    rows = [{"rank": i, "model": r["model"], "folder": r["folder"],
             "finished_at": r["finished_at"],
             "values": {c: r["metrics"].get(c) for c in columns}}
            for i, r in enumerate(ordered, start=1)]
    return {"rank_by": rank_by, "lower_is_better": lower, "columns": columns, "rows": rows}


def leaderboard_table(task: str, board: dict[str, Any]) -> PlainTable:
    percent = not any(c.startswith(("min_k", "min_k_pp")) for c in board["columns"])

    def cell(v):
        return "-" if v is None else (f"{100 * v:.2f}" if percent else f"{v:.3f}")

    order = "lowest" if board["lower_is_better"] else "highest"
    title = f"{task} leaderboard" + (f", by {board['rank_by']} ({order} first)"
                                     if board["rank_by"] else "")
    header = ["#", "model", *board["columns"], "finished", "run folder"]
    rows = [[str(r["rank"]), str(r["model"]), *(cell(r["values"][c]) for c in board["columns"]),
             str(r["finished_at"] or ""), str(r["folder"] or "")] for r in board["rows"]]
    right = [True, False, *([True] * len(board["columns"])), False, False]
    return PlainTable(title, header, rows, right,
                      "percent" if percent else "mean log-probs")
