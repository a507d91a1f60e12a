"""``localeval merge A B … --output M``: the shards of one run (``run --shard I/N``) made the one
run they add up to (:mod:`..merge`)."""

from __future__ import annotations

import sys

from .rescore import add_new_run_flags


def add_merge_parser(sub) -> None:
    p = sub.add_parser("merge", help="make the shards of one run (run --shard I/N) the one run "
                       "they add up to: a new run folder")
    p.add_argument("folders", nargs="+", help="every shard's run folder (any order)")
    p.add_argument("--output", required=True, help="the merged run's folder (new, or an "
                   "earlier merge's)")
    add_new_run_flags(p, "merged")
    p.set_defaults(func=cmd_merge)


def cmd_merge(args) -> None:
    from ..api import write_report
    from ..merge import merge_runs
    from ..report.console import make_console, print_json, print_results
    from .run_and_report import say_where

    record = merge_runs(args.folders, args.output, command=args.argv,
                        store=False if args.no_store else args.store)
    assert record.folder is not None  # merge writes a folder, always
    if not args.no_report:
        write_report([record.folder])
    left_out = 0
    if args.json:
        print_json(record.results.data())
    else:
        left_out = print_results(record.results, make_console(), everything=args.all)
    print(f"merged {len(args.folders)} shards", file=sys.stderr)
    say_where(record.folder, left_out, not args.no_report)
