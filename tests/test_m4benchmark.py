"""helpers.m4benchmark: origins, alignment of statsforecast's output with our series order,
and M4's OWA bookkeeping."""

import numpy as np
import pandas as pd
import pytest

from helpers import m4benchmark as bench
from helpers.forecasting import naive2


@pytest.fixture(scope="module")
def few():
    ids, hist, test = bench.load_series()
    pick = [0, 1, 2, 200, 413]  # both series lengths (700 and 960) occur
    return [ids[i] for i in pick], [hist[i] for i in pick], test[pick]


def test_load_series_orders_ids_numerically(few):
    ids, hist, test = bench.load_series()
    assert len(ids) == 414 and ids[:3] == ["H1", "H2", "H3"] and test.shape == (414, 48)
    assert {len(y) for y in hist} == {700, 960}


def test_split_at_cuts_origins_back_from_the_end(few):
    _, hist, test = few
    h, a = bench.split_at(hist, test, 96)
    for full, cut, actual in zip(hist, h, a):
        assert len(cut) == len(full) - 96
        np.testing.assert_array_equal(actual, full[len(full) - 96: len(full) - 48])
    h0, a0 = bench.split_at(hist, test, 0)
    assert h0 is hist and a0 is test


def test_statsforecast_output_is_aligned_with_our_series_and_origins(few):
    ids, hist, test = few
    config = dict(bench.HEAVY_RUN, classical=["Naive", "SeasonalNaive", "Naive2"], n_jobs=1)
    forecasts, seconds = bench.classical_forecasts(ids, hist, test, config, log=lambda *_: None)
    assert set(seconds) == {"Naive", "SeasonalNaive", "Naive2"}
    for o, back in enumerate(bench.ORIGINS.values()):
        cut, _ = bench.split_at(hist, test, back)
        for s, y in enumerate(cut):
            np.testing.assert_allclose(forecasts["Naive"][o, s], np.full(48, y[-1]))
            np.testing.assert_allclose(forecasts["SeasonalNaive"][o, s], np.tile(y[-24:], 2))
            np.testing.assert_allclose(forecasts["Naive2"][o, s], naive2(y, 48, 24))


def test_summary_scores_naive2_at_owa_one_and_others_relative_to_it():
    per = pd.DataFrame({
        "method": ["Naive2", "Naive2", "X", "X"], "origin": ["test"] * 4, "series": [0, 1, 0, 1],
        "MASE": [2.0, 4.0, 1.0, 1.0], "sMAPE": [10.0, 30.0, 5.0, 15.0]})
    table = bench.summary(per).set_index("method")
    assert table.loc["Naive2", "OWA"] == pytest.approx(1.0)
    assert table.loc["X", "OWA"] == pytest.approx(0.5 * (10 / 20 + 1 / 3))
    assert table.loc["Naive2", "MASE_median"] == pytest.approx(3.0)
    with pytest.raises(ValueError, match="Naive2"):
        bench.summary(per[per.method == "X"])


def test_scores_refuse_mismatched_shapes(few):
    _, hist, test = few
    with pytest.raises(ValueError, match="same shape"):
        bench.scores(test[:, :24], hist, test)


def test_origin_table_is_owa_against_naive2_at_each_origin(few):
    from helpers.forecasting import owa

    ids, hist, test = few
    config = dict(bench.HEAVY_RUN, classical=["SeasonalNaive", "Naive2"], n_jobs=1)
    fc, _ = bench.classical_forecasts(ids, hist, test, config, log=lambda *_: None)
    table = bench.origin_table(fc["SeasonalNaive"], fc["Naive2"], hist, test, bench.ORIGINS)
    assert list(table.index) == list(bench.ORIGINS)
    for o, (name, back) in enumerate(bench.ORIGINS.items()):
        h, actual = bench.split_at(hist, test, back)
        a, b = bench.scores(fc["SeasonalNaive"][o], h, actual).mean(), bench.scores(fc["Naive2"][o], h, actual).mean()
        assert table.loc[name, "OWA"] == pytest.approx(owa(a["sMAPE"], a["MASE"], b["sMAPE"], b["MASE"]))
    itself = bench.origin_table(fc["Naive2"], fc["Naive2"], hist, test, bench.ORIGINS)["OWA"].to_numpy()
    assert itself == pytest.approx(np.ones(len(bench.ORIGINS))), "Naive2 against itself scores 1 at every origin"


def test_candidates_seeds_and_names():
    ens = bench.candidates(bench.ENSEMBLE)
    assert len(ens) == 1 and len(ens[0]) == 4, "N-BEATS has one candidate: the ensemble of four"
    gru = bench.candidates("GRU")
    assert [c.model for c in gru] == ["gru"] * 3
    again = bench.seeded(gru[0], 2)
    assert again.seed == gru[0].seed + 200 and again.scaling == gru[0].scaling
    assert [c.seed for c in bench.seeded(ens[0], 1)] == [c.seed + 100 for c in ens[0]]
    assert bench.describe(gru[0]).startswith("seasonal / mase") and bench.describe(ens[0]).startswith("median of 4")
    with pytest.raises(ValueError, match="family must be one of"):
        bench.candidates("ARIMA")


@pytest.mark.parametrize("back, message", [
    (30, r"back must be 0 \(the test window\) or from 48 to 699, got 30: the origin must lie at least 48 hours"),
    (700, r"back must be 0 \(the test window\) or from 48 to 699, got 700"),
    (-5, r"back must be >= 0, got -5"),
    (2.5, r"back must be an integer, got 2.5"),
])
def test_split_at_refuses_an_origin_without_48_actual_values_or_without_history(few, back, message):
    """back in 1..47 gave fewer than 48 actual values, and back >= the shortest history (700) a wrapped one."""
    _, hist, test = few
    with pytest.raises(ValueError, match=message):
        bench.split_at(hist, test, back)


def test_split_at_accepts_the_edges_of_its_range(few):
    _, hist, test = few
    for back in (48, 699, np.int64(48)):
        h, a = bench.split_at(hist, test, back)
        assert a.shape == (len(hist), 48) and min(len(y) for y in h) == 700 - back


@pytest.mark.parametrize("histories, rows, back, message", [
    ([], 0, 96, r"histories must hold at least one series \(a list of 1-D arrays\), got an empty list"),
    ([], 0, 0, r"histories must hold at least one series"),
    ([np.arange(800.0)] * 2, 3, 0, r"test must hold one row of 48 values per series: 2 histories, test has shape \(3, 48\)"),
    ([np.arange(40.0)], 1, 96, r"every history must be longer than 48 values to move the origin back \(back=96\); "
                               r"the shortest has 40"),
])
def test_split_at_refuses_empty_or_mismatched_histories(histories, rows, back, message):
    """Before: an empty list raised 'min() arg is an empty sequence' (back > 0) or returned two empty results
    (back = 0); a test of the wrong length came back unchecked; a 40-value history was told 'from 48 to 39'."""
    with pytest.raises(ValueError, match=message):
        bench.split_at(histories, np.zeros((rows, 48)), back)


def test_split_at_accepts_one_series_just_long_enough():
    y = np.arange(49.0)
    h, a = bench.split_at([y], np.zeros((1, 48)), 48)
    assert len(h[0]) == 1 and a.shape == (1, 48)
    assert bench.split_at([y], np.ones((1, 48)), 0)[1].shape == (1, 48)
