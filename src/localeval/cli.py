"""The command line. Thin: parses options and calls the API."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .cli_tools import _list, add_tool_parsers
from .errors import LocalevalError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="localeval", description=__doc__)
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = p.add_subparsers(dest="command", required=True)

    t = sub.add_parser("tasks", help="list built-in tasks, or one task's subjects")
    t.add_argument("task", nargs="?")

    r = sub.add_parser("run", help="evaluate a model on a task")
    r.add_argument("--task", required=True, help="tmlu, cmmlu, tmmluplus, sea-safeguard, "
                   "safety-prompts, safety-responses, or a name for --data")
    r.add_argument("--model", help="hf:<hub id or folder>, or openai:<model served at "
                   "--base-url> (not needed with --guard embedding:<file>: its own embedder)")
    r.add_argument("--data", help="local folder or file instead of the Hugging Face Hub")
    r.add_argument("--subjects", help="comma-separated subject ids (default: all)")
    r.add_argument("--shots", type=int, default=5)
    r.add_argument("--method", default="likelihood", help="likelihood or generation")
    r.add_argument("--cot", action="store_true", help="chain-of-thought (needs --method generation)")
    r.add_argument("--prompt-style", default="tmlu", help="tmlu (the paper's) or lm-eval")
    r.add_argument("--chat", default="none", help="none, single (few-shot in one user turn) or "
                   "multi (one turn per shot); uses the model's chat template")
    r.add_argument("--system", help="system prompt (with --chat) or text before the prompt")
    r.add_argument("--max-tokens", type=int, help="generation budget (default 128 with the TMLU "
                   "rules; with --extract strict 16, or 1024 with --cot)")
    r.add_argument("--extract", choices=("tmlu", "strict"),
                   help="how a generated answer becomes a letter: tmlu (the TMLU code's rules; "
                   "default for --prompt-style tmlu) or strict (the first character must be the "
                   "letter; CoT: the last final-answer statement; default for lm-eval)")
    r.add_argument("--limit", type=int, help="first N test questions per subject")
    r.add_argument("--output", help="run folder for config.json, results.json, samples.jsonl")
    r.add_argument("--cache", help="SQLite file of finished requests (default: <output>/cache.sqlite)")
    r.add_argument("--no-cache", action="store_true")
    r.add_argument("--dataset-revision")
    r.add_argument("--revision", help="model revision (Hub branch, tag or commit)")
    r.add_argument("--dtype", default="auto", help="auto (the checkpoint's on GPU, float32 on CPU), "
                   "float32, bfloat16, float16")
    r.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1, …")
    r.add_argument("--batch-size", default="auto", help="'auto' (fits memory) or an integer")
    r.add_argument("--attn", default="eager", help="attention implementation (eager keeps results "
                   "identical across batch sizes; sdpa is faster on GPUs)")
    r.add_argument("--padding-side", default="right", help="right or left (results are the same)")
    r.add_argument("--no-prefix-reuse", action="store_true",
                   help="forward every prompt whole (for comparison; results are the same)")
    r.add_argument("--base-url", help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1 "
                   "(default $OPENAI_BASE_URL)")
    r.add_argument("--api-key-env", default="OPENAI_API_KEY",
                   help="name of the environment variable holding the API key")
    r.add_argument("--concurrency", type=int, default=8, help="parallel requests to a server")
    g = r.add_argument_group("safeguard tasks (sea-safeguard, safety-prompts, safety-responses)")
    g.add_argument("--guard", default="zero-shot", help="guard adapter: zero-shot (the paper's "
                   "prompt), zero-shot-verdict (ours, with a verdict prefill), llamaguard3, "
                   "llamaguard4, shieldgemma, qwen3guard, polyguard, wildguard, xguard, or "
                   "embedding:<file> (a guard trained by `localeval train-guard`)")
    g.add_argument("--guard-option", action="append", default=[], metavar="KEY=VALUE",
                   help="an option of the guard, repeatable: e.g. mode=per-policy (shieldgemma), "
                   "controversial=harmful (qwen3guard), translator=none (xguard)")
    g.add_argument("--subset", help="comma-separated: general, cultural-itw, cultural-cg")
    g.add_argument("--lang", help="comma-separated language codes (default: all)")
    g.add_argument("--classify", help="comma-separated: prompt, response, response-with-prompt, "
                   "response-without-prompt (default: the task's)")
    g.add_argument("--sensitive", help="how 'sensitive' labels count: safe, harmful or exclude "
                   "(default: the paper's: safe for prompts, harmful for responses)")
    g.add_argument("--cultural-awareness", action="store_true",
                   help="tell the zero-shot guard each item's country (paper Table 3)")
    g.add_argument("--bootstrap", type=int, default=1000, help="resamples for 95%% CIs (0: none)")
    g.add_argument("--auprc", default="trapezoid", choices=("trapezoid", "ap"),
                   help="PR-AUC of the tables: trapezoid under the PR curve (the paper's code, "
                   "default) or ap (average precision); results.json holds both")
    g.add_argument("--on-failure", default="exclude", choices=("exclude", "neutral"),
                   help="a failed guard sample: exclude (left out and counted, default) or "
                   "neutral (scored 1/#labels and kept, as the authors' code does)")
    g.add_argument("--calibrate-on", default="en", metavar="LANG",
                   help="language whose best-F1 threshold is applied to the others (default: en)")
    r.add_argument("--quiet", action="store_true")

    c = sub.add_parser("compare", help="cultural-awareness delta of two safety runs (paper "
                       "Table 3): culture-aware minus plain AUPRC on the CG subset")
    c.add_argument("baseline", help="run folder of the plain guard")
    c.add_argument("aware", help="run folder of the same guard with --cultural-awareness")

    d = sub.add_parser("demo", help="the whole flow offline on bundled sample data (random model)")
    d.add_argument("--output", default="runs/demo")
    d.add_argument("--quiet", action="store_true")
    t.set_defaults(func=cmd_tasks)
    r.set_defaults(func=cmd_run)
    c.set_defaults(func=cmd_compare)
    d.set_defaults(func=cmd_demo)
    add_tool_parsers(sub)
    return p


def _batch_size(value: str):
    if value == "auto":
        return value
    try:
        return int(value)
    except ValueError:
        raise LocalevalError(f"--batch-size must be 'auto' or an integer, not {value!r}") from None


def cmd_tasks(args) -> None:
    from rich.console import Console
    from rich.table import Table

    from .data.catalog import get_task
    from .tasks.registry import TASKS

    console = Console()
    if args.task is None:
        table = Table(title="Built-in tasks (any local folder works too: --data PATH)")
        for col in ("task", "Hub dataset", "subjects", "description"):
            table.add_column(col)
        for entry in TASKS.values():
            table.add_row(entry.name, entry.source, entry.size.removesuffix(" subjects"),
                          entry.description)
        console.print(table)
        return
    spec = get_task(args.task)
    table = Table(title=f"{spec.name} subjects")
    for col in ("subject", "name", "discipline", "level", "questions", "options"):
        table.add_column(col)
    for s in spec.subjects.values():
        table.add_row(s.id, s.name, s.discipline, s.level or "", str(s.n_questions or ""),
                      str(s.n_options or ""))
    console.print(table)


def _task_options(args) -> dict:
    """The options of the task ``--task`` names, from the command line."""
    from .tasks.registry import task_class
    from .tasks.safeguard import SafeguardTask

    common = {"data": args.data, "limit": args.limit, "dataset_revision": args.dataset_revision}
    if issubclass(task_class(args.task), SafeguardTask):
        return {**common, "guard": args.guard, "subsets": _list(args.subset),
                "langs": _list(args.lang), "classify": _list(args.classify),
                "sensitive": args.sensitive, "n_resamples": args.bootstrap,
                "calibrate_on": args.calibrate_on, "auprc": args.auprc,
                "on_failure": args.on_failure,
                "guard_options": _guard_options(args) or None}
    return {**common, "subjects": _list(args.subjects), "shots": args.shots,
            "method": args.method, "cot": args.cot, "prompt_style": args.prompt_style,
            "chat": args.chat, "system": args.system, "max_tokens": args.max_tokens,
            "extract": args.extract}


def _guard_options(args) -> dict:
    """--guard-option KEY=VALUE pairs (none, true, false and integers typed) and
    --cultural-awareness."""
    out: dict = {"cultural_awareness": True} if args.cultural_awareness else {}
    for pair in args.guard_option:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise LocalevalError(f"--guard-option {pair!r}: write KEY=VALUE")
        typed = {"none": None, "true": True, "false": False}.get(value.lower(), value)
        out[key.strip().replace("-", "_")] = int(value) if value.isdigit() else typed
    return out


def cmd_run(args) -> None:
    from .api import evaluate
    from .report.console import print_results

    cache = None
    if not args.no_cache:
        cache = args.cache or (Path(args.output) / "cache.sqlite" if args.output else None)
    backend_options = {
        "revision": args.revision, "dtype": args.dtype, "device": args.device,
        "batch_size": _batch_size(args.batch_size), "attn": args.attn,
        "prefix_reuse": not args.no_prefix_reuse, "padding_side": args.padding_side,
        "base_url": args.base_url,
        "api_key_env": args.api_key_env, "concurrency": args.concurrency}
    result = evaluate(task=args.task, model=args.model, output=args.output, cache=cache,
                      backend_options=backend_options, quiet=args.quiet, command=sys.argv,
                      **_task_options(args))
    print_results(result.results)
    if result.folder:
        print(f"wrote {result.folder}/ (config.json, results.json, samples.jsonl)")


def cmd_compare(args) -> None:
    from .api import compare_runs
    from .report.safety_tables import print_awareness_delta

    print_awareness_delta(compare_runs(args.baseline, args.aware))


def cmd_demo(args) -> None:
    from .demo import run_demo

    run_demo(Path(args.output), quiet=args.quiet)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        args.func(args)
    except LocalevalError as e:
        if args.debug:
            raise
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; finished requests are in the cache, rerun the command to resume",
              file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
