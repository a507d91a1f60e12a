"""Turning the `run` command's options into the API's: task options, guard options, backend
options, --model-args, and the default run folder."""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

from .cli_tools import _list
from .errors import LocalevalError


def _batch_size(value: str):
    if value == "auto":
        return value
    try:
        return int(value)
    except ValueError:
        raise LocalevalError(f"--batch-size must be 'auto' or an integer, not {value!r}") from None


def _task_options(args) -> dict:
    """The options of the task ``--task`` names, from the command line."""
    from .tasks.contamination import ContaminationTask
    from .tasks.llm_safety import LLMSafetyTask
    from .tasks.registry import task_class
    from .tasks.safeguard import SafeguardTask

    if issubclass(task_class(args.task), ContaminationTask):
        raise LocalevalError("contamination has a command of its own: localeval contamination "
                             "--model M --data A --data B [--k …] [--sample N]")
    common = {"data": args.data, "limit": args.limit, "dataset_revision": args.dataset_revision}
    if issubclass(task_class(args.task), LLMSafetyTask):
        return {**common, "judge": args.judge, "judge_model": args.judge_model,
                "judge_options": _key_values(args.judge_option, "--judge-option") or None,
                "subsets": _list(args.subset), "langs": _list(args.lang),
                "max_tokens": args.max_tokens, "system": args.system,
                "sensitive": args.sensitive, "n_resamples": args.bootstrap}
    if issubclass(task_class(args.task), SafeguardTask):
        return {**common, "guard": args.guard, "subsets": _list(args.subset),
                "langs": _list(args.lang), "classify": _list(args.classify),
                "sensitive": args.sensitive, "n_resamples": args.bootstrap,
                "calibrate_on": args.calibrate_on, "auprc": args.auprc,
                "on_failure": args.on_failure, "log_samples": not args.no_log_samples,
                "guard_options": _guard_options(args) or None}
    return {**common, "subjects": _list(args.subjects), "shots": args.shots,
            "method": args.method, "cot": args.cot, "prompt_style": args.prompt_style,
            "chat": args.chat, "system": args.system, "max_tokens": args.max_tokens,
            "extract": args.extract}


def _guard_options(args) -> dict:
    """--guard-option KEY=VALUE pairs and --cultural-awareness."""
    out: dict = {"cultural_awareness": True} if args.cultural_awareness else {}
    return {**out, **_key_values(args.guard_option, "--guard-option")}


def _key_values(pairs: list[str], option: str) -> dict:
    """Repeated KEY=VALUE options (none, true, false and integers typed)."""
    out: dict = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise LocalevalError(f"{option} {pair!r}: write KEY=VALUE")
        typed = {"none": None, "true": True, "false": False}.get(value.lower(), value)
        out[key.strip().replace("-", "_")] = int(value) if value.isdigit() else typed
    return out


def _typed(value: str):
    """A KEY=VALUE value: none, true, false and numbers typed; the rest text."""
    low = value.strip().lower()
    if low in ("none", "true", "false"):
        return {"none": None, "true": True, "false": False}[low]
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value.strip()


def _model_args(text: str | None) -> dict | None:
    if not text:
        return None
    out = {}
    for pair in text.split(","):
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise LocalevalError(f"--model-args {pair!r}: write KEY=VALUE,KEY=VALUE")
        out[key.strip()] = _typed(value)
    return out


def _backend_options(args) -> dict:
    return {"revision": args.revision, "dtype": args.dtype, "device": args.device,
            "batch_size": _batch_size(args.batch_size), "attn": args.attn,
            "prefix_reuse": not args.no_prefix_reuse, "padding_side": args.padding_side,
            "base_url": args.base_url, "api_key_env": args.api_key_env,
            "concurrency": args.concurrency, "rate_limit": args.rate_limit,
            "timeout": args.timeout, "max_retries": args.max_retries,
            "top_logprobs": args.top_logprobs, "model_args": _model_args(args.model_args)}


# Backend options that change how fast a run goes, never its numbers.
SPEED_ONLY = ("batch_size", "concurrency", "rate_limit", "timeout", "max_retries",
              "padding_side", "prefix_reuse", "api_key_env")


def default_output(task: str, model: str | None, options: dict, backend: dict) -> Path:
    """runs/<task>/<model name>-<hash of every setting that can change a number>: the same
    command finds its folder again (and resumes), also with other speed settings (batch size,
    concurrency, timeouts); other settings get another."""
    kept = {k: v for k, v in backend.items() if k not in SPEED_ONLY}
    settings = json.dumps([task, model, options, kept], sort_keys=True, default=str)
    digest = hashlib.sha256(settings.encode()).hexdigest()[:8]
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", (model or "own-model").split(":", 1)[-1]
                  .rstrip("/").split("/")[-1]).strip("-") or "model"
    return Path("runs") / re.sub(r"[^A-Za-z0-9._-]+", "-", task) / f"{name}-{digest}"



def add_folder_arguments(parser) -> None:
    """--output, --overwrite, --cache, --no-cache, --store, --no-report: the run folder, its
    request cache, the results store and the HTML report."""
    parser.add_argument("--output", help="run folder for config.json, results.json, "
                        "samples.jsonl and the cache; default runs/<task>/<model>-<settings "
                        "hash>, so the same command resumes")
    parser.add_argument("--overwrite", action="store_true", help="replace a run with other "
                        "settings in --output (by default that is refused)")
    parser.add_argument("--cache", help="SQLite file of finished requests (default: "
                        "<output>/cache.sqlite)")
    parser.add_argument("--no-cache", action="store_true", help="keep no cache (nothing "
                        "resumes)")
    parser.add_argument("--store", help="results store the finished run is recorded in "
                        "(default $LOCALEVAL_STORE, else $XDG_DATA_HOME/localeval/results.sqlite)")
    parser.add_argument("--no-store", action="store_true", help="do not record the run in the "
                        "results store")
    parser.add_argument("--no-report", action="store_true", help="do not write the HTML report "
                        "(<output>/report.html; `localeval report` writes it later)")


def add_backend_arguments(parser) -> None:
    """How the model is loaded and run: every backend's options (each takes its own)."""
    a = parser.add_argument
    a("--revision", help="model revision (Hub branch, tag or commit)")
    a("--model-args", metavar="KEY=VALUE,...", help="more model-loading options, as lm-eval "
      "takes them: e.g. trust_remote_code=true,low_cpu_mem_usage=true")
    a("--dtype", default="auto", help="auto (the checkpoint's on GPU, float32 on CPU), float32, "
      "bfloat16, float16")
    a("--device", default="auto", help="auto, cpu, cuda, cuda:1, …")
    a("--batch-size", default="auto", help="'auto' (fits memory) or an integer")
    a("--attn", default="eager", help="attention implementation (eager keeps results identical "
      "across batch sizes; sdpa is faster on GPUs)")
    a("--padding-side", default="right", help="right or left (results are the same)")
    a("--no-prefix-reuse", action="store_true", help="forward every prompt whole (for "
      "comparison; results are the same)")
    a("--base-url", help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1; several, "
      "comma-separated, spread the load over replicas (default $OPENAI_BASE_URL)")
    a("--api-key-env", default="OPENAI_API_KEY", help="name of the environment variable "
      "holding the API key")
    a("--concurrency", type=int, default=8, help="requests in flight to a server")
    a("--rate-limit", type=float, metavar="PER_SECOND", help="at most this many requests "
      "started per second (default: no limit)")
    a("--timeout", type=float, default=120.0, help="seconds per request (server)")
    a("--max-retries", type=int, default=4, help="retries of a request on 408, 429, 5xx, "
      "timeouts, dropped connections and malformed replies (server)")
    a("--top-logprobs", type=int, default=20, help="next-token log-probs asked of a server for "
      "likelihood scoring")


class TooManyFailures(LocalevalError):
    exit_code = 3


def check_failures(results: dict, max_failed: float) -> None:
    """Exit non-zero when more than ``max_failed`` (a share) of the samples failed; the run
    folder and cache keep everything that finished."""
    failed, n = results.get("n_failed") or 0, results.get("n_samples") or 0
    if n and failed / n > max_failed:
        raise TooManyFailures(f"{failed} of {n} samples failed (over --max-failed "
                              f"{max_failed:g}); they are left out of the results, and finished "
                              "requests are cached: rerun the same command to retry them")


def store_option(args):
    """--store PATH, --no-store, or None (the default store)."""
    return False if args.no_store else args.store


def run_and_report(args, task: str, options: dict) -> None:
    """What every model command does once its task options are known: the run folder (given
    or the default), the cache, the run, its tables or JSON, and the --max-failed check."""
    from .api import evaluate
    from .report.console import make_console, print_json, print_results

    backend_options = _backend_options(args)
    output = Path(args.output) if args.output else default_output(
        task, args.model, options, backend_options)
    cache = None if args.no_cache else (args.cache or output / "cache.sqlite")
    result = evaluate(task=task, model=args.model, output=output, cache=cache,
                      backend_options=backend_options, quiet=args.quiet, command=sys.argv,
                      overwrite=args.overwrite, store=store_option(args), **options)
    if args.json:
        print_json(result.results)
    else:
        print_results(result.results, make_console())
    if not args.no_report:
        from .report.html import write_report

        report = write_report([result.folder])
    if not args.json:
        written = "config.json, results.json, samples.jsonl" + \
            ("" if args.no_report else f", {report.name}")
        print(f"wrote {result.folder}/ ({written})")
    check_failures(result.results, args.max_failed)
