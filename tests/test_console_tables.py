"""How a table reads on the console: its caption (the footnotes: what the numbers are, the
interval, what was left out) is a paragraph under the table at the console's width, not
squeezed to the table's width and centred (issue 52 item 8)."""

from __future__ import annotations

from rich.console import Console

from localeval.render.formats import print_table
from localeval.render.table import DataTable, TableBuilder, Text, columns

CAPTION = ("Average = mean of the discipline columns. Micro 29.17 [14.9, 49.2] over 24 "
           "questions (95% CI = Wilson score interval); macro 29.17 over 2 subjects.")


def _narrow_table() -> DataTable:
    table = TableBuilder("cmmlu · accuracy %", columns("Model", "acc", text=1), CAPTION)
    table.add(Text("model"), Text("29.17"))
    return table.build()


def test_a_caption_is_a_paragraph_at_the_consoles_width():
    console = Console(width=160, record=True, color_system=None)
    print_table(console, _narrow_table())
    lines = console.export_text().splitlines()
    caption = [line for line in lines if "Micro 29.17" in line]
    assert caption == [CAPTION]  # one line, from the left edge, nothing cut or centred


def test_a_caption_longer_than_the_console_wraps_at_its_width():
    console = Console(width=60, record=True, color_system=None)
    print_table(console, _narrow_table())
    text = console.export_text()
    assert " ".join(text.split()).endswith(" ".join(CAPTION.split()))
    assert all(len(line) <= 60 for line in text.splitlines())
