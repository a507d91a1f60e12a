"""Figures of multiple-choice runs, from their typed results: accuracy by discipline (the TMLU
paper's Table 3 columns), by exam year (its Figure 5 grouping) and by level; and several runs'
disciplines side by side (direct vs CoT)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..records.mcq import Accuracy, MCQResults

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.typing import ColorType
from ..render.figures import Figure, colormap, figure_panels, finish

BARS_NOTE = "Bars: Wilson score 95% interval."


def _bars(ax: Axes, groups: dict[str, Accuracy], colour: ColorType = "#1c7ed6", offset: float = 0.0,
          width: float = 0.8, label: str | None = None) -> None:
    names = list(groups)
    acc = [100 * (groups[g].acc or 0) for g in names]
    err = interval_arms(groups, names, acc)
    xs = [i + offset for i in range(len(names))]
    ax.bar(xs, acc, width=width, yerr=err, capsize=4, color=colour, label=label)
    ax.set_xticks(range(len(names)), names)  # fitted once the figure is laid out
    ax.set_ylabel("accuracy %")
    ax.set_ylim(0, 100)


def interval_arms(groups: dict[str, Accuracy], names: list[str],
                  acc: list[float]) -> list[list[float]]:
    """Error bars as [below, above]: the Wilson score 95% interval the tables show (it keeps a
    width at 0 of n and n of n); ±1 standard error for results stored before it."""
    below, above = [], []
    for g, a in zip(names, acc, strict=True):
        low, high = groups[g].low, groups[g].high
        if low is None or high is None:
            se = 100 * (groups[g].stderr or 0)
            below.append(se)
            above.append(se)
        else:
            below.append(max(0.0, a - 100 * low))
            above.append(max(0.0, 100 * high - a))
    return [below, above]


def mcq_figures(results: MCQResults, folder: Path | None) -> Iterator[Figure]:
    metrics = results.metrics
    # the tables' column order (the paper's), not results.json's sorted keys
    disciplines = {d: metrics.by_discipline[d] for d in results.disciplines
                   if d in metrics.by_discipline}
    disciplines.update({d: g for d, g in metrics.by_discipline.items() if d not in disciplines})
    for groups, name, title, caption in (
        (disciplines, "accuracy_by_discipline", "Accuracy by discipline",
         f"Questions pooled per discipline (the TMLU paper's Table 3 columns). {BARS_NOTE}"),
        (metrics.by_year, "accuracy_by_year", "Accuracy by exam year",
         "Questions pooled per year; years up to the task's floor are one group (TMLU Fig. 5). "
         + BARS_NOTE),
        (metrics.by_level, "accuracy_by_level", "Accuracy by education level",
         f"Questions pooled per level. {BARS_NOTE}"),
    ):
        if not groups:
            continue
        with figure_panels(1, width=max(5.5, 0.8 * len(groups) + 2)) as (fig, (ax,)):
            _bars(ax, groups)  # no axes title: the report's heading names the figure
            figure = finish(fig, name, title, caption, folder)
        yield figure


def mcq_comparison_figure(runs: list[tuple[str, MCQResults]],
                          folder: Path | None) -> Figure | None:
    """Accuracy per discipline for several multiple-choice runs side by side (direct vs CoT)."""
    disciplines = [d for d in runs[0][1].disciplines
                   if all(d in r.metrics.by_discipline for _, r in runs)]
    if not disciplines:
        return None
    colours = colormap("tab10")
    width = 0.8 / len(runs)
    with figure_panels(1, width=max(6.0, 1.4 * len(disciplines) + 2)) as (fig, (ax,)):
        for k, (label, results) in enumerate(runs):
            groups = {d: results.metrics.by_discipline[d] for d in disciplines}
            _bars(ax, groups, colour=colours(k), width=width,
                  offset=(k - (len(runs) - 1) / 2) * width, label=label)
        ax.legend(loc="upper right")
        return finish(fig, "compare_disciplines", "Accuracy by discipline, run by run",
                      f"Each run's questions pooled per discipline. {BARS_NOTE}", folder)
