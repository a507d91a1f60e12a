"""The command line. Thin: parses options and calls the API.

``run``'s task flags are built from each task kind's ``Options`` and its model flags from
``BackendConfig`` (:mod:`.run_options`); the commands are in :mod:`.commands` (runs),
:mod:`.tools` (dataset tools, export, report, leaderboard) and :mod:`.research`
(contamination).
"""

from __future__ import annotations

import argparse
import difflib
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, NoReturn

from ..backends.secrets import redact_text
from ..errors import LocalevalError, UndefinedMetricWarning, clipped
from .budget import add_budget_arguments
from .commands import cmd_compare, cmd_demo, cmd_guards, cmd_run, cmd_show, cmd_tasks
from .habits import from_lm_eval
from .merge import add_merge_parser
from .parsers import CommandParser, HelpFormatter, OneLineParser
from .rescore import add_rescore_parser
from .research import add_research_parsers
from .results import STORE_FOR_IDS, add_results_parsers, store_flag
from .run_options import (
    add_backend_arguments,
    add_cluster_arguments,
    add_folder_arguments,
    add_option_flags,
    add_task_option_flag,
    task_options,
    title_of,
)
from .tools import add_tool_parsers
from .viewer import add_view_parser

__all__ = ["main", "parser", "task_options"]

# What `localeval --help` says first: written for users.
DESCRIPTION = """Evaluate LLMs and their safeguards in Taiwanese Mandarin, Chinese and Southeast-Asian
languages: TMLU, TMMLU+, CMMLU and SEA-SafeguardBench, the papers' protocols by default.

  localeval demo                                   the whole flow offline, in a minute
  localeval tasks                                  what can be evaluated
  localeval guards                                 the guards, their families and options
  localeval guards shieldgemma                     one guard's options: default, choices, help
  localeval run --task tmlu --model hf:Qwen/Qwen2.5-7B-Instruct
  localeval run --task sea-safeguard --guard llamaguard3 --model hf:meta-llama/Llama-Guard-3-8B

Every run keeps a folder (--output, default runs/<task>/<model>-<settings>) with config.json,
results.json, samples.jsonl, the request cache and report.html (offline, with figures and a
sample browser): the same command again resumes."""
EPILOG = "`localeval <command> --help` shows each command's options."


def parser() -> OneLineParser:
    from ..backends.registry import backend_table
    from ..tasks.registry import TASKS, kinds, plugin_tasks
    from ..version import __version__

    run_task_kinds = [kind for kind in kinds() if kind.command == "run"]

    p = OneLineParser(prog="localeval", description=DESCRIPTION, epilog=EPILOG,
                      formatter_class=HelpFormatter)
    p.add_argument("--version", action="version", version=f"localeval {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND",
                           parser_class=CommandParser)
    p.commands = sub.choices  # each command's parser, for the did-you-mean of its options

    t = sub.add_parser("tasks", help="list built-in tasks, or one task's subjects")
    t.add_argument("task", nargs="?", help="a task: list its subjects (without: list the "
                   "tasks)")
    t.add_argument("--json", action="store_true", help="print JSON instead of a table")

    g = sub.add_parser("guards", help="list the guards (--guard), built-in and other "
                       "packages': family, where each comes from, its options")
    g.add_argument("guard", nargs="?", help="a guard: list its options (--guard-option), each "
                   "with its default, choices and help, from its declaration")
    g.add_argument("--json", action="store_true", help="print JSON instead of a table")
    g.set_defaults(func=cmd_guards)

    r = sub.add_parser("run", help="evaluate a model on a task")
    run_names = [name for name, entry in TASKS.items()
                 if entry.kind in (*run_task_kinds, *plugin_tasks())]
    r.add_argument("--task", required=True, help=f"{', '.join(run_names)}, or a name for --data")
    r.add_argument("--model", help="KIND:TARGET, KIND one of "
                   f"{', '.join(backend_table())} (hf:<hub id or folder>, openai:<model "
                   "served at --base-url>, vllm:<hub id or folder>; not needed for a guard "
                   "with a model of its own: embedding:<file>, the moderation APIs)")
    add_option_flags(r, [(title_of(kind), kind.Options) for kind in run_task_kinds])
    add_task_option_flag(r)
    add_folder_arguments(r)
    add_backend_arguments(r)
    add_budget_arguments(r)
    r.add_argument("--shard", metavar="I/N", help="evaluate share I of N of the items (0 <= I "
                   "< N; an item's share is a hash of its id, the same on every machine) into "
                   "a folder of its own (default: the run's with -shard-I-of-N); `localeval "
                   "merge` makes the N shards one run")
    add_cluster_arguments(r)
    r.add_argument("--json", action="store_true", help="print results.json instead of tables")
    r.add_argument("--max-failed", type=float, default=0.0, metavar="SHARE",
                   help="exit with status 3 when more than this share of the samples failed "
                   "(a request error, never a wrong answer)")
    r.add_argument("--quiet", action="store_true", help="no progress bar (warnings that "
                   "qualify the results are still shown, and kept in results.json)")

    c = sub.add_parser("compare", help="two runs: multiple choice, B minus A accuracy per "
                       "subject (exact McNemar); safeguards, B minus A PR-AUC per language "
                       "(paired bootstrap), or with B culture-aware, the paper's Table 3 delta")
    c.add_argument("baseline", help="run A, a folder or a run id of the results store (safety: "
                   "the plain guard)")
    c.add_argument("aware", help="run B (safety: the same guard with --cultural-awareness)")
    c.add_argument("--json", action="store_true", help="print JSON instead of a table")
    store_flag(c, STORE_FOR_IDS)

    w = sub.add_parser("show", help="print a run folder's tables again (they only read "
                       "results.json)")
    w.add_argument("folder", help="a run folder, or a run id of the results store")
    w.add_argument("--json", action="store_true", help="print results.json")
    store_flag(w, STORE_FOR_IDS)
    w.set_defaults(func=cmd_show)

    d = sub.add_parser("demo", help="the whole flow offline on bundled sample data (random model)")
    d.add_argument("--output", default="runs/demo", help="where the demo's run folders go: a new or empty "
                   "folder, or an earlier demo's")
    d.add_argument("--quiet", action="store_true", help="no progress bars")
    t.set_defaults(func=cmd_tasks)
    r.set_defaults(func=cmd_run)
    c.set_defaults(func=cmd_compare)
    d.set_defaults(func=cmd_demo)
    add_results_parsers(sub)
    add_view_parser(sub)
    add_rescore_parser(sub)
    add_merge_parser(sub)
    add_tool_parsers(sub)
    add_research_parsers(sub)
    return p


def quiet_third_party() -> None:
    """Other libraries' notices to their own developers (transformers' `past_key_values is
    deprecated`, FutureWarnings and DeprecationWarnings) say nothing about a result; --debug
    shows them, as does a TRANSFORMERS_VERBOSITY the user set. localeval's own warnings are
    printed lines, not these."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    for category in (FutureWarning, DeprecationWarning):
        warnings.filterwarnings("ignore", category=category)
    # a metric that says nothing is recorded beside its number in results and reports
    # (metrics.classification.measured), not printed once per group as it is computed
    warnings.filterwarnings("ignore", category=UndefinedMetricWarning)


def _unknown_arguments(p: OneLineParser, args: argparse.Namespace,
                       extra: list[str]) -> NoReturn:
    """An option the command does not have (`--methd`): one line, with the one it is close to."""
    command = p.commands[args.command]
    word = next((w for w in extra if w.startswith("-")), extra[0])
    flag = word.split("=", 1)[0]
    known = [o for action in command._actions for o in action.option_strings]
    close = difflib.get_close_matches(flag, known, n=2, cutoff=0.75) if word.startswith("-") \
        else []
    hint = getattr(command, "unknown_hint", None)  # a command that says what it takes instead
    if hint and word.startswith("-"):
        command.error(hint(flag))
    what = f"unknown option {flag}" if word.startswith("-") else f"unexpected argument {word!r}"
    command.error(what + (f" (did you mean {' or '.join(close)}?)" if close else ""))


def _check_command(p: OneLineParser, argv: list[str]) -> None:
    """A command that does not exist (`localeval rnu`): one line with the one it is close to
    (the top level's options take no value, so the first word is the command)."""
    word = next((w for w in argv if not w.startswith("-")), None)
    if word is None or word in p.commands:
        return
    close = difflib.get_close_matches(word, list(p.commands), n=1, cutoff=0.6)
    hint = f"did you mean {close[0]}? " if close else ""
    p.error(f"unknown command {word!r} ({hint}the commands: {', '.join(p.commands)})")


def _lm_eval_habits(p: OneLineParser, given: list[str]) -> list[str]:
    """``run``'s arguments with lm-evaluation-harness's flags read as ours (:mod:`.habits`);
    one whose meaning differs is one line naming ours."""
    if next((w for w in given if not w.startswith("-")), None) != "run":
        return given
    try:
        ours, notes = from_lm_eval(given)
    except LocalevalError as e:
        p.commands["run"].error(str(e))
    for note in notes:
        print(note, file=sys.stderr)
    return ours


def main(argv: list[str] | None = None) -> int:
    try:
        with stop_signals_interrupt():
            try:
                return _main(argv)
            finally:
                sys.stdout.flush()  # a reader that left early is found here, not at exit
    except BrokenPipeError:  # `localeval show DIR | head -1`: the reader has what it wanted,
        _stdout_to_devnull()  # so no failure: exit 0 (`set -o pipefail` scripts)
        return 0
    except SystemExit as e:  # rich's Console.on_broken_pipe: stdout to devnull, then exit 1
        if isinstance(e.__context__, BrokenPipeError):
            return 0
        raise


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP, handled as Ctrl-C is: what finished is committed to the cache, the
    run is recorded as failed ("interrupted"), one line, and the same command resumes (show:
    one line, nothing to resume)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


@contextmanager
def stop_signals_interrupt() -> Iterator[None]:
    """SIGTERM (docker stop, Slurm, Kubernetes, timeout) and SIGHUP (a closed terminal) raise
    :class:`Stopped` in the main thread, as SIGINT raises KeyboardInterrupt. A signal the
    parent set to be ignored (``nohup``) stays ignored; the old handlers come back after."""
    def stop(signum: int, frame: FrameType | None) -> NoReturn:
        for other in previous:  # a second TERM must not cut short the cleanup of the first
            signal.signal(other, signal.SIG_IGN)
        raise Stopped(signum)

    # by signal, the handler it had (a function, SIG_DFL / SIG_IGN, or None: not set by Python)
    previous: dict[int, Callable[[int, FrameType | None], Any] | int | signal.Handlers | None] = {}
    if threading.current_thread() is threading.main_thread():
        for name in ("SIGTERM", "SIGHUP"):
            signum = getattr(signal, name, None)  # Windows has no SIGHUP
            if signum is not None and signal.getsignal(signum) is signal.SIG_DFL:
                previous[signum] = signal.signal(signum, stop)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _main(argv: list[str] | None) -> int:
    p = parser()
    given = sys.argv[1:] if argv is None else argv
    if not given:  # bare `localeval`: what it does and how to start, not an error
        p.print_help()
        return 0
    _check_command(p, given)
    args, extra = p.parse_known_args(_lm_eval_habits(p, given))
    if extra:
        _unknown_arguments(p, args, extra)
    if not getattr(args, "debug", False):
        quiet_third_party()
    # the command line a run records (redacted there): the one given, in-process calls too
    args.argv = sys.argv if argv is None else [sys.argv[0] if sys.argv else "localeval", *argv]
    try:
        args.func(args)
    except LocalevalError as e:
        if getattr(args, "debug", False):
            raise
        print(f"error: {clipped(redact_text(str(e)))}", file=sys.stderr)
        return getattr(e, "exit_code", 2)
    except BrokenPipeError:
        raise  # an OSError, but no failure of the command: main() ends quietly
    except OSError as e:  # a missing file, a read-only folder, a full disk: one line
        if getattr(args, "debug", False):
            raise
        print(f"error: {clipped(redact_text(_os_error_line(e, args)))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:  # only a command that caches requests has one to resume
        how = f" ({signal.Signals(e.signum).name})" if isinstance(e, Stopped) else ""
        resume = "; finished requests are in the cache, rerun the command to resume"
        print(f"interrupted{how}{resume if hasattr(args, 'no_cache') else ''}", file=sys.stderr)
        return 128 + (e.signum if isinstance(e, Stopped) else signal.SIGINT)
    return 0


def _os_error_line(error: OSError, args: argparse.Namespace) -> str:
    """The path and what is wrong with it; for a command that caches its requests, that a
    rerun resumes (a full disk mid-run loses nothing finished)."""
    line = f"{error.strerror or error}" + (f" ({error.filename})" if error.filename else "")
    if isinstance(error, FileNotFoundError | IsADirectoryError | NotADirectoryError) or \
            not hasattr(args, "no_cache"):
        return line
    return f"{line}; finished requests are in the cache, rerun the command once it is fixed"


def _stdout_to_devnull() -> None:
    """Python's advice for a closed pipe (the signal module's note on SIGPIPE): stdout to
    devnull, so the flush at exit does not fail again with a traceback."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):  # stdout without a file descriptor (captured in tests)
        pass


if __name__ == "__main__":
    sys.exit(main())
