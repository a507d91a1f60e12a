"""Options declared once, for every part that takes them: a task kind's ``Options``
(:mod:`localeval.tasks.options`) and a guard family's (:mod:`localeval.guards.options`) are
frozen dataclasses of :func:`option` fields, each with its type, default, help text and role
(:data:`localeval.declared.Role`). The command line builds its flags and help from the fields,
the documentation lists them (:func:`options_doc`) and the part is made from them
(:func:`make_options`): a name that is no field is one clear error, the same from the command
line and from Python.

A field typed with a ``Literal`` (``threshold_rule: ThresholdRule``) has those choices: the
command line shows them, and the object refuses any other value when it is built, in one line
(:meth:`Options.__post_init__`), the only place they are checked. This module sits below
``tasks/`` and ``guards/`` (it imports neither), so both declare their options alike.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import types
import typing
from functools import cache
from typing import Any, Literal, get_args, get_origin

from .declared import Role, parse_if_text, role_of
from .errors import LocalevalError


def option(default: Any, help: str, *, flag: str | None = None, parse: str | None = None,
           shortcut: tuple[str, str, str] | None = None, rescorable: bool = False,
           role: Role = "protocol", unset_unrecorded: bool = False,
           check: Check | None = None, guard_of: str | None = None, **argparse: Any) -> Any:
    """One option of a task or a guard. ``flag``: its command-line flag (default ``--<name-with-dashes>``);
    its text becomes a value of the field's declared type (:func:`declared_value`), except
    ``parse="pairs"``: a repeated ``KEY=VALUE`` flag whose values the receiver types (a guard's
    options, by its constructor's declaration); ``shortcut``:
    (flag, key, help) of a flag that sets ``key=True`` in a ``pairs`` option; ``rescorable``:
    the option acts only on answers already given, so ``localeval rescore`` may change it;
    ``role``: what the option is to a run (:data:`localeval.declared.Role`: ``protocol``, it
    can change the numbers, the default; ``speed``; ``output``), so a run's protocol facts are
    its protocol-role options (:func:`protocol_fields`); ``unset_unrecorded``: an option added
    after runs were made, whose unset value (None) is in no default folder's hash (nor, by its
    task's ``describe``, in config.json), so those runs' commands find their folders again;
    ``check``: what a value of a type with no choices must be (:data:`Check`), checked as the
    object is built like a choice (a Python caller's value too, not only the command line's);
    ``guard_of``: a ``pairs`` option that holds the options of the guard that option
    ``guard_of`` names (a run's name and facts say them as that guard declares them);
    ``argparse``: keywords for the flag (``type``, ``action``, ``metavar``; its choices come
    from the field's ``Literal`` type)."""
    return dataclasses.field(default=default, metadata={
        "help": help, "flag": flag, "parse": parse, "shortcut": shortcut,
        "rescorable": rescorable, "role": role, "unset_unrecorded": unset_unrecorded,
        "check": check, "guard_of": guard_of, "argparse": argparse})


# What :func:`option`'s ``check`` asks of a value, and how a refusal says it
Check = Literal["positive", "integer", "flag"]
CHECKS: dict[Check, str] = {"positive": "a positive integer", "integer": "an integer",
                            "flag": "true or false"}


def _passes(check: Check, value: Any) -> bool:
    if check == "flag":
        return isinstance(value, bool)
    if isinstance(value, bool) or not isinstance(value, int):
        return value is None  # an optional number left unset
    return check == "integer" or value >= 1


class Options:
    """The base of every declared ``Options`` (a frozen dataclass of :func:`option` fields):
    each choice is checked here, once, as the object is built; a subclass's own
    ``__post_init__`` (checks across fields) calls this one first."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):  # type: ignore[arg-type]  # subclasses are dataclasses
            allowed = choices_of(type(self), f)
            value = getattr(self, f.name)
            if allowed is not None and value not in allowed:
                shown = ", ".join(str(c) for c in allowed if c is not None)
                raise LocalevalError(self.problem(f, f"one of {shown}", value))
            check = f.metadata.get("check")
            if check is not None and not _passes(check, value):
                raise LocalevalError(self.problem(f, CHECKS[check], value))

    @classmethod
    def problem(cls, f: dataclasses.Field[Any], expected: str, value: Any) -> str:
        """The line that refuses ``value`` for option ``f``, which must be ``expected``."""
        return f"{flag_of(f)} must be {expected}, not {value!r}"


def choices_of(options_class: type, f: dataclasses.Field[Any]) -> tuple[Any, ...] | None:
    """The values a ``Literal``-typed option takes (None among them when it is optional), or
    None for an option without choices."""
    return _declared_choices(options_class, f.name)


@cache
def _declared_choices(options_class: type, name: str) -> tuple[Any, ...] | None:
    annotation = _annotation(options_class, name)
    if annotation is None:
        return None
    members = _union_members(annotation)
    literal = [v for m in members if get_origin(m) is Literal for v in get_args(m)]
    if not literal:
        return None
    return (*literal, *((None,) if type(None) in members else ()))


def _annotation(options_class: type, name: str) -> Any:
    """The field's annotation as a type, evaluated in the module of the class that declares it
    (annotations are text there); None when it names a type imported only for type checking
    (``Guard``, ``Backend``): such a field has no choices."""
    owner = next(c for c in options_class.__mro__ if name in inspect.get_annotations(c))
    text = inspect.get_annotations(owner)[name]
    if not isinstance(text, str):
        return text
    try:
        return eval(text, vars(sys.modules[owner.__module__]))  # noqa: S307 — our own source
    except NameError:
        return None


def _union_members(annotation: Any) -> tuple[Any, ...]:
    if get_origin(annotation) in (typing.Union, types.UnionType):
        return tuple(m for part in get_args(annotation) for m in _union_members(part))
    return (annotation,)


def option_fields(options_class: type) -> list[dataclasses.Field[Any]]:
    return list(dataclasses.fields(options_class))


def protocol_fields(options_class: type) -> list[dataclasses.Field[Any]]:
    """The options that can change a run's numbers (role ``protocol``): what tells one
    protocol from another."""
    return [f for f in option_fields(options_class) if role_of(f) == "protocol"]


def flag_of(f: dataclasses.Field[Any]) -> str:
    return f.metadata.get("flag") or "--" + f.name.replace("_", "-")


def make_options(options_class: type, task: str, given: dict[str, Any], *,
                 owner: str = "task") -> Any:
    """The options of ``owner`` ``task`` (a task, a guard) from ``given`` (names as in
    Python); defaults fill the rest. A value given as text becomes its declared type
    (:func:`declared_value`)."""
    names = [f.name for f in option_fields(options_class)]
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise LocalevalError(f"{owner} {task!r} has no option(s) {', '.join(unknown)}; it "
                             f"accepts: {', '.join(names) or 'no options'}")
    fields = {f.name: f for f in option_fields(options_class)}
    return options_class(**{k: declared_value(options_class, fields[k], v, k)
                            for k, v in given.items()})


def declared_value(options_class: type, f: dataclasses.Field[Any], value: Any, name: str) -> Any:
    """``value`` as option ``f`` declares it: text parsed by the field's type
    (:func:`localeval.declared.parse_if_text`; a list option's text is a comma list,
    ``subjects="arts"``, not the letters a, r, t, s), and one number or path given to a list
    option as a list of one (repeatable ``--data``). A choice stays text: the options object
    checks it when it is built."""
    choices = choices_of(options_class, f)
    if isinstance(value, str) and choices is not None:
        if None in choices and value.strip().lower() == "none":
            return None
        numbers = [c for c in choices if isinstance(c, int) and not isinstance(c, bool)]
        return int(value) if numbers and value.strip().lstrip("+-").isdigit() else value
    if isinstance(value, str):
        return parse_if_text(f.type, value, name)
    listed = any(kind in str(f.type) for kind in ("list[", "Sequence["))
    if listed and (isinstance(value, int | float) or hasattr(value, "__fspath__")):
        return [value]
    return value


def flag_arguments(options_class: type, f: dataclasses.Field[Any]) -> dict[str, Any]:
    """argparse's keywords for option ``f``'s flag: its own, and its choices shown (``{gt,ge}``)
    but not checked there: the options object checks them when it is built."""
    keywords = dict(f.metadata.get("argparse", {}))
    choices = choices_of(options_class, f)
    if choices is not None and "metavar" not in keywords:
        keywords["metavar"] = "{" + ",".join(str(c) for c in choices if c is not None) + "}"
    return keywords


def options_doc(options_class: type) -> str:
    """One line per option: ``name`` (default), what it does."""
    lines = []
    for f in option_fields(options_class):
        lines.append(f"``{f.name}`` (default {f.default!r}): {f.metadata['help']}")
    return "\n".join(lines)
