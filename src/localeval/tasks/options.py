"""A task's options, declared once: a frozen dataclass per kind of task (a :class:`TaskOptions`)
on the shared machinery of :mod:`localeval.options` (whose names are re-exported here for
code written against this module). The command line builds its flags from these fields
(:mod:`localeval.cli.run_options`), ``evaluate``'s documentation lists them
(:func:`options_doc`), and a task is made from them (:func:`make_options`). A task keeps the
object it was made with (``task.options``) and reads its fields there.

A field declared ``rescorable`` acts only on answers already given (an extraction rule, a
threshold rule): ``localeval rescore`` may change it, for any kind of task that declares some.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from ..options import (  # noqa: F401 - the machinery, re-exported for this module's importers
    Options,
    choices_of,
    declared_value,
    flag_arguments,
    flag_of,
    make_options,
    option,
    option_fields,
    options_doc,
    protocol_fields,
)


class TaskOptions(Options):
    """The base of every task's ``Options`` (a frozen dataclass of :func:`option` fields),
    with what a run's spec asks of its kind."""

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


def rescorable(kind: Any) -> tuple[str, ...]:
    """The options rescore may change of a task class or a registry ``TaskKind`` (its
    ``Options``' fields declared ``rescorable``)."""
    return tuple(f.name for f in option_fields(kind.Options) if f.metadata.get("rescorable"))


