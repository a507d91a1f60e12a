"""``localeval export``: every table of a run, as the console shows it (the papers' layouts:
TMLU Table 3, SEA-SafeguardBench Table 2, …), written as Markdown, LaTeX (booktabs) or CSV to
paste into a paper. The console tables are the one source: this module only re-renders their
cells, so an exported number is the printed number."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass

from rich.table import Table


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


LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                 "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                 "^": r"\textasciicircum{}", "±": r"$\pm$"}


def latex_escape(text: str) -> str:
    return "".join(LATEX_SPECIAL.get(ch, ch) for ch in text)


def to_latex(table: PlainTable) -> str:
    spec = "".join("r" if r else "l" for r in table.right)
    caption = table.title + (f". {table.caption}" if table.caption else "")
    out = [r"\begin{table}[t]", r"\centering", rf"\caption{{{latex_escape(caption)}}}",
           rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
           " & ".join(latex_escape(h) for h in table.header) + r" \\", r"\midrule",
           *(" & ".join(latex_escape(c) for c in row) + r" \\" for row in table.rows),
           r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(out) + "\n"


def to_csv(table: PlainTable) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(table.header)
    writer.writerows(table.rows)
    return buffer.getvalue()


RENDER = {"md": to_markdown, "latex": to_latex, "csv": to_csv}
SUFFIX = {"md": ".md", "latex": ".tex", "csv": ".csv"}


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60] or "table"
