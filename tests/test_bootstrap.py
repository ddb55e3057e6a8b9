"""helpers.bootstrap against brute force: with three series every resample can be enumerated."""

import itertools

import numpy as np
import pytest

from helpers.bootstrap import bootstrap_series


def exact_distribution(values, statistic):
    """Every one of the S^S equally likely resamples of S series -> sorted statistics."""
    S = len(next(iter(values.values())))
    return np.sort([statistic({k: np.asarray(v, float)[list(idx)] for k, v in values.items()})
                    for idx in itertools.product(range(S), repeat=S)])


@pytest.mark.parametrize("statistic", [
    lambda v: v["a"].mean(),
    lambda v: v["a"].mean() / v["b"].mean() - v["c"].mean() / v["b"].mean(),   # a ratio of means, as OWA
])
def test_draws_follow_the_exact_bootstrap_distribution(statistic):
    values = {"a": [1.0, 2.0, 6.0], "b": [2.0, 1.0, 4.0], "c": [0.5, 3.0, 2.0]}
    exact = exact_distribution(values, statistic)
    out = bootstrap_series(values, statistic, n_boot=20_000, seed=1)
    for x in np.unique(exact):                     # the empirical CDF against the exact one, at every atom
        assert (out["draws"] <= x + 1e-12).mean() == pytest.approx((exact <= x + 1e-12).mean(), abs=0.015)
    assert out["estimate"] == pytest.approx(statistic({k: np.asarray(v) for k, v in values.items()}))
    assert exact.min() <= out["lo"] <= out["hi"] <= exact.max()
    assert out["lo"] == pytest.approx(np.quantile(out["draws"], 0.025))
    assert out["hi"] == pytest.approx(np.quantile(out["draws"], 0.975))


def test_resamples_are_paired_across_the_arrays():
    # b is a + 1 series by series: paired, every resampled gap is exactly -1; unpaired it would vary
    a = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0])
    out = bootstrap_series({"a": a, "b": a + 1}, lambda v: v["a"].mean() - v["b"].mean(), n_boot=500)
    assert np.allclose(out["draws"], -1.0) and out["share_below_zero"] == 1.0
    assert out["lo"] == pytest.approx(-1.0) and out["hi"] == pytest.approx(-1.0)


def test_same_seed_same_interval():
    v = {"a": np.arange(10.0)}
    first, again = (bootstrap_series(v, lambda d: d["a"].mean(), n_boot=300, seed=7) for _ in range(2))
    assert np.array_equal(first["draws"], again["draws"])


def test_bad_input_is_named():
    stat = lambda v: 0.0
    with pytest.raises(ValueError, match="same series"):
        bootstrap_series({"a": [1, 2, 3], "b": [1, 2]}, stat)
    with pytest.raises(ValueError, match="at least 2 series"):
        bootstrap_series({"a": [1.0]}, stat)
    with pytest.raises(ValueError, match="n_boot must be >= 1"):
        bootstrap_series({"a": [1.0, 2.0]}, stat, n_boot=0)
    with pytest.raises(ValueError, match="level"):
        bootstrap_series({"a": [1.0, 2.0]}, stat, level=1.5)
    with pytest.raises(ValueError, match="non-empty dict"):
        bootstrap_series([], stat)


def test_bootstrap_refuses_a_zero_level_and_accepts_a_tiny_one():
    """Before: level 0 returned an 'interval' with lo = hi = the median of the draws."""
    values = {"a": np.arange(5.0)}
    with pytest.raises(ValueError, match=r"level must be a number in \(0, 1\), got 0"):
        bootstrap_series(values, lambda v: v["a"].mean(), 10, 0)
    out = bootstrap_series(values, lambda v: v["a"].mean(), 10, 1e-9)
    assert out["lo"] <= out["hi"]
