"""The command line's parsers: one line for a mistake, and a help format that shows the
defaults worth showing."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    # what the top parser's ``add_subparsers`` returns: ``add_parser`` makes each command's
    # parser (generic in typeshed only, so named for type checking alone)
    Commands = argparse._SubParsersAction["CommandParser"]


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Shows an option's default where it has one worth showing: never a switch's (a
    ``--no-…`` flag's True read as if what it turns off were off)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        shown = _worth_showing(action.default) and action.nargs != 0
        if not text and action.option_strings and shown:
            return "(default: %(default)s)"
        if "%(default)" in text or not shown or "default" in text or not action.option_strings:
            return text
        return f"{text} (default: %(default)s)"


def _worth_showing(default: object) -> bool:
    """A default that says something: not "not given" (None, False, [], SUPPRESS). By identity,
    since 0 == False and a default of 0 is worth showing."""
    return not (default is None or default is False or default is argparse.SUPPRESS
                or default == [])


class OneLineParser(argparse.ArgumentParser):
    """A mistake on the command line is one line naming the fix, not the whole usage (`run`'s
    is 25 lines, and a forgotten --task scrolled away under it). No abbreviations: `--batch`
    is its own flag, never a prefix of `--batch-size`, and a mistyped flag gets its
    did-you-mean."""
    commands: Mapping[str, argparse.ArgumentParser]  # the top parser's: each command's parser
    # a command's own line for an option it lacks (rescore: the options it may change)
    unknown_hint: Callable[[str], str] | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}; `{self.prog} --help` shows the "
                     "options\n")


class CommandParser(OneLineParser):
    """A command's parser: our help format, and --debug after the command too (`run ... --debug`)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**{"formatter_class": HelpFormatter, **kwargs})
        self.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                          help="show tracebacks")
