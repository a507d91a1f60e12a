"""The figure machinery of every kind of run: matplotlib in the report's style, a figure laid out,
its tick labels fitted, and saved as SVG (inlined in the report), PNG and SVG files. Each kind's
figures are drawn beside its view (``views/*_figures.py``) from its typed results only.

Why matplotlib: it is already a dependency (the diversity map), renders offline with no browser
or JavaScript, and writes SVG with glyphs as paths, so an inlined figure needs no font and the
report stays one self-contained file. Each figure is also saved as PNG and SVG for slides.
Chinese and Thai are drawn with the fonts :mod:`.fonts` finds; long tick labels are wrapped,
and turned when they would still overlap (:func:`fit_tick_labels`).
"""

from __future__ import annotations

import io
import math
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..store.files import make_own_folder, write_bytes_whole
from .fonts import figure_fonts, quiet_missing_glyphs, warn_missing

if TYPE_CHECKING:  # matplotlib is imported when a figure is drawn, never at start-up
    from matplotlib.axes import Axes
    from matplotlib.colors import Colormap
    from matplotlib.figure import Figure as MplFigure
    from matplotlib.text import Text as MplText
    from matplotlib.typing import RcKeyType

# Large type and thick lines: these are read on a projector from the back of a room.
STYLE: dict[RcKeyType, Any] = {
    "font.size": 12, "axes.titlesize": 13, "axes.labelsize": 12, "legend.fontsize": 10,
    "lines.linewidth": 2.0, "axes.spines.top": False, "axes.spines.right": False,
    "svg.fonttype": "path", "svg.hashsalt": "localeval", "figure.dpi": 100,
    # text from data (a subject, a year, a model) is never mathtext: "$\\x{$" stays text
    "text.parse_math": False}
TICK_WRAP = 12  # characters per line of a tick label ("Social Science" on two lines)
TICK_ANGLES = (30, 45, 60, 90)  # turned tick labels: the first that clears, as flat as can be


@dataclass(frozen=True)
class Figure:
    name: str  # file stem: figures/<name>.png and .svg
    title: str
    caption: str
    svg: str  # the SVG document, inlined in the report


def colormap(name: str) -> Colormap:
    """A matplotlib colormap by name ("tab10")."""
    import matplotlib

    return matplotlib.colormaps[name]


def finish(fig: MplFigure, name: str, title: str, caption: str, folder: Path | None) -> Figure:
    fig.tight_layout()
    if any([fit_tick_labels(ax) for ax in fig.axes]):  # every axes, then lay out again
        fig.tight_layout()
    svg_file = io.BytesIO()  # drawn once: the SVG file and the report's inlined copy
    fig.savefig(svg_file, format="svg", metadata={"Date": None})
    if folder is not None:
        make_own_folder(folder)  # never a planted link (report_figures -> elsewhere/)
        png = io.BytesIO()  # never written through a link (store/files.py)
        fig.savefig(png, format="png", dpi=150)
        write_bytes_whole(folder / f"{name}.png", png.getvalue())
        write_bytes_whole(folder / f"{name}.svg", svg_file.getvalue())
    svg = svg_file.getvalue().decode("utf-8")
    return Figure(name, title, caption, svg[svg.index("<svg"):])  # drop the XML prolog


_importing: list[threading.Thread] = []


def import_in_background() -> None:
    """Import what drawing a figure needs on a thread of its own, while the model runs (its
    matrix products leave the interpreter free): matplotlib is ~0.4 s of a one-question run's
    0.7 s report (bench/startup.py). :func:`figure_panels` waits for it."""
    if not _importing:
        # not a daemon: a process that ends before drawing waits for the import to finish
        _importing.append(threading.Thread(target=_import_drawing,
                                           name="localeval-figure-imports"))
        _importing[0].start()


def _import_drawing() -> None:
    with suppress(Exception):  # an import that fails here fails again, named, when drawing
        import matplotlib.backends.backend_agg
        import matplotlib.figure
        import matplotlib.ticker  # noqa: F401


@contextmanager
def figure_panels(n: int, width: float = 5.2,
                  height: float = 4.0) -> Iterator[tuple[MplFigure, list[Axes]]]:
    """(figure, its ``n`` axes side by side) drawn in the report's style; one panel gets the
    room of a slide. A bare ``Figure`` on an Agg canvas, not pyplot's: no figure manager nor
    backend to start (pyplot's import is a tenth of a second of every report), nothing to
    close, and the same drawing."""
    for thread in _importing:
        thread.join()
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    width = max(width, 7.0) if n == 1 else width
    with matplotlib.rc_context({**STYLE, "font.family": list(figure_fonts())}), \
            quiet_missing_glyphs():
        fig = MplFigure(figsize=(width * n, height))
        FigureCanvasAgg(fig)  # get_renderer() for fitting tick labels; PNG and SVG saving
        axes = fig.subplots(1, n, squeeze=False)
        yield fig, list(axes[0])
    # a missing font is news only for a script the figure holds (issue 69)
    from matplotlib.text import Text as MplText

    warn_missing(t.get_text() for t in fig.findobj(MplText))


def _labels(ax: Axes) -> list[MplText]:
    """The axes' named x tick labels, drawn (they get their text and size when drawn; the
    figure's renderer is then cached, so each label's extent needs none passed)."""
    figure = ax.get_figure(root=True)
    if figure is None:
        raise ValueError("axes on no figure: made outside figure_panels")
    figure.draw_without_rendering()
    return [t for t in ax.get_xticklabels() if t.get_text()]


def _overlap(ax: Axes) -> bool:
    boxes = sorted((t.get_window_extent() for t in _labels(ax)), key=lambda b: b.x0)
    return any(a.x1 > b.x0 for a, b in zip(boxes, boxes[1:]))


def _turn(ax: Axes) -> int:
    """The smallest angle at which the axes' labels, each on one line, clear each other.
    Turned labels are parallel strips, neighbours ``gap * sin(angle)`` apart across them
    (``gap``: the distance between ticks): enough for a line of text is enough."""
    labels = _labels(ax)
    xs = sorted(ax.transData.transform((x, 0))[0] for x in ax.get_xticks())
    gap = min((b - a for a, b in zip(xs, xs[1:])), default=math.inf)
    line = max(t.get_window_extent().height for t in labels)
    return next((a for a in TICK_ANGLES if gap * math.sin(math.radians(a)) >= line), 90)


def fit_tick_labels(ax: Axes) -> bool:
    """Make an axes' named x ticks (groups, not numbers) readable side by side: names that run
    into each other are wrapped onto lines of about ``TICK_WRAP`` characters and, if they
    still do (names without spaces, many groups), turned, each on one line, just enough to
    clear each other. True when anything changed."""
    from matplotlib.ticker import FixedLocator

    if not isinstance(ax.xaxis.get_major_locator(), FixedLocator) or not _overlap(ax):
        return False  # numbers (matplotlib spaces those itself), or already clear
    ticks = list(ax.get_xticks())
    texts = [t.get_text() for t in ax.get_xticklabels()]
    ax.set_xticks(ticks, [textwrap.fill(t, TICK_WRAP, break_long_words=False) for t in texts])
    if _overlap(ax):
        ax.set_xticks(ticks, texts)
        ax.set_xticks(ticks, texts, rotation=_turn(ax), ha="right", rotation_mode="anchor")
    return True
