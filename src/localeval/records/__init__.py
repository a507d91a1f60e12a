"""Typed records of the run folder's files, one results type per results schema
(:mod:`.base` says how they are validated and read)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from . import contamination, llm_safety, mcq, safety
from .base import Record, RecordError, Results, as_json, finite, validated
from .samples import ContaminationSample, LLMSafetySample, MCQSample, SafetySample, Sample

# results.json's "schema" -> its record. A schema not listed (a task kind of a plugin, a test's
# toy) is read as plain Results: every common field checked, its own keys kept as they are.
RESULTS_TYPES: dict[str, type[Results]] = {
    mcq.SCHEMA: mcq.MCQResults,
    safety.SCHEMA: safety.SafetyResults,
    llm_safety.SCHEMA: llm_safety.LLMSafetyResults,
    contamination.SCHEMA: contamination.ContaminationResults,
}

ResultsT = TypeVar("ResultsT", bound=Results)

# results.json's "schema" -> the record of a line of its samples.jsonl (plain Sample otherwise)
SAMPLE_TYPES: dict[str, type[Sample]] = {
    mcq.SCHEMA: MCQSample,
    safety.SCHEMA: SafetySample,
    llm_safety.SCHEMA: LLMSafetySample,
    contamination.SCHEMA: ContaminationSample,
}


def sample_type(results: Results) -> type[Sample]:
    """The sample record of the kind that wrote ``results``."""
    return SAMPLE_TYPES.get(results.schema_, Sample)


def results_record(data: Mapping[str, Any], kind: type[ResultsT]) -> ResultsT:
    """Results a task made as JSON-like data, as ``kind`` (the record of their schema), typed
    as results.json will hold them (NaN as null, tuples as lists). For a task of another
    package that builds its results as data; localeval's own tasks construct their record where
    the numbers are computed (:meth:`Record.made`, the record's constructor)."""
    return validated(kind, as_json(data), "results.json")


def task_results(made: Results | Mapping[str, Any]) -> Results:
    """What a task's ``summarise`` made, as a results record: the record itself, or (a task of
    another package written before samples were typed) its JSON data read by its schema."""
    return made if isinstance(made, Results) else read_results(as_json(made))


def task_sample(made: Sample | Mapping[str, Any]) -> Sample:
    """What a task's ``score`` made, as a sample record: the record itself, or (a task of
    another package) its JSON data as a plain :class:`Sample`, every key kept."""
    return made if isinstance(made, Sample) else validated(Sample, as_json(made), "sample")


def read_results(data: object, file: str = "results.json") -> Results:
    """results.json's data as the record of its schema; RecordError naming the field (or the
    schema, when no task kind this localeval knows wrote it and it is not even plain Results)."""
    if not isinstance(data, dict):
        raise RecordError(f"{file}: should be a JSON object, not {json_type(data)}")
    schema = data.get("schema")
    # a schema that is not text (a hand edit: a list, a number) is of no known kind, like an
    # unknown name (a list used to be a TypeError from the dict lookup)
    known = RESULTS_TYPES.get(schema) if isinstance(schema, str) else None
    try:
        return validated(known or Results, data, file)
    except RecordError:
        if known:
            raise
        raise RecordError(f"{file}: results with schema {schema!r} are of no task kind this "
                          f"localeval knows ({', '.join(RESULTS_TYPES)}); were they written by "
                          "another version?") from None


def json_type(value: object) -> str:
    """How a JSON value is named in a message ("an array", "null")."""
    names = {list: "an array", str: "a string", int: "a number", float: "a number",
             bool: "true/false", type(None): "null", dict: "an object"}
    return names.get(type(value), type(value).__name__)


__all__ = ["RESULTS_TYPES", "SAMPLE_TYPES", "Record", "RecordError", "Results", "Sample",
           "as_json", "finite", "json_type", "read_results", "results_record", "task_results", "task_sample", "sample_type", "validated"]
