"""The command line. Thin: parses options and calls the API."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .cli_options import (
    _task_options,
    add_backend_arguments,
    add_folder_arguments,
    run_and_report,
)
from .cli_research import add_research_parsers
from .cli_tools import add_tool_parsers
from .errors import LocalevalError

# What `localeval --help` says first: written for users.
DESCRIPTION = """Evaluate LLMs and their safeguards in Taiwanese Mandarin, Chinese and Southeast-Asian
languages: TMLU, TMMLU+, CMMLU and SEA-SafeguardBench, the papers' protocols by default.

  localeval demo                                   the whole flow offline, in a minute
  localeval tasks                                  what can be evaluated
  localeval run --task tmlu --model hf:Qwen/Qwen2.5-7B-Instruct
  localeval run --task sea-safeguard --guard llamaguard3 --model hf:meta-llama/Llama-Guard-3-8B

Every run keeps a folder (--output, default runs/<task>/<model>-<settings>) with config.json,
results.json, samples.jsonl, the request cache and report.html (offline, with figures and a
sample browser): the same command again resumes."""
EPILOG = "`localeval <command> --help` shows each command's options."


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Shows an option's default where it has one worth showing."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if not text and action.option_strings and default not in (None, False, [],
                                                                   argparse.SUPPRESS):
            return "(default: %(default)s)"
        if "%(default)" in text or default in (None, False, [], argparse.SUPPRESS) or \
                "default" in text or not action.option_strings:
            return text
        return f"{text} (default: %(default)s)"


def _parser() -> argparse.ArgumentParser:
    from .version import __version__

    p = argparse.ArgumentParser(prog="localeval", description=DESCRIPTION, epilog=EPILOG,
                                formatter_class=_HelpFormatter)
    p.add_argument("--version", action="version", version=f"localeval {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    # --debug is accepted after the command too (localeval run ... --debug)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show tracebacks")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser = _with(sub.add_parser, parents=[common], formatter_class=_HelpFormatter)

    t = sub.add_parser("tasks", help="list built-in tasks, or one task's subjects")
    t.add_argument("task", nargs="?")
    t.add_argument("--json", action="store_true", help="print JSON instead of a table")

    r = sub.add_parser("run", help="evaluate a model on a task")
    r.add_argument("--task", required=True, help="tmlu, cmmlu, tmmluplus, sea-safeguard, "
                   "safety-prompts, safety-responses, llm-safety, or a name for --data")
    r.add_argument("--model", help="hf:<hub id or folder>, or openai:<model served at "
                   "--base-url> (not needed for a guard with a model of its own: "
                   "embedding:<file>, the moderation APIs)")
    r.add_argument("--data", help="local folder or file instead of the Hugging Face Hub")
    r.add_argument("--subjects", help="comma-separated subject ids (default: all)")
    r.add_argument("--shots", type=int, default=5, help="few-shot examples per question")
    r.add_argument("--method", default="likelihood", help="likelihood or generation")
    r.add_argument("--cot", action="store_true", help="chain-of-thought (needs --method generation)")
    r.add_argument("--prompt-style", help="tmlu (the TMLU paper's) or lm-eval (the CMMLU and "
                   "TMMLU+ authors', as lm-evaluation-harness has them); default: the task's own "
                   "(tmlu for tmlu and custom data, lm-eval for cmmlu and tmmluplus)")
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
    add_folder_arguments(r)
    r.add_argument("--dataset-revision", help="dataset revision on the Hub (branch, tag, commit)")
    add_backend_arguments(r)

    g = r.add_argument_group("safeguard tasks (sea-safeguard, safety-prompts, safety-responses)")
    g.add_argument("--guard", default="zero-shot", help="guard adapter: zero-shot (the paper's "
                   "prompt), zero-shot-verdict (ours, with a verdict prefill), llamaguard3, "
                   "llamaguard4, shieldgemma, qwen3guard, polyguard, wildguard, xguard; the "
                   "moderation APIs openai-moderation, azure-content-safety, model-armor, "
                   "lakera-guard (keys from the environment); or embedding:<file> (a guard "
                   "trained by `localeval train-guard`)")
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
    j = r.add_argument_group("LLM safety (llm-safety): the model's own answers, judged")
    j.add_argument("--judge", default="llamaguard3", help="the guard judging each response "
                   "(any --guard name)")
    j.add_argument("--judge-model", help="the judge's model (hf:…, openai:…); not needed for a "
                   "moderation API or embedding guard")
    j.add_argument("--judge-option", action="append", default=[], metavar="KEY=VALUE",
                   help="an option of the judge, repeatable")
    r.add_argument("--no-log-samples", action="store_true", help="samples.jsonl keeps a sha256 "
                   "of each prompt and response instead of the text (safeguard tasks)")
    r.add_argument("--json", action="store_true", help="print results.json instead of tables")
    r.add_argument("--max-failed", type=float, default=0.0, metavar="SHARE",
                   help="exit with status 3 when more than this share of the samples failed "
                   "(a request error, never a wrong answer)")
    r.add_argument("--quiet", action="store_true", help="no progress bar or warnings")

    c = sub.add_parser("compare", help="two runs: multiple choice, B minus A accuracy per "
                       "subject (exact McNemar); safeguards, B minus A PR-AUC per language "
                       "(paired bootstrap), or with B culture-aware, the paper's Table 3 delta")
    c.add_argument("baseline", help="run A (safety: the plain guard)")
    c.add_argument("aware", help="run B (safety: the same guard with --cultural-awareness)")
    c.add_argument("--json", action="store_true", help="print JSON instead of a table")

    w = sub.add_parser("show", help="print a run folder's tables again (they only read "
                       "results.json)")
    w.add_argument("folder", help="a run folder")
    w.add_argument("--json", action="store_true", help="print results.json")
    w.set_defaults(func=cmd_show)

    d = sub.add_parser("demo", help="the whole flow offline on bundled sample data (random model)")
    d.add_argument("--output", default="runs/demo", help="where the demo's run folders go")
    d.add_argument("--quiet", action="store_true", help="no progress bars")
    t.set_defaults(func=cmd_tasks)
    r.set_defaults(func=cmd_run)
    c.set_defaults(func=cmd_compare)
    d.set_defaults(func=cmd_demo)
    add_tool_parsers(sub)
    add_research_parsers(sub)
    return p


def _with(add_parser, **defaults):
    """``add_parser`` with keyword defaults (each subcommand gets --debug and our help format)."""
    return lambda name, **kw: add_parser(name, **{**defaults, **kw})




def cmd_tasks(args) -> None:
    from .report.console import make_console, print_json
    from .report.tasks import task_rows, task_table

    rows = task_rows(args.task)
    if args.json:
        print_json(rows)
    else:
        make_console().print(task_table(args.task, rows))














def cmd_run(args) -> None:
    run_and_report(args, args.task, _task_options(args))


def cmd_compare(args) -> None:
    from .api import compare_mcq_runs, compare_runs, compare_safety_runs, load_results
    from .report.console import make_console, print_json
    from .report.mcq_tables import print_mcq_comparison
    from .report.safety_tables import print_awareness_delta, print_safety_comparison

    run_a, run_b = load_results(args.baseline), load_results(args.aware)  # read once
    a, b = run_a.results, run_b.results
    kinds = [str(r.get("schema", "?")).split("/")[0].removeprefix("localeval.") for r in (a, b)]
    if kinds[0] != kinds[1]:
        raise LocalevalError(f"{args.baseline} is a {kinds[0]} run and {args.aware} a "
                             f"{kinds[1]} run; compare two runs of the same kind")
    if kinds[0] == "mcq":
        compare, show = compare_mcq_runs, print_mcq_comparison
    elif not a.get("cultural_awareness") and b.get("cultural_awareness"):
        compare, show = compare_runs, print_awareness_delta  # the paper's Table 3
    else:
        compare, show = compare_safety_runs, print_safety_comparison
    comparison = compare(run_a, run_b)
    if args.json:
        print_json(comparison)
    else:
        show(comparison, make_console())


def cmd_show(args) -> None:
    from .api import load_results
    from .report.console import make_console, print_json, print_results

    record = load_results(args.folder)
    if record.status != "finished":
        raise LocalevalError(f"{args.folder}: the run is {record.status}"
                             + (f" ({record.error})" if record.error else "")
                             + "; rerun its command to finish it")
    if args.json:
        print_json(record.results)
    else:
        print_results(record.results, make_console())


def cmd_demo(args) -> None:
    from .demo import run_demo

    run_demo(Path(args.output), quiet=args.quiet)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        args.func(args)
    except LocalevalError as e:
        if getattr(args, "debug", False):
            raise
        print(f"error: {e}", file=sys.stderr)
        return getattr(e, "exit_code", 2)
    except KeyboardInterrupt:
        print("interrupted; finished requests are in the cache, rerun the command to resume",
              file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
