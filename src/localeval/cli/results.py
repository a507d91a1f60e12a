"""The commands that read finished runs: ``export`` (a run's tables as Markdown, LaTeX or CSV),
``report`` (the HTML report) and ``leaderboard`` (the results store). Thin: each parses its
options and calls :mod:`localeval.report`, which asks the run's view."""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import LocalevalError
from ..report.export import RENDER


def add_results_parsers(sub) -> None:
    e = sub.add_parser("export", help="a run's tables (the papers' layouts) as Markdown, LaTeX "
                       "(booktabs) or CSV, to paste into a paper")
    e.add_argument("folder", help="a run folder")
    e.add_argument("--format", default="md", choices=tuple(RENDER), help="md (Markdown), "
                   "latex (booktabs) or csv")
    e.add_argument("--output", help="folder for one file per table (default: print them all)")
    e.set_defaults(func=cmd_export)

    h = sub.add_parser("report", help="the HTML report of a run folder (self-contained, "
                       "offline), or of several runs compared")
    h.add_argument("folders", nargs="+", metavar="FOLDER", help="run folder(s), or run ids of "
                   "the results store")
    h.add_argument("--store", metavar="PATH|URL", help="the results store a run id is looked up "
                   "in (default $LOCALEVAL_STORE, else $XDG_DATA_HOME/localeval/results.sqlite)")
    h.add_argument("--output", help="the HTML file (default <folder>/report.html; required "
                   "for several folders): an .html file, in a run folder only its own "
                   "report.html")
    h.set_defaults(func=cmd_report)

    lb = sub.add_parser("leaderboard", help="rank the recorded runs of a task (accuracy; "
                        "PR-AUC per Table 2 column for safeguards)")
    lb.add_argument("--task", required=True, help="the task whose recorded runs are ranked, "
                    "as named to `localeval run --task`")
    lb.add_argument("--store", metavar="PATH|URL", help="results store: a SQLite file or a "
                    "postgresql:// URL (default $LOCALEVAL_STORE, else "
                    "$XDG_DATA_HOME/localeval/results.sqlite)")
    lb.add_argument("--format", choices=tuple(RENDER), help="print as Markdown, "
                    "LaTeX or CSV instead of a table")
    lb.add_argument("--json", action="store_true", help="print JSON instead of a table")
    lb.set_defaults(func=cmd_leaderboard)


def cmd_report(args) -> None:
    from ..api import write_report
    from ..store.results_db import run_folder

    path = write_report([run_folder(f, args.store) for f in args.folders], args.output)
    print(f"wrote {path} (figures as PNG and SVG in {path.stem}_figures/)", file=sys.stderr)


def cmd_export(args) -> None:
    from ..api import load_results
    from ..report.export import SUFFIX, run_tables, slug
    from ..store.files import write_text_whole

    record = load_results(args.folder)
    if not record.results:
        raise LocalevalError(f"{args.folder} has no results.json yet (status: "
                             f"{record.status}); export reads a finished run")
    tables = run_tables(record.results)
    render = RENDER[args.format]
    if not args.output:
        for table in tables:
            if args.format == "csv":
                print(f"# {table.title}")
            print(render(table))
        return
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    for n, table in enumerate(tables, start=1):
        path = out / f"{n:02d}-{slug(table.title)}{SUFFIX[args.format]}"
        write_text_whole(path, render(table))  # never through a link
    print(f"wrote {len(tables)} tables to {out}/", file=sys.stderr)


def cmd_leaderboard(args) -> None:
    from ..report.console import make_console, print_json
    from ..report.leaderboard import leaderboard, leaderboard_table
    from ..store.results_db import store_label, store_path, task_runs

    target = store_path(args.store)
    if isinstance(target, Path) and not target.is_file():  # reading must not create one
        raise LocalevalError(f"{target}: no such results store (finished runs are recorded "
                             "there; --store PATH or $LOCALEVAL_STORE names another)")
    board = leaderboard(args.task, task_runs(args.task, args.store))
    if not board["rows"]:
        raise LocalevalError(f"no recorded runs of task {args.task!r} in "
                             f"{store_label(args.store)}")
    if args.json:
        print_json(board)
        return
    table = leaderboard_table(args.task, board)
    if args.format:
        print(RENDER[args.format](table), end="")
    else:
        make_console().print(table.to_rich())
