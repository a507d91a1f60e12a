"""``localeval export``: every table of a run, as the console shows it (the papers' layouts:
TMLU Table 3, SEA-SafeguardBench Table 2, …), written as Markdown, LaTeX (booktabs) or CSV to
paste into a paper. The console tables are the one source: this module only re-renders their
cells, so an exported number is the printed number.

Each format gets what works where it is pasted. Markdown: the cells as they are. LaTeX: what
pdflatex compiles with booktabs alone (symbols as LaTeX commands, sparklines left out, text in
scripts pdflatex has no font for as code points). CSV: what a spreadsheet reads as data
(numbers stay numbers, no sparklines, every row labelled, no cell that runs as a formula)."""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from dataclasses import dataclass

from rich.table import Table

from .cells import SPARK_BARS


@dataclass(frozen=True)
class PlainTable:
    title: str
    header: list[str]
    rows: list[list[str]]
    right: list[bool]  # right-aligned columns (numbers)
    caption: str = ""

    def to_rich(self) -> Table:
        table = Table(title=self.title, caption=self.caption or None)
        for name, right in zip(self.header, self.right, strict=True):
            table.add_column(name, justify="right" if right else "left")
        for row in self.rows:
            table.add_row(*row)
        return table


def run_tables(results: dict) -> list[PlainTable]:
    """The tables of a run, as its task kind's view has them, in report order."""
    from ..tasks.registry import view_for

    return [plain(t) for t in view_for(results).tables(results)]


def _text(value) -> str:
    text = getattr(value, "plain", None)
    text = str(value) if text is None else text
    return re.sub(r"\[/?[a-z ]+\]", "", text)  # rich markup such as [red]…[/red]


def plain(table: Table) -> PlainTable:
    columns = table.columns
    cells = [[_text(c) for c in column.cells] for column in columns]
    rows = [list(row) for row in zip(*cells, strict=True)] if cells else []
    return PlainTable(_text(table.title or ""),
                      [_text(c.header).replace("\n", " ") for c in columns], rows,
                      [c.justify == "right" for c in columns], _text(table.caption or ""))


def to_markdown(table: PlainTable) -> str:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    rule = "|" + "|".join("---:" if r else "---" for r in table.right) + "|"
    out = [f"**{table.title}**", "", line(table.header), rule,
           *(line(r) for r in table.rows)]
    if table.caption:
        out += ["", table.caption]
    return "\n".join(out) + "\n"


def _sparkline_column(cells: list[str]) -> bool:
    """A column of sparklines (histograms drawn with block characters)."""
    drawn = [c for c in cells if c.strip()]
    return bool(drawn) and all(set(c) <= set(SPARK_BARS) for c in drawn)


def without_sparklines(table: PlainTable) -> PlainTable:
    """The table less its sparkline columns: LaTeX cannot typeset the block characters, and a
    spreadsheet cell of them is not data."""
    keep = [i for i in range(len(table.header))
            if not _sparkline_column([row[i] for row in table.rows])]
    return PlainTable(table.title, [table.header[i] for i in keep],
                      [[row[i] for i in keep] for row in table.rows],
                      [table.right[i] for i in keep], table.caption)


NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")  # a cell that is a number


# ---------------------------------------------------------------------------------- LaTeX
# What pdflatex compiles with no package beyond booktabs: ASCII, LaTeX's special characters
# escaped, and the symbols our tables use written as LaTeX commands.
LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                 "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                 "^": r"\textasciicircum{}", "<": r"$<$", ">": r"$>$", "|": r"$|$"}
LATEX_SYMBOLS = {"±": r"$\pm$", "·": r"$\cdot$", "→": r"$\rightarrow$", "←": r"$\leftarrow$",
                 "−": r"$-$", "×": r"$\times$", "≤": r"$\leq$", "≥": r"$\geq$",
                 "≈": r"$\approx$", "≠": r"$\neq$", "Δ": r"$\Delta$", "µ": r"$\mu$",
                 "°": r"$^\circ$", "—": "---", "–": "--", "…": r"\ldots{}", "§": r"\S{}",
                 "“": "``", "”": "''", "‘": "`", "’": "'", "•": r"$\bullet$",
                 "ß": r"\ss{}", "æ": r"\ae{}", "Æ": r"\AE{}", "œ": r"\oe{}", "Œ": r"\OE{}",
                 "ø": r"\o{}", "Ø": r"\O{}", "ł": r"\l{}", "Ł": r"\L{}", "ı": r"\i{}",
                 "đ": "d", "Đ": "D", "\u00a0": "~"}


def _latex_char(ch: str) -> str | None:
    """One character as pdflatex-safe text; None for a character of a script pdflatex has no
    font for (Chinese, Thai, Tamil, ...)."""
    if ch in LATEX_SPECIAL:
        return LATEX_SPECIAL[ch]
    if ch in LATEX_SYMBOLS:
        return LATEX_SYMBOLS[ch]
    if ch.isascii():
        return ch
    # Accented Latin (Vietnamese "Tiếng Việt", full-width forms) folded to its ASCII letters.
    folded = unicodedata.normalize("NFKD", ch).encode("ascii", "ignore").decode()
    return "".join(LATEX_SPECIAL.get(c, c) for c in folded) if folded.strip() else None


def latex_escape(text: str, originals: dict[str, str] | None = None) -> str:
    """``text`` as pdflatex compiles it with no extra package. A run of characters of another
    script (a CJK subject name, a Thai label) is written as its code points, "[U+570B U+6587]"
    (it stays distinct from every other name), and ``originals`` collects each such run's
    text so the output can say what it stands for."""
    out: list[str] = []
    run: list[str] = []

    def close_run() -> None:
        if run:
            codes = "[" + " ".join(f"U+{ord(c):04X}" for c in run) + "]"
            if originals is not None:
                originals[codes] = "".join(run)
            out.append(codes)
            run.clear()

    for ch in re.sub(r"\s+", " ", text):  # a blank line would end the tabular's paragraph
        safe = _latex_char(ch)
        if safe is None and not unicodedata.category(ch).startswith(("M", "C")):
            run.append(ch)
        elif safe is not None:
            close_run()
            out.append(safe)
        # a lone combining mark or control character is dropped (Thai vowels join the run)
        elif run:
            run.append(ch)
    close_run()
    return "".join(out)


def _latex_row(cells: list[str], originals: dict[str, str]) -> str:
    """One tabular line. Leading spaces that indent a sub-row become a quad. A first cell that
    opens with "[" gets an empty group before it: right after the line break or the rule
    above, a "[" would be read as their optional argument."""
    out = []
    for cell in cells:
        indent = r"\quad " if cell[:1] == " " and cell.strip() else ""
        out.append(indent + latex_escape(cell.strip() if indent else cell, originals))
    if out and out[0].startswith("["):
        out[0] = "{}" + out[0]
    # a negative number's sign is a minus, not a hyphen
    out = ["$-$" + c[1:] if c.startswith("-") and NUMBER.fullmatch(c) else c for c in out]
    return " & ".join(out) + r" \\"


def to_latex(table: PlainTable) -> str:
    """A booktabs table that pdflatex compiles as it is: sparklines left out, every symbol a
    LaTeX command, text in other scripts as code points (listed in a comment after it)."""
    table = without_sparklines(table)
    originals: dict[str, str] = {}
    spec = "".join("r" if r else "l" for r in table.right)
    caption = table.title + (f". {table.caption}" if table.caption else "")
    out = [r"\begin{table}[t]", r"\centering",
           rf"\caption{{{latex_escape(caption, originals)}}}",
           rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
           _latex_row(table.header, originals), r"\midrule",
           *(_latex_row(row, originals) for row in table.rows),
           r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    # pdflatex skips a comment unread, so the original text can stand there for a search
    out += [f"% {codes} = {text}" for codes, text in originals.items()]
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------------ CSV
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # OWASP's list for CSV injection


def csv_cell(cell: str) -> str:
    """A cell as a spreadsheet should read it: a number stays a number ("+1.5" as 1.5, "-1.2"
    as it is), "-" (no value) is empty, and text that a spreadsheet would run as a formula
    ("=...", "+...", "-...", "@...") starts with a quote (OWASP's advice)."""
    cell = cell.strip()
    if cell == "-":
        return ""
    if NUMBER.fullmatch(cell):
        return cell.removeprefix("+")
    return "'" + cell if cell.startswith(FORMULA_START) else cell


def _csv_rows(table: PlainTable) -> list[list[str]]:
    """Rows a spreadsheet can sort and filter: each row says what it is. An indented sub-row
    (the "95% CI" row under a model) is named after the row it belongs to, and an empty label
    cell (a group's later rows) repeats the label above it."""
    labels = next((i for i, right in enumerate(table.right) if right), len(table.right))
    rows: list[list[str]] = []
    parent = ""
    for row in table.rows:
        row = list(row)
        if row and row[0][:1] == " " and row[0].strip():
            row[0] = f"{parent} {row[0].strip()}".strip()
        elif row and row[0].strip():
            parent = row[0].strip()
        for i in range(labels):
            if not row[i].strip() and rows and any(c.strip() for c in row):
                row[i] = rows[-1][i]
        rows.append(row)
    return rows


INTERVAL = re.compile(rf"\[(?P<low>{NUMBER.pattern}), (?P<high>{NUMBER.pattern})\]")


def _split_intervals(header: list[str],
                     rows: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    """A column of intervals ("[30.6, 86.3]") as two columns of numbers, "<name> low" and
    "<name> high", so a spreadsheet can compute with them."""
    columns = [i for i in range(len(header))
               if any(r[i].strip() not in ("", "-") for r in rows)
               and all(r[i].strip() in ("", "-") or INTERVAL.fullmatch(r[i].strip())
                       for r in rows)]
    if not columns:
        return header, rows

    def widen(cells: list[str], split) -> list[str]:
        return [part for i, c in enumerate(cells) for part in (split(c) if i in columns
                                                               else [c])]

    def bounds(cell: str) -> list[str]:
        found = INTERVAL.fullmatch(cell.strip())
        return [found["low"], found["high"]] if found else ["", ""]

    return (widen(header, lambda h: [f"{h} low", f"{h} high"]),
            [widen(row, bounds) for row in rows])


def to_csv(table: PlainTable) -> str:
    table = without_sparklines(table)
    header, rows = _split_intervals(table.header, _csv_rows(table))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([csv_cell(h) for h in header])
    writer.writerows([csv_cell(c) for c in row] for row in rows)
    return buffer.getvalue()


RENDER = {"md": to_markdown, "latex": to_latex, "csv": to_csv}
SUFFIX = {"md": ".md", "latex": ".tex", "csv": ".csv"}


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60] or "table"
