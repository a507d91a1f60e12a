"""A table as LaTeX that pdflatex compiles with booktabs alone: LaTeX's special characters
escaped, the symbols our tables use as LaTeX commands, sparklines left out, and text in scripts
pdflatex has no font for (Chinese, Thai, Tamil, ...) written as its code points, listed in a
comment after the table. Text from data is never a command."""

from __future__ import annotations

import re
import unicodedata

from .table import Cell, DataTable, Number, Row, Text

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


def _latex_cell(cell: Cell, first: bool, level: int, originals: dict[str, str]) -> str:
    if isinstance(cell, Number) and cell.is_datum() and cell.number().startswith("-") \
            and cell.value is not None:
        return "$-$" + cell.number()[1:]  # a negative number's sign is a minus, not a hyphen
    text = latex_escape(cell.shown(), originals)
    if first and level:
        text = r"\quad " + text  # a sub-row of the row above
    # right after the line break or the rule above, a "[" would be read as their optional
    # argument
    return "{}" + text if first and text.startswith("[") else text


def _latex_row(row: Row, keep: list[int], originals: dict[str, str]) -> str:
    return " & ".join(_latex_cell(row.cells[i], n == 0, row.level, originals)
                      for n, i in enumerate(keep)) + r" \\"


def to_latex(table: DataTable) -> str:
    """A booktabs table that pdflatex compiles as it is: sparklines left out, every symbol a
    LaTeX command, text in other scripts as code points (listed in a comment after it)."""
    keep = table.data_columns()
    originals: dict[str, str] = {}
    spec = "".join("r" if table.columns[i].numeric else "l" for i in keep)
    caption = table.title + (f". {table.caption}" if table.caption else "")
    header = Row(tuple(Text(table.columns[i].written) for i in range(len(table.columns))))
    out = [r"\begin{table}[t]", r"\centering",
           rf"\caption{{{latex_escape(caption, originals)}}}",
           rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
           _latex_row(header, keep, originals), r"\midrule",
           *(_latex_row(row, keep, originals) for row in table.rows),
           r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    # pdflatex skips a comment unread, so the original text can stand there for a search
    out += [f"% {codes} = {text}" for codes, text in originals.items()]
    return "\n".join(out) + "\n"
