"""The papers' research commands that run a model: ``contamination`` (TMLU §5.1). Thin: each
parses its options and runs its task through the same run lifecycle as ``localeval run``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from .run_and_report import run_and_report
from .run_options import (
    add_backend_arguments,
    add_folder_arguments,
    add_option_flags,
    add_task_option_flag,
    task_options,
    title_of,
)

if TYPE_CHECKING:
    from .parsers import Commands


def add_research_parsers(sub: Commands) -> None:
    from ..tasks.registry import task_kind

    kind = task_kind("contamination")
    c = sub.add_parser("contamination", help="Min-K%% Prob and Min-K%%++ of each text, compared "
                       "across datasets (TMLU §5.1: is a benchmark in the pre-training data?)")
    c.add_argument("--model", required=True, help="hf:<hub id or folder>, or openai:<name> at "
                   "--base-url (a server gives Min-K%% only: Min-K%%++ needs the full "
                   "next-token distribution)")
    add_option_flags(c, [(title_of(kind), kind.Options)])
    add_task_option_flag(c)
    add_folder_arguments(c)
    add_backend_arguments(c)
    c.add_argument("--json", action="store_true", help="print results.json instead of tables")
    c.add_argument("--max-failed", type=float, default=0.0, metavar="SHARE",
                   help="exit with status 3 when more than this share of the texts failed")
    c.add_argument("--quiet", action="store_true", help="no progress bar")
    c.set_defaults(func=cmd_contamination)


def cmd_contamination(args: argparse.Namespace) -> None:
    run_and_report(args, "contamination", task_options(args, "contamination"))
