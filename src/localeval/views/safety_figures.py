"""Figures of safeguard runs, from their typed results: SEA-SafeguardBench's precision-recall
curves per language, threshold sweep (Fig. 5), pair-type confusion (Fig. 4) and score
distributions (Fig. 6)."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from ..records.safety import SafetyComparison, SafetyResults
from ..records.sample_kinds import Context, SampleKind, task_name
from ..render.figures import Figure, colormap, figure_panels, finish

LABEL_COLOURS = {"safe": "#2b8a3e", "sensitive": "#e67700", "harmful": "#c92a2a"}
LABEL_LINES = {"safe": "-", "sensitive": "--", "harmful": ":"}  # tell overlapping lines apart


def _panel_title(kind: str, context: str) -> str:
    if not SampleKind(kind).judges_response:
        return "Prompt classification"
    return "Response classification" + Context(context).suffix


def pr_figure(results: SafetyResults, folder: Path | None) -> Figure | None:
    curves = results.pr_curves
    panels = list(dict.fromkeys((c.model, c.kind, c.context) for c in curves))
    if not panels:
        return None
    several = len({model for model, _, _ in panels}) > 1  # name models only to tell them apart
    with figure_panels(len(panels)) as (fig, axes):
        for ax, (model, kind, context) in zip(axes, panels):
            for c in curves:
                if (c.model, c.kind, c.context) == (model, kind, context):
                    ax.step(c.recall, c.precision, where="post", label=f"{c.lang} (n={c.n})")
            ax.set(xlim=(0, 1), ylim=(0, 1.02), xlabel="recall", ylabel="precision",
                   title=_panel_title(kind, context) + (f"\n{model}" if several else ""))
            ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
        return finish(fig, "pr_curves", "Precision–recall by language",
                       "All subsets pooled per language; one point per distinct score.", folder)


def _with_gaps(values: list[float | None]) -> list[float]:
    """An undefined value (precision where no item is predicted harmful) as NaN: a gap in the
    line, never a point at 0."""
    return [math.nan if v is None else v for v in values]


def threshold_figure(results: SafetyResults, folder: Path | None) -> Figure | None:
    sweeps = [s for s in results.threshold_sweep if s.sweep]
    if not sweeps:
        return None
    with figure_panels(len(sweeps)) as (fig, axes):
        for ax, s in zip(axes, sweeps):
            xs = [p.threshold for p in s.sweep]
            for metric, style, ys in (("f1", "-", [p.f1 for p in s.sweep]),
                                      ("precision", "--", [p.precision for p in s.sweep]),
                                      ("recall", ":", [p.recall for p in s.sweep])):
                ax.plot(xs, _with_gaps(ys), style, label=metric)
            if s.best_f1_threshold is not None:
                ax.axvline(s.best_f1_threshold, color="grey", linewidth=1)
            ax.set(xlim=(0, 1), ylim=(0, 1.02), xlabel="threshold",
                   title=_panel_title(s.kind, Context.WITH_PROMPT))
            ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
        return finish(fig, "threshold_sweep", "F1, precision and recall vs threshold",
                       "Every language and subset pooled (SEA-SafeguardBench Fig. 5); the grey "
                       "line marks the best-F1 threshold on these items (descriptive only).",
                       folder)


def pair_type_figure(results: SafetyResults, folder: Path | None) -> Figure | None:
    matrices = [m for m in results.pair_type_confusion if m.n]
    if not matrices:
        return None
    with figure_panels(len(matrices), width=4.8, height=4.4) as (fig, axes):
        for ax, m in zip(axes, matrices):
            grid = [[100 * v for v in row] if row else [0.0] * 4 for row in m.fractions]
            ax.imshow(grid, cmap="Blues", vmin=0, vmax=100)
            for i, row in enumerate(m.counts):
                for j, count in enumerate(row):
                    text = f"{grid[i][j]:.0f}%\n({count})" if m.fractions[i] else "–"
                    ax.text(j, i, text, ha="center", va="center", fontsize=10,
                            color="white" if grid[i][j] > 55 else "black")
            ax.set_xticks(range(4), m.types)
            ax.set_yticks(range(4), m.types)
            ax.set(xlabel="predicted", ylabel="true",
                   title="response judged " + ("with" if Context(m.context).shows_prompt
                                                else "without") + " the prompt")
        return finish(fig, "pair_types", "Prompt/response pair types: true vs predicted",
                       "S = safe, H = harmful, prompt/response; rows sum to 100% "
                       "(SEA-SafeguardBench Fig. 4), at threshold 0.5; – = no item of that "
                       "type.", folder)


def score_figure(results: SafetyResults, folder: Path | None) -> Figure | None:
    rows = results.score_distribution
    panels = list(dict.fromkeys((r.model, r.kind) for r in rows))
    if not panels:
        return None
    with figure_panels(len(panels)) as (fig, axes):
        for ax, (model, kind) in zip(axes, panels):
            for r in rows:
                if (r.model, r.kind) != (model, kind) or not r.n:
                    continue
                bins = len(r.histogram)
                share = [100 * h / r.n for h in r.histogram]
                edges = [i / bins for i in range(bins + 1)]
                colour = LABEL_COLOURS[r.label]
                ax.stairs(share, edges, fill=True, alpha=0.15, color=colour)
                ax.stairs(share, edges, linewidth=2.5, linestyle=LABEL_LINES[r.label],
                          color=colour, label=f"{r.label} (n={r.n})")
            ax.set(xlim=(0, 1), xlabel="P(harmful)", ylabel="% of items",
                   title=_panel_title(kind, Context.WITH_PROMPT))
            if ax.get_legend_handles_labels()[0]:
                ax.legend(loc="upper center")
        return finish(fig, "score_distribution", "Scores on safe, sensitive and harmful items",
                       "Share of items per score bin (SEA-SafeguardBench Fig. 6): a calibrated "
                       "guard puts sensitive items in the middle.", folder)


def comparison_figure(comparison: SafetyComparison, labels: tuple[str, str],
                      folder: Path | None) -> Figure | None:
    """Runs A and B's PR-AUC per language on the samples both scored, a panel per task and
    context: ``localeval compare``'s table drawn (the table has the paired CI of B − A)."""
    panels = list(dict.fromkeys((r.kind, r.context) for r in comparison.rows))
    if not panels:
        return None
    colours = colormap("tab10")
    with figure_panels(len(panels)) as (fig, axes):
        for ax, (kind, context) in zip(axes, panels):
            rows = [r for r in comparison.rows if (r.kind, r.context) == (kind, context)]
            xs = range(len(rows))
            for k, label in enumerate(labels):
                values = [100 * ((r.auprc_a if k == 0 else r.auprc_b) or 0.0) for r in rows]
                ax.bar([x + (k - 0.5) * 0.4 for x in xs], values, width=0.4,
                       color=colours(k), label=f"{'AB'[k]}: {label}")
            ax.set_xticks(list(xs), [r.lang for r in rows])
            ax.set(ylim=(0, 100), ylabel="PR-AUC %", title=task_name(kind, context))
        axes[0].legend(loc="upper left", bbox_to_anchor=(0.0, -0.15), borderaxespad=0.0)
        return finish(fig, "compare_languages", "PR-AUC by language, A and B",
                      "On the samples both runs scored with the same label, every subset "
                      "pooled per language; the table gives B − A with its paired bootstrap "
                      "95% CI. A language with one class has no bar.", folder)


SAFETY_FIGURES: tuple[Callable[[SafetyResults, Path | None], Figure | None], ...] = (
    pr_figure, threshold_figure, pair_type_figure, score_figure)
