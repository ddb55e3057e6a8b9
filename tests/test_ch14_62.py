"""§14.62: the claims its prose makes, asserted on the values its notebook glued."""

import numpy as np
import pytest

from helpers.data import load_m4_hourly

STEM = "14_62_forecasting_as_sequence_modelling"
C, H, M = 168, 48, 24  # the section's context, M4's horizon and seasonality


@pytest.fixture(scope="module")
def histories():
    train = load_m4_hourly("train")
    return [grp["y"].to_numpy() for _, grp in train.groupby("unique_id", sort=False)]


def test_window_count_formula(g):
    assert g["n_h1"] == 700, "M4 Hourly's H1 has 700 training hours"
    assert g["n_windows_h1"] == g["n_windows_formula"] == g["n_h1"] - C - H + 1


def test_per_window_scaling_brings_series_to_one_scale(g, histories):
    # oracle: the same statistics computed here from the raw data
    levels = np.array([y.mean() for y in histories])
    assert g["level_ratio"] == pytest.approx(levels.max() / levels.min(), rel=1e-9)
    assert g["level_ratio"] > 100, "series levels differ by orders of magnitude"
    ctx = np.vstack([np.lib.stride_tricks.sliding_window_view(y, C + H)[::48, :C] for y in histories])
    z = (ctx - ctx.mean(axis=1, keepdims=True)) / ctx.std(axis=1, keepdims=True)
    assert g["scaled_abs_p99"] == pytest.approx(np.quantile(np.abs(z), g["scaled_quantile"]), rel=1e-9)
    assert g["scaled_abs_p99"] < 5, "after scaling, values are of order one"


def test_rolling_origins_are_m4s(g):
    assert g["origins_back"] == "n-144, n-96, n-48"
    assert (g["origin1_back"], g["origin2_back"], g["origin3_back"]) == (144, 96, 48)


def test_seasonal_naive_yardstick_matches_an_independent_computation(g, histories):
    scores = []
    for back in (144, 96, 48):
        for y in histories:
            hist, actual = y[: len(y) - back], y[len(y) - back: len(y) - back + H]
            scale = np.mean(np.abs(hist[M:] - hist[:-M]))
            scores.append(np.mean(np.abs(actual - np.resize(hist[-M:], H))) / scale)
    assert g["mase_seasonal_naive"] == pytest.approx(np.mean(scores), rel=1e-9)


def test_recursive_compounds_errors_direct_does_not_as_much(g):
    assert g["mase_global_recursive"] > 1.3 * g["mase_global_direct"], "a clear gap, not noise"
    assert g["growth_global_recursive"] > 1.3 * g["growth_global_direct"] > 1.3
    assert g["step1_gap"] < 1e-9 * g["step1_error"], "both start from the same one-step model"


def test_local_linear_models_win_and_only_they_beat_seasonal_naive(g):
    snaive = g["mase_seasonal_naive"]
    assert g["mase_local_direct"] < snaive
    assert g["mase_local_direct"] < g["mase_global_direct"] and g["mase_local_direct"] < g["mase_global_recursive"]
    assert g["mase_global_direct"] > snaive and g["mase_global_recursive"] > snaive
    # the shortest series (700 hours) before the first origin (n - 144): many more windows than coefficients
    assert g["min_local_windows"] == 700 - 144 - C - H + 1
    assert g["min_local_windows"] > 2 * g["n_ridge_coefs"]


def test_percentage_errors_fail_where_mase_does_not(g):
    # the 0.2 actual's share of MAPE: 0.5/0.2 against the sum of 0.5/y over y = 4, 0.2, 5, 1
    assert g["mape_small_share"] == pytest.approx(2.5 / (0.125 + 2.5 + 0.1 + 0.5))
    # sMAPE of 100 forecast as 150 and as 50: 200*50/250 and 200*50/150
    assert g["smape_over"] == pytest.approx(40.0) and g["smape_under"] == pytest.approx(200 / 3)
    assert g["smape_under"] > g["smape_over"], "sMAPE penalises under-forecasts, so it rewards leaning high"
    assert g["mase_over"] == g["mase_under"] > 0, "MASE charges both misses alike"
    assert g["mase_scale_diff"] < 1e-12, "MASE is scale-free"


def test_exercise_solutions(g):
    assert g["mase_mean_scaled"] > 1.2 * g["mase_global_direct_last"], "mean scaling is worse than standardising"
    assert g["max_windows_per_test_hour"] == H, "the first test hour is in the horizon of H windows"
    assert g["test_hours_in_contexts"] == 0, "no context reaches into the last origin's test window"
    assert 0.9 * H <= g["leaked_hours"] <= H, "a random split leaks nearly every test hour"


@pytest.fixture(scope="module")
def ridge_strategies(histories):
    """The four strategies at M4's three inner origins, re-implemented here from their description:
    ridge (lambda = 1, intercept) on per-window standardised contexts of C hours; global fits pool
    stride-3 windows of every series, local fits use every window of one series; the recursive model
    is the one-step ridge fed its own forecasts. Returns each strategy's mean MASE over the origins and
    the global models' mean scaled error by step ahead, (H,)."""
    def windows(y, stride):
        cuts = np.lib.stride_tricks.sliding_window_view(y, C + H)[::stride]
        return cuts[:, :C], cuts[:, C:]

    def scaled(X, *others):
        m, s = X.mean(axis=1, keepdims=True), X.std(axis=1, keepdims=True) + 1e-8
        return m, s, [(a - m) / s for a in (X,) + others]

    def ridge(X, Y):
        X1 = np.hstack([X, np.ones((len(X), 1))])
        return np.linalg.solve(X1.T @ X1 + np.eye(C + 1), X1.T @ Y)

    def predict(W, x):
        return np.append(x, 1.0) @ W

    mase = {k: [] for k in ("global direct", "global recursive", "local direct")}
    steps = {k: np.zeros(H) for k in ("global direct", "global recursive")}
    for back in (144, 96, 48):
        hists = [y[: len(y) - back] for y in histories]
        pooled = [scaled(*windows(h, 3))[2] for h in hists]
        X, Y = np.vstack([p[0] for p in pooled]), np.vstack([p[1] for p in pooled])
        W, W1 = ridge(X, Y), ridge(X, Y[:, :1])
        for y, h in zip(histories, hists):
            actual, ctx = y[len(h): len(h) + H], h[-C:]
            m, s, (x,) = scaled(ctx[None])
            window = list(x[0])
            for _ in range(H):
                window.append(predict(W1, np.array(window[-C:]))[0])
            Xl, Yl = windows(h, 1)
            _, _, (Xs, Ys) = scaled(Xl, Yl)
            forecasts = {"global direct": predict(W, x[0]) * s[0, 0] + m[0, 0],
                         "global recursive": np.array(window[C:]) * s[0, 0] + m[0, 0],
                         "local direct": predict(ridge(Xs, Ys), x[0]) * s[0, 0] + m[0, 0]}
            scale = np.mean(np.abs(h[M:] - h[:-M]))
            for k, f in forecasts.items():
                mase[k].append(np.mean(np.abs(actual - f)) / scale)
                if k in steps:
                    steps[k] += np.abs(actual - f) / scale / (3 * len(histories))
    return {k: float(np.mean(v)) for k, v in mase.items()}, steps


def test_strategy_scores_recomputed_independently(g, ridge_strategies):
    # the MASE of each strategy, the shared step-1 error and the error growth the prose shows
    mase, steps = ridge_strategies
    for k, v in mase.items():
        assert g["mase_" + k.replace(" ", "_")] == pytest.approx(v, rel=1e-6), k
    assert g["step1_error"] == pytest.approx(steps["global direct"][0], rel=1e-6)
    assert g["step1_error"] == pytest.approx(steps["global recursive"][0], rel=1e-6)
    n = g["growth_hours"]
    for k, e in steps.items():
        assert g["growth_" + k.replace(" ", "_")] == pytest.approx(e[-n:].mean() / e[:n].mean(), rel=1e-6), k
