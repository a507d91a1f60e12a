"""Mean, standard deviation and a 95% interval of a few numbers: one accuracy per option order
or per sampled run (SEA-HELM reports the mean over its runs)."""

from __future__ import annotations

import math


def mean_std_interval(values: list[float], level: float = 0.95) -> dict[str, float | None]:
    """``mean``, ``std`` (sample standard deviation, n - 1: the runs are a sample of the runs
    one could make) and ``low``/``high``: Student's t interval of the mean (None with fewer
    than two values), cut to [0, 1]. The values are accuracies, so their mean lies in [0, 1]:
    the part of the symmetric t interval outside it holds no mean it could be (four orders at
    0, 67, 33 and 0% gave -25.8 to 75.8%), and cutting it off loses no coverage."""
    n = len(values)
    if n == 0:
        return {"mean": None, "std": None, "low": None, "high": None, "n": 0}
    mean = sum(values) / n
    if n < 2:
        return {"mean": mean, "std": None, "low": None, "high": None, "n": 1}
    from scipy import stats  # not at import: the command line starts without scipy

    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = float(stats.t.ppf((1 + level) / 2, n - 1)) * std / math.sqrt(n)
    return {"mean": mean, "std": std, "low": max(0.0, mean - half), "high": min(1.0, mean + half),
            "n": n}
