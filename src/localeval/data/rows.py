"""Read tabular files (CSV, JSONL, Parquet) row by row, with row numbers a person can find.

Row numbers are 1-based lines for CSV (the header is line 1) and JSONL, and 1-based data rows
for Parquet. Every problem is a :class:`DataError` naming file, row and field.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import DataError

TABLE_SUFFIXES = (".csv", ".jsonl", ".json", ".parquet")


def _decode(path: Path) -> str:
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise DataError(path, line, None, f"not valid UTF-8 (byte {e.start}); re-save the file "
                        "as UTF-8") from None


def read_rows(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(row_number, row)`` for every data row of a CSV, JSONL or Parquet file."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".csv":
        reader = csv.DictReader(io.StringIO(_decode(path), newline=""))
        if reader.fieldnames is None:
            raise DataError(path, 1, None, "the file is empty (no header row)")
        for row in reader:
            if None in row:  # more cells than header columns
                raise DataError(path, reader.line_num, None,
                                f"{len(reader.fieldnames) + len(row[None])} cells but the header "
                                f"has {len(reader.fieldnames)} columns")
            yield reader.line_num, row
    elif suffix in (".jsonl", ".json"):
        for number, line in enumerate(_decode(path).splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(path, number, None, f"not valid JSON ({e.msg})") from None
            if not isinstance(row, dict):
                raise DataError(path, number, None, "each line must be a JSON object")
            yield number, row
    elif suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except Exception as e:  # pyarrow raises several types for a damaged file
            raise DataError(path, None, None, f"cannot read as Parquet ({e})") from None
        for number, row in enumerate(table.to_pylist(), start=1):
            yield number, row
    else:
        raise DataError(path, None, None,
                        f"unsupported file type {suffix!r}; use one of {', '.join(TABLE_SUFFIXES)}")
