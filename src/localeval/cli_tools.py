"""The dataset-tool commands: agreement, aggregate, build-cultural, diversity, train-guard.
Thin: each parses its options and calls one function of :mod:`localeval.tools`."""

from __future__ import annotations

import json
import sys


def _list(value: str | None) -> list[str] | None:
    """A comma-separated option as a list (the main CLI's too)."""
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def add_tool_parsers(sub) -> None:
    a = sub.add_parser("agreement", help="inter-annotator agreement: percent, Cohen's and "
                       "Fleiss' kappa, Krippendorff's alpha")
    a.add_argument("--data", required=True, help="CSV, JSONL or Parquet, one column per annotator")
    a.add_argument("--columns", required=True, help="annotator columns, comma-separated (2+)")
    a.add_argument("--labels", help="the label set, comma-separated (low to high with --ordinal); "
                   "a label outside it is an error (default: the labels found)")
    a.add_argument("--ordinal", action="store_true", help="Krippendorff's alpha for ordered labels")
    a.add_argument("--json", action="store_true", help="print one JSON object")
    a.set_defaults(func=cmd_agreement)

    g = sub.add_parser("aggregate", help="one label per item by majority vote, 'sensitive' "
                       "without a clear majority (SEA-SafeguardBench §2.4)")
    g.add_argument("--data", required=True)
    g.add_argument("--columns", required=True, help="annotator columns, comma-separated (2+)")
    g.add_argument("--output", required=True, help="file to write (.csv or .jsonl)")
    g.add_argument("--labels", help="the label set, comma-separated (default: the labels found)")
    g.add_argument("--min-share", type=float, default=0.5,
                   help="a label needs more than this share of the item's labels (default 0.5)")
    g.add_argument("--no-majority", default="sensitive",
                   help="the label of an item without one (default: sensitive)")
    g.set_defaults(func=cmd_aggregate)


def cmd_agreement(args) -> None:
    from .run import finite
    from .tools.annotations import measure

    result = finite(measure(args.data, _list(args.columns) or [], _list(args.labels),
                             args.ordinal))
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
        return
    rows = [("items", result["n_items"]), ("annotators", result["n_annotators"]),
            ("percent agreement", result["percent_agreement"]),
            ("Cohen's kappa", result["cohen_kappa"]), ("Fleiss' kappa", result["fleiss_kappa"]),
            (f"Krippendorff's alpha ({result['level']})", result["krippendorff_alpha"])]
    for name, value in rows:
        shown = "-" if value is None else (f"{value:.4f}" if isinstance(value, float) else value)
        print(f"{name:32s} {shown}")


def cmd_aggregate(args) -> None:
    from .tools.annotations import aggregate

    result = aggregate(args.data, _list(args.columns) or [], args.output, _list(args.labels),
                       args.min_share, args.no_majority)
    counts = ", ".join(f"{k} {v}" for k, v in sorted(result["labels"].items()))
    print(f"wrote {result['output']}: {result['n_items']} items ({counts}); rule: "
          f"{result['rule']}", file=sys.stdout)
