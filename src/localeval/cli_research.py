"""The papers' research commands that run a model: ``contamination`` (TMLU §5.1). Thin: each
parses its options and runs its task through the same run lifecycle as ``localeval run``."""

from __future__ import annotations

from .cli_options import (
    add_backend_arguments,
    add_folder_arguments,
    run_and_report,
)
from .cli_tools import _list
from .errors import LocalevalError


def add_research_parsers(sub) -> None:
    c = sub.add_parser("contamination", help="Min-K%% Prob and Min-K%%++ of each text, compared "
                       "across datasets (TMLU §5.1: is a benchmark in the pre-training data?)")
    c.add_argument("--model", required=True, help="hf:<hub id or folder>, or openai:<name> at "
                   "--base-url (a server gives Min-K%% only: Min-K%%++ needs the full "
                   "next-token distribution)")
    c.add_argument("--data", action="append", required=True, help="a built-in or local "
                   "multiple-choice dataset (question + options, one per line as 'A. …'), or a "
                   "JSONL/CSV of id + text; repeat for each dataset to compare")
    c.add_argument("--k", default="5,10,20,30,40,50,60", help="percentages of lowest-probability "
                   "tokens, comma-separated")
    c.add_argument("--sample", type=int, help="texts drawn per dataset (the paper: 2000)")
    c.add_argument("--seed", type=int, default=0, help="seed of --sample")
    c.add_argument("--drop-longest", type=float, default=0.0, metavar="SHARE",
                   help="drop this share of the longest texts within each subject (the paper's "
                   "length filter; it gives no share: default 0, off)")
    c.add_argument("--members", help="CSV/JSONL of id, member (1/0) and optional source: "
                   "ROC-AUC of each score")
    c.add_argument("--dataset-revision", help="dataset revision on the Hub")
    add_folder_arguments(c)
    add_backend_arguments(c)
    c.add_argument("--json", action="store_true", help="print results.json instead of tables")
    c.add_argument("--max-failed", type=float, default=0.0, metavar="SHARE",
                   help="exit with status 3 when more than this share of the texts failed")
    c.add_argument("--quiet", action="store_true", help="no progress bar")
    c.set_defaults(func=cmd_contamination)


def _ks(value: str) -> list[float]:
    try:
        return [float(k) for k in _list(value) or []]
    except ValueError:
        raise LocalevalError(f"--k must be comma-separated numbers, not {value!r}") from None


def cmd_contamination(args) -> None:
    run_and_report(args, "contamination", {
        "data": args.data, "k": _ks(args.k), "sample": args.sample, "seed": args.seed,
        "drop_longest": args.drop_longest, "members": args.members,
        "dataset_revision": args.dataset_revision})
