"""``localeval merge A B … --output M``: the shards of one run (``run --shard I/N``) made the one
run they add up to (:mod:`..merge`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from .rescore import add_new_run_flags, show_new_run

if TYPE_CHECKING:
    from .parsers import Commands


def add_merge_parser(sub: Commands) -> None:
    p = sub.add_parser("merge", help="make the shards of one run (run --shard I/N) the one run "
                       "they add up to: a new run folder")
    p.add_argument("folders", nargs="+", help="every shard's run folder (any order)")
    p.add_argument("--output", required=True, help="the merged run's folder (new, or an "
                   "earlier merge's)")
    add_new_run_flags(p, "merged")
    p.set_defaults(func=cmd_merge)


def cmd_merge(args: argparse.Namespace) -> None:
    from ..merge import merge_runs

    record = merge_runs(args.folders, args.output, command=args.argv,
                        store=False if args.no_store else args.store)
    show_new_run(record, args, f"merged {len(args.folders)} shards")
