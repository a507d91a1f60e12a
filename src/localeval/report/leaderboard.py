"""The leaderboard of a task's recorded runs (from the results store), ranked as the task
kind's view says (``ResultsView.ranking``: accuracy, the paper's "Average", for multiple choice;
PR-AUC per Table 2 column for safeguards; the harmful-response rate, lowest first, for LLM
safety), best first, runs without the number last.

The view also says how a stored number is printed: shares (0-1) as percent, Table 2 cells as
they are (results.json keeps them in points already), so a printed cell is the run's number."""

from __future__ import annotations

from typing import Any

from ..render.cells import distinct_names
from ..render.table import DataTable, Number, TableBuilder, columns
from ..views.registry import view_for_task


def leaderboard(task: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The ranked rows, with the values as the store holds them; ``titles`` names the columns
    as the printed table heads them and ``scale`` is what a value is multiplied by to print."""
    ranking = view_for_task(task).ranking(list(dict.fromkeys(n for r in runs
                                                             for n in r["metrics"])))
    columns, rank_by, lower = ranking.columns, ranking.rank_by, ranking.lower_is_better

    def key(run: dict) -> tuple:
        value = run["metrics"].get(rank_by) if rank_by else None
        return (value is None, (value if lower else -value) if value is not None else 0)

    ordered = sorted(runs, key=key) if rank_by else runs
    rows = [{"rank": i, "model": r["model"], "run_id": r.get("run_id"), "folder": r["folder"],
             "finished_at": r["finished_at"],
             "values": {c: r["metrics"].get(c) for c in columns}}
            for i, r in enumerate(ordered, start=1)]
    return {"rank_by": rank_by, "lower_is_better": lower, "columns": columns,
            "titles": {c: ranking.title(c) for c in columns}, "scale": ranking.scale,
            "unit": ranking.unit, "rows": rows}


def leaderboard_table(task: str, board: dict[str, Any]) -> DataTable:
    ranking = view_for_task(task).ranking(board["columns"])
    order = "lowest" if board["lower_is_better"] else "highest"
    title = f"{task} leaderboard" + (f", by {ranking.title(board['rank_by'])} ({order} first)"
                                     if board["rank_by"] else "")
    names = ["#", "model", *(ranking.title(c) for c in board["columns"]), "finished",
             "run folder"]
    table = TableBuilder(title, columns(*names, text=2), ranking.unit)
    table.columns[-2:] = columns("finished", "run folder", text=2)
    shown = distinct_names([str(r["model"]) for r in board["rows"]])
    for r in board["rows"]:
        table.add(str(r["rank"]), shown[str(r["model"])],
                  *(Number(r["values"][c], ranking.digits, ranking.scale)
                    for c in board["columns"]),
                  str(r["finished_at"] or ""), str(r["folder"] or ""))
    return table.build()
