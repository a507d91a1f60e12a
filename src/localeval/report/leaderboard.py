"""The leaderboard of a task's recorded runs (from the results store): the runs on the task's
paper protocol (or, for a task on one's own data, on the protocol of its largest run), ranked as
the task kind's view says (``ResultsView.ranking``: accuracy, the paper's "Average", for multiple choice;
PR-AUC per Table 2 column for safeguards; the harmful-response rate, lowest first, for LLM
safety), best first, runs without the number last.

The view also says how a stored number is printed: shares (0-1) as percent, Table 2 cells as
they are (results.json keeps them in points already), so a printed cell is the run's number."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import LocalevalError
from ..render.cells import distinct_names
from ..render.table import DataTable, Number, TableBuilder, columns
from ..views.base import DATA_BY_PATH, Ranking, data_by_path, shown
from ..views.registry import view_for_task


def leaderboard(task: str, runs: list[dict[str, Any]], any_protocol: bool = False,
                reference: str | None = None) -> dict[str, Any]:
    """The ranked rows, with the values as the store holds them; ``titles`` names the columns
    as the printed table heads them and ``scale`` is what a value is multiplied by to print.

    Only runs on the reference protocol are ranked; the others are listed ``apart``, each with
    how it differs (``any_protocol``: every run ranked, still saying so). The reference is the
    protocol of the run ``reference`` names (its id, a prefix of it, or its folder), else the
    task's paper protocol, else (a task of one's own data) that of the run that scored the most
    items; ``reference_run`` is the run's id (None for the paper's protocol), and
    ``reference_is`` says which it is. A run's data is matched by its contents (the sha256
    config.json records), a folder from before that fingerprint by its path, which its row's
    ``notes`` say. A row without the value it is ranked by has no rank (None) and comes
    after every row with one."""
    view = view_for_task(task)
    ranking = view.ranking(list(dict.fromkeys(n for r in runs for n in r["metrics"])))
    columns, rank_by, lower = ranking.columns, ranking.rank_by, ranking.lower_is_better
    _check_values(runs, ranking)
    facts, source, reference_run = _reference(view, task, runs, reference, rank_by)
    chosen = next((r.get("config") or {} for r in runs if r["run_id"] == reference_run), None)
    differs = {r["run_id"]: _differences(view.protocol(r.get("config") or {}), facts,
                                         r.get("config") or {}, chosen)
               for r in runs}

    def value(run: dict) -> Any:
        return run["metrics"].get(rank_by) if rank_by else None

    def key(run: dict) -> tuple:
        if value(run) is None:  # after every run with a value
            return (True, 0)
        return (False, value(run) if lower else -value(run))

    ranked = [r for r in runs if any_protocol or not differs[r["run_id"]]]
    ordered = sorted(ranked, key=key) if rank_by else ranked

    def row(r: dict) -> dict[str, Any]:
        notes = [DATA_BY_PATH] if "data" in facts and _by_path(r.get("config") or {},
                                                               chosen) else []
        return {"model": r["model"], "run_id": r.get("run_id"), "folder": r["folder"],
                "host": r.get("host"), "finished_at": r["finished_at"],
                "items": r.get("n_samples"), "differs": differs[r["run_id"]],
                "notes": notes, "reference": r.get("run_id") == reference_run,
                "values": {c: r["metrics"].get(c) for c in columns}}

    ranks = [i if rank_by and value(r) is not None else None
             for i, r in enumerate(ordered, start=1)]
    return {"rank_by": rank_by, "lower_is_better": lower, "columns": columns,
            "titles": {c: ranking.title(c) for c in columns}, "scale": ranking.scale,
            "unit": ranking.unit, "reference": facts, "reference_is": source,
            "reference_run": reference_run, "any_protocol": any_protocol,
            "rows": [{"rank": rank, **row(r)} for rank, r in zip(ranks, ordered)],
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


def _reference(view, task: str, runs: list[dict[str, Any]], reference: str | None,
               rank_by: str | None) -> tuple[dict[str, str], str, str | None]:
    """The protocol runs are ranked by, what it is, and the id of the run it is taken from: the
    run picked, else the paper's protocol, else the run with the most items among those with
    the number ranked by (a run without it ranks nothing)."""
    if reference is not None:
        run = _named_run(task, runs, reference)
        return view.protocol(run.get("config") or {}), \
            f"the protocol of run {_run_name(run)}, picked (--reference)", run["run_id"]
    paper = view.paper_protocol(task)
    if paper is not None:
        return paper, "the paper's protocol", None
    if not runs:
        return {}, "no run", None
    valued = [r for r in runs if rank_by and r["metrics"].get(rank_by) is not None]
    most = max(valued or runs, key=lambda r: (r.get("n_samples") or 0, r["finished_at"] or "",
                                              str(r.get("run_id"))))
    return view.protocol(most.get("config") or {}), \
        (f"the protocol of run {_run_name(most)}, the one with the most items "
         f"({most.get('n_samples')}; --reference RUN picks another)"), most["run_id"]


def _run_name(run: dict[str, Any]) -> str:
    return f"{str(run.get('run_id'))[:8]} ({run['model']})"


def _named_run(task: str, runs: list[dict[str, Any]], ref: str) -> dict[str, Any]:
    """The run ``ref`` names: its id or a prefix of it, or its folder; else one line."""
    try:
        folder = str(Path(ref).resolve())
    except (OSError, RuntimeError, ValueError):
        folder = None
    found = [r for r in runs if str(r.get("run_id") or "").startswith(ref) and ref]
    if not found:
        found = [r for r in runs if folder and r.get("folder") == folder]
    if len(found) != 1:
        what = "several runs' ids start so" if found else "no recorded run of it has that id " \
            "or folder"
        raise LocalevalError(f"reference run {ref}: {what} (task {task}; `localeval "
                             f"leaderboard --task {task} --any-protocol --json` lists the run "
                             "ids)")
    return found[0]


def _by_path(config: dict[str, Any], reference: dict[str, Any] | None) -> bool:
    """Whether the run's data is matched by its path: it, or the reference run, is from before
    runs recorded their data's sha256."""
    return data_by_path(config) or (reference is not None and data_by_path(reference)
                                    and bool(config.get("data")))


def _differences(facts: dict[str, str], reference: dict[str, str], config: dict[str, Any],
                 chosen: dict[str, Any] | None) -> list[str]:
    """How a run's protocol differs from the reference's; the data by its contents, or by its
    path where either run is from before the data's sha256 was recorded."""
    if "data" in reference and chosen is not None and _by_path(config, chosen):
        facts, reference = dict(facts), dict(reference)
        facts["data"], reference["data"] = (f"path {shown(c.get('data'))}"
                                            for c in (config, chosen))

    def said(key: str, value: str) -> str:
        if key == "data" and value.startswith("sha256") and config.get("data"):
            return f"{value} ({config['data']})"  # the file, for people; matched by contents
        return value

    return [f"{key} {said(key, facts.get(key, 'none'))} (ranked: {value})"
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
    said = {id(r): r["differs"] + r.get("notes", []) for r in board["rows"]}
    differs = any(said.values())  # a difference only with --any-protocol; a note any time
    note = (f" Ranked: every run, whatever its protocol; 'differs' says how each differs from "
            f"{board['reference_is']}." if board["any_protocol"] else
            f" Ranked: the runs on {board['reference_is']}"
            + (f"; {len(board['apart'])} other run(s) listed apart, saying how they differ "
               "(--any-protocol ranks them too)." if board["apart"] else ".")) + \
        (" A run without the number ranked by has no rank (-) and comes last."
         if board["rank_by"] and any(r["rank"] is None for r in board["rows"]) else "")
    names = ["#", "model", "items", *(ranking.title(c) for c in board["columns"]), "finished",
             *(["differs"] if differs else []), "run folder"]
    table = TableBuilder(title, columns(*names, text=2), ranking.unit + "." + note)
    table.columns[-3 if differs else -2:] = columns(*names[-3 if differs else -2:], text=3)
    for r in board["rows"]:
        table.add("-" if r["rank"] is None else str(r["rank"]), shown[str(r["model"])],
                  r["items"], *(Number(r["values"][c], ranking.digits, ranking.scale)
                                for c in board["columns"]), str(r["finished_at"] or ""),
                  *(["; ".join(said[id(r)])] if differs else []), str(r["folder"] or ""))
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
                    if head else []), "; ".join(r["differs"] + r.get("notes", [])),
                  str(r["folder"] or ""))
    return table.build()
