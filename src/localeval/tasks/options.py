"""A task's options, declared once: a frozen dataclass per kind of task whose fields carry their
default and help text. The command line builds its flags from these fields
(:mod:`localeval.cli.task_flags`), ``evaluate``'s documentation lists them
(:func:`options_doc`), and a task is made from them (:func:`make_options`): a name that is no
field is one clear error, the same from the command line and from Python.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..declared import parse_if_text
from ..errors import LocalevalError


def option(default: Any, help: str, *, flag: str | None = None, parse: str | None = None,
           shortcut: tuple[str, str, str] | None = None, **argparse: Any) -> Any:
    """One option of a task. ``flag``: its command-line flag (default ``--<name-with-dashes>``);
    its text becomes a value of the field's declared type (:func:`declared_value`), except
    ``parse="pairs"``: a repeated ``KEY=VALUE`` flag whose values the receiver types (a guard's
    options, by its constructor's declaration); ``shortcut``:
    (flag, key, help) of a flag that sets ``key=True`` in a ``pairs`` option; ``argparse``:
    keywords for the flag (``type``, ``choices``, ``action``, ``metavar``)."""
    return dataclasses.field(default=default, metadata={
        "help": help, "flag": flag, "parse": parse, "shortcut": shortcut, "argparse": argparse})


def option_fields(options_class: type) -> list[dataclasses.Field]:
    return list(dataclasses.fields(options_class))


def flag_of(f: dataclasses.Field) -> str:
    return f.metadata.get("flag") or "--" + f.name.replace("_", "-")


def make_options(options_class: type, task: str, given: dict[str, Any]) -> Any:
    """The task's options from ``given`` (names as in Python); defaults fill the rest. A value
    given as text becomes its declared type (:func:`declared_value`)."""
    names = [f.name for f in option_fields(options_class)]
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise LocalevalError(f"task {task!r} has no option(s) {', '.join(unknown)}; it accepts: "
                             f"{', '.join(names)}")
    fields = {f.name: f for f in option_fields(options_class)}
    return options_class(**{k: declared_value(fields[k], v, k) for k, v in given.items()})


def declared_value(f: dataclasses.Field, value: Any, name: str) -> Any:
    """``value`` as option ``f`` declares it: text parsed by the field's type
    (:func:`localeval.declared.parse_if_text`; a list option's text is a comma list,
    ``subjects="arts"``, not the letters a, r, t, s), and one number or path given to a list
    option as a list of one (repeatable ``--data``)."""
    choices = f.metadata.get("argparse", {}).get("choices")
    if isinstance(value, str):
        return parse_if_text(f.type, value, name, choices)
    listed = any(kind in str(f.type) for kind in ("list[", "Sequence["))
    if listed and (isinstance(value, int | float) or hasattr(value, "__fspath__")):
        return [value]
    return value


def options_doc(options_class: type) -> str:
    """One line per option: ``name`` (default), what it does."""
    lines = []
    for f in option_fields(options_class):
        lines.append(f"``{f.name}`` (default {f.default!r}): {f.metadata['help']}")
    return "\n".join(lines)
