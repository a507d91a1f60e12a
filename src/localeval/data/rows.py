"""Read tabular files (CSV, JSONL, Parquet) row by row, with row numbers a person can find.

Row numbers are 1-based lines for CSV (the header is line 1) and JSONL, and 1-based data rows
for Parquet. Every problem is a :class:`DataError` naming file, row and field.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import DataError

TABLE_SUFFIXES = (".csv", ".jsonl", ".json", ".parquet")


# A line or cell longer than this stops the load with one line (file, row, the limit) instead
# of an unbounded allocation; a real prompt is far shorter. LOCALEVAL_MAX_FIELD_BYTES raises it.
MAX_FIELD_BYTES = int(os.environ.get("LOCALEVAL_MAX_FIELD_BYTES", 8 * 2**20))


def _too_long(path: Path, row: int, field: str | None = None) -> DataError:
    return DataError(path, row, field, f"longer than {MAX_FIELD_BYTES:,} bytes, the limit on "
                     "one line or cell (set LOCALEVAL_MAX_FIELD_BYTES to raise it)")


def _not_utf8(path: Path, row: int) -> DataError:
    return DataError(path, row, None, "not valid UTF-8; re-save the file as UTF-8")


def _jsonl_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) for each line, read one at a time with a bound on its length."""
    with path.open("rb") as f:
        number = 0
        while True:
            raw = f.readline(MAX_FIELD_BYTES + 1)
            if not raw:
                return
            number += 1
            if len(raw) > MAX_FIELD_BYTES and not raw.endswith(b"\n"):
                raise _too_long(path, number)
            try:
                text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError:
                raise _not_utf8(path, number) from None
            yield number, text


def _first_bad_line(path: Path) -> int:
    with path.open("rb") as f:
        for number, raw in enumerate(iter(lambda: f.readline(MAX_FIELD_BYTES), b""), start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                return number
    return 0


def _csv_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    csv.field_size_limit(MAX_FIELD_BYTES)
    with path.open(encoding="utf-8-sig", newline="") as f:
        reader = csv.DictReader(f, strict=True)  # strict: an unclosed quote is an error
        try:
            if reader.fieldnames is None:
                raise DataError(path, 1, None, "the file is empty (no header row)")
            _check_delimiter(path, reader.fieldnames)
            for row in reader:
                if None in row:  # more cells than header columns
                    raise DataError(path, reader.line_num, None,
                                    f"{len(reader.fieldnames) + len(row[None])} cells but the "
                                    f"header has {len(reader.fieldnames)} columns")
                yield reader.line_num, row
        except UnicodeDecodeError:  # decoded in chunks: find the line itself
            raise _not_utf8(path, _first_bad_line(path)) from None
        except csv.Error as e:
            if "field larger than field limit" in str(e):
                raise _too_long(path, reader.line_num + 1) from None
            if "unexpected end of data" in str(e):
                raise DataError(path, None, None, "not valid CSV: a quoted field is opened "
                                "and never closed (a stray \" in a cell; double it as \"\" "
                                "inside quotes)") from None
            raise DataError(path, reader.line_num, None, f"not valid CSV ({e})") from None


def _json_line_error(path: Path, number: int, error: json.JSONDecodeError) -> str:
    """Why a line is not a JSON object: a file that is one JSON document spread over lines (a
    pretty-printed object or array) is valid JSON, just not JSON Lines."""
    if number == 1 and path.stat().st_size <= MAX_FIELD_BYTES:
        try:
            json.loads(path.read_text(encoding="utf-8-sig"))
        except (ValueError, UnicodeDecodeError):
            pass
        else:
            return ("one JSON document over several lines, not JSON Lines (one object per "
                    "line, each a row)")
    return f"not valid JSON ({error.msg})"


def _check_delimiter(path: Path, header: list[str]) -> None:
    """A header read as one column that holds a ; or a tab: the file is separated by that, and
    every column would be reported missing."""
    if len(header) != 1:
        return
    for sign, name in ((";", "semicolons"), ("\t", "tabs")):
        if sign in header[0]:
            raise DataError(path, 1, None, f"the header is one column, {header[0][:60]!r}: the "
                            f"file is separated by {name}; save it as comma-separated CSV")


def read_rows(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(row_number, row)`` for every data row of a CSV, JSONL or Parquet file, reading
    one row at a time (memory bounded by the longest row, itself bounded)."""
    path = Path(path)
    if not path.is_file():  # one line naming the path, not the OSError of open() below
        raise DataError(path, None, None, "a folder, not a file" if path.is_dir() else
                        "no such file")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        yield from _csv_rows(path)
    elif suffix in (".jsonl", ".json"):
        for number, line in _jsonl_lines(path):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(path, number, None, _json_line_error(path, number, e)) from None
            if not isinstance(row, dict):
                raise DataError(path, number, None, "each line must be a JSON object")
            yield number, row
    elif suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            batches = pq.ParquetFile(path).iter_batches(batch_size=1024)
        except Exception as e:  # pyarrow raises several types for a damaged file
            raise DataError(path, None, None, f"cannot read as Parquet ({e})") from None
        number = 0
        for batch in batches:  # one batch of rows in memory at a time
            for row in batch.to_pylist():
                number += 1
                yield number, row
    else:
        raise DataError(path, None, None,
                        f"unsupported file type {suffix!r}; use one of {', '.join(TABLE_SUFFIXES)}")
