"""The leaderboard of a task's recorded runs (from the results store): the runs on the task's
paper protocol (or, for a task on one's own data, on the protocol of its largest run), ranked as
the task kind's view says (``ResultsView.ranking``: ``average``, the paper's "Average", for
multiple choice, ``micro`` for a custom task without discipline columns;
PR-AUC per Table 2 column for safeguards; the harmful-response rate, lowest first, for LLM
safety), best first, runs without the number last.

The view also says how a stored number is printed: shares (0-1) as percent, Table 2 cells as
they are (results.json keeps them in points already), so a printed cell is the run's number."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..declared import shown
from ..errors import LocalevalError
from ..render.cells import distinct_names
from ..render.table import DataTable, Number, TableBuilder, columns
from ..store.database import Database
from ..store.results_db import data_by_path
from ..tasks.run_spec import RunSpec
from ..views.base import DATA_BY_PATH, Ranking, ResultsView
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

    def value(run: dict[str, Any]) -> Any:
        return run["metrics"].get(rank_by) if rank_by else None

    def key(run: dict[str, Any]) -> tuple[bool, float]:
        if value(run) is None:  # after every run with a value
            return (True, 0)
        return (False, value(run) if lower else -value(run))

    ranked = [r for r in runs if any_protocol or not differs[r["run_id"]]]
    ordered = sorted(ranked, key=key) if rank_by else ranked

    def row(r: dict[str, Any]) -> dict[str, Any]:
        notes = [DATA_BY_PATH] if "data" in facts and _by_path(r.get("config") or {},
                                                               chosen) else []
        config = r.get("config") or {}
        said = RunSpec.columns_of(config, r["model"])  # its name, guard and options
        return {"model": r["model"], "name": said["name"], "guard": said["guard"],
                "options": said["options"], "run_id": r.get("run_id"),
                "folder": r["folder"],
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


def _reference(view: ResultsView[Any], task: str, runs: list[dict[str, Any]], reference: str | None,
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
    """A run picked as the reference, by its id and its name (the spec's: the store's summary
    holds it, else it is read from the run's config)."""
    name = run.get("name") or RunSpec.name_of(run.get("config") or {}, run["model"])
    return f"{str(run.get('run_id'))[:8]} ({name})"


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
        raise _not_one_reference(ref, task, found)
    return found[0]


def _not_one_reference(ref: str, task: str, found: Sequence[object]) -> LocalevalError:
    """The error of a --reference that names several runs, or none."""
    what = "several runs' ids start so" if found else "no recorded run of it has that id or " \
        "folder"
    return LocalevalError(f"reference run {ref}: {what} (task {task}; `localeval leaderboard "
                          f"--task {task} --any-protocol --json` lists the run ids)")


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


def _ranked(task: str, board: dict[str, Any], ranking: Ranking, shown: dict[str, str]) -> DataTable:
    order = "lowest" if board["lower_is_better"] else "highest"
    title = f"{task} leaderboard" + (f", by {ranking.title(board['rank_by'])} ({order} first)"
                                     if board["rank_by"] else "")
    said = {id(r): r["differs"] + r.get("notes", []) for r in board["rows"]}
    differs = any(said.values())  # a difference only with --any-protocol; a note any time
    note = (f" Ranked: every run, whatever its protocol; 'differs' says how each differs from "
            f"{board['reference_is']}." if board["any_protocol"] else
            f" Ranked: the runs on {board['reference_is']}"
            + (f"; {_total(board, 'apart')} other run(s) listed apart, saying how they "
               "differ (--any-protocol ranks them too)." if board["apart"] else ".")) + \
        (" A run without the number ranked by has no rank (-) and comes last."
         if board["rank_by"] and any(r["rank"] is None for r in board["rows"]) else "") + \
        _shared(board) + _more(board, "rows")
    run = _run_columns(board)
    names = ["#", "model", *run, "items", *(ranking.title(c) for c in board["columns"]),
             "finished", *(["differs"] if differs else []), "run folder"]
    table = TableBuilder(title, columns(*names, text=2 + len(run)),
                         ranking.unit + "." + note)
    table.columns[-3 if differs else -2:] = columns(*names[-3 if differs else -2:], text=3)
    for r in board["rows"]:
        table.add("-" if r["rank"] is None else str(r["rank"]), shown[str(r["model"])],
                  *(str(r.get(c) or "") for c in run),
                  r["items"], *(Number(r["values"][c], ranking.digits, ranking.scale)
                                for c in board["columns"]), str(r["finished_at"] or ""),
                  *(["; ".join(said[id(r)])] if differs else []), str(r["folder"] or ""))
    return table.build()


def _run_columns(board: dict[str, Any]) -> list[str]:
    """The guard and the protocol options, as columns where the runs differ in them (issue 51
    item 1: two guards on one model are two rows that say which is which); where every run
    shares one, the caption says it (:func:`_shared`)."""
    rows = board["rows"] + board["apart"]
    return [c for c in ("guard", "options") if len({r.get(c) or "" for r in rows}) > 1]


def _shared(board: dict[str, Any]) -> str:
    rows = board["rows"] + board["apart"]
    said = []
    for column in ("guard", "options"):
        values = {r.get(column) or "" for r in rows}
        if len(values) == 1 and next(iter(values)) not in ("", "none"):
            said.append(f"{column} {next(iter(values))}")
    return f" Every run: {'; '.join(said)}." if said else ""


def _total(board: dict[str, Any], part: str) -> int:
    return int(board.get(f"{'ranked' if part == 'rows' else part}_total", len(board[part])))


def _more(board: dict[str, Any], part: str) -> str:
    shown, total = len(board[part]), _total(board, part)
    return f" The first {shown} of {total} shown (--limit N; 0 for all)." if total > shown \
        else ""


def _apart(task: str, board: dict[str, Any], ranking: Ranking, shown: dict[str, str]) -> DataTable:
    head = board["rank_by"] or (board["columns"] or [None])[0]
    run = _run_columns(board)
    table = TableBuilder(f"{task}: runs listed apart (not on {board['reference_is']})",
                         columns("model", *run, "items",
                                 *([ranking.title(head)] if head else []),
                                 "differs", "run folder", text=1 + len(run)),
                         "Not ranked: their numbers are not comparable with the ranked ones."
                         + _more(board, "apart"))
    table.columns[-2:] = columns("differs", "run folder", text=2)
    for r in board["apart"]:
        table.add(shown[str(r["model"])], *(str(r.get(c) or "") for c in run), r["items"],
                  *([Number(r["values"].get(head), ranking.digits, ranking.scale)]
                    if head else []), "; ".join(r["differs"] + r.get("notes", [])),
                  str(r["folder"] or ""))
    return table.build()


# ------------------------------------------------------------------ ranked in the database
def store_leaderboard(task: str, db: Database, any_protocol: bool = False, reference: str | None = None,
                      limit: int | None = None, offset: int = 0) -> dict[str, Any]:
    """:func:`leaderboard` read from the store's run summaries (issue 53): the same rows in the
    same order, ranked by the database, ``limit`` ranked rows (and as many listed apart) from
    ``offset``; nothing read grows with the runs stored but the protocols they were run on.
    ``ranked_total`` and ``apart_total`` count every row."""
    from ..store.results_db import SHOWN, with_metrics

    view = view_for_task(task)
    ranking = view.ranking(_metric_names(db, task))
    columns, rank_by, lower = ranking.columns, ranking.rank_by, ranking.lower_is_better
    _check_stored(db, task, ranking)
    cols = ", ".join(f"s.{c}" for c in SHOWN)
    join = "LEFT JOIN metrics m ON m.run_id = s.run_id AND m.name = ?"
    facts, chosen, source, reference_run = _store_reference(db, view, task, reference, rank_by)
    groups = _protocol_groups(db, task, facts, chosen)
    same = [k for k, (differs, _) in groups.items() if not differs]
    marks = ", ".join("?" * len(same))
    inside = "" if any_protocol else (f" AND s.protocol_key IN ({marks})" if same else
                                      " AND 1 = 0")
    outside = " AND 1 = 0" if any_protocol else (f" AND s.protocol_key NOT IN ({marks})"
                                                 if same else "")
    keys = () if any_protocol else tuple(same)
    order = "s.finished_at, s.model, s.run_id"  # task_runs' order: ties keep it
    by_value = (f"(m.value IS NULL), m.value {'ASC' if lower else 'DESC'}, " if rank_by
                else "")
    page = f" LIMIT {int(limit)} OFFSET {int(offset)}" if limit is not None else ""
    ranked = db.execute(f"SELECT {cols}, s.protocol_key, m.value FROM run_summary s {join} "
                        f"WHERE s.task = ?{inside} ORDER BY {by_value}{order}{page}",
                        (rank_by, task, *keys)).fetchall()
    apart = db.execute(f"SELECT {cols}, s.protocol_key FROM run_summary s WHERE s.task = ?"
                       f"{outside} ORDER BY {order}{page}", (task, *keys)).fetchall()
    totals = [db.execute(f"SELECT COUNT(*) FROM run_summary s WHERE s.task = ?{where}",
                         (task, *keys)).fetchone()[0] for where in (inside, outside)]

    def rows(found: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
        return with_metrics(db, [{**dict(zip(SHOWN, r)), "key": r[len(SHOWN)]}
                                 for r in found], columns)

    def row(r: dict[str, Any]) -> dict[str, Any]:
        differs, notes = groups[r["key"]]
        return {"model": r["model"], "name": r["name"], "guard": r["guard"] or "none",
                "options": r["options"] or "", "run_id": r["run_id"], "folder": r["folder"],
                "host": r["host"], "finished_at": r["finished_at"], "items": r["n_samples"],
                "differs": differs, "notes": list(notes),
                "reference": r["run_id"] == reference_run,
                "values": {c: r["metrics"].get(c) for c in columns}}

    shown_rows = rows(ranked)
    return {"rank_by": rank_by, "lower_is_better": lower, "columns": columns,
            "titles": {c: ranking.title(c) for c in columns}, "scale": ranking.scale,
            "unit": ranking.unit, "reference": facts, "reference_is": source,
            "reference_run": reference_run, "any_protocol": any_protocol,
            "rows": [{"rank": offset + i if rank_by and r["metrics"].get(rank_by) is not None
                      else None, **row(r)} for i, r in enumerate(shown_rows, start=1)],
            "apart": [row(r) for r in rows(apart)],
            "ranked_total": totals[0], "apart_total": totals[1]}


def _store_reference(db: Database, view: ResultsView[Any], task: str, reference: str | None, rank_by: str | None
                     ) -> tuple[dict[str, Any], dict[str, Any] | None, str, str | None]:
    """The protocol runs are ranked under, as :func:`leaderboard` picks it, read from the run
    summaries: (its facts, the reference run's data config or None, what it is, the reference
    run's id or None). The run ``reference`` names (an id's start or a folder); else the
    paper's protocol where the view has one; else the run with the most items."""
    from ..store.results_db import SHOWN, like

    cols = ", ".join(f"s.{c}" for c in SHOWN)
    ref_row = None
    if reference is not None:
        found = db.execute(f"SELECT {cols}, s.protocol, s.data, s.by_path FROM run_summary s "
                           "WHERE s.task = ? AND s.run_id LIKE ? ESCAPE '!' LIMIT 2",
                           (task, like(reference) + "%")).fetchall() if reference else []
        if not found:
            folder = _resolved(reference)
            found = db.execute(f"SELECT {cols}, s.protocol, s.data, s.by_path FROM "
                               "run_summary s WHERE s.task = ? AND s.folder = ? LIMIT 2",
                               (task, folder)).fetchall() if folder else []
        if len(found) != 1:
            raise _not_one_reference(reference, task, found)
        ref_row = found[0]
    paper = view.paper_protocol(task) if reference is None else None
    if reference is None and paper is None:
        ref_row = db.execute(
            f"SELECT {cols}, s.protocol, s.data, s.by_path FROM run_summary s LEFT JOIN metrics "
            "m ON m.run_id = s.run_id AND m.name = ? WHERE s.task = ? ORDER BY (m.value IS "
            "NULL), COALESCE(s.n_samples, 0) DESC, COALESCE(s.finished_at, '') DESC, "
            "s.run_id DESC LIMIT 1", (rank_by, task)).fetchone()
    if ref_row is not None:
        run: dict[str, Any] = dict(zip(SHOWN, ref_row))
        source = (f"the protocol of run {_run_name(run)}, picked (--reference)" if reference
                  is not None else f"the protocol of run {_run_name(run)}, the one with the "
                  f"most items ({run['n_samples']}; --reference RUN picks another)")
        return (json.loads(ref_row[-3]), _as_config(ref_row[-2], ref_row[-1]), source,
                run["run_id"])
    if paper is not None:
        return paper, None, "the paper's protocol", None
    return {}, None, "no run", None


def _protocol_groups(db: Database, task: str, facts: dict[str, Any], chosen: dict[str, Any] | None
                     ) -> dict[str, tuple[list[str], list[str]]]:
    """Per protocol key of the task's runs: (how it differs from the reference's ``facts``,
    the notes its rows carry); read once per distinct protocol, not per run."""
    groups: dict[str, tuple[list[str], list[str]]] = {}
    for (key,) in db.execute("SELECT DISTINCT protocol_key FROM run_summary WHERE task = ?",
                             (task,)).fetchall():
        protocol, data, by_path = db.execute(
            "SELECT protocol, data, by_path FROM run_summary WHERE task = ? AND protocol_key "
            "= ? LIMIT 1", (task, key)).fetchone()
        config = _as_config(data, by_path)
        groups[key] = (_differences(json.loads(protocol), facts, config, chosen),
                       [DATA_BY_PATH] if "data" in facts and _by_path(config, chosen) else [])
    return groups


def _metric_names(db: Database, task: str) -> list[str]:
    """The task's metric names in the order :func:`leaderboard` meets them: each run's, sorted,
    the runs in the store's order (finished, model, id); read per set of names, not per run."""
    firsts: list[str] = []
    for (names,) in db.execute("SELECT DISTINCT metric_names FROM run_summary WHERE task = ?",
                               (task,)).fetchall():
        (first,) = db.execute("SELECT run_id FROM run_summary WHERE task = ? AND metric_names "
                              "= ? ORDER BY finished_at, model, run_id LIMIT 1",
                              (task, names)).fetchone()
        firsts.append(first)
    if not firsts:
        return []
    ordered = db.execute(f"SELECT metric_names FROM run_summary WHERE run_id IN "
                         f"({', '.join('?' * len(firsts))}) ORDER BY finished_at, model, "
                         "run_id", tuple(firsts)).fetchall()
    return list(dict.fromkeys(n for (names,) in ordered for n in json.loads(names)))


def _check_stored(db: Database, task: str, ranking: Ranking) -> None:
    """:func:`_check_values` in the database: a value out of the ranking's bounds (an
    infinity, NaN, or in SQLite a text, sorts outside them too) is one line naming the run."""
    if not ranking.columns:
        return
    low, high = ranking.bounds or (-1.7e308, 1.7e308)
    marks = ", ".join("?" * len(ranking.columns))
    # each name's values below and above the bounds: two index ranges. SQLite keeps a NaN as
    # NULL and sorts a text above every number; PostgreSQL sorts NaN above every number.
    found = db.execute(
        f"SELECT run_id, name, value FROM metrics WHERE name IN ({marks}) AND value < ? "
        f"UNION ALL SELECT run_id, name, value FROM metrics WHERE name IN ({marks}) AND "
        "value > ?",
        (*ranking.columns, low, *ranking.columns, high)).fetchall()
    for run_id, name, value in found:  # another task's run: not this board's
        folder = db.execute("SELECT folder FROM run_summary WHERE run_id = ? AND task = ?",
                            (run_id, task)).fetchone()
        if folder is not None:
            _check_values([{"run_id": run_id, "folder": folder[0], "metrics": {name: value}}],
                          ranking)


def _as_config(data: str | None, by_path: int | bool) -> dict[str, Any]:
    """What :func:`_differences` reads of a config, from a summary: the data's path, and a
    fingerprint or none (whether its data is matched by path)."""
    return {"data": data, "data_files": None if by_path else {"": {}}}


def _resolved(ref: str) -> str | None:
    try:
        return str(Path(ref).resolve())
    except (OSError, RuntimeError, ValueError):
        return None
