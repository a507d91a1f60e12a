"""Typed records of a run folder's files: what ``results.json`` holds for each kind of task (one
:class:`Results` subclass per results schema), with a docstring per field, validated where the
folder is read. A damaged file is one line naming the file and the field, never a traceback
three commands later.

The records are pydantic models (pydantic: the validation, the messages and the JSON dump are a
maintained library's, not ours). They are frozen, and they keep keys they do not declare (a newer
localeval's, or a task's own), so a folder round-trips unchanged. Scripts that read results the
way they read JSON keep working: ``results["metrics"]["micro"]["acc"]`` reads the same value as
``results.metrics.micro.acc``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Annotated, Any, Self, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

# A number as results.json stores it: an int stays an int and a float a float (the folder's
# bytes round-trip), and a string is refused (strict: "0.5" is a hand edit, not a number).
Num = float | int


def _a_share(value: float | int | None) -> float | int | None:
    if value is not None and not 0 <= value <= 1:
        raise ValueError("a share from 0 to 1")
    return value


# An accuracy, a rate or an interval bound: a number from 0 to 1 (1.5 is a hand edit).
Share = Annotated[Num, AfterValidator(_a_share)]
# How many: never negative (-6 questions is a hand edit).
Count = Annotated[int, Field(ge=0)]


def _points(value: float | int | None) -> float | int | None:
    if value is not None and not 0 <= value <= 100:
        raise ValueError("points from 0 to 100")
    return value


# A share said in points, as the paper's tables are (Table 2's cells, their intervals): 0 to 100.
Points = Annotated[Num, AfterValidator(_points)]


class Record(BaseModel):
    """A validated, read-only record; mapping-style reads (``r["key"]``, ``r.get``) for scripts."""

    model_config = ConfigDict(extra="allow", frozen=True, strict=True, populate_by_name=True)

    def _name(self, key: str) -> str:
        return _field_names(type(self)).get(key, key)

    def __getitem__(self, key: str) -> Any:
        name = self._name(key)
        if name in type(self).model_fields or name in (self.model_extra or {}):
            return getattr(self, name)
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: str) -> bool:
        """Whether the file held ``key`` (a default the record fills in does not count)."""
        return self._name(key) in self.model_fields_set or key in (self.model_extra or {})

    def data(self) -> dict[str, Any]:
        """The record as JSON data, exactly the keys it was made from."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    @classmethod
    def made(cls, values: Mapping[str, Any]) -> Self:
        """A record an analysis computed, validated once, here: an undefined number (NaN, an
        infinity) is None, as results.json holds it, and a tuple a list. Records among the
        values are kept as they are."""
        return cls.model_validate(finite(dict(values)))


@cache
def _field_names(record: type[Record]) -> dict[str, str]:
    """A record type's JSON names of fields named otherwise in Python (``schema``)."""
    return {f.serialization_alias: name for name, f in record.model_fields.items()
            if f.serialization_alias}


class RoleUsage(Record):
    """One model role's tokens (store/usage.py): each count named apart."""

    requests_run: int = Field(default=0, description="requests sent to the model by this invocation")
    cache_hits: int = Field(default=0, description="requests answered from localeval's request cache")
    prompt_tokens: int = Field(default=0, description="prompt tokens of every answer, as counted when "
                               "it was made (cached answers included)")
    completion_tokens: int = Field(default=0, description="generated tokens of every answer")
    provider_cached_tokens: int = Field(default=0, description="of the prompt tokens, those the server "
                                        "reported serving from its own prompt cache")
    sent_prompt_tokens: int = Field(default=0, description="prompt tokens this invocation sent")
    sent_completion_tokens: int = Field(default=0, description="tokens generated for this invocation")
    uncounted: int = Field(default=0, description="answers whose backend counts no tokens")


class Cost(Record):
    """--price applied to the run's model's tokens."""

    role: str = Field(default="model", description="the model role priced")
    price_in: Num | None = Field(default=None, description="per million prompt tokens")
    price_out: Num | None = Field(default=None, description="per million completion tokens")
    per: str = Field(default="million tokens", description="the unit of the prices")
    total: Num = Field(description="every answer's tokens priced (cached answers included)")
    spent: Num = Field(description="what this invocation sent, priced")


class Sample(Record):
    """What every line of samples.jsonl holds, whatever the task (each kind's record, in
    :mod:`.samples`, builds on it)."""

    id: str | int = Field(description="the item's id (a question, a prompt, a text)")
    error: str | None = Field(default=None, description="why the sample has no score or no answer "
                              "(a failed request, or no extractable answer)")

    @property
    def is_failed(self) -> bool:
        """The sample's request failed: left out of every number, counted."""
        return self.error is not None

    def data(self) -> dict[str, Any]:
        """The sample as samples.jsonl holds it: the keys it was made from. Values as they are,
        not through pydantic's JSON mode, which would write an infinite log-prob as null."""
        return self.model_dump(by_alias=True, exclude_unset=True)


class Results(Record):
    """What every results.json holds, whatever the task."""

    # the JSON name on the way in and out (an alias= would also rename the constructor's
    # keyword, which pyright then reads as schema= where mypy's pydantic plugin, under
    # populate_by_name, reads schema_)
    schema_: str = Field(validation_alias="schema", serialization_alias="schema",
                         description="the results schema: which task kind "
                         "wrote it and its version, e.g. localeval.mcq/1")
    task: str | None = Field(default=None, description="the task as named to --task")
    model: str | None = Field(default=None, description="the run's model as its backend names it")
    n_samples: Count = Field(description="samples scored (one per line of samples.jsonl)")
    n_failed: Count = Field(default=0, description="samples whose request failed: left out, never "
                          "counted right or safe")
    failed: list[str] = Field(default=[], description="ids of the failed samples (the first 50)")
    failures: list[dict[str, Any]] = Field(default=[], description="the failed samples' ids and errors")
    failure_advice: str | None = Field(default=None, description="the way out of the failures, where "
                                       "the task knows one (a guard option)")
    unanswered: list[str] = Field(default=[], description="ids with no extractable answer (wrong)")
    warnings: list[str] = Field(default=[], description="what qualifies the numbers, in words")
    timing: dict[str, Any] = Field(default={}, description="seconds, throughput and request counts of "
                                   "the run that made the numbers")
    history: list[dict[str, Any]] = Field(default=[], description="each later invocation in the folder")
    request_failures: dict[str, int] = Field(default={}, description="failed requests by whether a "
                                             "rerun may fix them (transient, permanent)")
    request_failure_kinds: dict[str, int] = Field(default={}, description="failed requests by kind "
                                                  "(timeout, http, bad_reply, over_limit, context_overflow …)")
    usage: dict[str, RoleUsage] = Field(default={}, description="tokens per model role (model, judge, "
                                        "translator)")
    cost: Cost | None = Field(default=None, description="the run's cost at --price")

    def with_values(self, changes: Mapping[str, Any]) -> Self:
        """The same results with ``changes`` (the lifecycle's timing, usage and failures),
        validated again."""
        return validated(type(self), as_json({**self.data(), **changes}), "results.json")

    def disagreement(self, samples: Sequence[Sample]) -> tuple[str, str] | None:
        """Where these results and the samples they were computed from contradict each other
        (a file edited by hand): (the file, ``field <name>: …``), or None. Here the count of
        samples; a kind adds what it checks cheaply (its samples' own fields, its headline
        recomputed without bootstrap)."""
        if self.n_samples != len(samples):
            return "results.json", (f"field n_samples: {self.n_samples}, but samples.jsonl has "
                                    f"{len(samples)}")
        return None


RecordT = TypeVar("RecordT", bound=Record)  # validated() returns the record type it was given


def finite(value: Any) -> Any:
    """NaN and infinities become None (JSON has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def as_json(value: Any) -> Any:
    """``value`` as results.json holds it: NaN and infinities as null, keys sorted, tuples as
    lists, records as their data."""
    return json.loads(json.dumps(finite(_plain(value)), ensure_ascii=False, sort_keys=True))


def _plain(value: Any) -> Any:
    if isinstance(value, Record):
        return _plain(value.data())
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


class RecordError(ValueError):
    """A file of a run folder that does not hold what it should: one line, file and field."""


def validated(model: type[RecordT], data: Any, file: str) -> RecordT:
    """``data`` as a ``model``, or RecordError naming ``file`` and the first wrong field."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise RecordError(f"{file}: {describe(e)}") from None


def describe(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    what = re.sub(r"a valid dictionary( or instance of \w+)?", "a JSON object",
                  first["msg"].removeprefix("Input should be ").removeprefix("Value error, "))
    what = what.replace("a valid list", "a JSON array")
    shown = "" if first["type"] == "missing" else f" (it is {_shown(first.get('input'))})"
    more = f"; {error.error_count() - 1} more" if error.error_count() > 1 else ""
    return (f"field {where}: " if where else "") + \
        ("missing" if first["type"] == "missing" else f"should be {what}") + shown + more


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
