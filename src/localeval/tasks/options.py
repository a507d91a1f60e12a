"""A task's options, declared once: a frozen dataclass per kind of task whose fields carry their
default and help text. The command line builds its flags from these fields
(:mod:`localeval.cli.task_flags`), ``evaluate``'s documentation lists them
(:func:`options_doc`), and a task is made from them (:func:`make_options`): a name that is no
field is one clear error, the same from the command line and from Python.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..errors import LocalevalError


def option(default: Any, help: str, *, flag: str | None = None, parse: str | None = None,
           shortcut: tuple[str, str, str] | None = None, **argparse: Any) -> Any:
    """One option of a task. ``flag``: its command-line flag (default ``--<name-with-dashes>``);
    ``parse``: how the flag's text becomes the value — ``list`` (comma-separated), ``numbers``
    (comma-separated floats) or ``pairs`` (repeated ``KEY=VALUE``, typed); ``shortcut``:
    (flag, key, help) of a flag that sets ``key=True`` in a ``pairs`` option; ``argparse``:
    keywords for the flag (``type``, ``choices``, ``action``, ``metavar``)."""
    return dataclasses.field(default=default, metadata={
        "help": help, "flag": flag, "parse": parse, "shortcut": shortcut, "argparse": argparse})


def option_fields(options_class: type) -> list[dataclasses.Field]:
    return list(dataclasses.fields(options_class))


def flag_of(f: dataclasses.Field) -> str:
    return f.metadata.get("flag") or "--" + f.name.replace("_", "-")


def make_options(options_class: type, task: str, given: dict[str, Any]) -> Any:
    """The task's options from ``given`` (names as in Python); defaults fill the rest."""
    names = [f.name for f in option_fields(options_class)]
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise LocalevalError(f"task {task!r} has no option(s) {', '.join(unknown)}; it accepts: "
                             f"{', '.join(names)}")
    fields = {f.name: f for f in option_fields(options_class)}
    return options_class(**{k: _as_list(fields[k], v) for k, v in given.items()})


def _as_list(f: dataclasses.Field, value: Any) -> Any:
    """A list option given one value, as its flag takes it: text is a comma list
    (``subjects="arts"`` or ``"arts,virology"``, not the letters a, r, t, s), a number one
    number, a path (repeatable ``--data``) one item."""
    if not any(kind in str(f.type) for kind in ("list[", "Sequence[")) or \
            isinstance(value, list | tuple) or value is None:
        return value
    parse = f.metadata.get("parse")
    if isinstance(value, str) and parse in ("list", "numbers"):
        parts = [v.strip() for v in value.split(",") if v.strip()]
        if parse == "list":
            return parts or None
        try:
            return [float(v) for v in parts]
        except ValueError:
            raise LocalevalError(f"{f.name} must be comma-separated numbers, not "
                                 f"{value!r}") from None
    if isinstance(value, str | int | float) or hasattr(value, "__fspath__"):
        return [value]
    return value


def options_doc(options_class: type) -> str:
    """One line per option: ``name`` (default), what it does."""
    lines = []
    for f in option_fields(options_class):
        lines.append(f"``{f.name}`` (default {f.default!r}): {f.metadata['help']}")
    return "\n".join(lines)
