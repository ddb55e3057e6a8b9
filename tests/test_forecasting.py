"""helpers.forecasting against closed forms, statsmodels, and M4's published Hourly figures."""

import numpy as np
import pytest

from helpers import forecasting as fc
from helpers.data import M4_HOURLY_HORIZON, M4_HOURLY_SEASONALITY, load_m4_hourly


def test_mase_closed_form():
    history = np.array([1.0, 3.0, 2.0, 5.0])  # lag-1 naive errors 2, 1, 3 -> scale 2
    assert fc.mase([4.0, 6.0], [5.0, 5.0], history, m=1) == pytest.approx(0.5)
    # lag-2 errors |2-1|, |5-3| -> scale 1.5
    assert fc.mase([4.0, 6.0], [5.0, 5.0], history, m=2) == pytest.approx(1 / 1.5)


def test_mase_errors_name_the_problem():
    with pytest.raises(ValueError, match="not longer than m=24"):
        fc.mase([1.0], [1.0], np.arange(24.0), m=24)
    with pytest.raises(ValueError, match="repeats exactly every m steps"):
        fc.mase([1.0], [1.0], np.tile([1.0, 2.0], 10), m=2)
    with pytest.raises(ValueError, match="same length"):
        fc.mase([1.0, 2.0], [1.0], np.arange(5.0))
    with pytest.raises(ValueError, match="m \\(the seasonal lag\\)"):
        fc.mase([1.0], [1.0], np.arange(5.0), m=0)


def test_smape_is_m4s_definition():
    assert fc.smape([100.0, 50.0], [110.0, 50.0]) == pytest.approx(np.mean([200 * 10 / 210, 0.0]))
    assert fc.smape([1.0], [-1.0]) == pytest.approx(200.0)  # the bound
    with pytest.raises(ValueError, match="both y_true and y_pred are 0"):
        fc.smape([0.0], [0.0])


def test_owa_of_naive2_is_one():
    assert fc.owa(18.0, 2.0, 18.0, 2.0) == 1.0
    assert fc.owa(9.0, 2.0, 18.0, 2.0) == pytest.approx(0.75)


def test_rolling_origin_windows():
    splits = list(fc.rolling_origin(n=200, horizon=48, n_windows=3))
    assert [len(tr) for tr, _ in splits] == [56, 104, 152]
    assert splits[-1][1][-1] == 199
    for train_idx, test_idx in splits:
        assert len(test_idx) == 48 and train_idx[-1] + 1 == test_idx[0] and train_idx[0] == 0
    overlapping = list(fc.rolling_origin(n=100, horizon=10, n_windows=4, step=5))
    assert [te[0] for _, te in overlapping] == [75, 80, 85, 90]


def test_rolling_origin_refuses_windows_without_training_data():
    with pytest.raises(ValueError, match="leaving no training data"):
        list(fc.rolling_origin(n=100, horizon=48, n_windows=3))
    with pytest.raises(ValueError, match="horizon must be a positive integer"):
        list(fc.rolling_origin(n=100, horizon=0, n_windows=1))


def test_seasonal_indices_match_statsmodels_classical_decomposition():
    from statsmodels.tsa.seasonal import seasonal_decompose

    rng = np.random.default_rng(0)
    t = np.arange(24 * 20)
    y = (100 + t * 0.1) * (1 + 0.3 * np.sin(2 * np.pi * t / 24)) * rng.uniform(0.95, 1.05, t.size)
    ours = fc.seasonal_indices(y, 24)
    theirs = seasonal_decompose(y, model="multiplicative", period=24).seasonal[:24]
    np.testing.assert_allclose(ours, theirs, rtol=1e-10)


def test_naive2_is_naive_without_seasonality_and_reseasonalises_with_it():
    rng = np.random.default_rng(1)
    noise = rng.normal(size=200).cumsum() + 50
    assert not fc.seasonality_test(noise, 24)
    np.testing.assert_array_equal(fc.naive2(noise, 5, 24), np.full(5, noise[-1]))
    t = np.arange(24 * 10)
    seasonal = 10 * (1 + 0.5 * np.sin(2 * np.pi * t / 24))
    assert fc.seasonality_test(seasonal, 24)
    # a purely seasonal series is continued exactly
    t_future = np.arange(t.size, t.size + 48)
    np.testing.assert_allclose(fc.naive2(seasonal, 48, 24), 10 * (1 + 0.5 * np.sin(2 * np.pi * t_future / 24)), rtol=1e-9)


def test_m4_hourly_benchmarks_reproduce_the_published_figures():
    """The correctness anchor: data handling + metrics reproduce M4's Hourly table to 3 decimals."""
    from statsforecast import StatsForecast
    from statsforecast.models import Naive, SeasonalNaive

    train, test = load_m4_hourly("train"), load_m4_hourly("test")
    h, m = M4_HOURLY_HORIZON, M4_HOURLY_SEASONALITY
    forecasts = StatsForecast(models=[Naive(), SeasonalNaive(season_length=m)], freq=1, n_jobs=1).forecast(df=train, h=h)
    history = {k: g["y"].to_numpy() for k, g in train.groupby("unique_id", sort=False)}
    actual = {k: g["y"].to_numpy() for k, g in test.groupby("unique_id", sort=False)}
    predicted = {
        "Naive": {k: g["Naive"].to_numpy() for k, g in forecasts.groupby("unique_id", sort=False)},
        "SeasonalNaive": {k: g["SeasonalNaive"].to_numpy() for k, g in forecasts.groupby("unique_id", sort=False)},
        "Naive2": {k: fc.naive2(y, h, m) for k, y in history.items()},
    }
    published = {"Naive": (11.608, 43.003), "SeasonalNaive": (1.193, 13.912), "Naive2": (2.395, 18.383)}
    for method, (pub_mase, pub_smape) in published.items():
        mases = [fc.mase(actual[k], predicted[method][k], history[k], m) for k in history]
        smapes = [fc.smape(actual[k], predicted[method][k]) for k in history]
        assert len(mases) == 414
        assert round(np.mean(mases), 3) == pub_mase, method
        assert round(np.mean(smapes), 3) == pub_smape, method


def test_naive2_refuses_a_horizon_below_one_and_accepts_one():
    """Before, horizon=-2 gave numpy's "negative dimensions are not allowed" or, seasonal, an empty forecast."""
    t = np.arange(24 * 10)
    seasonal, flat = 10 * (1 + 0.5 * np.sin(2 * np.pi * t / 24)), np.arange(10.0)
    for y in (seasonal, flat):
        for bad in (-2, 0):
            with pytest.raises(ValueError, match=f"horizon must be >= 1, got {bad}"):
                fc.naive2(y, bad, 24)
        assert fc.naive2(y, 1, 24).shape == (1,)
    with pytest.raises(ValueError, match="horizon must be an integer, got 1.5"):
        fc.naive2(flat, 1.5, 24)


@pytest.mark.parametrize("m, message", [
    (0, r"m must be >= 1, got 0"), (-24, r"m must be >= 1, got -24"),
    (2.5, r"m must be an integer, got 2.5 \(float\)"), (24.0, r"m must be an integer, got 24.0 \(float\)"),
    (True, r"m must be an integer, got True \(bool\)"),
])
def test_naive2_refuses_a_seasonal_period_that_is_not_a_positive_integer(m, message):
    """Before: m = 0 or -24 silently gave the plain naive forecast, 2.5 or 24.0 a TypeError from range()."""
    y = np.sin(np.arange(200) * 2 * np.pi / 24) + 3
    with pytest.raises(ValueError, match=message):
        fc.naive2(y, 48, m)
    with pytest.raises(ValueError, match=message):
        fc.seasonality_test(y, m)


def test_naive2_accepts_m_one_as_no_seasonality():
    y = np.sin(np.arange(200) * 2 * np.pi / 24) + 3
    np.testing.assert_array_equal(fc.naive2(y, 3, 1), np.full(3, y[-1]))
    assert fc.seasonality_test(y, 1) is False and fc.seasonality_test(y, np.int64(24))


def test_seasonal_indices_refuse_a_non_integer_period_and_accept_two():
    y = np.arange(1.0, 21.0)
    with pytest.raises(ValueError, match=r"m must be an integer, got 2.5 \(float\)"):
        fc.seasonal_indices(y, 2.5)
    with pytest.raises(ValueError, match=r"m must be >= 2, got 1"):
        fc.seasonal_indices(y, 1)
    assert fc.seasonal_indices(y, 2).shape == (2,)
