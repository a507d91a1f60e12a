"""Turning the `run` command's options into the API's: task options, guard options, backend
options, --model-args, and the default run folder."""

from __future__ import annotations

import hashlib
import json
import re
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
    from .tasks.registry import task_class
    from .tasks.safeguard import SafeguardTask

    common = {"data": args.data, "limit": args.limit, "dataset_revision": args.dataset_revision}
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
