"""The bootstrap over series: how much a score computed from a set of series moves with that set.

- ``bootstrap_series``   resample series with replacement, recompute a statistic, return its percentile interval

A forecasting benchmark scores each method on the same series, so a gap between two methods is
best judged *paired*: each resample draws one set of series and both methods are scored on it.
Any statistic of the per-series values works, including ratios of means such as OWA, which is not
an average over series and so has no simple standard error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from .checks import check_int, check_prob

__all__ = ["bootstrap_series"]


def bootstrap_series(values: Mapping[str, np.ndarray], statistic: Callable[[Mapping[str, np.ndarray]], float],
                     n_boot: int = 10_000, level: float = 0.95, seed: int = 0) -> dict:
    """Percentile bootstrap of ``statistic`` over series.

    Args:
        values: name -> per-series array ``(S,)``, every array over the same S series in the same order
            (e.g. ``{"mase_a": ..., "mase_b": ...}``); a resample picks the same series from each.
        statistic: maps such a dict to a number (e.g. ``lambda v: v["mase_a"].mean() - v["mase_b"].mean()``).
        n_boot: resamples; level: the interval's coverage; seed: of the resampling.

    Returns:
        ``{"estimate": statistic(values), "lo", "hi": the (1 - level)/2 and (1 + level)/2 quantiles of the
        resampled statistics, "draws": (n_boot,) array, "share_below_zero": fraction of draws < 0}``.
    """
    _check(values, n_boot, level)
    arrays = {k: np.asarray(v, dtype=float) for k, v in values.items()}
    S = len(next(iter(arrays.values())))
    rng = np.random.default_rng(seed)
    draws = np.empty(n_boot)
    for i in range(n_boot):
        idx = rng.integers(0, S, size=S)                          # S series drawn with replacement
        draws[i] = statistic({k: v[idx] for k, v in arrays.items()})
    lo, hi = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2])
    return {"estimate": float(statistic(arrays)), "lo": float(lo), "hi": float(hi), "draws": draws,
            "share_below_zero": float((draws < 0).mean())}


def _check(values, n_boot, level) -> None:
    if not isinstance(values, Mapping) or not values:
        raise ValueError(f"values must be a non-empty dict of per-series arrays, got {type(values).__name__}")
    lengths = {k: np.shape(v) for k, v in values.items()}
    if any(len(s) != 1 for s in lengths.values()) or len({s[0] for s in lengths.values()}) != 1:
        raise ValueError(f"every array of values must be 1-D over the same series, got shapes {lengths}")
    if next(iter(lengths.values()))[0] < 2:
        raise ValueError("values must cover at least 2 series to resample them")
    check_int("n_boot", n_boot, 1)
    check_prob("level", level)
    if level == 0:
        raise ValueError("level must be a number in (0, 1), got 0: an interval of coverage 0 is a single point")
