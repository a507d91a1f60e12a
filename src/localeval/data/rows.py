"""Read tabular files (CSV, JSONL, Parquet) row by row, with row numbers a person can find.

Row numbers are 1-based lines for CSV (the header is line 1) and JSONL, and 1-based data rows
for Parquet. Every problem is a :class:`DataError` naming file, row and field.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import DataError, env_number

TABLE_SUFFIXES = (".csv", ".jsonl", ".json", ".parquet")
LONE_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")  # a candidate: checked after


# A line or cell longer than this stops the load with one line (file, row, the limit) instead
# of an unbounded allocation; a real prompt is far shorter. LOCALEVAL_MAX_FIELD_BYTES raises it
# (read when a file is read, checked: a bad value is one line, not a traceback at import).
DEFAULT_MAX_FIELD_BYTES = 8 * 2**20
MAX_FIELD_BYTES: int | None = None  # None: $LOCALEVAL_MAX_FIELD_BYTES, else the default


def field_limit() -> int:
    if MAX_FIELD_BYTES is not None:
        return MAX_FIELD_BYTES
    return int(env_number("LOCALEVAL_MAX_FIELD_BYTES", DEFAULT_MAX_FIELD_BYTES, low=1,
                          high=2**31 - 1, integer=True))  # csv's field limit is a C long


def _too_long(path: Path, row: int, field: str | None = None) -> DataError:
    return DataError(path, row, field, f"longer than {field_limit():,} bytes, the limit on "
                     "one line or cell (set LOCALEVAL_MAX_FIELD_BYTES to raise it)")


def _not_utf8(path: Path, row: int) -> DataError:
    return DataError(path, row, None, "not valid UTF-8; re-save the file as UTF-8")


def _jsonl_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) for each line, read one at a time with a bound on its length."""
    limit = field_limit()
    with path.open("rb") as f:
        number = 0
        while True:
            raw = f.readline(limit + 1)
            if not raw:
                return
            number += 1
            if len(raw) > limit and not raw.endswith(b"\n"):
                raise _too_long(path, number)
            try:
                text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError:
                raise _not_utf8(path, number) from None
            yield number, text


def _first_bad_line(path: Path) -> int:
    with path.open("rb") as f:
        for number, raw in enumerate(iter(lambda: f.readline(field_limit()), b""), start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                return number
    return 0


def _csv_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    csv.field_size_limit(field_limit())
    with path.open(encoding="utf-8-sig", newline="") as f:
        reader = csv.DictReader(f, strict=True)  # strict: an unclosed quote is an error
        try:
            if reader.fieldnames is None:
                raise DataError(path, 1, None, "the file is empty (no header row)")
            _check_delimiter(path, reader.fieldnames)
            _check_header(path, reader.fieldnames)
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


def _check_header(path: Path, names: Sequence[str]) -> None:
    """A column named twice (``A,A``): DictReader would keep the last cell silently."""
    seen: set[str] = set()
    for name in names:
        key = name.strip().lower()
        if key in seen:
            raise DataError(path, 1, name, f"column {name!r} appears twice in the header; "
                            "each column needs its own name")
        seen.add(key)


def _check_field_names(path: Path, number: int, names: list[str]) -> None:
    """A JSON row's fields as a CSV header's: ``answer`` and ``Answer`` are one field named
    twice (the loaders match names without case), and which one wins would be a guess."""
    seen: dict[str, str] = {}
    for name in names:
        key = name.strip().lower()
        if key in seen:
            raise DataError(path, number, name, f"field {name!r} and field {seen[key]!r} are "
                            "one field named twice (names are matched without case)")
        seen[key] = name


class _RepeatedName(ValueError):
    """A JSON object that names a field twice: Python's json would keep the last value."""


def _unique_names(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook``: an object's fields, refused when one is named twice."""
    seen: set[str] = set()
    for name, _ in pairs:
        if name in seen:
            raise _RepeatedName(name)
        seen.add(name)
    return dict(pairs)


def _json_row(path: Path, number: int, line: str) -> Any:
    """One JSON line parsed, every way it can fail one DataError (Python's json also refuses
    integers over 4,300 digits and nesting past the recursion limit, with other exceptions).
    A field named twice (``"answer":"A","answer":"B"``, or ``answer`` and ``Answer``, as a CSV
    header is refused) is refused: json would keep the last value without a word."""
    try:
        row = json.loads(line, object_pairs_hook=_unique_names)
    except _RepeatedName as e:
        raise DataError(path, number, str(e), f"field {str(e)!r} appears twice in the row; "
                        "each field needs its own name") from None
    except json.JSONDecodeError as e:
        raise DataError(path, number, None, _json_line_error(path, number, e)) from None
    except ValueError as e:  # "Exceeds the limit (4300 digits) for integer string conversion"
        raise DataError(path, number, None, f"not usable JSON ({str(e).split(';')[0]})") from None
    except RecursionError:
        raise DataError(path, number, None, "not usable JSON (nested too deeply)") from None
    if isinstance(row, dict):
        _check_field_names(path, number, list(row))
    if "\\u" in line and LONE_SURROGATE.search(line):  # "\ud800": JSON allows it, UTF-8 does not
        try:
            json.dumps(row, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise DataError(path, number, None, "holds a lone surrogate escape (\\ud800–"
                            "\\udfff without its pair): not a character") from None
    return row


def _parquet_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    import pyarrow.parquet as pq

    number = 0
    try:  # pyarrow raises several types for a damaged file, at open or at any page
        for batch in pq.ParquetFile(path).iter_batches(batch_size=1024):
            for row in batch.to_pylist():  # one batch of rows in memory at a time
                number += 1
                yield number, row
    except DataError:
        raise
    except Exception as e:
        first = " ".join(str(e).split())[:200] or type(e).__name__
        raise DataError(path, number + 1 if number else None, None,
                        f"cannot read as Parquet ({first})") from None


_READERS: list[set[Path]] = []  # the files_read() collectors open now


@contextmanager
def files_read() -> Iterator[set[Path]]:
    """The set of every file :func:`read_rows` reads inside the ``with`` block: what a run's
    data was loaded from, to fingerprint it."""
    seen: set[Path] = set()
    _READERS.append(seen)
    try:
        yield seen
    finally:
        _READERS.remove(seen)


def fingerprint(paths: Iterable[Path]) -> dict[str, dict[str, Any]]:
    """Each file's size and sha256, by its path as given: the data a run used, so a rerun on
    edited data is told from a rerun on the same data."""
    out = {}
    for path in sorted(paths, key=str):
        digest = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(2**20), b""):
                digest.update(block)
        out[str(path)] = {"bytes": path.stat().st_size, "sha256": digest.hexdigest()}
    return out


def _json_line_error(path: Path, number: int, error: json.JSONDecodeError) -> str:
    """Why a line is not a JSON object: a file that is one JSON document spread over lines (a
    pretty-printed object or array) is valid JSON, just not JSON Lines."""
    if number == 1 and path.stat().st_size <= field_limit():
        try:
            json.loads(path.read_text(encoding="utf-8-sig"))
        except (ValueError, UnicodeDecodeError):
            pass
        else:
            return ("one JSON document over several lines, not JSON Lines (one object per "
                    "line, each a row)")
    return f"not valid JSON ({error.msg})"


def _check_delimiter(path: Path, header: Sequence[str]) -> None:
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
    for seen in _READERS:
        seen.add(path)
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
            row = _json_row(path, number, line)
            if not isinstance(row, dict):
                raise DataError(path, number, None, "each line must be a JSON object")
            yield number, row
    elif suffix == ".parquet":
        yield from _parquet_rows(path)
    else:
        raise DataError(path, None, None,
                        f"unsupported file type {suffix!r}; use one of {', '.join(TABLE_SUFFIXES)}")
