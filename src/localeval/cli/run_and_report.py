"""What every command that runs a model does once its options are read: the run folder (given
or the default), the cache, the run, its tables or JSON, where the rest is, and the
--max-failed check."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Literal

from ..errors import LocalevalError
from ..tasks.shards import Shard
from ..words import counted
from .budget import budget_of
from .run_options import backend_options, check_failures, default_output, role_options


def store_option(args: argparse.Namespace) -> str | Literal[False] | None:
    """--store PATH, --no-store, or None (the default store)."""
    return False if args.no_store else args.store


def run_and_report(args: argparse.Namespace, task: str, options: dict[str, Any]) -> None:
    """What every model command does once its task options are known: the run folder (given
    or the default), the cache, the run, its tables or JSON, and the --max-failed check."""
    from ..api import evaluate
    from ..report.console import make_console, print_json, print_results

    if not 0 <= args.max_failed <= 1:
        raise LocalevalError(f"--max-failed is a share of the samples, 0 to 1, not "
                             f"{args.max_failed:g}")
    backend, roles = backend_options(args), role_options(args)
    shard = Shard.parse(args.shard) if getattr(args, "shard", None) is not None else None
    output = Path(args.output) if args.output else default_output(
        task, args.model, options, backend, roles, shard)
    cache = None if args.no_cache else (args.cache or output / "cache.sqlite")
    result = evaluate(task=task, model=args.model, output=output, cache=cache,
                      backend_options=backend, role_options=roles, quiet=args.quiet,
                      command=getattr(args, "argv", sys.argv), overwrite=args.overwrite,
                      store=store_option(args), report=not args.no_report,
                      budget=budget_of(args), library_notices=getattr(args, "debug", False),
                      shard=shard, cluster=getattr(args, "cluster", None),
                      workers=getattr(args, "workers", None), **options)
    left_out = 0
    if args.json:
        print_json(result.results.data())
    else:
        left_out = print_results(result.results, make_console(), everything=args.all)
    say_where(result.folder or output, left_out, not args.no_report)  # always output's
    if shard is not None:
        print(f"shard {shard}: its numbers are of a share of the items and it is not recorded "
              "in the results store; `localeval merge` makes the shards one run",
              file=sys.stderr)
    served = result.results.timing.get("served_by") or {}
    if len(served) > 1:  # several replicas: how the load went, and whether one stopped early
        print("requests served by replica: " + ", ".join(f"{u} {n}" for u, n in served.items()),
              file=sys.stderr)
    cost = result.results.cost
    if cost is not None:  # stdout holds only the tables or JSON
        role = result.results.usage.get(cost.role)
        uncounted = role.uncounted if role is not None else 0
        print(f"cost: {cost.total:.4f} for the {cost.role}'s tokens ({cost.spent:.4f} sent by "
              "this invocation)"
              + (f", {uncounted} requests uncounted (no usage from the server and no "
                 "tokenizer to count them: pass --tokenizer)" if uncounted else "")
              + "; tokens per model role in results.json's usage", file=sys.stderr)
    check_failures(result.results, args.max_failed)


def say_where(folder: Path, left_out: int, report: bool) -> None:
    """On stderr (stdout holds only tables or JSON): what the folder holds, and where the
    tables the console left out are."""
    written = "config.json, results.json, samples.jsonl" + (", report.html" if report else "")
    print(f"wrote {folder}/ ({written})", file=sys.stderr)
    if left_out:
        print(f"{counted(left_out, 'more table')}: localeval show {folder}" + (
            f"; figures and every table: {folder}/report.html" if report else ""),
            file=sys.stderr)
