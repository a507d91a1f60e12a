"""The dataset-tool commands (agreement, aggregate, build-cultural, diversity, train-guard).
Thin: each parses its options and calls one function of :mod:`localeval.tools`."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from ..backends.config import DEFAULT_EMBEDDER
from ..declared import pairs_of
from ..errors import LocalevalError
from ..words import counted
from .values import comma_list

if TYPE_CHECKING:
    from .parsers import Commands


def _add_cache_options(parser: argparse.ArgumentParser, what: str) -> None:
    """--cache and --no-cache of a tool whose requests (``what``) are cached like a run's."""
    parser.add_argument("--cache", help=f"SQLite file of {what} (default: "
                        "<output>.cache.sqlite)")
    parser.add_argument("--no-cache", action="store_true", help=f"keep no cache of {what} "
                        "(all are computed again next time)")


def _add_embedding_cache_options(parser: argparse.ArgumentParser) -> None:
    """--cache and --no-cache of a tool that embeds texts: the embedding cache it shares with
    the other embedding commands (store/embed_cache.py), and a file of its own besides."""
    parser.add_argument("--cache", help="another SQLite file of embeddings to read and add to "
                        "(the shared embedding cache is always used: $LOCALEVAL_EMBED_CACHE, "
                        "else $XDG_CACHE_HOME/localeval/embeddings.sqlite)")
    parser.add_argument("--no-cache", action="store_true", help="keep no cache of embeddings, "
                        "not even the shared one (all are computed again next time)")


def add_tool_parsers(sub: Commands) -> None:
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
    g.add_argument("--data", required=True, help="CSV, JSONL or Parquet, one column per "
                   "annotator")
    g.add_argument("--columns", required=True, help="annotator columns, comma-separated (2+)")
    g.add_argument("--output", required=True, help="file to write (.csv or .jsonl)")
    g.add_argument("--labels", help="the label set, comma-separated (default: the labels found)")
    g.add_argument("--min-share", type=float, default=0.5,
                   help="a label needs more than this share of the item's labels (default 0.5)")
    g.add_argument("--no-majority", default="sensitive",
                   help="the label of an item without one (default: sensitive)")
    g.set_defaults(func=cmd_aggregate)

    b = sub.add_parser("build-cultural", help="culturally specific prompts from 'things not to "
                       "do' per country (SEA-SafeguardBench §2.4), ready for annotation")
    b.add_argument("--data", required=True, help="CSV, JSONL or Parquet: country, topic (a "
                   "bare verb phrase, \"touch someone's head\", not \"touching ...\"), and "
                   "optional topic_<lang> columns")
    b.add_argument("--output", required=True, help="writes OUTPUT.jsonl and OUTPUT.csv")
    b.add_argument("--templates", help="JSON {lang: {encourage, instructions, disguise}}: other "
                   "wordings, or templates for topic_<lang> columns")
    b.add_argument("--families", default="encourage,instructions,disguise",
                   help="which templates, comma-separated (default: all three)")
    b.add_argument("--annotators", type=int, default=4, help="empty annotator columns (default 4)")
    b.add_argument("--model", help="also generate each prompt's response: hf:… or openai:…")
    b.add_argument("--max-tokens", type=int, default=512, help="the longest response, in "
                   "tokens")
    b.add_argument("--system", help="system prompt for the responses")
    b.add_argument("--base-url", help="OpenAI-compatible server for --model openai:…")
    b.add_argument("--api-key-env", default="OPENAI_API_KEY", help="the environment variable "
                   "holding the server's API key (never written anywhere)")
    _add_cache_options(b, "responses")
    b.add_argument("--quiet", action="store_true", help="no progress bar")
    b.set_defaults(func=cmd_build_cultural)

    d = sub.add_parser("diversity", help="diversity map (SEA-SafeguardBench Fig. 3): t-SNE of "
                       "sentence embeddings by group, centroid distances")
    d.add_argument("--data", required=True, help="CSV, JSONL or Parquet with a text column")
    d.add_argument("--output", required=True, help="folder for diversity.png/.svg/.json, "
                   "points.csv, centroid_distances.csv")
    d.add_argument("--by", default="lang", help="the column that colours the map: lang, "
                   "subset, country, … (default: lang)")
    d.add_argument("--where", action="append", default=[], metavar="COLUMN=VALUE",
                   help="keep matching rows only, repeatable (the paper: --where lang=en)")
    d.add_argument("--text-column", help="default: text, else prompt")
    d.add_argument("--embedder", default=DEFAULT_EMBEDDER, help="st:<sentence-transformers "
                   "model> (the paper: st:intfloat/multilingual-e5-large-instruct)")
    d.add_argument("--perplexity", type=float, default=30.0, help="t-SNE's perplexity")
    d.add_argument("--seed", type=int, default=0, help="t-SNE's seed: the same seed and input "
                   "give the same map")
    _add_embedding_cache_options(d)
    _add_embedder_options(d)
    d.add_argument("--quiet", action="store_true", help="no progress bar")
    d.set_defaults(func=cmd_diversity)

    t = sub.add_parser("train-guard", help="train an embedding guard (LionGuard-2 style) with "
                       "cross-validated PR-AUC per language; use it as --guard embedding:FILE")
    t.add_argument("--data", required=True, help="CSV, JSONL or Parquet: a text column and a "
                   "label (harmful/unsafe/1, safe/0, sensitive)")
    t.add_argument("--output", required=True, help="the guard file to write (JSON)")
    t.add_argument("--embedder", default=DEFAULT_EMBEDDER,
                   help="st:<sentence-transformers model> (default: all-MiniLM-L6-v2, offline)")
    t.add_argument("--text-column", help="default: text, else prompt")
    t.add_argument("--label-column", default="label", help="the column of gold labels")
    t.add_argument("--lang-column", default="lang", help="per-language figures (if present)")
    t.add_argument("--group-column", default="id", help="rows sharing it (translations of one "
                   "item) stay in one fold (if present)")
    t.add_argument("--train-langs", help="train on these languages only, comma-separated "
                   "(default: all); every language is still scored")
    t.add_argument("--folds", type=int, default=5, help="cross-validation folds")
    t.add_argument("--c", type=float, default=1.0, help="inverse regularisation strength")
    t.add_argument("--sensitive", default="exclude", choices=("exclude", "harmful", "safe"),
                   help="what a 'sensitive' label counts as (default: left out)")
    t.add_argument("--seed", type=int, default=0, help="seed of the folds' shuffle")
    _add_embedding_cache_options(t)
    _add_embedder_options(t)
    t.add_argument("--json", action="store_true", help="print the cross-validation as JSON")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    t.set_defaults(func=cmd_train_guard)


def cmd_agreement(args: argparse.Namespace) -> None:
    from ..records import finite
    from ..tools.annotations import measure

    result = finite(measure(args.data, comma_list(args.columns) or [], comma_list(args.labels),
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


def cmd_aggregate(args: argparse.Namespace) -> None:
    from ..tools.annotations import aggregate

    result = aggregate(args.data, comma_list(args.columns) or [], args.output, comma_list(args.labels),
                       args.min_share, args.no_majority)
    counts = ", ".join(f"{k} {v}" for k, v in sorted(result["labels"].items()))
    print(f"wrote {result['output']}: {result['n_items']} items ({counts}); rule: "
          f"{result['rule']}", file=sys.stderr)


def _add_embedder_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--role-option", action="append", default=[],
                        metavar="embedder.KEY=VALUE", help="an option of the embedder model, "
                        "repeatable: embedder.device=cuda, embedder.batch_size=64")


def _embedder_options(args: argparse.Namespace) -> dict[str, Any]:
    from .run_options import role_options

    roles = role_options(args)
    other = sorted(set(roles) - {"embedder"})
    if other:
        raise LocalevalError(f"--role-option {other[0]}.…: this command has one model role, "
                             "embedder")
    return roles.get("embedder", {})


def _cache(args: argparse.Namespace) -> str | None:
    """--cache, else a file beside --output (embeddings are kept for the next run)."""
    if args.no_cache:
        return None
    return args.cache or f"{args.output}.cache.sqlite"


def _embedding_cache(args: argparse.Namespace) -> str | None:
    """--cache of an embedding tool: a file besides the shared embedding cache, if named."""
    return None if args.no_cache else args.cache


def cmd_train_guard(args: argparse.Namespace) -> None:
    from ..records import finite
    from ..tools.train_guard import train_guard

    spec = train_guard(args.data, args.output, embedder=args.embedder,
                       text_column=args.text_column, label_column=args.label_column,
                       lang_column=args.lang_column, group_column=args.group_column,
                       train_langs=comma_list(args.train_langs), folds=args.folds, c=args.c,
                       sensitive=args.sensitive, seed=args.seed, cache=_embedding_cache(args),
                       quiet=args.quiet, embedder_options=_embedder_options(args),
                       shared_cache=not args.no_cache)
    cv = finite(spec["cross_validation"])
    if args.json:
        print(json.dumps(cv, ensure_ascii=False))
        return
    training = spec["training"]
    print(f"cross-validated ({training['cv']['folds']} folds by {training['columns']['group']}), "
          f"trained on {', '.join(training['train_langs'])}:")
    print(f"{'lang':6s} {'n':>5s} {'harmful':>7s} {'PR-AUC':>7s} {'AP':>7s} {'ROC-AUC':>7s}")
    for lang, m in cv.items():
        cells = [_fmt(m[k]) for k in ("pr_auc", "average_precision", "roc_auc")]
        mark = "*" if m["trained_on"] and lang != "all" else " "
        print(f"{lang + mark:6s} {m['n']:5d} {m['n_harmful']:7d} " + " ".join(
            f"{c:>7s}" for c in cells))
    print("* trained on.")
    print(f"wrote {args.output}; use it with --guard embedding:{args.output}", file=sys.stderr)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}"


def _where(values: list[str]) -> dict[str, str]:
    """--where COLUMN=VALUE, repeated: the rows kept (values stripped)."""
    return {k: v.strip() for k, v in pairs_of(values, "--where", "COLUMN=VALUE").items()}


def cmd_diversity(args: argparse.Namespace) -> None:
    from ..tools.diversity import diversity_map

    summary = diversity_map(args.data, args.output, by=args.by, text_column=args.text_column,
                            where=_where(args.where), embedder=args.embedder,
                            perplexity=args.perplexity, seed=args.seed,
                            cache=_embedding_cache(args), quiet=args.quiet,
                            embedder_options=_embedder_options(args),
                            shared_cache=not args.no_cache)
    names = list(summary["groups"])
    print(f"{summary['n_texts']} texts by {summary['by']}; centroid cosine distance "
          "(spread on the diagonal):")
    print(f"{'':8s}" + "".join(f"{n[:7]:>8s}" for n in names))
    for a in names:
        row = [summary["groups"][a]["spread"] if a == b else summary["centroid_distance"][a][b]
               for b in names]
        print(f"{a[:8]:8s}" + "".join(f"{v:8.3f}" for v in row))
    print(f"wrote {args.output}/ ({', '.join(summary['files'])}, diversity.json)",
          file=sys.stderr)


def cmd_build_cultural(args: argparse.Namespace) -> None:
    from ..store.executor import rerun_advice
    from ..tools.cultural import build_cultural

    options = {"base_url": args.base_url, "api_key_env": args.api_key_env}
    result = build_cultural(args.data, args.output, templates=args.templates,
                            families=comma_list(args.families) or [], annotators=args.annotators,
                            model=args.model, max_tokens=args.max_tokens, system=args.system,
                            cache=_cache(args) if args.model else None,
                            backend_options=options, quiet=args.quiet)
    model = f", responses by {result['response_model']}" if result["response_model"] else ""
    failed = (f" ({result['n_failed']} failed: {rerun_advice(result)})" if result["n_failed"]
              else "")
    print(f"wrote {' and '.join(result['files'])}: {result['n_prompts']} prompts, "
          f"{counted(len(result['countries']), 'country', 'countries')}, languages "
          f"{', '.join(result['langs'])}"
          f"{model}{failed}; annotator columns {', '.join(result['annotator_columns'])}",
          file=sys.stderr)
