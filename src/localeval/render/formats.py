"""A :class:`~.table.DataTable` rendered five ways from its typed cells: the console (rich), Markdown,
LaTeX (:mod:`.latex`), CSV and HTML. Nothing is parsed back from a rendered string, so an exported
number is the printed number, and text from data stays text in every format: never rich markup,
Markdown, HTML, a LaTeX command or a spreadsheet formula.

Each format gets what works where it is pasted. Markdown: the cells as printed, Markdown's
punctuation escaped in text. LaTeX: see :mod:`.latex`. CSV: what a spreadsheet reads as data
(numbers stay numbers, an interval column as two columns of numbers, no sparklines, every row
labelled, no cell that runs as a formula)."""

from __future__ import annotations

import csv
import io
import re
from html import escape

from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text as RichText

from .latex import latex_escape, to_latex
from .table import Cell, Column, DataTable, Estimate, Interval, Number, Row, Spark, Text

__all__ = ["RENDER", "SUFFIX", "csv_cell", "fitted", "latex_escape", "print_table", "slug",
           "to_console", "to_csv", "to_html", "to_latex", "to_markdown"]


TEXT_ROOM = 20  # characters a text column keeps in a narrow terminal before it wraps


def _min_widths(table: DataTable) -> list[int]:
    """Each column's narrowest width in a terminal: a number column never narrower than its
    widest number (or a word of its header), a text column than its text or ``TEXT_ROOM``."""
    texts = table.texts()
    out = []
    for i, column in enumerate(table.columns):
        widest = max([len(row[i]) for row in texts] + [len(w) for w in column.name.split()],
                     default=0)
        out.append(widest if column.numeric else min(widest, TEXT_ROOM))
    return out


def to_console(table: DataTable, narrow: bool = False, caption: bool = True) -> RichTable:
    """A rich table whose every string is plain text (rich reads none of it as markup). In a
    narrow terminal text wraps and a number never does: a number column is never narrower
    than its widest number, so no number is ever cut to "41…"; ``narrow``: number columns
    exactly that wide (their headers wrap), the rest of the room to the text. ``caption``
    False: without its caption (:func:`print_table` prints it under the table)."""
    out = RichTable(title=RichText(table.title), caption=RichText(table.caption) if
                    table.caption and caption else None)
    for column, width in zip(table.columns, _min_widths(table), strict=True):
        out.add_column(RichText(column.name), justify="right" if column.numeric else "left",
                       overflow="fold", min_width=width,
                       width=width if narrow and column.numeric else None)
    for row, cells in zip(table.rows, table.texts(), strict=True):
        out.add_row(*map(RichText, cells), end_section=row.end_section)
    return out


def fitted(table: DataTable, console: Console) -> list[DataTable]:
    """``table`` as it fits ``console``'s width: itself, or its number columns in blocks that
    fit, each block with the label columns again (stacked: a number is never cut)."""
    widths = _min_widths(table)

    def fits(block: list[int]) -> bool:  # each column: its width, 2 of padding, a border
        return 1 + sum(widths[i] + 3 for i in keep + block) <= console.width

    keep = list(range(_labels(table)))
    blocks: list[list[int]] = [[]]
    for i in range(len(keep), len(table.columns)):
        if blocks[-1] and not fits(blocks[-1] + [i]):
            blocks.append([])
        blocks[-1].append(i)
    if len(blocks) == 1:
        return [table]
    return [_columns_of(table, keep + block, f" ({k}/{len(blocks)})", k == len(blocks))
            for k, block in enumerate(blocks, start=1)]


def _columns_of(table: DataTable, keep: list[int], suffix: str,
                caption: bool = True) -> DataTable:
    return DataTable(table.title + suffix, tuple(table.columns[i] for i in keep),
                     tuple(Row(tuple(r.cells[i] for i in keep), r.level, r.end_section)
                           for r in table.rows), table.caption if caption else "")


def print_table(console: Console, table: DataTable) -> None:
    """``table`` on ``console``, stacked in blocks where the terminal is too narrow for it; its
    caption (the footnotes) under it as a paragraph at the console's width, from the left
    edge (rich's own caption is squeezed to the table's width and centred)."""
    blocks = fitted(table, console)
    for block in blocks:
        console.print(to_console(block, narrow=len(blocks) > 1, caption=False))
    if table.caption:
        console.print(RichText(table.caption))


# ---------------------------------------------------------------------------------- Markdown
# CommonMark lets any ASCII punctuation be escaped with a backslash; these are the characters
# that can start markup inside a table cell (emphasis, code, links, HTML, strikethrough, the
# cell border). A newline would end the table row: it becomes <br>.
MARKDOWN_ACTIVE = re.compile(r"([\\`*_\[\]<>|~])")
ENTITY = re.compile(r"&(?=#?\w+;)")


def markdown_text(text: str) -> str:
    text = ENTITY.sub(r"\\&", MARKDOWN_ACTIVE.sub(r"\\\1", text))
    return re.sub(r"\r\n|\r|\n", "<br>", text)


def _markdown_cell(cell: Cell) -> str:
    return cell.shown() if isinstance(cell, Number | Interval | Estimate | Spark) else \
        markdown_text(cell.shown())


def to_markdown(table: DataTable) -> str:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(cells) + " |"

    rule = "|" + "|".join("---:" if c.numeric else "---" for c in table.columns) + "|"
    rows = [line([("  " * row.level if i == 0 else "") + _markdown_cell(c)
                  for i, c in enumerate(row.cells)]) for row in table.rows]
    out = [f"**{markdown_text(table.title)}**", "",
           line([markdown_text(c.written) for c in table.columns]), rule, *rows]
    if table.caption:
        out += ["", markdown_text(table.caption)]
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------------ CSV
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # OWASP's list for CSV injection


def csv_cell(cell: Cell) -> str:
    """A cell as a spreadsheet should read it: a number stays a number ("+1.5" as 1.5, "-1.2"
    as it is), no value is empty, and text that a spreadsheet would run as a formula ("=...",
    "+...", "-...", "@...") starts with a quote (OWASP's advice)."""
    if isinstance(cell, Number) and (cell.value is None or cell.is_datum()):
        return "" if cell.value is None else cell.number().removeprefix("+")
    text = cell.shown().strip()
    if text == "-":  # no value
        return ""
    return "'" + text if text.startswith(FORMULA_START) else text


def _is_interval_column(table: DataTable, i: int) -> bool:
    cells = [r.cells[i] for r in table.rows]
    return any(isinstance(c, Interval) and c.bounds() for c in cells) and \
        all(isinstance(c, Interval) or c.shown().strip() in ("", "-") for c in cells)


def _labels(table: DataTable) -> int:
    """How many columns, from the left, name a row (those before the first number)."""
    return next((i for i, c in enumerate(table.columns) if c.numeric), len(table.columns))


def sub_rows_as_columns(table: DataTable) -> DataTable:
    """The table with each sub-row folded into the row it belongs to: a sub-row labelled L (the
    "95% CI ±" row under a model) becomes, for each value column C, a column "C L" — one
    column per value, one row per thing, as a spreadsheet wants."""
    labels = list(dict.fromkeys(r.cells[0].shown() for r in table.rows if r.level))
    if not labels:
        return table
    values = [i for i, c in enumerate(table.columns) if c.numeric]
    columns = (*table.columns, *(Column(f"{table.columns[i].header} {label}", True)
                                 for label in labels for i in values))
    rows: list[Row] = []
    for row in table.rows:
        if not row.level:
            rows.append(Row((*row.cells, *(Number(None) for _ in labels for _ in values)),
                            end_section=row.end_section))
            continue
        if not rows:
            continue  # a sub-row with no row above it has nothing to belong to
        at = len(table.columns) + labels.index(row.cells[0].shown()) * len(values)
        cells = list(rows[-1].cells)
        cells[at:at + len(values)] = [row.cells[i] for i in values]
        rows[-1] = Row(tuple(cells), end_section=rows[-1].end_section)
    return DataTable(table.title, columns, tuple(rows), table.caption)


def _csv_rows(table: DataTable, keep: list[int], intervals: set[int]) -> list[list[str]]:
    """Rows a spreadsheet can sort and filter: each row says what it is. An empty label cell (a
    group's later rows) repeats the label above it."""
    labels = _labels(table)
    rows: list[list[str]] = []
    for row in table.rows:
        cells = []
        for i in keep:
            if i in intervals:
                cell = row.cells[i]
                bounds = cell.bounds() if isinstance(cell, Interval) else None
                cells += list(bounds) if bounds else ["", ""]
            else:
                cells.append(csv_cell(row.cells[i]))
        for i in range(min(labels, len(cells))):
            if not cells[i] and rows and any(cells):
                cells[i] = rows[-1][i]
        rows.append(cells)
    return rows


def to_csv(table: DataTable) -> str:
    table = sub_rows_as_columns(table)
    keep = table.data_columns()
    intervals = {i for i in keep if _is_interval_column(table, i)}
    header = [h for i in keep for h in ((f"{table.columns[i].written} low",
                                         f"{table.columns[i].written} high") if i in intervals
                                        else (table.columns[i].written,))]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([csv_cell(Text(h)) for h in header])
    writer.writerows(_csv_rows(table, keep, intervals))
    return buffer.getvalue()


# ----------------------------------------------------------------------------------- HTML
def to_html(table: DataTable, title: bool = True) -> str:
    """The table as HTML, its title as a heading (``title``) and its caption after it; every
    header in full (a terminal's abbreviation, "Taiwan Spe.", is for terminals only)."""
    def cells(tag: str, texts: list[str]) -> str:
        return "".join(f'<{tag} class="{"num" if c.numeric else ""}">{escape(t)}</{tag}>'
                       for c, t in zip(table.columns, texts, strict=True))

    rows = "".join(f"<tr>{cells('td', texts)}</tr>" for texts in table.texts())
    caption = f'<p class="caption">{escape(table.caption)}</p>' if table.caption else ""
    heading = f"<h3>{escape(table.title)}</h3>" if title else ""
    return (f'{heading}<div class="scroll"><table class="data"><thead><tr>'
            f"{cells('th', [c.written for c in table.columns])}</tr></thead><tbody>"
            f"{rows}</tbody></table></div>{caption}")


RENDER = {"md": to_markdown, "latex": to_latex, "csv": to_csv}
SUFFIX = {"md": ".md", "latex": ".tex", "csv": ".csv"}


def slug(title: str, limit: int = 60) -> str:
    """A file name for a table: its title's words in lower case, joined by "-", cut at a word
    boundary within ``limit`` characters (never mid-word, never ending in "-")."""
    words = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
    if len(words) > limit:
        words = words[:limit + 1].rsplit("-", 1)[0] if "-" in words[:limit + 1] \
            else words[:limit]
    return words.strip("-") or "table"

