"""Paired significance for two systems on the same items."""

from __future__ import annotations


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p-value: of the items the two systems disagree on, ``a_only``
    were right for A alone and ``b_only`` for B alone; under "no difference" each disagreement
    goes either way with probability 1/2 (a binomial test, scipy's ``binomtest``). 1.0 when
    they never disagree."""
    from scipy.stats import binomtest

    n = a_only + b_only
    return 1.0 if n == 0 else float(binomtest(a_only, n, 0.5).pvalue)
