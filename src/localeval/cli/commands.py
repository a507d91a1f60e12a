"""The commands around runs: ``tasks``, ``run``, ``compare``, ``show`` and ``demo``. Thin: each
calls the API, and a run's kind of task decides through its view how it is shown."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import LocalevalError
from ..words import with_article
from .run_and_report import run_and_report
from .run_options import task_options


def cmd_tasks(args: argparse.Namespace) -> None:
    from ..report.console import make_console, print_json
    from ..report.tasks import task_rows, task_table

    rows = task_rows(args.task)
    if args.json:
        print_json(rows)
    else:
        make_console().print(task_table(args.task, rows))


def cmd_guards(args: argparse.Namespace) -> None:
    from ..guards.catalog import guard_rows
    from ..render.formats import to_console
    from ..render.table import TableBuilder, columns
    from ..report.console import make_console, print_json

    if args.guard:
        _guard_options(args.guard, args.json)
        return
    rows = guard_rows()
    if args.json:
        print_json([r.data() for r in rows])
        return
    table = TableBuilder("Guards (--guard NAME or one of its Hub ids, options with --guard-option "
                         "KEY=VALUE; also embedding:FILE, from localeval train-guard)",
                         columns("guard", "family", "from", "options", text=4))
    for r in rows:
        table.add("\n".join([r.name, *r.checkpoints]), r.family, r.source,
                  ", ".join(r.options) or "none")
    make_console().print(to_console(table.build()))


def _guard_options(name: str, as_json: bool) -> None:
    """One guard's options, from its declaration (a built-in guard's module is not imported)."""
    from ..guards.options import describe_options
    from ..guards.registry import guard_key, options_class_of
    from ..render.formats import to_console
    from ..render.table import TableBuilder, columns
    from ..report.console import make_console, print_json

    key = guard_key(name)
    rows = describe_options(options_class_of(key))
    if as_json:
        print_json(rows)
        return
    table = TableBuilder(f"Options of guard {key!r} (--guard-option KEY=VALUE; a value other "
                         "than the default is in the run's name and protocol facts)",
                         columns("option", "default", "choices", "what it does", text=4))
    for row in rows:
        table.add(row["option"], row["default"], row["choices"], row["help"])
    if not rows:
        table.add("none", "", "", "this guard takes no options")
    make_console().print(to_console(table.build()))


def cmd_run(args: argparse.Namespace) -> None:
    run_and_report(args, args.task, task_options(args))


def cmd_compare(args: argparse.Namespace) -> None:
    from ..api import load_results
    from ..report.console import make_console, print_json
    from ..store.results_db import run_folder
    from ..views.registry import view_for

    args.baseline, args.aware = (run_folder(r, args.store) for r in (args.baseline, args.aware))
    run_a, run_b = (load_results(f) for f in (args.baseline, args.aware))
    view_a, view_b = view_for(run_a.results), view_for(run_b.results)
    if view_a.schema != view_b.schema:
        raise LocalevalError(f"{args.baseline} is {with_article(view_a.kind)} run and "
                             f"{args.aware} {with_article(view_b.kind)} run; compare two runs "
                             "of the same kind")
    comparison = view_a.compare(run_a, run_b)
    if args.json:
        print_json(comparison.data())
    else:
        view_a.print_comparison(comparison, make_console())


def cmd_show(args: argparse.Namespace) -> None:
    from ..api import load_results
    from ..report.console import make_console, print_json, print_results
    from ..store.results_db import run_folder

    args.folder = run_folder(args.folder, args.store)
    record = load_results(args.folder)  # a run that has not finished is refused there
    if args.json:
        print_json(record.results.data())
    else:
        print_results(record.results, make_console())


def cmd_demo(args: argparse.Namespace) -> None:
    from ..demo import run_demo

    run_demo(Path(args.output), quiet=args.quiet)
