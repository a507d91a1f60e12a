"""A task's options, declared once: a frozen dataclass per kind of task (a :class:`TaskOptions`)
whose fields carry their type, default and help text. The command line builds its flags from
these fields (:mod:`localeval.cli.run_options`), ``evaluate``'s documentation lists them
(:func:`options_doc`), and a task is made from them (:func:`make_options`): a name that is no
field is one clear error, the same from the command line and from Python. A task keeps the
object it was made with (``task.options``) and reads its fields there.

A field typed with a ``Literal`` (``threshold_rule: ThresholdRule``) has those choices: the
command line shows them, and the object refuses any other value when it is built, in one line
(:meth:`TaskOptions.__post_init__`), the only place they are checked. A field declared
``rescorable`` acts only on answers already given (an extraction rule, a threshold rule):
``localeval rescore`` may change it, for any kind of task that declares some.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import types
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any, ClassVar, Literal, TypeVar, get_args, get_origin

from ..declared import Role, parse_if_text, role_of
from ..errors import LocalevalError


def option(default: Any, help: str, *, flag: str | None = None, parse: str | None = None,
           shortcut: tuple[str, str, str] | None = None, rescorable: bool = False,
           role: Role = "protocol", unset_unrecorded: bool = False, **argparse: Any) -> Any:
    """One option of a task. ``flag``: its command-line flag (default ``--<name-with-dashes>``);
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
    ``argparse``: keywords for the flag (``type``, ``action``, ``metavar``; its choices come
    from the field's ``Literal`` type)."""
    return dataclasses.field(default=default, metadata={
        "help": help, "flag": flag, "parse": parse, "shortcut": shortcut,
        "rescorable": rescorable, "role": role, "unset_unrecorded": unset_unrecorded,
        "argparse": argparse})


@dataclasses.dataclass(frozen=True)
class TaskOptions:
    """The base of every task's ``Options`` (a frozen dataclass of :func:`option` fields):
    each choice is checked here, once, as the object is built; a subclass's own
    ``__post_init__`` (checks across fields) calls this one first. A frozen dataclass itself,
    with no field, so that ``dataclasses.fields`` of any ``type[TaskOptions]`` is typed (and a
    subclass that is not frozen is refused where it is declared)."""

    # What a run's spec (tasks/run_spec.py) asks of its kind, each with its default: the kind
    # as the views name it; the config.json keys that say how the run's guard was read (no
    # option says it) and the facts they make; how the paper's runs read it; the options
    # always in a run's name (``named``), whatever their value.
    kind: ClassVar[str] = ""
    reading_keys: ClassVar[tuple[str, ...]] = ()
    paper_reading: ClassVar[Mapping[str, Any]] = {}
    always_named: ClassVar[tuple[str, ...]] = ()
    # config.json keys (a dotted path into a block: "guard.label_top") that say, in words, how
    # the run's task ran beyond its options (a guard's template source): kept in the run's
    # spec as recorded, written back, never a fact
    described_keys: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def reading_facts(cls, reading: Mapping[str, Any]) -> dict[str, str]:
        """The protocol facts of the reading keys a config.json records (``reading_keys``)."""
        return {}

    def named(self) -> list[str]:
        """What a run's name always says of its options (:attr:`always_named`)."""
        return []

    def resolved(self, task: str) -> dict[str, Any]:
        """Each option as a run of ``task`` (a benchmark's: its dataset's) with these options
        uses it (a default that depends
        on other options resolved, as config.json records it): by default as given."""
        return {f.name: getattr(self, f.name) for f in option_fields(type(self))}

    @classmethod
    def whole(cls, name: str, task: str) -> tuple[Any, ...] | None:
        """Every value selection option ``name`` (subjects, subsets, languages) can take for
        ``task``, when known: a run that chose them all chose nothing."""
        return None

    def record(self, names: frozenset[str], dataset: str | None = None) -> dict[str, Any]:
        """The options ``names`` of a run of ``dataset`` (its task's, :func:`dataset_of`) as
        config.json records them, which :meth:`recorded` reads back: by default each under its
        own name; an ``unset_unrecorded`` option only when set."""
        return {f.name: getattr(self, f.name) for f in option_fields(type(self))
                if f.name in names and not (f.metadata.get("unset_unrecorded")
                                            and getattr(self, f.name) is None)}

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            allowed = choices_of(type(self), f)
            value = getattr(self, f.name)
            if allowed is not None and value not in allowed:
                shown = ", ".join(str(c) for c in allowed if c is not None)
                raise LocalevalError(f"{flag_of(f)} must be one of {shown}, not {value!r}")

    @classmethod
    def recorded(cls, config: Mapping[str, Any], results: Mapping[str, Any]) -> dict[str, Any]:
        """The options a finished run was made with, read back from its config.json (and
        results.json), as :func:`make_options` takes them: by default each field from the
        config key of its name (``describe()`` writes them so); a kind that records an option
        under another name or shape says so in its own ``recorded``."""
        names = {f.name for f in option_fields(cls)}
        options = {k: v for k, v in config.items() if k in names}
        if "data" in options:  # a Hub dataset is recorded as hf://<repo>: read it from the Hub
            options["data"] = hub_or_path(options["data"])
        return options

    @classmethod
    def rescore_problem(cls, recorded: Mapping[str, Any], name: str) -> str | None:
        """Why changing option ``name`` cannot act on a run recorded with ``recorded`` (its
        :meth:`recorded` options), or None."""
        return None


@dataclasses.dataclass(frozen=True)
class SpecParts:
    """What a task says its run is (``Task.spec_parts``), from which the run's spec is made
    (:meth:`~.run_spec.RunSpec.of_task`) and config.json's task block written: its options as
    run (the selections as the data read made them, the guard as made), the data as config.json
    names it (``hf://<repo>`` for the Hub's), its kind's protocol revision, how its guard was
    read (the kind's ``reading_keys``) and what the guard says of itself
    (``described_keys``). Plain data: a task module never imports the spec's."""

    options: TaskOptions
    source: str | list[str] | None
    protocol: str | None
    reading: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    described: Mapping[str, Any] = dataclasses.field(default_factory=dict)


def hub_or_path(data: Any) -> Any:
    """A recorded ``data``: None for the Hub (``hf://…``), else the local path as given."""
    return None if data is None or str(data).startswith("hf://") else data


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


OptionsT = TypeVar("OptionsT")


def make_options(options_class: type[OptionsT], task: str, given: dict[str, Any]) -> OptionsT:
    """The task's options from ``given`` (names as in Python); defaults fill the rest. A value
    given as text becomes its declared type (:func:`declared_value`)."""
    names = [f.name for f in option_fields(options_class)]
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise LocalevalError(f"task {task!r} has no option(s) {', '.join(unknown)}; it accepts: "
                             f"{', '.join(names)}")
    fields = {f.name: f for f in option_fields(options_class)}
    return options_class(**{k: declared_value(options_class, fields[k], v, k)
                            for k, v in given.items()})


def rescorable(kind: Any) -> tuple[str, ...]:
    """The options rescore may change of a task class or a registry ``TaskKind`` (its
    ``Options``' fields declared ``rescorable``)."""
    return tuple(f.name for f in option_fields(kind.Options) if f.metadata.get("rescorable"))


def declared_value(options_class: type, f: dataclasses.Field[Any], value: Any, name: str) -> Any:
    """``value`` as option ``f`` declares it: text parsed by the field's type
    (:func:`localeval.declared.parse_if_text`; a list option's text is a comma list,
    ``subjects="arts"``, not the letters a, r, t, s), and one number or path given to a list
    option as a list of one (repeatable ``--data``). A choice stays text: the options object
    checks it when it is built."""
    choices = choices_of(options_class, f)
    if isinstance(value, str) and choices is not None:
        return None if None in choices and value.strip().lower() == "none" else value
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
