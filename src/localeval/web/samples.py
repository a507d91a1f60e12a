"""The sample browser's rows, filtered on the server: the report's browser data
(:func:`localeval.render.browser.browser_data`: its columns, which of them are filters, and
which texts stay behind the content warning) searched and filtered by the query string, a page
at a time. A filter is a column the browser data marks as one (language, subset, correct,
failed, ... as the run's samples have them); its values are the ones the run holds."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import LocalevalError
from ..records.samples import Sample
from ..render.browser import browser_data

PAGE_SIZE = 100
PAGE = re.compile(r"[0-9]{1,9}")
RESERVED = ("q", "page")  # query parameters that are not a column's filter


class BadQuery(LocalevalError):
    """A query parameter the sample browser cannot use."""


@dataclass
class Browsed:
    columns: list[dict[str, Any]]
    # (cells, the columns kept behind the warning, where each text column's preview starts)
    rows: list[tuple[list[Any], list[int], dict[str, int]]]
    matching: int
    total: int
    page: int
    pages: int
    choices: dict[str, list[str]]  # each filter column's values, as the query names them


def shown_value(value: Any) -> str:
    """A cell as a filter names it: booleans yes/no, numbers and text as written."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def browse(samples: Sequence[Sample], query: dict[str, str]) -> Browsed:
    data = browser_data(samples)
    columns = data["columns"]
    rows = list(zip(data["rows"], data["warn"], data["starts"]))
    filters = {c["key"]: k for k, c in enumerate(columns)
               if c["filter"] and c["key"] not in RESERVED}
    choices = {key: sorted({shown_value(cells[k]) for cells, _, _ in rows} - {""})
               for key, k in filters.items()}
    wanted = _wanted(query, choices)
    words = (query.get("q") or "").lower().split()
    kept = [(cells, warn, starts) for cells, warn, starts in rows
            if all(shown_value(cells[filters[key]]) == value for key, value in wanted.items())
            and all(any(w in shown_value(c).lower() for c in cells) for w in words)]
    pages = max(1, -(-len(kept) // PAGE_SIZE))
    page = _page(query.get("page"), pages)
    return Browsed(columns, kept[(page - 1) * PAGE_SIZE:page * PAGE_SIZE], len(kept),
                   len(rows), page, pages, choices)


def _wanted(query: dict[str, str], choices: dict[str, list[str]]) -> dict[str, str]:
    """The filters the query sets; a filter the run has not, or a value no sample has, is one
    line naming the ones it has."""
    unknown = [key for key in query if key not in choices and key not in RESERVED]
    if unknown:
        raise BadQuery(f"{unknown[0]}: the run's samples have no such filter (they have: "
                       f"{', '.join(choices) or 'none'}; q searches every column)")
    wanted = {key: query[key] for key in choices if query.get(key)}
    for key, value in wanted.items():
        if value not in choices[key]:
            raise BadQuery(f"{key}={value}: no sample has it (the run's values: "
                           f"{', '.join(choices[key][:20])})")
    return wanted


def _page(text: str | None, pages: int) -> int:
    if not text:
        return 1
    # ASCII digits only: "²".isdigit() is true and int("²") fails; "٣" would be page 3
    if not PAGE.fullmatch(text) or not 1 <= int(text) <= pages:
        raise BadQuery(f"page={text}: there are pages 1 to {pages}")
    return int(text)
