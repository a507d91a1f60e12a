"""Inter-annotator agreement over a label table: one row per item, one column per annotator,
``None`` where an annotator gave no label. Maintained implementations where they exist:
Cohen's kappa from scikit-learn, Fleiss' kappa from statsmodels, Krippendorff's alpha from the
``krippendorff`` package (Castro's implementation, tested against Krippendorff's own examples).

- percent agreement: the mean over items with at least two labels of the share of annotator
  pairs that agree (for two annotators: the share of items where they agree), in [0, 1];
- Cohen's kappa: two annotators, on the items both labelled;
- Fleiss' kappa: the items every annotator labelled;
- Krippendorff's alpha: every item with at least two labels (missing values are native to it);
  ``level`` nominal, or ordinal when the labels have an order (``order``, low to high).
NaN where a coefficient is undefined (e.g. one label only: no chance-corrected agreement).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations
from typing import Any

import numpy as np

Table = Sequence[Sequence[str | None]]


def percent_agreement(table: Table) -> float:
    shares = []
    for row in table:
        given = [x for x in row if x is not None]
        pairs = list(combinations(given, 2))
        if pairs:
            shares.append(sum(a == b for a, b in pairs) / len(pairs))
    return float(np.mean(shares)) if shares else math.nan


def cohen_kappa(table: Table) -> float:
    """Two annotators only; NaN for more or when fewer than two items are shared."""
    from sklearn.metrics import cohen_kappa_score

    if not table or len(table[0]) != 2:
        return math.nan
    pairs = [(a, b) for a, b in table if a is not None and b is not None]
    if len(pairs) < 2 or len({x for p in pairs for x in p}) < 2:
        return math.nan
    a, b = zip(*pairs, strict=True)
    return float(cohen_kappa_score(a, b))


def fleiss_kappa(table: Table, labels: Sequence[str]) -> float:
    from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss

    complete = [row for row in table if all(x is not None for x in row)]
    if len(complete) < 2 or len(labels) < 2:
        return math.nan
    counts = np.array([[row.count(label) for label in labels] for row in complete])
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(statsmodels_fleiss(counts, method="fleiss"))


def krippendorff_alpha(table: Table, labels: Sequence[str], ordinal: bool = False) -> float:
    import krippendorff

    index = {label: i for i, label in enumerate(labels)}
    # krippendorff wants annotators x items, NaN for missing
    data = np.array([[index[x] if x is not None else np.nan for x in row] for row in table],
                    dtype=float).T
    if (np.sum(~np.isnan(data), axis=0) >= 2).sum() < 1 or len(labels) < 2:
        return math.nan
    try:
        return float(krippendorff.alpha(reliability_data=data,
                                        level_of_measurement="ordinal" if ordinal else "nominal",
                                        value_domain=list(range(len(labels)))))
    except ValueError:  # one value only in the data: undefined
        return math.nan


def agreement(table: Table, labels: Sequence[str], ordinal: bool = False) -> dict[str, Any]:
    """Every coefficient at once, the keys of ``localeval agreement --json``."""
    return {
        "n_items": len(table),
        "n_annotators": len(table[0]) if table else 0,
        "percent_agreement": percent_agreement(table),
        "cohen_kappa": cohen_kappa(table),
        "fleiss_kappa": fleiss_kappa(table, labels),
        "krippendorff_alpha": krippendorff_alpha(table, labels, ordinal),
        "level": "ordinal" if ordinal else "nominal",
        "labels": list(labels),
    }
