"""The commands that read finished runs: ``export`` (a run's tables as Markdown, LaTeX or CSV),
``report`` (the HTML report) and ``leaderboard`` (the results store). Thin: each parses its
options and calls :mod:`localeval.report`, which asks the run's view."""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import LocalevalError
from ..render.format_names import FORMATS  # names only: the renderers import rich

if TYPE_CHECKING:
    from ..render.table import DataTable
    from ..store.runs import RunRecord
    from .parsers import Commands

STORE_DEFAULT = "(default $LOCALEVAL_STORE, else $XDG_DATA_HOME/localeval/results.sqlite)"
STORE_FOR_IDS = (f"the results store a run id is looked up in {STORE_DEFAULT}; `leaderboard "
                 "--json` gives ids")


def store_flag(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument("--store", metavar="PATH|URL", help=help)


def add_results_parsers(sub: Commands) -> None:
    e = sub.add_parser("export", help="a run's tables (the papers' layouts) as Markdown, LaTeX "
                       "(booktabs) or CSV, to paste into a paper")
    e.add_argument("folder", help="a run folder")
    e.add_argument("--format", default="md", choices=(*FORMATS, "parquet"), help="md "
                   "(Markdown), latex (booktabs) or csv; parquet: the samples and results in "
                   "the Hugging Face datasets layout (needs --output)")
    e.add_argument("--output", help="folder for one file per table (default: print them all); "
                   "with parquet, the dataset folder (samples/, results/, run/, README.md)")
    e.add_argument("--table", type=int, metavar="N", help="only the N-th table (1 = the first, "
                   "as `export` lists them); CSV to standard output needs it when a run has "
                   "several tables, as one CSV stream holds one table")
    e.set_defaults(func=cmd_export)

    h = sub.add_parser("report", help="the HTML report of a run folder (self-contained, "
                       "offline), or of several runs compared")
    h.add_argument("folders", nargs="+", metavar="FOLDER", help="run folder(s), or run ids of "
                   "the results store")
    store_flag(h, STORE_FOR_IDS)
    h.add_argument("--output", help="the HTML file (default <folder>/report.html; required "
                   "for several folders): an .html file, in a run folder only its own "
                   "report.html")
    h.set_defaults(func=cmd_report)

    lb = sub.add_parser("leaderboard", help="rank the recorded runs of a task (multiple "
                        "choice: average, the paper's Average; PR-AUC per Table 2 column for "
                        "safeguards)")
    lb.add_argument("--task", required=True, help="the task whose recorded runs are ranked, "
                    "as named to `localeval run --task`")
    store_flag(lb, f"results store: a SQLite file or a postgresql:// URL {STORE_DEFAULT}")
    lb.add_argument("--format", choices=FORMATS, help="print as Markdown, "
                    "LaTeX or CSV instead of a table")
    lb.add_argument("--json", action="store_true", help="print JSON instead of a table")
    lb.add_argument("--any-protocol", action="store_true", help="rank every run together, "
                    "also those not on the task's paper protocol (a --limit, a subset of the "
                    "subjects, the sample data, other options; each still says how it differs)")
    lb.add_argument("--reference", metavar="RUN", help="rank the runs on this run's protocol "
                    "(its id, a prefix of it, as `leaderboard --json` gives them, or its "
                    "folder) instead of the paper's protocol or, for a task of one's own data, "
                    "the run with the most items")
    lb.add_argument("--limit", type=int, default=100, metavar="N", help="the first N ranked "
                    "runs, and N listed apart (default 100; 0: every run)")
    lb.set_defaults(func=cmd_leaderboard)

    f = sub.add_parser("forget", help="remove runs from the results store (their folders are "
                       "left as they are)")
    f.add_argument("runs", nargs="*", metavar="RUN", help="run ids (or their first 6+ hex "
                   "digits, as `leaderboard --json` gives them) or run folders")
    f.add_argument("--missing", action="store_true", help="also every run recorded from this "
                   "machine whose folder is gone (a teammate's runs on a shared store stay)")
    store_flag(f, f"the results store {STORE_DEFAULT}")
    f.set_defaults(func=cmd_forget)


def cmd_report(args: argparse.Namespace) -> None:
    from ..api import write_report
    from ..store.results_db import run_folder

    path = write_report([run_folder(f, args.store) for f in args.folders], args.output)
    print(f"wrote {path} (figures as PNG and SVG in {path.stem}_figures/)", file=sys.stderr)


def cmd_export(args: argparse.Namespace) -> None:
    from ..api import load_results
    from ..render.formats import RENDER, SUFFIX, slug
    from ..report.tables import run_tables
    from ..store.files import write_text_whole

    record = load_results(args.folder)  # a run that has not finished is refused there
    if args.format == "parquet":
        export_parquet(record, args)
        return
    tables = chosen_tables(run_tables(record.results), args.table, args.format, args.output)
    render = RENDER[args.format]
    if not args.output:
        for table in tables:  # Markdown and LaTeX: a blank line between tables
            print(render(table), end="" if args.format == "csv" else "\n")
        return
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    for n, table in enumerate(tables, start=1):
        path = out / f"{n:02d}-{slug(table.title)}{SUFFIX[args.format]}"
        write_text_whole(path, render(table))  # never through a link
    print(f"wrote {len(tables)} tables to {out}/", file=sys.stderr)


def export_parquet(record: RunRecord, args: argparse.Namespace) -> None:
    """The run as a dataset folder in the Hugging Face layout (report/parquet.py)."""
    from ..report.parquet import write_parquet

    if not args.output or args.table is not None:
        raise LocalevalError("--format parquet writes a dataset folder: give --output DIR (and "
                             "no --table: it holds the samples and every metric)")
    out = Path(args.output)
    if out.exists() and not out.is_dir():
        raise LocalevalError(f"--output {out} is a file; give a folder (made if missing)")
    written = write_parquet(record.config.data(), record.results, record.samples, out,
                            str(args.folder))
    print(f"wrote {len(written)} files to {out}/ (load_dataset({str(out)!r}, 'samples'))",
          file=sys.stderr)


def chosen_tables(tables: list[DataTable], number: int | None, fmt: str,
                  output: str | None) -> list[DataTable]:
    """The tables ``export`` writes: all, or the ``number``-th; CSV on standard output is one
    table (a CSV reader cannot tell where one table ends and the next begins)."""
    listed = "; ".join(f"{n} = {t.title}" for n, t in enumerate(tables, start=1))
    if number is not None:
        if not 1 <= number <= len(tables):
            raise LocalevalError(f"--table {number}: the run has {len(tables)} tables ({listed})")
        return [tables[number - 1]]
    if fmt == "csv" and not output and len(tables) > 1:
        raise LocalevalError(f"--format csv on standard output is one table, and the run has "
                             f"{len(tables)}: pass --table N ({listed}), or --output DIR for "
                             "one file per table")
    return tables


def cmd_leaderboard(args: argparse.Namespace) -> None:
    from ..render.formats import RENDER, print_table
    from ..report.console import make_console, print_json
    from ..report.leaderboard import leaderboard_tables, store_leaderboard
    from ..store.results_db import recorded_tasks, store_label, writable
    from ..tasks.registry import TASKS
    from ..views.registry import protocol_facts

    existing_store(args.store)
    if args.limit < 0:
        raise LocalevalError(f"--limit {args.limit}: a number of runs, 0 for every run")
    # a store from before the run summary is migrated here
    with writable(args.store, protocol_facts) as db:
        board = store_leaderboard(args.task, db, args.any_protocol, args.reference,
                                  args.limit or None)
    if not board["rows"] and not board["apart"]:
        held = recorded_tasks(args.store)
        close = difflib.get_close_matches(args.task, [*held, *TASKS], n=1, cutoff=0.6)
        hint = f"did you mean {close[0]}? " if close else ""
        raise LocalevalError(f"no recorded runs of task {args.task!r} in "
                             f"{store_label(args.store)} ({hint}it holds "
                             f"{', '.join(held) or 'no runs yet'})")
    if args.json:
        print_json(board)
        return
    for table in leaderboard_tables(args.task, board):
        if args.format:
            print(RENDER[args.format](table), end="")
        else:
            print_table(make_console(), table)


def cmd_forget(args: argparse.Namespace) -> None:
    from ..store.results_db import forget, store_label

    existing_store(args.store)
    if not args.runs and not args.missing:
        raise LocalevalError("forget: name the runs (ids or folders), or --missing for those "
                             "recorded here whose folder is gone")
    removed = forget(args.runs, args.missing, args.store)
    print(f"forgot {len(removed)} run(s) in {store_label(args.store)}"
          + (f": {', '.join(removed)}" if removed else ""), file=sys.stderr)


def existing_store(store: str | None) -> None:
    """A SQLite store these commands read must exist: opening one would create it empty."""
    from ..store.results_db import store_path

    target = store_path(store)
    if isinstance(target, Path) and not target.is_file():
        raise LocalevalError(f"{target}: no such results store (finished runs are recorded "
                             "there; --store PATH or $LOCALEVAL_STORE names another)")
