"""What a run is (issue 61): :class:`RunSpec`, one frozen, typed record read from config.json's
task block by one reader (:meth:`RunSpec.from_config`, every layout config.json has had), from
which the run's protocol facts (:meth:`RunSpec.protocol_facts`: what the leaderboard groups and
tells apart) and its name (:attr:`RunSpec.name`: what a person reads, wherever a run is shown)
both derive, so a run's name and its facts can never disagree.

Light (``localeval --help`` may import it): the task kinds' ``Options`` and the catalog, no
pydantic nor numpy. The run's options are its kind's ``Options``, typed as a run makes them; each
option's role (:data:`localeval.declared.Role`) says what it is to the run: a ``protocol`` option
is a fact and is in the name when it is not the task's own value, a ``model`` option (the guard
of a safeguard run) names the run beside its model, a ``speed`` or ``output`` one is neither."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data.catalog import BUILTIN_TASKS
from ..declared import role_of, shown
from ..errors import LocalevalError
from ..guards.registry import declared_options
from .benchmarks import benchmark_defaults, dataset_of
from .options import TaskOptions, make_options, option_fields
from .registry import TASKS, task_kind
from .shards import SHARD

CLUSTER = "cluster"  # config.json's key: --cluster's address and --workers, in a cluster run's

_NEEDED = object()  # an option the run's others cannot do without
# the options that say which part of which data a run read: named by the data, not one by one
DATA_OPTIONS = ("data", "dataset_revision", "subjects", "subsets", "langs", "limit")


@dataclass(frozen=True)
class ModelSpec:
    """One model of a run: its role ("model" for the run's own, "judge", "translator", …), the
    model as given (``hf:…``), its options (a role's own backend options) and the backend's
    identity as config.json records it (``backend`` / ``role_backends``; None before a role's
    backend was recorded)."""

    role: str
    model: str | None
    options: Mapping[str, Any] = field(default_factory=dict)
    backend: Mapping[str, Any] | None = None

    @property
    def short(self) -> str:
        """The model as a run's name says it: the last part of its path or Hub id (a model
        object handed in from Python, which has no ``--model``, by its backend's name)."""
        return short_model(str(self.model or (self.backend or {}).get("model") or ""))

    @property
    def none(self) -> bool:
        """Whether this is no model: the ``none:`` backend of a guard that needs none."""
        return str(self.model or "").startswith("none:")


@dataclass(frozen=True)
class DataSpec:
    """The data a run read and what part of it: the source (a local path, or ``hf://<repo>``
    for the Hub's; None: the task's own), its fingerprint (the sha256 of the sha256s of every
    file read, config.json's ``data_files``; None for a folder from before it was recorded),
    the dataset revision, the subjects or subsets and languages chosen, and the limit."""

    source: str | tuple[str, ...] | None  # several sources: contamination's --data, repeated
    files: Mapping[str, Any] | None  # config.json's data_files: path -> {bytes, sha256}
    revision: str | None
    parts: tuple[str, ...] | None
    langs: tuple[str, ...] | None
    limit: int | None

    @property
    def fingerprint(self) -> str | None:
        """The sha256 of the one file read, or of the sorted sha256s of several (12 digits)."""
        digests = self._digests()
        if not digests:
            return None
        return digests[0][:12] if len(digests) == 1 else \
            hashlib.sha256("\n".join(digests).encode()).hexdigest()[:12]

    def _digests(self) -> list[str]:
        return sorted(str(e.get("sha256")) if isinstance(e, Mapping) else "none"
                      for e in (self.files or {}).values())

    @property
    def by_path(self) -> bool:
        """Whether the data can only be matched by its path: local data (not the Hub's) without
        the fingerprint config.json keeps since (``data_files``)."""
        return bool(self.source) and not str(self.source).startswith("hf://") and \
            self.fingerprint is None

    def fact(self) -> str:
        """The data as the leaderboard compares it: by its contents ("sha256 1a2b3c4d5e6f", or
        for several files "sha256 … (67 files)"), whatever path it was reached by; the Hub's
        by its name; a folder from before the fingerprint by its path."""
        if self.fingerprint is not None:
            n = len(self._digests())
            return f"sha256 {self.fingerprint}" + (f" ({n} files)" if n > 1 else "")
        if self.by_path:  # several sources as config.json's list (the facts stay as they were)
            source = list(self.source) if isinstance(self.source, tuple) else self.source
            return f"path {source}"
        return shown(self.source)


@dataclass(frozen=True)
class RunSpec:
    """A run's identity: config.json's task block, typed. ``options`` are the task kind's
    ``Options`` as the run made them (read back as ``rescore`` reads them); ``recorded``, the
    names of those config.json records (an older folder records fewer: a likelihood run no
    extraction rule); ``reading``, what config.json says of how the run's guard was read that
    no option says (its keys ``Options.reading_keys``: label scores, verdict position), as
    recorded."""

    task: str
    kind: str
    options: TaskOptions
    recorded: frozenset[str]
    model: ModelSpec
    roles: tuple[ModelSpec, ...]
    data: DataSpec
    protocol: str | None
    reading: tuple[tuple[str, Any], ...] = ()
    rescored_from: Mapping[str, Any] | None = None
    # --shard's "I/N": which share of the items the run answered, a speed-role fact (never a
    # number's, so never a protocol fact); None: all of them
    shard: str | None = None
    # --cluster's address and --workers (config.json's ``cluster``): where the run's requests
    # ran, a speed-role fact as the shard is (never a protocol fact nor part of the name); ()
    # for a run on this machine
    cluster: tuple[tuple[str, Any], ...] = ()
    # what the task says of how it ran that no option says and no fact compares (its kind's
    # ``Options.described_keys``: a guard's template source, where its verdict is read, in
    # words), kept as recorded, for people
    described: tuple[tuple[str, Any], ...] = ()

    # ------------------------------------------------------------------ the one writer
    @classmethod
    def of_run(cls, task: str, options: TaskOptions, *, source: str | list[str] | None,
               protocol: str | None, reading: Mapping[str, Any] | None = None,
               described: Mapping[str, Any] | None = None) -> RunSpec:
        """The spec of a run about to be made, from which its config.json task block is written
        (:meth:`to_config`): ``options`` as the task holds them (the selections as the data
        read made them: every subject or language read), resolved as the run resolves them
        (its benchmark's dataset: the prompt style, a generation's budget and extraction);
        ``source``, the data as config.json names it (``hf://<repo>`` for the Hub's);
        ``protocol``, the kind's protocol revision; ``reading`` and ``described``, what the
        task says of its guard beyond the options (:attr:`reading`, :attr:`described`)."""
        options_class = _as_task_options(type(options))
        resolved = make_options(options_class, task, options.resolved(dataset_of(task)))
        names = frozenset(f.name for f in option_fields(options_class))
        block = {**resolved.record(names, dataset_of(task)), "data": source}
        recorded = options_class.recorded(block, {})
        parts = recorded.get("subjects") if "subjects" in recorded else recorded.get("subsets")
        data = DataSpec(source=_tuple(source) if isinstance(source, list | tuple) else source,
                        files=None, revision=recorded.get("dataset_revision"),
                        parts=_tuple(parts), langs=_tuple(recorded.get("langs")),
                        limit=recorded.get("limit"))
        return cls(task=task, kind=_kind_of(options_class), options=resolved,
                   recorded=frozenset(recorded), data=data, model=ModelSpec("model", None),
                   roles=(), protocol=protocol,
                   reading=tuple((k, v) for k, v in (reading or {}).items()
                                 if k in options_class.reading_keys),
                   described=tuple((k, v) for k, v in (described or {}).items()
                                   if k in options_class.described_keys))

    @classmethod
    def of_task(cls, task: Any, data: Any) -> RunSpec:
        """The spec of ``task``'s run over ``data`` (what ``task.load()`` gave): made from its
        :class:`~.options.SpecParts`; a task that writes its own config.json block
        (``describe``, one from another package) by that block, read."""
        parts = task.spec_parts(data)
        if parts is None:
            return cls.from_config({**task.describe(data), "task": task.name})
        return cls.of_run(task.name, parts.options, source=parts.source,
                          protocol=parts.protocol, reading=parts.reading,
                          described=parts.described)

    # ------------------------------------------------------------------ the one reader
    @classmethod
    def from_config(cls, config: Mapping[str, Any],
                    options_class: type[TaskOptions] | None = None) -> RunSpec:
        """The run config.json describes, from any layout it has had (the options each kind's
        ``Options.recorded`` reads back, the guard as a name or ``{"name", "options"}``, a
        folder with or without ``data_files``, ``model_roles``, ``role_backends``): of the kind
        its task names, else of ``options_class`` (a task this localeval no longer knows, read
        by its results' view)."""
        task = str(config.get("task") or "")
        if options_class is None or task in TASKS:
            options_class = task_kind(task).Options
        options_class = _as_task_options(options_class)
        recorded = options_class.recorded(config, {})
        options = make_options(options_class, task, recorded)
        files = config.get("data_files")
        parts = config.get("subjects") if "subjects" in recorded else config.get("subsets")
        source = config.get("data")
        data = DataSpec(source=source if source is None else _tuple(source)
                        if isinstance(source, list | tuple) else str(source),
                        files=files if isinstance(files, dict) and files else None,
                        revision=config.get("dataset_revision"),
                        parts=_tuple(parts), langs=_tuple(config.get("langs")),
                        limit=config.get("limit"))
        backends = config.get("role_backends") or {}
        roles = tuple(ModelSpec(role, (settings or {}).get("model"),
                                dict((settings or {}).get("options") or {}),
                                backends.get(role))
                      for role, settings in sorted((config.get("model_roles") or {}).items()))
        return cls(task=task, kind=_kind_of(options_class), options=options,
                   recorded=frozenset(recorded), data=data,
                   model=ModelSpec("model", config.get("model"), {}, config.get("backend")),
                   roles=roles, protocol=config.get("protocol"),
                   reading=tuple((k, config[k]) for k in options_class.reading_keys
                                 if k in config),
                   rescored_from=config.get("rescored_from"),
                   shard=None if config.get(SHARD) is None else str(config[SHARD]),
                   cluster=tuple(sorted(config[CLUSTER].items()))
                   if isinstance(config.get(CLUSTER), dict) else (),
                   described=tuple((key, value) for key in options_class.described_keys
                                   if (value := _at(config, key)) is not _ABSENT))

    @classmethod
    def paper(cls, task: str, protocol: str, source: str) -> RunSpec:
        """The run of ``task``'s paper protocol, stated once for every kind: the options a
        run of it is given by nobody (its benchmark's own, else the defaults), as the run
        resolves them, over the whole of ``source`` (the Hub's data: every subject, subset and
        language, no limit), protocol revision ``protocol``, its guard read as its authors
        read it (the kind's ``paper_reading``)."""
        options_class = _as_task_options(task_kind(task).Options)
        dataset = dataset_of(task)
        given = make_options(options_class, task, dict(benchmark_defaults(task)))
        whole = {name: list(parts) for name in DATA_OPTIONS
                 if (parts := options_class.whole(name, dataset)) is not None}
        made = make_options(options_class, task, {**given.resolved(dataset), **whole})
        names = frozenset(f.name for f in option_fields(options_class))
        return cls.from_config({**made.record(names), **dict(options_class.paper_reading),
                                "task": task, "protocol": protocol, "data": source})

    def to_config(self) -> dict[str, Any]:
        """The task block of config.json this spec is read from, in today's layout (each
        kind's ``Options.record``), which :meth:`from_config` reads back into an equal spec:
        a run's is its task's spec written (:func:`task_block`)."""
        config: dict[str, Any] = {
            "task": self.task,
            **type(self.options).record(self.options, self.recorded, dataset_of(self.task)),
            **dict(self.reading),
            "data": list(self.data.source) if isinstance(self.data.source, tuple) else
            self.data.source}
        if self.protocol is not None:  # a kind without protocol revisions (contamination)
            config["protocol"] = self.protocol
        if self.model.model is not None:
            config["model"] = self.model.model
        for key, value in self.described:
            _put(config, key, value)
        if self.model.backend is not None:
            config["backend"] = dict(self.model.backend)
        if self.roles:
            config["model_roles"] = {r.role: {"model": r.model, "options": dict(r.options)}
                                     for r in self.roles}
            backends = {r.role: dict(r.backend) for r in self.roles if r.backend is not None}
            if backends:
                config["role_backends"] = backends
        if self.data.files is not None:
            config["data_files"] = dict(self.data.files)
        if self.rescored_from is not None:
            config["rescored_from"] = dict(self.rescored_from)
        if self.shard is not None:
            config[SHARD] = self.shard
        if self.cluster:
            config[CLUSTER] = dict(self.cluster)
        return config

    # ------------------------------------------------------------------ what derives from it
    def option(self, name: str) -> Any:
        return getattr(self.options, name)

    def protocol_facts(self) -> dict[str, str]:
        """What makes a run comparable with another on the leaderboard: its protocol revision,
        each protocol-role option config.json records, as it is shown ("prompt style": "tmlu"),
        the data by its contents, the part of it (subjects out of the dataset's), and how the
        guard was read."""
        facts = {"limit": shown(self.data.limit), "protocol": shown(self.protocol)}
        for f in option_fields(type(self.options)):
            if role_of(f) == "protocol" and f.name in self.recorded:
                facts[label(f.name)] = shown(self._declared(f, self.option(f.name)))
        if "data" in facts:
            facts["data"] = self.data.fact()
        if self.kind == "mcq":
            spec = BUILTIN_TASKS.get(dataset_of(self.task))
            n = len(self.data.parts or ())
            facts["subjects"] = f"{n} of {len(spec.subjects)}" if spec else f"{n}"
        facts.update(type(self.options).reading_facts(dict(self.reading)))
        if self.guard is not None:
            facts["guard options"] = shown(self.guard_options)
        return facts

    @property
    def guard_options(self) -> dict[str, Any]:
        """The options the run's guard was made with (``--guard-option``), less how it was
        read (its reading facts, said apart): how a guard is prompted or read changes its
        scores (PolyGuard's ``reading``, ShieldGemma's ``mode``, a plugin guard's own), so
        two runs of one guard with other options are two protocols, never ranked as one."""
        given = declared_options(self.guard, getattr(self.options, "guard_options", None))
        return {k: v for k, v in given.items()
                if k not in type(self.options).reading_keys}

    def _declared(self, f: dataclasses.Field[Any], value: Any) -> Any:
        """An option's value as a fact or the name says it: a guard's options (a
        ``guard_of`` option: ``--guard-option``, ``--judge-option``) as that guard's
        ``Options`` reads them, those at their default left out (issue 67)."""
        guard_of = f.metadata.get("guard_of")
        if guard_of is None or not isinstance(value, Mapping | None):
            return value
        return declared_options(getattr(self.options, guard_of, None), value)

    @property
    def name(self) -> str:
        """How a run is named for people, wherever one is shown: the guard on its model (a
        run's ``model``-role option) and the task, then what it says of its protocol
        (:attr:`said`): "llamaguard3 on mymodel · sea-safeguard · label scores full",
        "mymodel · tmlu · 5-shot CoT"; a guard that needs no model (``none:``) by itself alone
        ("keyword-guard · sea-safeguard"). Two runs whose protocol facts differ in an option
        have different names. A shard says so last ("shard 0/3"): its numbers are of a share."""
        model = self.model.short
        head = self.guard if self.guard and self.model.none else \
            f"{self.guard} on {model}" if self.guard else model
        return " · ".join([head, self.task,
                           *self.said, *([f"shard {self.shard}"] if self.shard else [])])

    @property
    def guard(self) -> str | None:
        """The guard the run evaluates (its ``guard`` option, of the ``model`` role), or
        None: a run of a kind without one."""
        guard = getattr(self.options, "guard", None)
        return guard if isinstance(guard, str) or guard is None else type(guard).__name__

    @property
    def said(self) -> list[str]:
        """What a run's name says of its protocol: what its kind always says (a
        multiple-choice run's shots and method, "5-shot CoT"), each protocol- or model-role
        option that is not the task's own value (its benchmark's, else the default, resolved
        as the run resolves it: "extract strict"), the data when not the task's own ("data
        items.jsonl", "limit 12", "5 of 37 subjects"), and how the guard was read where it is
        not how its authors read it ("verdict position fixed")."""
        options_class = type(self.options)
        parts = [*self.options.named()]
        mine = self.options.resolved(dataset_of(self.task))
        for f in option_fields(options_class):
            if f.name in options_class.always_named or f.name == "guard" or \
                    role_of(f) not in ("protocol", "model") or f.name not in self.recorded:
                continue
            value = self._declared(f, mine[f.name])
            if isinstance(value, Mapping):  # what the reading says is said once, below
                value = {k: v for k, v in value.items() if k not in options_class.reading_keys}
            if f.name in DATA_OPTIONS:
                said = self._data_said(f.name, value)
                if said:
                    parts.append(said)
            elif shown(value) != shown(self._declared(f, self._without(f.name))):
                parts.append(f"{label(f.name)} {shown(value)}")
        paper = options_class.reading_facts(dict(options_class.paper_reading))
        parts += [f"{k} {v}" for k, v in options_class.reading_facts(dict(self.reading)).items()
                  if paper.get(k) != v]
        return parts

    @classmethod
    def name_of(cls, config: Mapping[str, Any], model: str | None = None) -> str:
        """The name of the run config.json describes; one whose task block cannot be read as a
        spec (a task this localeval no longer knows, a hand-edited file) by its model."""
        try:
            return cls.from_config(config).name
        except (LocalevalError, TypeError, ValueError):
            return short_model(str(model or config.get("model") or ""))

    @classmethod
    def columns_of(cls, config: Mapping[str, Any], model: str | None = None) -> dict[str, str]:
        """What the results store's summary, the viewer and the leaderboard show of a run beside
        its numbers, all from its spec: ``name``, ``guard`` (the guard it evaluates, "none")
        and ``options`` (what its name says of its protocol, :attr:`said`, as one line). A
        config.json that cannot be read as a spec: named by its model, its guard as
        recorded."""
        try:
            spec = cls.from_config(config)
        except (LocalevalError, TypeError, ValueError):
            guard = config.get("guard")
            guard = guard.get("name") if isinstance(guard, Mapping) else guard
            return {"name": cls.name_of(config, model), "guard": str(guard or "none"),
                    "options": ""}
        return {"name": spec.name, "guard": spec.guard or "none",
                "options": " · ".join(spec.said)}

    def _without(self, name: str) -> Any:
        """Option ``name`` as the run would have it had it not been given (the benchmark's own,
        else the default, resolved with the run's other options); a sentinel where the run's
        other options need it (then it is always said)."""
        own = benchmark_defaults(self.task)
        default = own.get(name, next(f.default for f in option_fields(type(self.options))
                                     if f.name == name))
        try:  # the other options may refuse the default (--cot needs --prompt-style tmlu)
            options = dataclasses.replace(self.options, **{name: default})  # type: ignore[type-var]
            return options.resolved(dataset_of(self.task))[name]
        except LocalevalError:
            return _NEEDED

    def _data_said(self, name: str, value: Any) -> str:
        """A data option in a run's name: the local data by its file or folder name, a
        selection that is not the whole (by its count beyond three), a limit, a revision;
        nothing when not given."""
        if value is None or value == [] or value == ():
            return ""
        if name == "data":
            values = value if isinstance(value, list | tuple) else [value]
            return "data " + ",".join(map(_data_name, values))
        if isinstance(value, list | tuple):
            whole = type(self.options).whole(name, dataset_of(self.task))
            if whole is not None and sorted(map(str, value)) == sorted(map(str, whole)):
                return ""
            if len(value) > 3:
                return f"{len(value)}{f' of {len(whole)}' if whole else ''} {label(name)}"
        return f"{label(name)} {shown(value)}"



_ABSENT = object()


def _at(config: Mapping[str, Any], key: str) -> Any:
    """config.json's value at ``key``, a dotted path into its blocks ("guard.label_top"), or
    _ABSENT."""
    value: Any = config
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return _ABSENT
        value = value[part]
    return value


def _put(config: dict[str, Any], key: str, value: Any) -> None:
    """Writes ``value`` at the dotted ``key`` of a config block (into a block the options
    wrote: none is made for it)."""
    *blocks, last = key.split(".")
    for part in blocks:
        inner = config.get(part)
        if not isinstance(inner, dict):
            return
        config[part] = inner = dict(inner)
        config = inner
    config[last] = value


def task_block(task: Any, data: Any) -> dict[str, Any]:
    """config.json's task block of ``task``'s run over ``data``: its spec, written
    (:meth:`RunSpec.to_config`); a task from another package that declares no spec parts, the
    block its ``describe`` writes."""
    if task.spec_parts(data) is None:
        return dict(task.describe(data))
    return RunSpec.of_task(task, data).to_config()


def label(name: str) -> str:
    """An option's name as a fact is labelled ("prompt_style" -> "prompt style")."""
    return name.replace("_", " ")


def _as_task_options(options_class: type) -> type[TaskOptions]:
    """A kind's ``Options``, with what a spec asks of it: a kind added from Python may declare
    a plain dataclass of options, which gets :class:`TaskOptions`' defaults (read back from
    config.json by name, no reading, nothing always named)."""
    if issubclass(options_class, TaskOptions):
        return options_class
    if options_class not in _ADAPTED:  # once each: a spec's options compare by their class
        adapted = type(options_class.__name__, (options_class, TaskOptions),
                       {"__doc__": options_class.__doc__, "__module__": options_class.__module__})
        _ADAPTED[options_class] = dataclasses.dataclass(frozen=True)(adapted)
    return _ADAPTED[options_class]


_ADAPTED: dict[type, type[TaskOptions]] = {}


def _data_name(source: Any) -> str:
    """Local data as a run's name says it: a folder by its name ("tmlu"), a file with its
    folder's ("safety/items.jsonl": a file name alone, items.jsonl, tells little apart)."""
    path = Path(str(source))
    return f"{path.parent.name}/{path.name}" if path.suffix and path.parent.name else path.name


def _tuple(value: Any) -> tuple[str, ...] | None:
    return None if value is None else tuple(str(v) for v in value)


def _kind_of(options_class: type) -> str:
    """The kind of task an ``Options`` class is for, as the views name it ("mcq", "safety",
    …): its ``kind`` (a kind from another package without one: its class's name)."""
    return str(getattr(options_class, "kind", "") or options_class.__name__)


def short_model(name: str) -> str:
    """The last part of a model path or Hub id."""
    return str(name or "(model)").rstrip("/").split("/")[-1]
