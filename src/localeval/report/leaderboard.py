"""The leaderboard of a task's recorded runs (from the results store): the runs on the task's
paper protocol (or, for a task on one's own data, on the protocol of its largest run), ranked as
the task kind's view says (``ResultsView.ranking``: accuracy, the paper's "Average", for multiple choice;
PR-AUC per Table 2 column for safeguards; the harmful-response rate, lowest first, for LLM
safety), best first, runs without the number last.

The view also says how a stored number is printed: shares (0-1) as percent, Table 2 cells as
they are (results.json keeps them in points already), so a printed cell is the run's number."""

from __future__ import annotations

from typing import Any

from ..errors import LocalevalError
from ..render.cells import distinct_names
from ..render.table import DataTable, Number, TableBuilder, columns
from ..views.base import Ranking
from ..views.registry import view_for_task


def leaderboard(task: str, runs: list[dict[str, Any]],
                any_protocol: bool = False) -> dict[str, Any]:
    """The ranked rows, with the values as the store holds them; ``titles`` names the columns
    as the printed table heads them and ``scale`` is what a value is multiplied by to print.

    Only runs on the reference protocol are ranked (the task's paper protocol, or for a task of
    one's own data the protocol of the run that scored the most items); the others are listed
    ``apart``, each with how it differs (``any_protocol``: every run ranked, still saying so)."""
    view = view_for_task(task)
    ranking = view.ranking(list(dict.fromkeys(n for r in runs for n in r["metrics"])))
    columns, rank_by, lower = ranking.columns, ranking.rank_by, ranking.lower_is_better
    _check_values(runs, ranking)
    reference, source = _reference(view, task, runs)
    differs = {r["run_id"]: _differences(view.protocol(r.get("config") or {}), reference)
               for r in runs}

    def key(run: dict) -> tuple:
        value = run["metrics"].get(rank_by) if rank_by else None
        if value is None:  # after every run with a value
            return (True, 0)
        return (False, value if lower else -value)

    ranked = [r for r in runs if any_protocol or not differs[r["run_id"]]]
    ordered = sorted(ranked, key=key) if rank_by else ranked

    def row(r: dict) -> dict[str, Any]:
        return {"model": r["model"], "run_id": r.get("run_id"), "folder": r["folder"],
                "host": r.get("host"), "finished_at": r["finished_at"],
                "items": r.get("n_samples"), "differs": differs[r["run_id"]],
                "values": {c: r["metrics"].get(c) for c in columns}}

    return {"rank_by": rank_by, "lower_is_better": lower, "columns": columns,
            "titles": {c: ranking.title(c) for c in columns}, "scale": ranking.scale,
            "unit": ranking.unit, "reference": reference, "reference_is": source,
            "any_protocol": any_protocol,
            "rows": [{"rank": i, **row(r)} for i, r in enumerate(ordered, start=1)],
            "apart": [row(r) for r in runs if r not in ranked]}


def _check_values(runs: list[dict[str, Any]], ranking: Ranking) -> None:
    """Each value the board shows, as the store holds it, checked where it is read: one a hand
    edit left out of range (-5, 1.5, inf) or not a number ('abc') is one line naming the run,
    never ranked."""
    for run in runs:
        for name in ranking.columns:
            problem = ranking.problem(run["metrics"].get(name))
            if problem:
                raise LocalevalError(f"results store: run {run.get('run_id')} ({run['folder']}): "
                                     f"metric {name} {problem}; `localeval forget "
                                     f"{run.get('run_id')}` drops the run, a rerun records it "
                                     "again")


def _reference(view, task: str, runs: list[dict[str, Any]]) -> tuple[dict[str, str], str]:
    """The protocol runs are ranked by, and what it is."""
    paper = view.paper_protocol(task)
    if paper is not None:
        return paper, "the paper's protocol"
    if not runs:
        return {}, "no run"
    most = max(runs, key=lambda r: (r.get("n_samples") or 0, r["finished_at"] or ""))
    return view.protocol(most.get("config") or {}), \
        f"the protocol of the run with the most items ({most.get('n_samples')})"


def _differences(facts: dict[str, str], reference: dict[str, str]) -> list[str]:
    return [f"{key} {facts.get(key, 'none')} (ranked: {value})"
            for key, value in reference.items() if facts.get(key, "none") != value]


def leaderboard_tables(task: str, board: dict[str, Any]) -> list[DataTable]:
    """The ranked table, and the runs listed apart (when there are any)."""
    ranking = view_for_task(task).ranking(board["columns"])
    shown = distinct_names([str(r["model"]) for r in board["rows"] + board["apart"]])
    tables = [_ranked(task, board, ranking, shown)] if board["rows"] or not board["apart"] \
        else []
    return tables + ([_apart(task, board, ranking, shown)] if board["apart"] else [])


def _ranked(task: str, board: dict[str, Any], ranking, shown: dict[str, str]) -> DataTable:
    order = "lowest" if board["lower_is_better"] else "highest"
    title = f"{task} leaderboard" + (f", by {ranking.title(board['rank_by'])} ({order} first)"
                                     if board["rank_by"] else "")
    differs = any(r["differs"] for r in board["rows"])  # only with --any-protocol
    note = (f" Ranked: every run, whatever its protocol; 'differs' says how each differs from "
            f"{board['reference_is']}." if board["any_protocol"] else
            f" Ranked: the runs on {board['reference_is']}"
            + (f"; {len(board['apart'])} other run(s) listed apart, saying how they differ "
               "(--any-protocol ranks them too)." if board["apart"] else "."))
    names = ["#", "model", "items", *(ranking.title(c) for c in board["columns"]), "finished",
             *(["differs"] if differs else []), "run folder"]
    table = TableBuilder(title, columns(*names, text=2), ranking.unit + "." + note)
    table.columns[-3 if differs else -2:] = columns(*names[-3 if differs else -2:], text=3)
    for r in board["rows"]:
        table.add(str(r["rank"]), shown[str(r["model"])], r["items"],
                  *(Number(r["values"][c], ranking.digits, ranking.scale)
                    for c in board["columns"]), str(r["finished_at"] or ""),
                  *(["; ".join(r["differs"])] if differs else []), str(r["folder"] or ""))
    return table.build()


def _apart(task: str, board: dict[str, Any], ranking, shown: dict[str, str]) -> DataTable:
    head = board["rank_by"] or (board["columns"] or [None])[0]
    table = TableBuilder(f"{task}: runs listed apart (not on {board['reference_is']})",
                         columns("model", "items", *([ranking.title(head)] if head else []),
                                 "differs", "run folder", text=1),
                         "Not ranked: their numbers are not comparable with the ranked ones.")
    table.columns[-2:] = columns("differs", "run folder", text=2)
    for r in board["apart"]:
        table.add(shown[str(r["model"])], r["items"],
                  *([Number(r["values"].get(head), ranking.digits, ranking.scale)]
                    if head else []), "; ".join(r["differs"]), str(r["folder"] or ""))
    return table.build()
