"""Confidence intervals of a proportion (accuracy, a refusal or harmful-response rate).

The Wilson score interval (Wilson 1927) inverts the normal test of p instead of centring on
p̂, so it stays inside [0, 1] and is never of zero width: 0 of 3 gives [0, 0.56], 5 of 5 gives
[0.57, 1]. The percentile bootstrap and p̂ ± z·se, which this replaces, collapse to a point when
every answer is the same (0 of 3: "0.00 ±0.00"), claiming certainty a handful of items cannot
give.

It is scipy's ``binomtest(k, n).proportion_ci(method="wilson")``, computed here at the 95%
level with scipy's own operations in scipy's order (scipy/stats/_binomtest.py,
``_binom_wilson_conf_int``, Newcombe 1998), so the numbers are the same to the last bit
(tests/test_intervals.py checks every k of every n up to 600): importing scipy.stats costs a
run 0.3-0.6 s of start-up. Other levels ask scipy.
"""

from __future__ import annotations

import math

LEVEL = 0.95
NAME = "Wilson score interval"  # how tables and docs name it (95%: LEVEL)
Z95 = 1.959963984540054  # scipy.special.ndtri(0.5 + 0.5 * 0.95), the normal's 97.5th percentile


def wilson_interval(successes: int, n: int, level: float = LEVEL) -> tuple[float, float] | None:
    """(low, high) of the Wilson score interval of ``successes`` out of ``n``; None when n is
    0 (no items, no interval)."""
    if n == 0:
        return None
    k, n = int(successes), int(n)
    if level != LEVEL or not 0 <= k <= n:  # scipy's levels and its checks of k and n
        return _scipy_wilson(k, n, level)
    p = k / n
    denom = 2 * (n + Z95**2)
    center = (2 * n * p + Z95**2) / denom
    delta = Z95 / denom * math.sqrt(4 * n * p * (1 - p) + Z95**2)
    low = 0.0 if k == 0 else center - delta
    high = 1.0 if k == n else center + delta
    return max(0.0, float(low)), min(1.0, float(high))


def _scipy_wilson(k: int, n: int, level: float) -> tuple[float, float]:
    from scipy.stats import binomtest  # imported when needed: commands start fast

    ci = binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
    return max(0.0, float(ci.low)), min(1.0, float(ci.high))
