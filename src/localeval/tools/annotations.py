"""``localeval agreement`` and ``localeval aggregate``: annotators' labels in one file (CSV,
JSONL or Parquet; one column per annotator, empty cells allowed), their agreement, and one
label per item.

Aggregation (SEA-SafeguardBench §2.4): the majority label when one label has more than
``min_share`` of the item's labels (default 0.5: a strict majority, so 3 of 4 annotators, or
2 of 3), else ``no_majority`` (default ``sensitive``: "samples without a clear majority receive
this label"). Every annotator's label is kept beside the aggregate.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..data.rows import read_rows
from ..errors import DataError, LocalevalError
from ..metrics.agreement import agreement
from ..store.files import write_text_whole, writing_whole


@dataclass
class Annotations:
    path: Path
    columns: list[str]
    labels: list[str]  # the declared label set, or the ones found, sorted
    rows: list[dict[str, Any]]  # the file's rows, as read
    table: list[list[str | None]]  # one row per item, one label (or None) per annotator


def _cell(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def read_annotations(path: str | Path, columns: Sequence[str],
                     labels: Sequence[str] | None = None) -> Annotations:
    """The file's rows and label table; one clear error naming file, row and column."""
    path = Path(path)
    if len(columns) < 2:
        raise LocalevalError(f"agreement needs two or more annotator columns; got "
                             f"{', '.join(columns) or 'none'} (--columns a,b[,c...])")
    rows = _rows_with_columns(path, columns)
    table = [[_cell(row.get(c)) for c in columns] for _, row in rows]
    if labels:
        _check_labels(path, [n for n, _ in rows], columns, table, labels)
    found = sorted({v for values in table for v in values if v is not None})
    return Annotations(path, list(columns), list(labels or found), [r for _, r in rows], table)


def _rows_with_columns(path: Path, columns: Sequence[str]
                       ) -> list[tuple[int, dict[str, Any]]]:
    rows = list(read_rows(path))
    if not rows:
        raise DataError(path, None, None, "the file has no rows")
    header = list(rows[0][1])
    for column in columns:
        if column not in header:
            raise DataError(path, None, column, f"no such column; the file has: "
                                                 f"{', '.join(header)}")
    return rows


def _check_labels(path: Path, numbers: list[int], columns: Sequence[str],
                  table: list[list[str | None]], labels: Sequence[str]) -> None:
    for number, values in zip(numbers, table, strict=True):
        for column, value in zip(columns, values, strict=True):
            if value is not None and value not in labels:
                raise DataError(path, number, column, f"label {value!r} is not one of "
                                                      f"{', '.join(labels)} (--labels)")


def measure(path: str | Path, columns: Sequence[str], labels: Sequence[str] | None = None,
            ordinal: bool = False) -> dict[str, Any]:
    """Agreement of the annotators in ``columns`` (see :mod:`localeval.metrics.agreement`)."""
    if ordinal and not labels:
        raise LocalevalError("--ordinal needs the labels in their order, low to high: --labels")
    ann = read_annotations(path, columns, labels)
    return {"data": str(ann.path), "columns": ann.columns,
            **agreement(ann.table, ann.labels, ordinal)}


def majority(values: Sequence[str | None], min_share: float = 0.5,
             no_majority: str = "sensitive") -> str | None:
    """The label given by more than ``min_share`` of the annotators who labelled the item;
    ``no_majority`` when none is; None when nobody labelled it."""
    given = [v for v in values if v is not None]
    if not given:
        return None
    label, count = Counter(given).most_common(1)[0]
    return label if count / len(given) > min_share else no_majority


def aggregate(path: str | Path, columns: Sequence[str], output: str | Path,
              labels: Sequence[str] | None = None, min_share: float = 0.5,
              no_majority: str = "sensitive", label_column: str = "label") -> dict[str, Any]:
    """Write ``output`` (.csv or .jsonl): every input row and column, plus ``label_column``
    (the aggregate), ``n_labels`` and ``majority_share``. Returns the label counts."""
    if not 0 <= min_share < 1:
        raise LocalevalError(f"--min-share must be in [0, 1), not {min_share}")
    ann = read_annotations(path, columns, labels)
    out_rows = []
    for row, values in zip(ann.rows, ann.table, strict=True):
        given = [v for v in values if v is not None]
        top = Counter(given).most_common(1)[0][1] if given else 0
        out_rows.append({**row, label_column: majority(values, min_share, no_majority),
                         "n_labels": len(given),
                         "majority_share": round(top / len(given), 6) if given else None})
    _write_rows(Path(output), out_rows)
    return {"data": str(ann.path), "output": str(output), "n_items": len(out_rows),
            "labels": dict(Counter(str(r[label_column]) for r in out_rows)),
            "rule": f"more than {min_share:g} of the labels, else {no_majority!r}"}


def _write_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".jsonl":
        write_text_whole(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    elif path.suffix == ".csv":
        with writing_whole(path) as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else [])
            writer.writeheader()
            writer.writerows(rows)
    else:
        raise LocalevalError(f"--output must end in .csv or .jsonl, not {path.name!r}")
