"""A table built once, as data: typed cells in rows under named columns. Every table a run shows
(the console, ``export``'s Markdown, LaTeX and CSV, the HTML report) is one of these, rendered by
:mod:`.formats`; nothing is ever parsed back from a rendered string.

A cell is text (from data or ours: never markup), a number (its value, and how it is printed), an
interval, or a sparkline. A row has a ``level``: 0 for a row of its own, 1 for a sub-row that
belongs to the row above it (the "95% CI ±" row under a model); the console indents it, CSV names
it after its parent, LaTeX indents it with a quad.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# The bars of a sparkline (a histogram in one cell, lowest first). The console, Markdown and
# HTML show them; LaTeX and CSV leave a sparkline column out (it is not data).
SPARK_BARS = " ▁▂▃▄▅▆▇█"


@dataclass(frozen=True)
class Text:
    """Text, shown exactly as it is in every format."""

    text: str

    def shown(self) -> str:
        return self.text


@dataclass(frozen=True)
class Number:
    """``value * scale`` with ``digits`` decimals ("-" when missing); ``sign`` prints "+" before
    a positive number; ``general`` prints ``digits`` significant digits instead (p-values);
    ``unit`` follows the number ("%"), ``note`` follows it after a space ("(12)", "fixed"). A
    number with neither is data in CSV; with them it is text there."""

    value: float | int | None
    digits: int = 1
    scale: float = 1.0
    sign: bool = False
    general: bool = False
    unit: str = ""
    note: str = ""

    def number(self) -> str:
        """The number alone, as printed ("-" when there is none)."""
        if self.value is None:
            return "-"
        spec = f"{'+' if self.sign else ''}.{self.digits}{'g' if self.general else 'f'}"
        return format(self.value * self.scale, spec)

    def is_datum(self) -> bool:
        """Whether CSV may write it as a number (it has no unit or note)."""
        return not self.unit and not self.note

    def shown(self) -> str:
        if self.value is None:
            return "-"
        return self.number() + self.unit + (f" {self.note}" if self.note else "")


def count(n: int | None) -> Number:
    """A count of things (n, failed, excluded)."""
    return Number(n, digits=0)


@dataclass(frozen=True)
class Interval:
    """A stored interval as "[low, high]" (times ``scale``); "-" when there is none. CSV gives
    an interval column two columns of numbers."""

    low: float | None
    high: float | None
    scale: float = 100.0
    digits: int = 1

    def bounds(self) -> tuple[str, str] | None:
        if self.low is None or self.high is None:
            return None
        return (Number(self.low, self.digits, self.scale).number(),
                Number(self.high, self.digits, self.scale).number())

    def shown(self) -> str:
        bounds = self.bounds()
        return "-" if bounds is None else f"[{bounds[0]}, {bounds[1]}]"


@dataclass(frozen=True)
class Estimate:
    """A share with its interval and what it is over, in one cell: "12.3 [1.0, 20.0] (n=5)"."""

    value: float | None
    low: float | None
    high: float | None
    n: int | None
    scale: float = 100.0
    digits: int = 1

    def shown(self) -> str:
        if self.value is None:
            return "-"
        ci = Interval(self.low, self.high, self.scale, self.digits).bounds()
        return (Number(self.value, self.digits, self.scale).number()
                + (f" [{ci[0]}, {ci[1]}]" if ci else "") + f" (n={self.n})")


@dataclass(frozen=True)
class Spark:
    """A histogram drawn in one cell with block characters, each bar scaled to the highest."""

    histogram: tuple[int, ...]

    def shown(self) -> str:
        top = max(self.histogram, default=0)
        return "".join(SPARK_BARS[max(1, round(8 * h / top))] if h else " "
                       for h in self.histogram)


Cell = Text | Number | Interval | Estimate | Spark


@dataclass(frozen=True)
class Column:
    name: str
    numeric: bool = False  # right-aligned
    full: str | None = None  # the name unabbreviated, where there is room (HTML)

    @property
    def header(self) -> str:  # a header on several lines in a terminal is one line elsewhere
        return self.name.replace("\n", " ")

    @property
    def written(self) -> str:
        """The header a file writes (Markdown, LaTeX, CSV, HTML): in full, on one line; a
        terminal's abbreviation ("Taiwan Spe.") is for terminals only (issue 69)."""
        return (self.full or self.name).replace("\n", " ")


@dataclass(frozen=True)
class Row:
    cells: tuple[Cell, ...]
    level: int = 0  # 1: a sub-row of the row above
    end_section: bool = False  # the console draws a rule under it


@dataclass(frozen=True)
class DataTable:
    """A titled table of typed rows; ``caption`` says what its numbers are."""

    title: str
    columns: tuple[Column, ...]
    rows: tuple[Row, ...] = ()
    caption: str = ""

    def texts(self) -> list[list[str]]:
        """Every row's cells as the console shows them (a sub-row's label indented)."""
        return [[("  " * row.level if i == 0 else "") + cell.shown()
                 for i, cell in enumerate(row.cells)] for row in self.rows]

    @property
    def header(self) -> list[str]:
        return [c.header for c in self.columns]

    def data_columns(self) -> list[int]:
        """The columns that are data: all but those of sparklines only (LaTeX cannot typeset
        the block characters, and a spreadsheet cell of them is not data)."""
        return [i for i in range(len(self.columns))
                if not self.rows or not all(isinstance(r.cells[i], Spark) for r in self.rows)]


@dataclass
class TableBuilder:
    """Rows added one at a time, then ``build()``; a plain value becomes a cell (str: Text,
    int: a count, None: "-")."""

    title: str
    columns: list[Column]
    caption: str = ""
    rows: list[Row] = field(default_factory=list)

    def add(self, *cells: Cell | str | int | None, level: int = 0,
            end_section: bool = False) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{self.title}: {len(cells)} cells for {len(self.columns)} columns")
        self.rows.append(Row(tuple(as_cell(c) for c in cells), level, end_section))

    def build(self) -> DataTable:
        return DataTable(self.title, tuple(self.columns), tuple(self.rows), self.caption)


def as_cell(value: Cell | str | int | None) -> Cell:
    if isinstance(value, str):
        return Text(value)
    if value is None or isinstance(value, int):
        return Number(value, digits=0)
    return value


def columns(*names: str, text: int = 1) -> list[Column]:
    """Columns named ``names``: the first ``text`` are text (left), the rest numbers (right)."""
    return [Column(name, numeric=i >= text) for i, name in enumerate(names)]
