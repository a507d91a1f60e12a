"""The robustness table of a multiple-choice run made with ``--permute-options`` or
``--repeats``: accuracy per option order and per sampled draw, their mean, standard deviation
and 95% interval, and the share of questions answered with the same option in every order.
It only reads results.json's ``robustness``."""

from __future__ import annotations

from ..records.mcq import MCQResults, Spread
from ..records.metric_names import metric
from ..render.cards import Card
from ..render.table import Column, DataTable, Interval, Number, TableBuilder, Text
from .base import Metric


def _rows(table: TableBuilder, spread: Spread, name: str, count: str) -> None:
    for k, acc in enumerate(spread.accuracy):
        table.add(Text(f"{name} {k}"), Number(acc, 2, 100), Text(""), Interval(None, None))
    table.add(Text(f"mean over {spread.n} {count}"), Number(spread.mean, 2, 100),
              Number(spread.std, 2, 100), Interval(spread.low, spread.high, digits=2))


def robustness_tables(results: MCQResults) -> list[DataTable]:
    r = results.robustness
    if r is None or (r.permutation is None and r.draws is None):
        return []
    notes = []
    table = TableBuilder(
        f"{results.task} · robustness · accuracy %",
        [Column("asked as"), Column("accuracy %", True), Column("std", True),
         Column("95% CI (t, of the mean)", True)], "")
    if r.permutation is not None:
        _rows(table, r.permutation, "option order (cyclic shift)", "orders")
        table.add(Text("same option in every order"), Number(r.permutation.same_option, 2, 100),
                  Text(""), Interval(None, None))
        notes.append(f"{r.orders} cyclic shifts of the options (deterministic; Twinkle Eval "
                     f"shuffles randomly); same option: share of the {r.permutation.n_questions}"
                     " questions answered in every order")
    if r.draws is not None:
        _rows(table, r.draws, "sampled draw", "draws")
        notes.append(f"{r.repeats} sampled draws per question (order 0)")
    table.caption = "; ".join(notes) + ". Each accuracy is micro (every question pooled); " \
        "std: sample standard deviation (n - 1)."
    return [table.build()]


def robustness_cards(results: MCQResults) -> list[Card]:
    """The report's summary: the mean over the orders and over the draws of the micro
    accuracy (every question pooled, as each order's is computed), with their spread."""
    r = results.robustness
    spreads = [] if r is None else [(r.permutation, "option orders"), (r.draws, "sampled draws")]
    return [Card(f"{100 * s.mean:.2f}%", f"mean micro accuracy over {s.n} {what}"
                 + (f" (std {100 * s.std:.2f})" if s.std is not None else ""))
            for s, what in spreads if s is not None and s.mean is not None]


def robustness_metrics(results: MCQResults) -> list[Metric]:
    """The results store's (and the Parquet export's) robustness numbers: ``orders/mean``
    and ``draws/mean`` are means of the micro accuracy."""
    r = results.robustness
    out: list[Metric] = []
    if r is not None and r.permutation is not None:
        p = r.permutation
        out += [(metric("orders", "mean"), p.mean, p.n), (metric("orders", "std"), p.std, p.n),
                (metric("orders", "same_option"), p.same_option, p.n_questions)]
    if r is not None and r.draws is not None:
        d = r.draws
        out += [(metric("draws", "mean"), d.mean, d.n), (metric("draws", "std"), d.std, d.n),
                (metric("draws", "low"), d.low, d.n), (metric("draws", "high"), d.high, d.n)]
    return out
