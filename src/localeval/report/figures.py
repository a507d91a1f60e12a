"""The report's figures, drawn with matplotlib from results.json only (never from samples): the
TMLU paper's accuracy by year (its Figure 5 grouping) and by level, direct vs CoT, and
SEA-SafeguardBench's precision-recall curves per language, threshold sweep (Fig. 5), pair-type
confusion (Fig. 4) and score distributions (Fig. 6).

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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..store.files import write_bytes_whole
from .fonts import figure_fonts, quiet_missing_glyphs

# Large type and thick lines: these are read on a projector from the back of a room.
STYLE = {"font.size": 12, "axes.titlesize": 13, "axes.labelsize": 12, "legend.fontsize": 10,
         "lines.linewidth": 2.0, "axes.spines.top": False, "axes.spines.right": False,
         "svg.fonttype": "path", "svg.hashsalt": "localeval", "figure.dpi": 100}
LABEL_COLOURS = {"safe": "#2b8a3e", "sensitive": "#e67700", "harmful": "#c92a2a"}
LABEL_LINES = {"safe": "-", "sensitive": "--", "harmful": ":"}  # tell overlapping lines apart
TICK_WRAP = 12  # characters per line of a tick label ("Social Science" on two lines)
TICK_ANGLES = (30, 45, 60, 90)  # turned tick labels: the first that clears, as flat as can be


@dataclass(frozen=True)
class Figure:
    name: str  # file stem: figures/<name>.png and .svg
    title: str
    caption: str
    svg: str  # the SVG document, inlined in the report


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # no display: the report is written by CLI runs and tests
    import matplotlib.pyplot as plt

    return plt


def _finish(fig, name: str, title: str, caption: str, folder: Path | None) -> Figure:
    plt = _pyplot()
    fig.tight_layout()
    if any([fit_tick_labels(ax) for ax in fig.axes]):  # every axes, then lay out again
        fig.tight_layout()
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        for suffix, kw in (("png", {"dpi": 150}), ("svg", {"metadata": {"Date": None}})):
            image = io.BytesIO()  # never written through a link (store/files.py)
            fig.savefig(image, format=suffix, **kw)
            write_bytes_whole(folder / f"{name}.{suffix}", image.getvalue())
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    plt.close(fig)
    svg = buffer.getvalue()
    return Figure(name, title, caption, svg[svg.index("<svg"):])  # drop the XML prolog


@contextmanager
def _panels(n: int, width: float = 5.2, height: float = 4.0):
    """(figure, its ``n`` axes side by side) drawn in the report's style; one panel gets the
    room of a slide."""
    plt = _pyplot()
    width = max(width, 7.0) if n == 1 else width
    with plt.rc_context({**STYLE, "font.family": list(figure_fonts())}), quiet_missing_glyphs():
        fig, axes = plt.subplots(1, n, figsize=(width * n, height), squeeze=False)
        yield fig, list(axes[0])


def _labels(ax) -> list:
    ax.figure.draw_without_rendering()  # tick labels get their text and size when drawn
    return [t for t in ax.get_xticklabels() if t.get_text()]


def _overlap(ax) -> bool:
    renderer = ax.figure.canvas.get_renderer()
    boxes = sorted((t.get_window_extent(renderer) for t in _labels(ax)), key=lambda b: b.x0)
    return any(a.x1 > b.x0 for a, b in zip(boxes, boxes[1:]))


def _turn(ax) -> int:
    """The smallest angle at which the axes' labels, each on one line, clear each other.
    Turned labels are parallel strips, neighbours ``gap * sin(angle)`` apart across them
    (``gap``: the distance between ticks): enough for a line of text is enough."""
    renderer = ax.figure.canvas.get_renderer()
    labels = _labels(ax)
    xs = sorted(ax.transData.transform((x, 0))[0] for x in ax.get_xticks())
    gap = min((b - a for a, b in zip(xs, xs[1:])), default=math.inf)
    line = max(t.get_window_extent(renderer).height for t in labels)
    return next((a for a in TICK_ANGLES if gap * math.sin(math.radians(a)) >= line), 90)


def fit_tick_labels(ax) -> bool:
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


# ------------------------------------------------------------------------- multiple choice
def _bars(ax, groups: dict, colour: str = "#1c7ed6", offset: float = 0.0, width: float = 0.8,
          label: str | None = None) -> None:
    names = list(groups)
    acc = [100 * (groups[g].get("acc") or 0) for g in names]
    err = interval_arms(groups, names, acc)
    xs = [i + offset for i in range(len(names))]
    ax.bar(xs, acc, width=width, yerr=err, capsize=4, color=colour, label=label)
    ax.set_xticks(range(len(names)), names)  # fitted once the figure is laid out
    ax.set_ylabel("accuracy %")
    ax.set_ylim(0, 100)


def interval_arms(groups: dict, names: list[str], acc: list[float]) -> list[list[float]]:
    """Error bars as [below, above]: the Wilson score 95% interval the tables show (it keeps a
    width at 0 of n and n of n); ±1 standard error for results stored before it."""
    below, above = [], []
    for g, a in zip(names, acc, strict=True):
        low, high = groups[g].get("low"), groups[g].get("high")
        if low is None or high is None:
            se = 100 * (groups[g].get("stderr") or 0)
            below.append(se)
            above.append(se)
        else:
            below.append(max(0.0, a - 100 * low))
            above.append(max(0.0, 100 * high - a))
    return [below, above]


def mcq_figures(results: dict, folder: Path | None) -> Iterator[Figure]:
    metrics = results["metrics"]
    for key, name, title, caption in (
        ("by_discipline", "accuracy_by_discipline", "Accuracy by discipline",
         "Questions pooled per discipline (the TMLU paper's Table 3 columns). Bars: Wilson "
         "score 95% interval."),
        ("by_year", "accuracy_by_year", "Accuracy by exam year",
         "Questions pooled per year; years up to the task's floor are one group (TMLU Fig. 5). "
         "Bars: Wilson score 95% interval."),
        ("by_level", "accuracy_by_level", "Accuracy by education level",
         "Questions pooled per level. Bars: Wilson score 95% interval."),
    ):
        groups = metrics.get(key) or {}
        if not groups:
            continue
        with _panels(1, width=max(5.5, 0.8 * len(groups) + 2)) as (fig, (ax,)):
            _bars(ax, groups)  # no axes title: the report's heading names the figure
            figure = _finish(fig, name, title, caption, folder)
        yield figure


def mcq_comparison_figure(runs: list[tuple[str, dict]], folder: Path | None) -> Figure | None:
    """Accuracy per discipline for several multiple-choice runs side by side (direct vs CoT)."""
    disciplines = [d for d in runs[0][1]["disciplines"]
                   if all(d in r["metrics"]["by_discipline"] for _, r in runs)]
    if not disciplines:
        return None
    colours = _pyplot().get_cmap("tab10")
    width = 0.8 / len(runs)
    with _panels(1, width=max(6.0, 1.4 * len(disciplines) + 2)) as (fig, (ax,)):
        for k, (label, results) in enumerate(runs):
            groups = {d: results["metrics"]["by_discipline"][d] for d in disciplines}
            _bars(ax, groups, colour=colours(k), width=width,
                  offset=(k - (len(runs) - 1) / 2) * width, label=label)
        ax.legend(loc="upper right")
        return _finish(fig, "compare_disciplines", "Accuracy by discipline, run by run",
                       "Each run's questions pooled per discipline. Bars: Wilson score 95% interval.",
                       folder)


# ------------------------------------------------------------------------- safeguards
def _panel_title(kind: str, context: str) -> str:
    if kind == "prompt":
        return "Prompt classification"
    return "Response classification" + ("" if context == "with_prompt" else " (no prompt)")


def pr_figure(results: dict, folder: Path | None) -> Figure | None:
    curves = results.get("pr_curves") or []
    panels = list(dict.fromkeys((c["model"], c["kind"], c["context"]) for c in curves))
    if not panels:
        return None
    several = len({model for model, _, _ in panels}) > 1  # name models only to tell them apart
    with _panels(len(panels)) as (fig, axes):
        for ax, (model, kind, context) in zip(axes, panels):
            for c in curves:
                if (c["model"], c["kind"], c["context"]) == (model, kind, context):
                    ax.step(c["recall"], c["precision"], where="post",
                            label=f"{c['lang']} (n={c['n']})")
            ax.set(xlim=(0, 1), ylim=(0, 1.02), xlabel="recall", ylabel="precision",
                   title=_panel_title(kind, context) + (f"\n{model}" if several else ""))
            ax.legend(loc="lower left", ncols=2)
        return _finish(fig, "pr_curves", "Precision–recall by language",
                       "All subsets pooled per language; one point per distinct score.", folder)


def threshold_figure(results: dict, folder: Path | None) -> Figure | None:
    sweeps = [s for s in results.get("threshold_sweep") or [] if s["sweep"]]
    if not sweeps:
        return None
    with _panels(len(sweeps)) as (fig, axes):
        for ax, s in zip(axes, sweeps):
            xs = [p["threshold"] for p in s["sweep"]]
            for metric, style in (("f1", "-"), ("precision", "--"), ("recall", ":")):
                ax.plot(xs, [p[metric] for p in s["sweep"]], style, label=metric)
            if s.get("best_f1_threshold") is not None:
                ax.axvline(s["best_f1_threshold"], color="grey", linewidth=1)
            ax.set(xlim=(0, 1), ylim=(0, 1.02), xlabel="threshold",
                   title=_panel_title(s["kind"], "with_prompt"))
            ax.legend(loc="lower left")
        return _finish(fig, "threshold_sweep", "F1, precision and recall vs threshold",
                       "Every language and subset pooled (SEA-SafeguardBench Fig. 5); the grey "
                       "line marks the best-F1 threshold on these items (descriptive only).",
                       folder)


def pair_type_figure(results: dict, folder: Path | None) -> Figure | None:
    matrices = [m for m in results.get("pair_type_confusion") or [] if m["n"]]
    if not matrices:
        return None
    with _panels(len(matrices), width=4.8, height=4.4) as (fig, axes):
        for ax, m in zip(axes, matrices):
            grid = [[100 * v for v in row] if row else [0.0] * 4 for row in m["fractions"]]
            ax.imshow(grid, cmap="Blues", vmin=0, vmax=100)
            for i, row in enumerate(m["counts"]):
                for j, count in enumerate(row):
                    text = f"{grid[i][j]:.0f}%\n({count})" if m["fractions"][i] else "–"
                    ax.text(j, i, text, ha="center", va="center", fontsize=10,
                            color="white" if grid[i][j] > 55 else "black")
            ax.set_xticks(range(4), m["types"])
            ax.set_yticks(range(4), m["types"])
            ax.set(xlabel="predicted", ylabel="true",
                   title="response judged " + ("with" if m["context"] == "with_prompt" else
                                                "without") + " the prompt")
        return _finish(fig, "pair_types", "Prompt/response pair types: true vs predicted",
                       "S = safe, H = harmful, prompt/response; rows sum to 100% "
                       "(SEA-SafeguardBench Fig. 4), at threshold 0.5; – = no item of that "
                       "type.", folder)


def score_figure(results: dict, folder: Path | None) -> Figure | None:
    rows = results.get("score_distribution") or []
    panels = list(dict.fromkeys((r["model"], r["kind"]) for r in rows))
    if not panels:
        return None
    with _panels(len(panels)) as (fig, axes):
        for ax, (model, kind) in zip(axes, panels):
            for r in rows:
                if (r["model"], r["kind"]) != (model, kind) or not r["n"]:
                    continue
                bins = len(r["histogram"])
                share = [100 * h / r["n"] for h in r["histogram"]]
                edges = [i / bins for i in range(bins + 1)]
                colour = LABEL_COLOURS[r["label"]]
                ax.stairs(share, edges, fill=True, alpha=0.15, color=colour)
                ax.stairs(share, edges, linewidth=2.5, linestyle=LABEL_LINES[r["label"]],
                          color=colour, label=f"{r['label']} (n={r['n']})")
            ax.set(xlim=(0, 1), xlabel="P(harmful)", ylabel="% of items",
                   title=_panel_title(kind, "with_prompt"))
            if ax.get_legend_handles_labels()[0]:
                ax.legend(loc="upper center")
        return _finish(fig, "score_distribution", "Scores on safe, sensitive and harmful items",
                       "Share of items per score bin (SEA-SafeguardBench Fig. 6): a calibrated "
                       "guard puts sensitive items in the middle.", folder)


SAFETY_FIGURES: tuple[Callable[[dict, Path | None], Figure | None], ...] = (
    pr_figure, threshold_figure, pair_type_figure, score_figure)
