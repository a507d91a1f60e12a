"""Confidence intervals of a proportion (accuracy, a refusal or harmful-response rate).

The Wilson score interval (Wilson 1927) inverts the normal test of p instead of centring on
p̂, so it stays inside [0, 1] and is never of zero width: 0 of 3 gives [0, 0.56], 5 of 5 gives
[0.57, 1]. The percentile bootstrap and p̂ ± z·se, which this replaces, collapse to a point when
every answer is the same (0 of 3: "0.00 ±0.00"), claiming certainty a handful of items cannot
give. scipy computes it (``binomtest(...).proportion_ci(method="wilson")``).
"""

from __future__ import annotations

LEVEL = 0.95
NAME = "Wilson score interval"  # how tables and docs name it (95%: LEVEL)


def wilson_interval(successes: int, n: int, level: float = LEVEL) -> tuple[float, float] | None:
    """(low, high) of the Wilson score interval of ``successes`` out of ``n``; None when n is
    0 (no items, no interval)."""
    from scipy.stats import binomtest  # imported when needed: commands start fast

    if n == 0:
        return None
    ci = binomtest(int(successes), int(n)).proportion_ci(confidence_level=level,
                                                         method="wilson")
    return max(0.0, float(ci.low)), min(1.0, float(ci.high))
