"""Whether a folder's results.json and samples.jsonl agree (issue 48 item 4): what the results
record checks itself (:meth:`~localeval.records.base.Results.disagreement`: counts, the samples'
own fields, a multiple-choice run's accuracy), then the headline that needs the metrics,
recomputed from the samples under the folder's *recorded* options, without the bootstrap: a
safeguard run's overall PR-AUC rows (per kind, context and subset, by its recorded estimator),
an LLM safety run's rates, a contamination run's summaries per source, score and k. ``store.runs.load_run`` calls :func:`disagreement`, the one place a
folder is checked.

A hand edit is caught; a folder an earlier version wrote still loads, as its headline was
computed the same way from the same samples (tests/test_old_folders.py)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..metrics.group import grouped
from ..records.base import Record, Results, Sample
from ..records.contamination import ContaminationResults
from ..records.llm_safety import LLMSafetyResults
from ..records.safety import SafetyResults
from ..records.samples import SCORES, ContaminationSample, LLMSafetySample, SafetySample
from .contamination import by_source
from .llm_safety import group_rates
from .safety import overall

TOLERANCE = 1e-9  # recomputed floats may differ in the last bits (summation order)

Found = tuple[str, str] | None


def disagreement(results: Results, samples: Sequence[Sample]) -> Found:
    """Where ``results`` and the ``samples`` they were computed from contradict each other: (the
    file, ``field <name>: …``), or None."""
    found = results.disagreement(samples)
    if found:
        return found
    if isinstance(results, SafetyResults):
        return _safety(results, [s for s in samples if isinstance(s, SafetySample)])
    if isinstance(results, LLMSafetyResults):
        return _llm_safety(results, [s for s in samples if isinstance(s, LLMSafetySample)])
    if isinstance(results, ContaminationResults):
        return _contamination(results,
                              [s for s in samples if isinstance(s, ContaminationSample)])
    return None


def _same(recorded: Any, recomputed: Any) -> bool:
    """Equal counts, or floats equal within TOLERANCE (None, NaN: no value, equal to each
    other)."""
    if recorded is None or recomputed is None or (isinstance(recomputed, float)
                                                  and math.isnan(recomputed)):
        none = recorded is None or (isinstance(recorded, float) and math.isnan(recorded))
        return none and (recomputed is None or math.isnan(recomputed))
    return bool(math.isclose(recorded, recomputed, rel_tol=0, abs_tol=TOLERANCE))


def _said(value: Any) -> str:
    return "null" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else repr(value)


def _compare(record: Record, recomputed: Record | Mapping[str, Any], fields: Sequence[str],
             where: str, what: str = "") -> Found:
    """The first of ``fields`` the record holds that differs from ``recomputed``."""
    for field in fields:
        if field in record and field in recomputed and \
                not _same(record[field], recomputed[field]):
            return "results.json", (f"field {where}.{field}: {_said(record[field])}, but "
                                    f"samples.jsonl gives {_said(recomputed[field])}{what}")
    return None


def _safety(results: SafetyResults, samples: list[SafetySample]) -> Found:
    """Each recorded overall row against the same row recomputed by the recorded estimator."""
    rows = {(r.kind, r.context, r.subset): r
            for r in overall(samples, n_resamples=0, auprc=results.auprc,
                             one_class=results.one_class)}
    for i, row in enumerate(results.overall):
        group = f"{row.kind}, {row.context}, {row.subset}"
        mine = rows.get((row.kind, row.context, row.subset))
        if mine is None:
            return "results.json", (f"field overall.{i}: a row of {group}, but samples.jsonl "
                                    "has no sample of it")
        found = _compare(row, mine, ("n", "n_harmful", "n_failed", "n_excluded", "auprc"),
                         f"overall.{i}", f" ({group}: {results.auprc} PR-AUC)")
        if found:
            return found
    return None


RATES = ("harmful_response_rate", "refusal_rate_harmful", "refusal_rate_safe")


def _llm_safety(results: LLMSafetyResults, samples: list[LLMSafetySample]) -> Found:
    """The rates overall, per language and per subset, recomputed from the samples not
    dropped."""
    kept = [s for s in samples if not s.dropped]
    groups = {"overall": {"": results.overall}, "by_lang": results.by_lang,
              "by_subset": results.by_subset}
    again = {"overall": {"": group_rates(kept, 0)},
             "by_lang": grouped(lambda g: group_rates(g, 0), kept, lambda s: s.lang),
             "by_subset": grouped(lambda g: group_rates(g, 0), kept, lambda s: s.subset)}
    for name, recorded in groups.items():
        for key, rates in recorded.items():
            where = f"{name}.{key}" if key else name
            mine = again[name].get(key)
            if mine is None:
                return "results.json", (f"field {where}: rates of {key!r}, but samples.jsonl "
                                        "has no sample of it")
            found = _compare(rates, mine, ("n", "n_failed", "n_refusal_unknown"), where)
            for rate in RATES:
                found = found or _compare(rates[rate], mine[rate], ("n", "rate"),
                                          f"{where}.{rate}")
            if found:
                return found
    return None


SUMMARY = ("n", "mean", "median", "q25", "q75", "min", "max")


def _contamination(results: ContaminationResults,
                   samples: list[ContaminationSample]) -> Found:
    """Each source's text count and each score's summary per k, recomputed from the texts'
    scores."""
    again = by_source(samples, results.k)
    for name, source in results.sources.items():
        mine = again.get(name)
        if mine is None:
            return "results.json", (f"field sources.{name}: a source of that name, but "
                                    "samples.jsonl has no text of it")
        found = _compare(source, mine, ("n", "n_failed"), f"sources.{name}")
        for score in SCORES:
            recomputed = mine.summaries(score) or {}
            for k, summary in (source.summaries(score) or {}).items():
                if summary is not None and (again_k := recomputed.get(k)) is not None:
                    found = found or _compare(summary, again_k, SUMMARY,
                                              f"sources.{name}.{score}.{k}")
        if found:
            return found
    return None
