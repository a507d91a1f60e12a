"""The sample browser's data: a run's samples.jsonl as columns and rows, embedded in the HTML
report as JSON and drawn by ``assets/report.js`` (search, filters, sorting, paging).

Columns are found from the samples themselves, so every task's samples browse the same way:
known keys first in a sensible order, then the rest. Short strings and booleans with few
distinct values become filters; long strings (prompts, responses, outputs) are shown collapsed.
A sample whose gold label is harmful or sensitive is flagged, and its text stays behind a
content warning until the reader opens it; so does a text so labelled wherever else it
appears (a harmful prompt on the rows of its responses, whose own label is the response's).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, Literal, TypedDict

from ..records.samples import MCQSample, Sample
from ..store.runs import stored_data

# Shown first, in this order, where a task's samples have them.
FIRST = ("id", "subject", "level", "year", "lang", "subset", "kind", "context", "source",
         "raw_label", "label", "gold", "pred", "correct", "score", "failed", "error",
         "prompt", "response", "output")
# Never shown: bulky or internal (the guard's raw output and log-probs are in samples.jsonl).
HIDDEN = {"guard_output", "logprobs", "min_k", "min_k_pp", "n_shots", "skipped_shots", "guard",
          "model", "extract", "neutral"}
TITLES = {"raw_label": "gold label", "label": "label (binary)", "lang": "language",
          "pred": "predicted", "score": "P(harmful)"}
TEXT_KEYS = {"prompt", "response", "output", "text", "question"}  # always shown collapsed
FILTER_MAX = 60  # a string column with at most this many distinct values is a filter
LONG = 80  # a string longer than this anywhere in a column makes it a text column
WARN_LABELS = {"harmful", "sensitive", "unsafe", 1}  # 1 also matches True
SHARED_MIN = 100  # a text's preview skips a start it shares with another text at least this long

ColumnKind = Literal["bool", "num", "text", "str"]
Stored = dict[str, Any]  # a sample as samples.jsonl holds it
BrowserRow = list[Any]  # a row's cells, in the columns' order (JSON values)


class BrowserColumn(TypedDict):
    """A column as ``assets/report.js`` reads it."""

    key: str
    title: str
    type: ColumnKind
    filter: bool


def browser_data(records: Sequence[Sample]) -> dict[str, Any]:
    """``{"columns": [{key, title, type, filter}], "rows": [[...]], "warn": [[k, ...]],
    "starts": [{"k": offset}]}``: ``warn`` lists, per row, the columns whose text stays behind
    the content warning; ``starts``, per row, where the preview of a text column begins (see
    :func:`_preview_starts`). Columns are the samples' JSON fields, whatever their kind (each
    as samples.jsonl holds it)."""
    samples = [stored_data(s) for s in records]
    keys = _keys(samples)
    columns = [_column(k, [s.get(k) for s in samples]) for k in keys]
    rows = [[_cell(s.get(k)) for k in keys] for s in samples]
    if "context" in keys:  # a response's setting (with its prompt or without): none on a
        at = keys.index("context")  # prompt's row, whose record holds the default (issue 69)
        for row, s in zip(rows, samples):
            if s.get("kind") == "prompt":
                row[at] = None
    warn = _warned_cells(samples, keys, columns, rows)
    # One word per meaning (issue 69): "failed" is a request that failed, as the sample's own
    # is_failed and results.json's n_failed count it (a verdict kept with a fixed score has
    # one); a question whose answer had no letter to extract has an error too, but it is
    # "unanswered" (counted wrong), as results.json's ``unanswered`` lists it.
    failed = [r.is_failed and s.get("score") is None for r, s in zip(records, samples)]
    unanswered = [isinstance(r, MCQSample) and bool(r.error) and not r.is_failed
                  for r in records]
    if any(failed) and "failed" not in keys:
        _add_column(columns, rows, "failed", failed)
    if any(unanswered):
        _add_column(columns, rows, "unanswered", unanswered)
    return {"columns": columns, "rows": rows, "warn": warn,
            "starts": _preview_starts(columns, rows)}


def _preview_starts(columns: list[BrowserColumn], rows: list[BrowserRow]) -> list[dict[str, int]]:
    """Per row, where each text column's preview starts (absent: at 0): after the longest start
    the text shares with another row's, back to that line's beginning, when it is long (issue
    69: a 5-shot prompt's examples are the same for every question of a subject, so a preview
    from the first character showed them, never the question). In sorted order a text's
    longest shared start is with a neighbour."""
    starts: list[dict[str, int]] = [{} for _ in rows]
    for k, column in enumerate(columns):
        if column["type"] != "text":
            continue
        texts = sorted((row[k], i) for i, row in enumerate(rows)
                       if isinstance(row[k], str) and row[k])
        for j, (text, i) in enumerate(texts):
            shared = max([_shared_start(text, texts[n][0]) for n in (j - 1, j + 1)
                          if 0 <= n < len(texts)], default=0)
            if SHARED_MIN <= shared < len(text):  # the same text elsewhere: nothing to skip
                start = text.rfind("\n", 0, shared) + 1
                if start >= SHARED_MIN:
                    starts[i][str(k)] = start
    return starts


def _shared_start(a: str, b: str) -> int:
    """The length of the start ``a`` and ``b`` share (a binary search of slices: prompts are
    long, and a loop over characters would be slow on thousands of samples)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _add_column(columns: list[BrowserColumn], rows: list[BrowserRow], key: str,
                values: list[bool]) -> None:
    columns.append({"key": key, "title": key, "type": "bool", "filter": True})
    for row, value in zip(rows, values):
        row.append(value)


def _keys(samples: list[Stored]) -> list[str]:
    present = dict.fromkeys(k for s in samples for k, v in s.items()
                            if k not in HIDDEN and v is not None)  # an always-empty column is noise
    return [k for k in FIRST if k in present] + [k for k in present if k not in FIRST]


def _column(key: str, values: list[Any]) -> BrowserColumn:
    seen = [v for v in values if v is not None]
    kind = _kind(key, seen)
    distinct = {json.dumps(v, sort_keys=True) for v in seen}
    filterable = kind == "bool" or (kind in ("str", "num") and key not in ("id", "score")
                                    and 1 < len(distinct) <= FILTER_MAX)
    return {"key": key, "title": TITLES.get(key, key.replace("_", " ")), "type": kind,
            "filter": filterable}


def _kind(key: str, seen: list[Any]) -> ColumnKind:
    """bool, num, text (shown collapsed) or str."""
    if seen and all(isinstance(v, bool) for v in seen):
        return "bool"
    if seen and all(isinstance(v, int | float) and not isinstance(v, bool) for v in seen):
        return "num"
    if key in TEXT_KEYS or any(isinstance(v, list | dict) or isinstance(v, str) and len(v) > LONG
                               for v in seen):
        return "text"
    return "str"


def _cell(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN; the browser shows an empty cell
    if isinstance(value, list) and value and isinstance(value[0], dict):  # chat messages
        return "\n\n".join(f"[{m.get('role', '?')}]\n{m.get('content', '')}" for m in value)
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False)
    return value


def _warned_cells(samples: list[Stored], keys: list[str], columns: list[BrowserColumn],
                  rows: list[BrowserRow]) -> list[list[int]]:
    """Per row, its text columns to keep behind the warning: all of them on a row whose gold
    label is harmful or sensitive, and elsewhere each text that such a label judged."""
    texts = [k for k, c in enumerate(columns) if c["type"] == "text"]
    judged = {rows[i][k] for i, s in enumerate(samples) if _harmful(s)
              for k in texts if keys[k] in _judged_keys(s, keys) and rows[i][k]}
    return [texts if _harmful(s) else [k for k in texts if row[k] in judged]
            for s, row in zip(samples, rows)]


def _judged_keys(sample: Stored, keys: list[str]) -> set[str]:
    """The texts a harmful or sensitive sample's labels are about: a guard's record labels its
    kind's text (a response's label says nothing of its prompt, which has its own record);
    ``prompt_label`` / ``harmful_prompt`` label the prompt; otherwise every text of it."""
    about = {"prompt"} if any(sample.get(k) in WARN_LABELS for k in
                              ("prompt_label", "harmful_prompt")) else set()
    if sample.get("response_label") in WARN_LABELS:
        about.add("response")
    if sample.get("kind") in ("prompt", "response"):
        return about | ({sample["kind"]} if _labelled(sample) else set())
    return about | (set(keys) if _labelled(sample) else set())


def _labelled(sample: Stored) -> bool:
    """Whether the sample's own gold label (not a prompt's or response's) is harmful or
    sensitive."""
    if "raw_label" in sample:
        return sample["raw_label"] in WARN_LABELS
    return sample.get("label") in WARN_LABELS


def _harmful(sample: Stored) -> bool:
    for key in ("raw_label", "prompt_label", "response_label", "harmful_prompt", "label"):
        value = sample.get(key)
        if value in WARN_LABELS and not (key == "label" and "raw_label" in sample):
            return True
    return False


def script_json(data: Any) -> str:
    """JSON safe inside ``<script type="application/json">``: no ``</script>`` or ``<!--`` can
    appear, whatever the samples hold (``<`` is written as ``\\u003c``)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
