"""The Task protocol: what every evaluation implements, so one run lifecycle drives them all.

    data    = task.load()                       # validated items; every data/option check
    config  = task_block(task, data)            # its spec (what the run is), for config.json
    planned = task.plan(data, backend)          # what to ask, per sample
    answers = task.respond(planned, execute)     # requests through the cache (one round or more)
    samples = [task.score(p, a) for p, a in zip(planned, answers)]
    results = task.summarise(samples, data, backend.identity)  # metrics -> results.json

A task is made for one run, with that run's options (``tasks.registry.make_task``), and holds
only what it was made with: each step gets what it needs from the steps before (``data`` is
whatever ``load`` returns: the items, and what loading found beside them). ``load`` must raise
every error a user can fix before :mod:`localeval.run` loads the model. ``plan`` sees the
backend for what prompts depend on (context length, token counts, the model's name).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from ..backends.base import Backend
from ..backends.base import Executor as Execute
from ..errors import LocalevalError
from ..records import Results, Sample
from .options import SpecParts, TaskOptions

# Which revision of the authors' protocols a task's defaults reproduce, one per task kind, so a
# changed safeguard default does not set every multiple-choice run apart (issue 49).
# ``describe()`` of the papers' tasks records its kind's, so it is in config.json and in the
# settings a rerun compares: a folder made under older defaults is "a run with other settings"
# naming it. "fidelity-3" (issue 34): IRIS's threshold grid, sensitive labels and D.2 rates,
# every TMLU shot kept. MCQ "fidelity-4" (issue 50): no stop string with --chat api and the TMLU
# rules, as MiuLab's OpenAI_LM.query. Safeguards' "fidelity-4": a guard the authors run
# generating reads its verdict at the first generated position whose top k holds a label
# (``verdict_position``, issue 49 item 1), Llama Guard 3 renders the checkpoint's own chat
# template (issue 49 item 2), a one-class file valued as IRIS (scikit-learn's PR-AUC) in a
# cell's mean, IRIS's failure rules (issue 50). LLM safety's "fidelity-4": the same two guard
# changes for its judge, a D.2 judge's HTTP 400 a safe response, three-label guards read by
# their argmax label, a blank response sent to the refusal judge (issue 50). "fidelity-5"
# (issue 64), safeguards and LLM safety: a server's tied tokens ranked in its list's order (a
# label tied with the k-th token but after it is outside the top k; a tied argmax goes to the
# label listed first), PolyGuard read at the labelled positions of its whole answer, a
# first-label read's new tokens counted against the context, SEA-LION Guard's HTTP-400 fill
# weighted as IRIS under --on-failure iris (docs/fidelity.md S4, S6, S10, S24c, S25).
MCQ_PROTOCOL = "fidelity-4"  # cmmlu, tmlu, tmmlu+, a custom exam
SAFEGUARD_PROTOCOL = "fidelity-5"  # sea-safeguard, safety-prompts, safety-responses
LLM_SAFETY_PROTOCOL = "fidelity-5"  # llm-safety (its default judge is Llama Guard 3)


class Task(ABC):
    name: str
    results_schema: str  # results.json "schema", e.g. "localeval.mcq/1"
    # Its options, declared once: a frozen dataclass of tasks.options.option fields; the command
    # line's flags and evaluate's documentation are built from it. The task keeps the object it
    # was made with as ``self.options``.
    Options: type[TaskOptions]
    command = "run"  # the command that runs it: run, or one of its own (contamination)
    progress_unit: str = "requests"  # what the progress bar counts
    rate_unit: str = "samples"  # what timing's "<unit>_per_second" counts
    # The backend spec the run uses when no model is given (a guard with its own model); None:
    # the caller must name one.
    default_model: str | None = None
    # The view of its results (a views.ResultsView subclass) for a kind from another package;
    # the built-in kinds' views are in the views' own table (views/registry.py).
    view: type | None = None

    @abstractmethod
    def __init__(self, name: str, **options: Any) -> None:
        """The task for one run (``tasks.registry.make_task``): ``name`` as the run names it,
        ``options`` that run's, checked into ``self.options`` (an ``Options``)."""

    def model_roles(self) -> dict[str, Any]:
        """Models the task needs beside the run's own, by role (``judge``, ``translator``):
        each a backend spec or object. The run checks each before any model loads, loads it
        with its role's options, records it in config.json, and hands it to ``respond`` as
        ``execute.role(role)``."""
        return {}

    def role_way(self, role: str) -> str | None:
        """How a user names the model of ``role`` (a guard option), for the line a model not on
        this machine gets; None: by its option (:meth:`role_flag`) and ``hf:<its folder>``."""
        return None

    def role_flag(self, role: str) -> str | None:
        """The option that names the model of ``role`` (``--judge-model``), for the line a model
        not on this machine gets: ``pass --judge-model hf:<its folder>``."""
        return None

    @abstractmethod
    def load(self) -> Any:
        """The run's items, selected and validated (and what loading found beside them);
        LocalevalError on anything wrong."""

    @abstractmethod
    def plan(self, data: Any, backend: Backend) -> list[Any]:
        """One planned sample per scored unit (a question, a guard verdict)."""

    def respond(self, planned: Sequence[Any], execute: Execute) -> list[Any]:
        """The answer of each planned sample. Default: one request each, in one round."""
        return execute([p.request for p in planned])

    def shard_key(self, planned: Any) -> str:
        """What ``--shard`` shares a planned sample out by (:mod:`.shards`): the id of the item
        it asks about, which is its sample's id, so an item's language versions, draws and
        option orders stay in one shard whatever the order of the data."""
        item_id = getattr(getattr(planned, "item", None), "id", None)
        if item_id is None:
            raise LocalevalError(f"--shard: task {self.name!r} plans samples that name no item "
                                 "(its Task needs a shard_key), so it cannot be shared out")
        return str(item_id)

    @abstractmethod
    def score(self, planned: Any, answer: Any) -> Sample:
        """The sample record (a line of samples.jsonl) of one planned sample: the task kind's
        own record type (``records.samples``)."""

    @abstractmethod
    def summarise(self, samples: Any, data: Any, identity: dict[str, Any]) -> Results:
        """The results record of the task's schema, without ``timing`` (the lifecycle adds
        it); ``samples`` are what ``score`` made, ``identity`` is the run's backend's."""

    def spec_parts(self, data: Any) -> SpecParts | None:
        """What the run is (:class:`~.options.SpecParts`: its options as run, its data, its
        protocol revision, how its guard was read), from which its spec is made and its
        config.json task block written (:func:`~.run_spec.task_block`): the built-in kinds'
        own. None (the default): the task writes its own block with :meth:`describe`."""
        return None

    def describe(self, data: Any) -> dict[str, Any]:
        """config.json's task block, for a task that declares no :meth:`spec_parts` (one from
        another package): its options as run, each under its own name (as
        ``Options.recorded`` reads them back)."""
        raise LocalevalError(f"task {self.name!r} ({type(self).__module__}) declares neither "
                             "spec_parts() nor describe(): it cannot say what its run is")
