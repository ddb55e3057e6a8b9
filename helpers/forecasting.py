"""Forecast evaluation as the M4 competition does it: MASE, sMAPE, OWA, and M4's Naive2 benchmark.

Also the rolling-origin (expanding-window) split used to validate forecasters inside the
training data.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from .checks import check_int


def _as_1d(name: str, values) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array, got shape {array.shape}")
    return array


def _same_length(y_true: np.ndarray, y_pred: np.ndarray) -> None:
    if y_true.shape != y_pred.shape:
        raise ValueError(f"y_true and y_pred must have the same length, got {y_true.size} and {y_pred.size}")


def mase(y_true, y_pred, y_insample, m: int = 1) -> float:
    """Mean absolute scaled error of one forecast.

    The mean |y_true - y_pred| over the horizon, divided by the in-sample MAE of the
    seasonal naive forecast with lag ``m`` (``mean |y_t - y_{t-m}|`` over the history).
    Raises ``ValueError`` if the history is not longer than ``m`` or is exactly
    ``m``-periodic (zero scale), since MASE is then undefined.
    """
    y_true, y_pred, y_insample = _as_1d("y_true", y_true), _as_1d("y_pred", y_pred), _as_1d("y_insample", y_insample)
    _same_length(y_true, y_pred)
    if not isinstance(m, (int, np.integer)) or m < 1:
        raise ValueError(f"m (the seasonal lag) must be a positive integer, got {m!r}")
    if len(y_insample) <= m:
        raise ValueError(
            f"y_insample has {len(y_insample)} values, which is not longer than m={m}: the series is too "
            "short for a seasonal-naive scale; use a smaller m or a longer history"
        )
    scale = np.mean(np.abs(y_insample[m:] - y_insample[:-m]))
    if scale == 0:
        raise ValueError(
            f"the series' in-sample seasonal-naive error with lag m={m} is zero (it repeats exactly "
            "every m steps), so MASE is undefined; evaluate it with another metric"
        )
    return float(np.mean(np.abs(y_true - y_pred)) / scale)


def smape(y_true, y_pred) -> float:
    """Symmetric MAPE in percent, as M4 defines it: mean of 200 |y - f| / (|y| + |f|)."""
    y_true, y_pred = _as_1d("y_true", y_true), _as_1d("y_pred", y_pred)
    _same_length(y_true, y_pred)
    denom = np.abs(y_true) + np.abs(y_pred)
    if np.any(denom == 0):
        raise ValueError("sMAPE is undefined where both y_true and y_pred are 0")
    return float(np.mean(200.0 * np.abs(y_true - y_pred) / denom))


def owa(smape_mean: float, mase_mean: float, naive2_smape_mean: float, naive2_mase_mean: float) -> float:
    """M4's overall weighted average: the mean of sMAPE and MASE, each relative to Naive2's.

    All four arguments are *averages over series* (M4 computes OWA from the averages, not
    per series). Naive2 itself scores exactly 1.
    """
    if naive2_smape_mean <= 0 or naive2_mase_mean <= 0:
        raise ValueError("Naive2's mean sMAPE and MASE must be positive")
    return 0.5 * (smape_mean / naive2_smape_mean + mase_mean / naive2_mase_mean)


def rolling_origin(n: int, horizon: int, n_windows: int, step: int | None = None
                   ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Expanding-window evaluation splits of a series of length ``n``.

    Yields ``(train_idx, test_idx)`` for ``n_windows`` forecast origins, earliest first.
    Each test window holds ``horizon`` consecutive indices; the last one ends at ``n - 1``;
    consecutive origins are ``step`` apart (default ``horizon``, i.e. non-overlapping
    windows); each training set is everything before its test window.
    """
    step = horizon if step is None else step
    for name, value in (("n", n), ("horizon", horizon), ("n_windows", n_windows), ("step", step)):
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    first_origin = n - horizon - (n_windows - 1) * step
    if first_origin < 1:
        raise ValueError(
            f"n={n} is too short for {n_windows} windows of horizon {horizon} spaced {step} apart: the "
            f"first origin would be {first_origin}, leaving no training data; use fewer windows or a smaller step"
        )
    for w in range(n_windows):
        origin = first_origin + w * step
        yield np.arange(origin), np.arange(origin, origin + horizon)


def seasonality_test(y, m: int) -> bool:
    """M4's 90% test for seasonality at lag ``m``.

    Seasonal when |acf(m)| > 1.645 sqrt((1 + 2 sum_{k<m} acf(k)^2) / n), the ACF's
    large-lag standard error; a series shorter than 3m is never called seasonal, nor is any series at
    ``m = 1`` (``m`` must be an integer >= 1).
    """
    check_int("m", m, 1)
    y = _as_1d("y", y)
    if m < 2 or len(y) < 3 * m:
        return False
    centred = y - y.mean()
    denom = np.dot(centred, centred)
    acf = np.array([np.dot(centred[: len(y) - k], centred[k:]) / denom for k in range(1, m + 1)])
    limit = 1.645 * np.sqrt((1 + 2 * np.sum(acf[: m - 1] ** 2)) / len(y))
    return bool(abs(acf[m - 1]) > limit)


def seasonal_indices(y, m: int) -> np.ndarray:
    """Classical multiplicative decomposition's seasonal indices, shape ``(m,)``, mean 1.

    Index ``i`` belongs to positions ``t`` with ``t % m == i`` (t counted from 0). The trend is
    the centred moving average (2 x m for even m); the indices are the per-position means of
    y / trend, rescaled to average 1.
    """
    check_int("m", m, 2)
    y = _as_1d("y", y)
    if m < 2 or len(y) < 2 * m:
        raise ValueError(f"need m >= 2 and at least 2m values, got m={m}, {len(y)} values")
    kernel = np.ones(m) / m
    if m % 2 == 0:
        kernel = np.convolve(kernel, [0.5, 0.5])  # 2 x m centred moving average
    half = len(kernel) // 2
    trend = np.full(len(y), np.nan)
    trend[half: len(y) - half] = np.convolve(y, kernel, mode="valid")
    ratios = y / trend
    idx = np.array([np.nanmean(ratios[i::m]) for i in range(m)])
    return idx / idx.mean()


def naive2(y, horizon: int, m: int) -> np.ndarray:
    """M4's Naive2 benchmark: the naive forecast of the seasonally adjusted series, reseasonalised.

    If ``seasonality_test`` finds seasonality at lag ``m``, divide by the classical
    multiplicative seasonal indices, repeat the last adjusted value, and multiply the
    future positions' indices back in; otherwise it is the plain naive forecast.
    Returns an array of shape ``(horizon,)``; ``horizon`` and the seasonal period ``m`` must be integers
    >= 1 (``m = 1``: no seasonality, the plain naive forecast).
    """
    check_int("horizon", horizon, 1)
    check_int("m", m, 1)
    y = _as_1d("y", y)
    if not seasonality_test(y, m):
        return np.full(horizon, y[-1])
    si = seasonal_indices(y, m)
    n = len(y)
    last_adjusted = y[-1] / si[(n - 1) % m]
    return last_adjusted * si[np.arange(n, n + horizon) % m]
