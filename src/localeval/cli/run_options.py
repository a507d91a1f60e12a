"""The flags of the commands that run a model, built from what declares them once: each task
kind's ``Options`` (:mod:`localeval.tasks.options`), :class:`~localeval.backends.config.
BackendConfig`, and the run folder's flags; and how they become the API's arguments.

Unknown input has one policy: a flag of another task kind, a ``-T`` key the task does not
have, and a backend option no model of the run takes are each one line and exit 2, before any
model loads.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..backends.config import BackendConfig
from ..backends.options import kinds_taking
from ..declared import pairs_of, parse_if_text
from ..errors import LocalevalError
from ..tasks.options import TaskOptions, declared_value, flag_arguments, flag_of
from .values import comma_list

if TYPE_CHECKING:  # annotations only: the records import pydantic
    from ..records import Results
    from ..tasks.registry import AnyKind
    from ..tasks.shards import Shard

SHORTCUT = "shortcut:"  # argparse dest prefix of a shortcut flag (it sets a key of a pairs option)


# ------------------------------------------------------------------ declaring flags
def add_option_flags(parser: argparse.ArgumentParser,
                     options_classes: list[tuple[str, type[TaskOptions]]]) -> None:
    """One flag per option field, in a group per kind of task (``(title, Options)`` pairs);
    an option several kinds share gets one flag whose help names each kind's meaning. Every
    flag defaults to "not given", so a flag of another kind can be told apart."""
    helps: dict[str, list[tuple[str, str]]] = {}
    for title, cls in options_classes:
        for f in dataclasses.fields(cls):
            helps.setdefault(f.name, [])
            if f.metadata["help"] not in [h for _, h in helps[f.name]]:
                helps[f.name].append((title, f.metadata["help"]))
    done: set[str] = set()
    for title, cls in options_classes:
        group = parser.add_argument_group(title)
        for f in dataclasses.fields(cls):
            if f.name not in done:
                done.add(f.name)
                _add_field(group, cls, f, helps[f.name])


def _add_field(group: argparse._ArgumentGroup, cls: type[TaskOptions], f: dataclasses.Field[Any],
               helps: list[tuple[str, str]]) -> None:
    meta = f.metadata
    text = helps[0][1] if len(helps) == 1 else "; ".join(f"{t.split(' (')[0]}: {h}"
                                                         for t, h in helps)
    if f.default not in (None, False, True, ()) and "default" not in text:
        text += f" (default: {_shown(f.default)})"
    kwargs = {"dest": f.name, "default": argparse.SUPPRESS, "help": text.replace("%", "%%"),
              **flag_arguments(cls, f)}
    if meta.get("parse") == "pairs":
        kwargs.update(action="append")
    if meta.get("flag") and "metavar" not in kwargs and kwargs.get("action") not in (
            "store_true", "store_false"):
        kwargs["metavar"] = meta["flag"].lstrip("-").upper().replace("-", "_")
    group.add_argument(flag_of(f), **kwargs)
    if meta.get("shortcut"):
        flag, key, help_text = meta["shortcut"]
        group.add_argument(flag, dest=f"{SHORTCUT}{f.name}:{key}", action="store_true",
                           default=argparse.SUPPRESS, help=help_text)


def _shown(value: Any) -> str:
    if isinstance(value, tuple | list):
        return ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
    return str(value)


def add_task_option_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-T", "--task-option", dest="task_option", action="append", default=[],
                        metavar="KEY=VALUE", help="any option of the task by its Python name "
                        "(the flags above, and help(localeval.evaluate), list them), "
                        "repeatable; values typed as in --model-args")


def add_backend_arguments(parser: argparse.ArgumentParser) -> None:
    """How the models are loaded and run: every field of BackendConfig (each backend takes its
    own, the kinds in brackets: their declarations, no backend imported; setting one that no
    model of the run takes is an error), and --role-option."""
    group = parser.add_argument_group("models (each backend takes its own options)")
    for f in dataclasses.fields(BackendConfig):
        meta = dict(f.metadata)
        flag = meta.pop("flag", None) or "--" + f.name.replace("_", "-")
        for declaration in ("secret", "secret_keys", "role"):  # ours, not argparse's
            meta.pop(declaration, None)
        text = meta.pop("help")
        if f.default is not None and not isinstance(f.default, bool) and "default" not in text:
            text += f" (default: {f.default})"
        text += f" [{', '.join(kinds_taking(f.name))}]"  # the backends declaring it (.options)
        group.add_argument(flag, dest=f.name, default=f.default, help=text, **meta)
    group.add_argument("--role-option", action="append", default=[], metavar="ROLE.KEY=VALUE",
                       help="an option of one second model (role judge, translator), e.g. "
                       "judge.device=cuda:1 or translator.dtype=float16; the options above "
                       "apply to every model whose backend takes them")


def add_cluster_arguments(parser: argparse.ArgumentParser) -> None:
    """--cluster, --workers: where the run's requests run (speed-role: the same run, recorded
    in config.json as a fact of where it ran; Ray is imported only when a run names one)."""
    group = parser.add_argument_group("a Ray cluster (pip install 'localeval[ray]')")
    group.add_argument("--cluster", metavar="ADDRESS", help="run the requests on a Ray "
                       "cluster's workers (auto, ray://HEAD:10001, HEAD:6379), each loading "
                       "--model from its spec (a path every node reads, or a Hub name); this "
                       "machine plans, caches and writes the run folder, and a lost node's "
                       "requests run again on the others")
    group.add_argument("--workers", type=int, metavar="N", help="Ray workers of --cluster "
                       "(default: one per node, one per GPU of a node with GPUs)")


def add_folder_arguments(parser: argparse.ArgumentParser) -> None:
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
    parser.add_argument("--store", metavar="PATH|URL", help="results store the finished run is "
                        "recorded in: a SQLite file or a postgresql:// URL (default "
                        "$LOCALEVAL_STORE, else $XDG_DATA_HOME/localeval/results.sqlite)")
    parser.add_argument("--no-store", action="store_true", help="do not record the run in the "
                        "results store")
    parser.add_argument("--no-report", action="store_true", help="do not write the HTML report "
                        "(<output>/report.html; `localeval report` writes it later)")
    parser.add_argument("--all", action="store_true", help="print every table of the run "
                        "(default: the headline table, as the paper has it; `localeval show "
                        "FOLDER` prints them all later)")


# ------------------------------------------------------------------ reading flags
def task_options(args: argparse.Namespace, task: str | None = None) -> dict[str, Any]:
    """The options of the task ``--task`` names (or ``task``), every field: from the flags
    given and -T, else the benchmark's own (``tmlu-cot``'s), else the default; a given flag of
    another kind of task is one clear error."""
    from ..tasks.benchmarks import benchmark_defaults
    from ..tasks.registry import kinds, task_kind

    name = task or args.task
    cls = task_kind(name)
    if cls.command != getattr(args, "command", cls.command):
        raise LocalevalError(f"{name} has a command of its own: localeval {cls.command} --help")
    fields = {f.name: f for f in dataclasses.fields(cls.Options)}
    given = {k: v for k, v in vars(args).items()
             if k in _all_option_names(kinds()) or k.startswith(SHORTCUT)}
    _refuse_other_kinds(name, cls, fields, given)
    out = {k: _value(cls.Options, fields[k], v) for k, v in given.items() if k in fields}
    for key, on in given.items():
        if key.startswith(SHORTCUT) and on:
            _, field, sub = key.split(":")
            out[field] = {sub: True, **(out.get(field) or {})}
    out.update(_dash_t(name, cls.Options, fields, getattr(args, "task_option", [])))
    # a flag not given is the benchmark's own option, else the kind's default (issue 61: the
    # kind's default once overrode tmlu-cot's method and CoT); every field is named, as the
    # default output folder's hash has always been taken over all of them
    own = benchmark_defaults(name)
    return {f: out.get(f, own.get(f, fields[f].default)) for f in fields}


def _all_option_names(kinds: Iterable[AnyKind]) -> set[str]:
    return {f.name for cls in kinds for f in dataclasses.fields(cls.Options)}


def _refuse_other_kinds(name: str, cls: AnyKind, fields: dict[str, dataclasses.Field[Any]],
                        given: dict[str, Any]) -> None:
    from ..tasks.registry import TASKS, kinds

    for key in given:
        option = key.split(":")[1] if key.startswith(SHORTCUT) else key
        if option in fields:
            continue
        owners = [k for k in kinds() if option in {f.name for f in
                                                        dataclasses.fields(k.Options)}]
        flag = _flag(owners[0], key) if owners else key
        tasks = ", ".join(e.name for e in TASKS.values() if e.kind in owners)
        raise LocalevalError(f"{flag} is not an option of task {name!r} "
                             f"({title_of(cls)}); it is for {tasks}")


def _flag(cls: AnyKind, key: str) -> str:
    if key.startswith(SHORTCUT):
        _, field, _ = key.split(":")
        f = next(f for f in dataclasses.fields(cls.Options) if f.name == field)
        shortcut: tuple[str, str, str] = f.metadata["shortcut"]  # (flag, key, help)
        return shortcut[0]
    f = next(f for f in dataclasses.fields(cls.Options) if f.name == key)
    return flag_of(f)


def title_of(cls: AnyKind) -> str:
    """A task kind's title (a Task class or a registry TaskKind): the first line of its
    Options docstring."""
    return (cls.Options.__doc__ or cls.Options.__name__).strip().split("\n")[0].rstrip(".")


def _value(options_class: type[TaskOptions], f: dataclasses.Field[Any], raw: Any,
           name: str | None = None) -> Any:
    """A flag's value: a repeated ``KEY=VALUE`` flag as a dict of texts (its receiver types
    them), any other text as the field declares it (a list option's text comma-separated)."""
    if f.metadata.get("parse") == "pairs":
        return pairs_of(raw, flag_of(f)) or None
    if isinstance(raw, str):
        return comma_list(raw) if "list[str]" in str(f.type) else declared_value(
            options_class, f, raw, name or flag_of(f))
    return raw


def _dash_t(name: str, options_class: type[TaskOptions], fields: dict[str, dataclasses.Field[Any]],
            pairs: list[str]) -> dict[str, Any]:
    """-T KEY=VALUE by the option's Python name, each value parsed by the option's declared
    type; a key that is no option is one line (with the name it may have meant)."""
    out: dict[str, Any] = {}
    for key, text in pairs_of(pairs, "-T").items():
        if key not in fields:
            near = key.replace("-", "_")
            hint = f" (did you mean -T {near}=...?)" if near in fields else \
                f"; it accepts: {', '.join(fields)}"
            raise LocalevalError(f"-T {key}: task {name!r} has no such option{hint}")
        out[key] = _value(options_class, fields[key], text, f"-T {key}")
    return out


def backend_options(args: argparse.Namespace) -> BackendConfig:
    """The backend flags as one validated config, each text parsed by its field's declared
    type (``--model-args a=1,b=x`` a dict, ``--batch-size`` 'auto' or an integer)."""
    return BackendConfig(**{f.name: _backend_value(f, getattr(args, f.name), flag_of(f))
                            for f in dataclasses.fields(BackendConfig)})


def _backend_value(f: dataclasses.Field[Any], value: Any, name: str) -> Any:
    return parse_if_text(f.type, value, name, f.metadata.get("choices"))


def role_options(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """--role-option ROLE.KEY=VALUE as {role: {key: value}}, each value parsed by the type
    BackendConfig declares for KEY."""
    fields = {f.name: f for f in dataclasses.fields(BackendConfig)}
    out: dict[str, dict[str, Any]] = {}
    for key, text in pairs_of(args.role_option, "--role-option").items():
        role, dot, option = key.partition(".")
        if not dot or not option:
            raise LocalevalError(f"--role-option {key}: write ROLE.KEY=VALUE, e.g. "
                                 "judge.device=cpu")
        if option not in fields:
            raise LocalevalError(f"--role-option {key}: no backend option {option!r}; they "
                                 f"are: {', '.join(fields)}")
        out.setdefault(role, {})[option] = _backend_value(fields[option], text,
                                                          f"--role-option {key}")
    return out


def default_output(task: str, model: str | None, options: dict[str, Any], backend: BackendConfig,
                   roles: dict[str, dict[str, Any]] | None = None,
                   shard: Shard | None = None) -> Path:
    """runs/<task>/<model name>-<hash of every setting that can change a number>: the same
    command finds its folder again (and resumes), also with other speed settings (batch size,
    concurrency, timeouts); other settings get another. A shard's is the whole run's with
    ``-shard-I-of-N`` after it (shards of one run side by side, the merge beside them). An
    option added since runs were made (``unset_unrecorded``: --seed) is hashed only when set:
    unset, the folder is the one the command named before it existed."""
    from ..tasks.registry import task_kind

    late = {f.name for f in dataclasses.fields(task_kind(task).Options)
            if f.metadata.get("unset_unrecorded")}
    options = {k: v for k, v in options.items() if not (k in late and v is None)}
    parts: list[Any] = [task, model, options, backend.settings()]
    if roles:  # only when given, so commands without them keep their folder
        parts.append(roles)
    settings = json.dumps(parts, sort_keys=True, default=str)
    digest = hashlib.sha256(settings.encode()).hexdigest()[:8]
    name = _component(_model_name(model) if model else _guard_name(options.get("guard")),
                      "model")
    part = f"-shard-{shard.index}-of-{shard.count}" if shard else ""
    return Path("runs") / _component(task, "task") / f"{name}-{digest}{part}"


def _model_name(model: str) -> str:
    """The last part of a model spec: ``hf:org/m`` -> ``m``."""
    return model.split(":", 1)[-1].rstrip("/").split("/")[-1]


def _guard_name(guard: Any) -> str:
    """A run without --model is named by its guard, which is its own model (issue 69: the
    embedding guard's and the moderation APIs' runs were all "own-model"): ``openai-
    moderation``; ``embedding:guards/jbb.json`` -> ``embedding-jbb``."""
    if not isinstance(guard, str) or not guard:
        return "own-model"
    kind, colon, target = guard.partition(":")
    return f"{kind}-{Path(target).stem}" if colon and target else kind


def _component(text: str, default: str) -> str:
    """``text`` as one folder name under runs/: safe characters only, no leading dot (``..``
    would climb out of runs/), at most 100 characters."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).lstrip(".-").rstrip("-")[:100] or default


# ------------------------------------------------------------------ running
class TooManyFailures(LocalevalError):
    exit_code = 3


def check_failures(results: Results, max_failed: float) -> None:
    """Exit non-zero when more than ``max_failed`` (a share) of the samples failed; the run
    folder and cache keep everything that finished."""
    failed, n = results.n_failed, results.n_samples
    if n and failed / n > max_failed:
        from ..store.executor import rerun_advice  # a rerun helps only a transient failure

        raise TooManyFailures(f"{failed} of {n} samples failed (over --max-failed "
                              f"{max_failed:g}); they are left out of the results, and finished "
                              f"requests are cached: {rerun_advice(results.data())}"
                              + (f"; {results.failure_advice}" if results.failure_advice else ""))
