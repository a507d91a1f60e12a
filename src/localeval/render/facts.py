"""Values of a run's provenance (config.json, results.json's ``timing`` and ``history``) as HTML
for people: a mapping as a small definition list, a list of records as a small table, a list of
plain values as one line; JSON only for what is nested deeper than that."""

from __future__ import annotations

import json
import shlex
from html import escape
from typing import Any


def fact_html(value: Any, key: str = "", nested: bool = False) -> str:
    """``value`` (named ``key``) readable; ``nested``: already inside a list or table."""
    if value is None or isinstance(value, dict | list) and not value:
        return "-"
    if isinstance(value, dict) and not nested:
        return _definitions(value)
    if isinstance(value, list):
        return _list_html(value, key, nested)
    if isinstance(value, dict):
        return _json(value)
    return escape(str(value))


def _list_html(values: list[Any], key: str, nested: bool) -> str:
    if all(isinstance(v, dict) for v in values) and not nested:
        return records_table(values, "records")
    if not all(v is None or isinstance(v, str | int | float) for v in values):
        return _json(values)
    if key == "command":  # an argv: as a shell would take it back
        return f"<code>{escape(shlex.join(str(v) for v in values))}</code>"
    return escape(", ".join("-" if v is None else str(v) for v in values))


def _json(value: Any) -> str:
    return f"<code>{escape(json.dumps(value, ensure_ascii=False, sort_keys=True))}</code>"


def _definitions(mapping: dict[str, Any]) -> str:
    rows = "".join(f"<dt>{escape(str(k).replace('_', ' '))}</dt><dd>{fact_html(v, k, True)}</dd>"
                   for k, v in mapping.items())
    return f'<dl class="facts nested">{rows}</dl>'


def records_table(rows: list[dict[str, Any]], kind: str) -> str:
    """Records as a table (a column per key, in order of appearance) that scrolls in its own
    box when wider than the page; ``kind`` is its CSS class."""
    keys = list(dict.fromkeys(k for r in rows for k in r))
    head = "".join(f"<th>{escape(k.replace('_', ' '))}</th>" for k in keys)
    body = "".join("<tr>" + "".join(f"<td>{fact_html(r.get(k), k, True)}</td>" for k in keys)
                   + "</tr>" for r in rows)
    return (f'<div class="scroll"><table class="data {kind}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")
