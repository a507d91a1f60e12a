"""Text from the command line as the value its option declares.

Every option is declared once, with a type annotation: a task's ``Options`` field, a
:class:`~localeval.backends.config.BackendConfig` field, a guard's constructor parameter. A
``KEY=VALUE`` given as text (``-T shots=5``, ``--role-option judge.batch_size=4``,
``--guard-option cultural_awareness=true``) becomes a value of that type here, or one clear
error naming the option and what it takes: ``-T shots=abc`` is not a traceback later, and
``-T cot=maybe`` is not taken as true.

The annotation is read as text (the modules use ``from __future__ import annotations``), member
by member of a union: ``None``, ``bool``, ``int``, ``float``, ``Literal[...]``, ``list[str]`` or
``Sequence[str]`` (comma-separated), ``Sequence[float]`` (comma-separated numbers), ``dict``
(``KEY=VALUE,KEY=VALUE``, keys kept as written) and ``str``/``Path`` (the text as it is). A member
that cannot come from text (``Backend``, ``Guard``: objects a Python caller passes) is skipped.
"""

from __future__ import annotations

import ast
import dataclasses
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, get_args

from .errors import LocalevalError

TRUE, FALSE = ("true",), ("false",)  # any case; "yes" or "1" is a likelier typo than a choice
_INTEGER = re.compile(r"[+-]?\d+")


# What an option is to a run (issue 61), declared where the option is declared (a task's
# ``option(role=...)``, a BackendConfig field's metadata): ``protocol``, it can change a number
# the run reports (the default, so an option nobody thought about counts); ``speed``, how fast
# the same numbers come (batch size, concurrency, timeouts: a rerun with another value resumes
# the same run); ``output``, what is written beside the numbers; ``model``, what the run
# evaluates besides its model (the guard of a safeguard run, a safeguard in front of the model):
# it names the run as the model does, and runs of two of them are ranked against each other,
# so it is no protocol fact. A run's protocol facts are its protocol-role options, nothing else.
Role = Literal["protocol", "speed", "output", "model"]
ROLES: tuple[Role, ...] = get_args(Role)


def role_of(f: dataclasses.Field[Any]) -> Role:
    """The role option ``f`` declares (``protocol`` when it declares none)."""
    role = f.metadata.get("role", "protocol")
    for known in ROLES:
        if role == known:
            return known
    # a typo would silently make an option part of the protocol
    raise ValueError(f"option {f.name}: role {role!r} is none of {', '.join(ROLES)}")


def shown(value: Any) -> str:
    """A fact as the leaderboard and a run's name show it: a list joined, nothing as "none",
    a mapping as its ``key=value`` pairs, a bool as yes or no."""
    if value is None or value == [] or value == {} or value == ():
        return "none"
    if isinstance(value, Mapping):
        return ",".join(f"{k}={shown(v)}" for k, v in sorted(value.items()))
    if isinstance(value, list | tuple):
        return ",".join(map(str, value))
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


class OptionValueError(LocalevalError):
    """A value that is not of its option's declared type."""


def parse_declared(declared: Any, text: str, name: str,
                   choices: Sequence[object] | None = None) -> Any:
    """``text`` as a value of the type ``declared`` (an annotation, as text or a type);
    ``name`` says where it came from in the error (``-T shots``); ``choices``: the values
    allowed, checked after parsing."""
    members = _members(_text_of(declared))
    value = _parse(members, text.strip())
    if value is _NO:
        raise OptionValueError(f"{name}={text!r}: expected {_wanted(members)}")
    if choices and value is not None and value not in choices:
        raise OptionValueError(f"{name}={text!r}: use one of {', '.join(map(str, choices))}")
    return value


def parse_if_text(declared: Any, value: Any, name: str,
                  choices: Sequence[object] | None = None) -> Any:
    """``value`` parsed by :func:`parse_declared` when it is text and the option takes
    something else (a Python caller's typed value passes as it is)."""
    if not isinstance(value, str):
        return value
    if choices and value.strip() in choices:  # a choice written as itself: "none" is a choice
        return value.strip()  # of --chat-extensions, not "unset" (which auto-selects vllm)
    members = _members(_text_of(declared))
    if _takes_text(members) and not choices and not ("None" in members and
                                                     value.strip().lower() == "none"):
        return value
    return parse_declared(declared, value, name, choices)


def key_value_pairs(text: str, name: str) -> dict[str, str]:
    """``KEY=VALUE,KEY=VALUE`` as a dict of texts; keys as written (``X-Team`` stays
    ``X-Team``)."""
    return pairs_of([p for p in text.split(",") if p.strip()], name)


def pairs_of(pairs: Iterable[str], name: str, shape: str = "KEY=VALUE") -> dict[str, str]:
    """Each ``KEY=VALUE`` (a repeated flag's values, say) as a dict of texts, keys stripped and
    as written, values as given; one without ``=`` or a key is one line naming ``name``."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise OptionValueError(f"{name} {pair!r}: write {shape}")
        out[key.strip()] = value
    return out


def plain_value(text: str) -> Any:
    """An undeclared value (a key of ``--model-args`` handed on to another library, as lm-eval
    hands it): none, true and false (any case) become None, True and False, integers and
    decimals numbers, anything else stays text."""
    low = text.strip().lower()
    if low in ("none", "true", "false"):
        return {"none": None, "true": True, "false": False}[low]
    for kind in (int, float):
        try:
            return kind(text.strip())
        except ValueError:
            pass
    return text.strip()


# ------------------------------------------------------------------ reading the annotation
_NO = object()
_TEXT = {"str", "Path", "os.PathLike", "PathLike"}


def _text_of(declared: Any) -> str:
    """An annotation as its source text: ``int`` (a type) as "int"."""
    return declared.__name__ if isinstance(declared, type) else str(declared)


def _members(declared: str) -> list[str]:
    """The members of a union annotation, split at top-level ``|`` (``Optional[X]`` as
    ``X | None``)."""
    text = declared.strip().replace("typing.", "")
    optional = re.fullmatch(r"Optional\[(.*)\]", text)
    if optional:
        return [*_members(optional.group(1)), "None"]
    out, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char in "[(":
            depth += 1
        elif char in "])":
            depth -= 1
        if char == "|" and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    out.append(text[start:].strip())
    return out


def _takes_text(members: list[str]) -> bool:
    return any(m in _TEXT for m in members)


def _parse(members: list[str], text: str) -> Any:
    if "None" in members and text.lower() == "none":
        return None
    for member in sorted(members, key=lambda m: m in _TEXT):  # text last: it takes anything
        value = _member(member, text)
        if value is not _NO:
            return value
    return _NO


def _member(member: str, text: str) -> Any:  # noqa: PLR0911 — one return per kind
    if member == "bool":
        low = text.lower()
        if low in TRUE:
            return True
        return False if low in FALSE else _NO
    if member == "int":
        return int(text) if _INTEGER.fullmatch(text) else _NO
    if member == "float":
        return _number(text)
    if member.startswith("Literal["):
        allowed = ast.literal_eval(f"({member[8:-1]},)")
        return text if text in allowed else _NO
    if member in _TEXT:
        return text
    return _collection(member, text)


def _collection(member: str, text: str) -> Any:
    inner = re.fullmatch(r"(?:list|Sequence|tuple)\[(\w+)(?:, \.\.\.)?\]", member)
    if inner:
        parts = [p.strip() for p in text.split(",") if p.strip()]
        if inner.group(1) == "float":
            numbers = [_number(p) for p in parts]
            return _NO if _NO in numbers or not parts else numbers
        return parts if inner.group(1) == "str" else _NO
    if member == "dict" or member.startswith(("dict[", "Mapping[")):
        try:
            return {k: plain_value(v) for k, v in key_value_pairs(text, "").items()}
        except OptionValueError:
            return _NO
    return _NO  # an object only a Python caller can pass (a Backend, a Guard)


def _number(text: str) -> Any:
    try:
        value = float(text)
    except ValueError:
        return _NO
    return value if math.isfinite(value) else _NO


_WORDS = {"bool": "true or false", "int": "an integer", "float": "a finite number",
          "dict": "KEY=VALUE,KEY=VALUE", "None": "none"}


def _wanted(members: list[str]) -> str:
    words = []
    for member in members:
        if member.startswith("Literal["):
            words += [repr(v) for v in ast.literal_eval(f"({member[8:-1]},)")]
        elif re.fullmatch(r"(list|Sequence|tuple)\[float.*\]", member):
            words.append("comma-separated numbers")
        elif member.startswith(("list[", "Sequence[", "tuple[")):
            words.append("a comma-separated list")
        elif member.startswith(("dict[", "Mapping[")):
            words.append(_WORDS["dict"])
        elif member in _WORDS:
            words.append(_WORDS[member])
    return " or ".join(words) or "a value a Python caller passes"
