"""Seeded percentile bootstrap confidence intervals for any ``metric(y_true, y_score)``.

Items are resampled with replacement B times; the interval is the (alpha/2, 1 - alpha/2)
percentiles of the B metric values, alpha = 1 - level. Resamples where the metric is NaN (e.g.
AUPRC on a resample with one class) are dropped and counted in ``n_valid``.
The paired variant resamples the *same* item indices on both sides, so for a difference such as
EN minus SEA on paired items the item-to-item correlation is kept:
diff_b = metric(a[idx_b]) - metric(b[idx_b]).
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Hashable, Mapping
from typing import ParamSpec, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from ..errors import UndefinedMetricWarning
from .classification import check_binary

Metric = Callable[[np.ndarray, np.ndarray], float]
P = ParamSpec("P")
T = TypeVar("T")
G = TypeVar("G", bound=Hashable)  # a group's key (stratified_bootstrap_ci)


def _interval(values: list[float], estimate: float, level: float, n: int) -> dict[str, float]:
    vals = np.array([v for v in values if not math.isnan(v)])
    alpha = (1 - level) / 2
    low, high = (np.percentile(vals, [100 * alpha, 100 * (1 - alpha)]) if len(vals)
                 else (math.nan, math.nan))
    return {"estimate": estimate, "low": float(low), "high": float(high), "level": level,
            "n_items": n, "n_resamples": len(values), "n_valid": int(len(vals))}


def _quiet(function: Callable[P, T]) -> Callable[P, T]:
    """Resamples often hold one class; NaN there is expected and counted (``n_valid``), not
    warned about once per resample: the estimate's own warning is the caller's."""
    @functools.wraps(function)  # the wrapped function's name, docstring and signature
    def quiet(*args: P.args, **kwargs: P.kwargs) -> T:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            return function(*args, **kwargs)
    return quiet


def _check(n_resamples: int, level: float) -> None:
    if n_resamples < 1:
        raise ValueError("n_resamples must be at least 1")
    if not 0 < level < 1:
        raise ValueError("level must be between 0 and 1, e.g. 0.95")


@_quiet
def bootstrap_ci(metric: Metric, y_true: ArrayLike, y_score: ArrayLike,
                 n_resamples: int = 1000, seed: int = 0,
                 level: float = 0.95) -> dict[str, float]:
    """Percentile bootstrap CI of ``metric`` over items.

    Returns ``estimate`` (the metric on all items), ``low``, ``high``, ``level``, ``n_items``,
    ``n_resamples`` and ``n_valid``. Same seed, same interval.
    """
    _check(n_resamples, level)
    t, s = check_binary(y_true, y_score)
    rng = np.random.default_rng(seed)
    values: list[float] = []
    for _ in range(n_resamples):
        idx = rng.integers(0, len(t), len(t))
        values.append(float(metric(t[idx], s[idx])))
    return _interval(values, float(metric(t, s)), level, len(t))


@_quiet
def paired_bootstrap_ci(metric: Metric, a_true: ArrayLike, a_score: ArrayLike,
                        b_true: ArrayLike, b_score: ArrayLike, n_resamples: int = 1000,
                        seed: int = 0, level: float = 0.95) -> dict[str, float]:
    """Percentile bootstrap CI of ``metric(a) - metric(b)`` where ``a[i]`` and ``b[i]`` are
    the same item (e.g. its English and its Thai version). Same keys as :func:`bootstrap_ci`.
    """
    _check(n_resamples, level)
    at, as_ = check_binary(a_true, a_score)
    bt, bs = check_binary(b_true, b_score)
    if len(at) != len(bt):
        raise ValueError(f"paired inputs differ in length: {len(at)} and {len(bt)} items")
    rng = np.random.default_rng(seed)
    values: list[float] = []
    for _ in range(n_resamples):
        idx = rng.integers(0, len(at), len(at))
        values.append(float(metric(at[idx], as_[idx]) - metric(bt[idx], bs[idx])))
    return _interval(values, float(metric(at, as_) - metric(bt, bs)), level, len(at))


@_quiet
def stratified_bootstrap_ci(metric: Metric, groups: Mapping[G, tuple[np.ndarray, np.ndarray]],
                            combine: Callable[[dict[G, float]], Mapping[str, float]],
                            n_resamples: int = 1000, seed: int = 0,
                            level: float = 0.95) -> dict[str, tuple[float, float]]:
    """Percentile CIs of statistics built from a metric on several groups of items at once.

    Each resample draws items with replacement within every group (in the mapping's order, so
    the same seed gives the same draws), computes ``metric`` per group, and ``combine`` turns
    those values into named statistics (e.g. a mean over languages, an average of cells), so a
    statistic's interval reflects the joint variability of the groups it is built from.
    Returns name -> (low, high) for each statistic with at least one defined (non-NaN) value.
    """
    _check(n_resamples, level)
    rng = np.random.default_rng(seed)
    draws: dict[str, list[float]] = {}
    for _ in range(n_resamples):
        by_group: dict[G, float] = {}
        for key, (t, s) in groups.items():
            idx = rng.integers(0, len(t), len(t))
            by_group[key] = float(metric(t[idx], s[idx])) if len(t) else math.nan
        for name, value in combine(by_group).items():
            draws.setdefault(name, []).append(value)
    alpha = (1 - level) / 2
    out: dict[str, tuple[float, float]] = {}
    for name, values in draws.items():
        ok = np.array([v for v in values if not math.isnan(v)])
        if len(ok):
            low, high = np.percentile(ok, [100 * alpha, 100 * (1 - alpha)])
            out[name] = (float(low), float(high))
    return out
