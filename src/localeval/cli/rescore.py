"""``localeval rescore RUN [options]``: a finished run scored again from its cached answers with
another extraction rule, label policy, threshold rule or metric option (:mod:`..rescore`).
Its flags are the rescorable task options' own (declared once, in each task's ``Options``)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import TYPE_CHECKING, Any

from ..declared import pairs_of
from ..tasks.options import flag_arguments, flag_of, option_fields, rescorable
from ..tasks.registry import kinds

if TYPE_CHECKING:  # an annotation only: the store imports pydantic (--help stays light)
    from ..store.runs import RunRecord
    from ..tasks.options import TaskOptions
    from .parsers import Commands


def _rescorable_fields() -> list[tuple[type[TaskOptions], dataclasses.Field[Any]]]:
    """(Options class, field) of every option rescore may change, each once, in declaration
    order."""
    out: list[tuple[type[TaskOptions], dataclasses.Field[Any]]] = []
    seen: set[str] = set()
    for kind in kinds():
        names = rescorable(kind)
        for f in option_fields(kind.Options):
            if f.name in names and f.name not in seen:
                seen.add(f.name)
                out.append((kind.Options, f))
    return out


def rescorable_flags() -> list[str]:
    return [flag_of(f) for _, f in _rescorable_fields()]


def add_new_run_flags(p: argparse.ArgumentParser, made: str) -> None:
    """The flags of a command that writes a new run from runs already made (rescore, merge):
    where it is recorded and what is printed of it. ``made``: "rescored", "merged"."""
    p.add_argument("--store", metavar="PATH|URL", help=f"results store the {made} run is "
                   "recorded in (default $LOCALEVAL_STORE, else "
                   "$XDG_DATA_HOME/localeval/results.sqlite)")
    p.add_argument("--no-store", action="store_true", help="do not record it in the store")
    p.add_argument("--no-report", action="store_true", help="do not write its report.html")
    p.add_argument("--all", action="store_true", help=f"print every table of the {made} run "
                   "(default: the headline table, as run prints)")
    p.add_argument("--json", action="store_true", help="print results.json instead of tables")


def add_rescore_parser(sub: Commands) -> None:
    p = sub.add_parser("rescore", help="score a finished run again from its cached answers "
                       "with another extraction rule, label policy, threshold rule or metric "
                       "option (no model is called); writes a new run folder")
    p.add_argument("folder", help="the finished run folder to re-score (left as it is)")
    for options_class, f in _rescorable_fields():
        kw = {k: v for k, v in flag_arguments(options_class, f).items() if k != "action"}
        p.add_argument(flag_of(f), dest=f.name, default=argparse.SUPPRESS,
                       help=f.metadata["help"].replace("%", "%%"), **kw)
    p.add_argument("-T", "--task-option", dest="task_option", action="append", default=[],
                   metavar="KEY=VALUE", help="an option rescore may change, by its Python name "
                   "(a task of another package has no flags here), repeatable")
    p.add_argument("--output", help="the new run folder (default <folder>.rescored-<hash of "
                   "the changes>, beside the source)")
    p.add_argument("--cache", help="the request cache to read (default <folder>/cache.sqlite)")
    add_new_run_flags(p, "rescored")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    # an option that changes the requests is refused in one line naming those it may change
    p.unknown_hint = lambda flag: (
        f"rescore cannot change {flag}: it may change only {', '.join(rescorable_flags())} "
        "(options that act on answers already given); anything else changes the requests, so "
        "it needs `localeval run`")
    p.set_defaults(func=cmd_rescore)


def cmd_rescore(args: argparse.Namespace) -> None:
    from ..rescore import rescore_run

    names = [f.name for _, f in _rescorable_fields()]
    changes = {n: getattr(args, n) for n in names if hasattr(args, n)}
    changes.update(pairs_of(args.task_option, "-T"))
    record = rescore_run(args.folder, changes, output=args.output, cache=args.cache,
                         store=False if args.no_store else args.store, command=args.argv,
                         quiet=args.quiet)
    changed = record.config["rescored_from"]["options"]
    show_new_run(record, args, f"rescored from {args.folder}: "
                               f"{_as_flags(changed) or 'nothing changed'}")


def show_new_run(record: RunRecord, args: argparse.Namespace, said: str) -> None:
    """What a command that wrote a new run (rescore, merge) prints of it, by the flags of
    :func:`add_new_run_flags`: its report written, its tables or results.json, ``said``, and
    where it is."""
    from ..api import write_report
    from ..report.console import make_console, print_json, print_results
    from .run_and_report import say_where

    assert record.folder is not None  # such a command writes a new folder, always
    if not args.no_report:
        write_report([record.folder])
    left_out = 0
    if args.json:
        print_json(record.results.data())
    else:
        left_out = print_results(record.results, make_console(), everything=args.all)
    print(said, file=sys.stderr)
    say_where(record.folder, left_out, not args.no_report)


def _as_flags(changed: dict[str, Any]) -> str:
    """The changes as the command line gives them: ``--bootstrap 0``, not ``n_resamples=0``
    (an option of another package's task as ``-T name=value``)."""
    flags = {f.name: flag_of(f) for _, f in _rescorable_fields()}
    return ", ".join(f"{flags[name]} {_shown(value)}" if name in flags else f"-T {name}={value}"
                     for name, value in changed.items())


def _shown(value: object) -> str:
    if isinstance(value, list | tuple):
        return ",".join(map(str, value))
    return str(value).lower() if isinstance(value, bool) else str(value)
