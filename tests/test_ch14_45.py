"""§14.45: the claims its prose makes, asserted on the values its notebook glued."""

import ast
import math

import numpy as np
import pytest
import torch
from torch import nn

from conftest import executed_parameters
from helpers.data import load_m4_hourly


STEM = "14_45_sequence_modelling_problems"
ORACLE_SERIES = 12  # series the expensive measurements are redone for, from the raw data


@pytest.fixture(scope="module")
def m4_series():
    """The training series of M4 Hourly and the 48 test hours after each, in the notebook's order."""
    train, test = load_m4_hourly("train"), load_m4_hourly("test")
    return ([g["y"].to_numpy() for _, g in train.groupby("unique_id", sort=False)],
            [g["y"].to_numpy() for _, g in test.groupby("unique_id", sort=False)])


def curve(g, name):
    """A glued list (glued as its repr, since glue takes only scalars) read back as a numpy array."""
    return np.array(ast.literal_eval(g[name]), dtype=float)


def autocorrelation(y, k):
    """The sample autocorrelation at lag k, as the section defines it."""
    y = np.asarray(y, dtype=float) - np.mean(y)
    return float(np.dot(y[: len(y) - k], y[k:]) / np.dot(y, y))


@pytest.mark.claim("four-shapes-two-parts")
def test_the_four_shapes(g):
    aligned, unaligned = ast.literal_eval(g["shape_aligned"]), ast.literal_eval(g["shape_unaligned"])
    assert aligned[1] == g["T_in"], "aligned: one output per input step"
    assert unaligned[1] == g["T_out"] != g["T_in"], "unaligned: the writer sets the output length"
    assert len(ast.literal_eval(g["shape_many_to_one"])) == 2
    assert ast.literal_eval(g["shape_one_to_many"])[1] == g["T_out"]


@pytest.mark.claim("gru-count-formula")
def test_parameter_count_is_independent_of_length_and_matches_the_formula(g):
    d_in, d_h, d_out = g["d_in"], g["d_hidden"], g["d_out"]
    assert g["rnn_params_distinct"] == 1, "the same count at every length"
    assert g["rnn_params"] == g["rnn_params_formula"] == 3 * (d_h * d_in + d_h**2 + 2 * d_h) + d_h * d_out + d_out


@pytest.mark.claim("mlp-grows-with-T")
def test_the_flattening_mlp_grows_with_the_length_and_rejects_other_lengths(g):
    d_in, d_h, d_out = g["d_in"], g["d_hidden"], g["d_out"]
    lengths, counts = ast.literal_eval(g["lengths"]), ast.literal_eval(g["mlp_params_by_T"])
    assert counts == [(T * d_in + 1) * d_h + d_h * d_out + d_out for T in lengths]
    assert counts == sorted(counts) and lengths[-1] / lengths[0] == g["T_ratio"]
    assert g["mlp_params_growth"] == pytest.approx(counts[-1] / counts[0], rel=1e-12)
    assert g["mlp_params_growth"] < g["T_ratio"], "in proportion to T, less the parts that do not grow"
    mlp = nn.Sequential(nn.Flatten(), nn.Linear(50 * d_in, d_h), nn.Tanh(), nn.Linear(d_h, d_out))
    with pytest.raises(RuntimeError):
        mlp(torch.randn(2, 60, d_in))  # built for one length, it rejects another


@pytest.mark.claim("shuffle-keeps-values")
def test_shuffling_keeps_the_values(g):
    y, shuffled = curve(g, "h1_series"), curve(g, "h1_shuffled_series")
    assert len(y) == len(shuffled) == g["m4_n"] == 700, "M4 Hourly H1 has 700 training hours"
    assert np.array_equal(np.sort(y), np.sort(shuffled)), "sorted, value for value"
    assert not np.array_equal(y, shuffled)


@pytest.mark.claim("acf-falls-to-noise")
def test_shuffling_destroys_the_autocorrelation(g):
    y, shuffled = curve(g, "h1_series"), curve(g, "h1_shuffled_series")
    band = 2 / math.sqrt(len(y))
    assert g["acf_band"] == pytest.approx(band, rel=1e-9)
    for lag, name in [(1, "acf1"), (24, "acf24")]:
        assert g[f"{name}_original"] == pytest.approx(autocorrelation(y, lag), rel=1e-9)
        assert g[f"{name}_shuffled"] == pytest.approx(autocorrelation(shuffled, lag), rel=1e-9, abs=1e-12)
        assert g[f"{name}_original"] > band > abs(g[f"{name}_shuffled"]), f"lag {lag}: from dependence to noise"
    assert g["acf24_original"] < g["acf1_original"]
    inside = np.mean([abs(autocorrelation(shuffled, k)) < band for k in range(1, g["acf_max_lag"] + 1)])
    assert g["acf_shuffled_in_band"] == pytest.approx(inside, rel=1e-12)
    # "... inside the band, where a series without any dependence puts about <coverage> of them"
    assert abs(g["acf_shuffled_in_band"] - g["acf_band_coverage"]) < 0.05, "the shuffled share is what no dependence gives"


@pytest.mark.claim("shuffled-gap-is-bias")
def test_what_the_previous_character_saves_in_shuffled_text_is_the_plug_in_bias(g):
    assert g["H_shuffled_gap"] == pytest.approx(g["H_unigram"] - g["H_cond_shuffled"], abs=1e-9)
    assert 0.8 < g["H_shuffled_gap"] / g["mi_floor"] < 1.2, "the size of the mutual-information floor"


@pytest.mark.claim("text-order-matters", "shuffled-previous-character-useless")
def test_previous_character_helps_only_in_order(g):
    assert g["n_chars"] == 1_115_394 and g["n_vocab"] == 65
    assert g["H_cond_original"] < g["H_unigram"], "in order, the previous character saves bits"
    assert g["H_cond_gain"] == pytest.approx(g["H_unigram"] - g["H_cond_original"], rel=1e-12)
    assert abs(g["H_cond_shuffled"] - g["H_unigram"]) < 0.01, "shuffled: back to the unigram entropy"


@pytest.mark.claim("random-split-covers")
def test_a_random_split_of_overlapping_windows_covers_every_target_and_a_split_by_time_none(g):
    # oracle: a target is missed only if every window whose inputs hold it (up to 48) fell in validation, 0.2^k
    assert 0.95 < g["leak_random"] <= 1, "at random, (almost) every validation target was a training input"
    assert g["leak_by_time"] == 0.0, "by time, none was"
    assert g["train_share"] == 0.8 and g["window_hours"] == 48


def _one_step(series, width=48):
    s = np.lib.stride_tricks.sliding_window_view(series, width + 1)
    return s[:, :width], s[:, width]


@pytest.fixture(scope="module")
def optimism_redone(m4_series):
    """Validation error / test error of both forecasters for the first series, redone with lstsq and a loop."""
    rng = np.random.default_rng(executed_parameters(STEM)["SEED"] + 2)
    out = {"ar_random": [], "ar_by_time": [], "nn_random": [], "nn_by_time": [], "gaps": []}
    for series, following in list(zip(*m4_series))[:ORACLE_SERIES]:
        X, t = _one_step(series)
        X_test, t_test = _one_step(np.concatenate([series[-48:], following]))
        n_val, order = len(X) // 5, rng.permutation(len(X))
        splits = {"random": (order[n_val:], order[:n_val]),
                  "by_time": (np.arange(len(X) - n_val), np.arange(len(X) - n_val, len(X)))}

        def ar(Xtr, ttr, Z):
            coef = np.linalg.lstsq(np.column_stack([np.ones(len(Xtr)), Xtr]), ttr, rcond=None)[0]
            return coef[0] + Z @ coef[1:]

        def nn(Xtr, ttr, Z):
            return np.array([ttr[np.argmin(((Xtr - z) ** 2).sum(axis=1))] for z in Z])

        for name, model in (("ar", ar), ("nn", nn)):
            test_error = np.abs(model(X, t, X_test) - t_test).mean()
            for split, (tr, va) in splits.items():
                out[f"{name}_{split}"].append(np.abs(model(X[tr], t[tr], X[va]) - t[va]).mean() / test_error)
        tr, va = splits["random"]
        nearest = np.array([tr[np.argmin(((X[tr] - X[v]) ** 2).sum(axis=1))] for v in va])
        gap = nearest - va
        out["gaps"].append([len(gap), int((np.abs((gap + 1) % 24 - 1) <= 1).sum()), int((gap > 0).sum())])
    return out


def _check_optimism(g, redone, key):
    by_series = curve(g, f"optimism_{key}_by_series")
    assert len(by_series) == 414
    assert by_series[:ORACLE_SERIES] == pytest.approx(redone[key], rel=1e-6), "redone from the raw series"
    assert g[f"optimism_{key}"] == pytest.approx(float(np.median(by_series)), rel=1e-12)
    return by_series


@pytest.mark.claim("random-split-fair-for-ar", "random-split-verdict")
def test_a_random_split_does_not_flatter_the_autoregression(g, optimism_redone):
    _check_optimism(g, optimism_redone, "ar_random")
    _check_optimism(g, optimism_redone, "ar_by_time")
    assert g["optimism_ar_random"] >= 1, "the random split does not flatter it"


@pytest.mark.claim("random-split-flatters-nn", "random-split-verdict")
def test_a_random_split_flatters_the_nearest_neighbour(g, optimism_redone):
    by_series = _check_optimism(g, optimism_redone, "nn_random")
    _check_optimism(g, optimism_redone, "nn_by_time")
    assert g["optimism_nn_random"] < 1, "the random split flatters it"
    assert g["optimism_nn_by_time"] > 1, "split by time, its ratio is ..., on the cautious side"


@pytest.mark.claim("nn-looks-ahead")
def test_the_nearest_neighbour_of_a_random_validation_window_is_days_away_and_often_later(g, optimism_redone):
    counts = np.array(ast.literal_eval(g["nn_gap_counts"]))  # (series, [windows, whole days away, later])
    assert counts[:ORACLE_SERIES].tolist() == optimism_redone["gaps"]
    assert g["nn_gap_days"] == pytest.approx(counts[:, 1].sum() / counts[:, 0].sum(), rel=1e-12)
    assert g["nn_gap_later"] == pytest.approx(counts[:, 2].sum() / counts[:, 0].sum(), rel=1e-12)
    assert g["nn_gap_later"] > 0, "a random split lets it look up the same hours of the next days"


@pytest.mark.claim("weekly-dependence")
def test_the_weekly_autocorrelation_of_the_hourly_series(g):
    weekly = curve(g, "acf168_by_series")
    assert len(weekly) == 414
    assert g["acf168_median"] == pytest.approx(float(np.median(weekly)), rel=1e-12)
    assert g["acf168_share_above_half"] == pytest.approx(float(np.mean(weekly > g["acf168_threshold"])), rel=1e-12)
    assert g["acf168_median"] > g["acf168_threshold"], "the median series still correlates a week back"


def _untapered(g):
    """The three autocorrelations with the estimator's factor (n - k) / n undone, per series."""
    n = curve(g, "n_hours_by_series")
    return {lag: curve(g, f"acf{lag}_by_series") * n / (n - lag) for lag in (144, 168, 192)}


def _week_peak(g):
    u = _untapered(g)
    return u[168] > np.maximum(u[144], u[192])


@pytest.mark.claim("weekly-peak-half", "takeaway-week")
def test_about_half_the_series_peak_at_the_week_once_the_taper_is_undone(g, m4_series):
    tapered = {lag: curve(g, f"acf{lag}_by_series") for lag in (144, 168, 192)}
    n = curve(g, "n_hours_by_series")
    # oracle: the three autocorrelations and the lengths recomputed from the raw series
    for i, series in enumerate(m4_series[0]):
        y = series - series.mean()
        assert n[i] == len(y)
        for lag, acf in tapered.items():
            assert acf[i] == pytest.approx(np.dot(y[:-lag], y[lag:]) / np.dot(y, y), rel=1e-9, abs=1e-12)
    u = _untapered(g)
    assert g["acf144_median"] == pytest.approx(float(np.median(u[144])), rel=1e-12)
    assert g["acf192_median"] == pytest.approx(float(np.median(u[192])), rel=1e-12)
    assert g["acf168_untapered_median"] == pytest.approx(float(np.median(u[168])), rel=1e-12)
    assert g["taper_144"] == pytest.approx((g["m4_n"] - 144) / g["m4_n"]) and g["taper_192"] < g["taper_144"]
    peak = _week_peak(g)
    assert g["acf168_share_peak"] == pytest.approx(float(peak.mean()), rel=1e-12)
    kept = tapered[168] > np.maximum(tapered[144], tapered[192])
    assert g["acf168_share_peak_tapered"] == pytest.approx(float(kept.mean()), rel=1e-12)
    assert g["acf168_share_peak_tapered"] < g["acf168_share_peak"], "with the factor left in, ..."


@pytest.mark.claim("pacf168-small", "pacf-indirect")
def test_the_partial_autocorrelation_a_week_back_is_small(g, m4_series):
    from scipy.linalg import toeplitz

    n = curve(g, "n_hours_by_series")
    y = m4_series[0][0]
    h1 = curve(g, "h1_pacf")
    r = np.array([autocorrelation(y, k) for k in range(len(h1))])
    # oracle 1: phi_kk is the last coefficient of the Yule-Walker system of order k (brute force, every lag)
    for k in range(1, len(h1)):
        assert h1[k] == pytest.approx(np.linalg.solve(toeplitz(r[:k]), r[1:k + 1])[-1], rel=1e-6, abs=1e-9)
    # oracle 2: a least-squares regression of y_t on its last k values gives the same coefficient, up to noise
    z = y - y.mean()
    for k in (1, 2, 5, 24):
        X = np.column_stack([np.ones(len(z) - k)] + [z[k - j - 1: len(z) - j - 1] for j in range(k)])
        assert abs(np.linalg.lstsq(X, z[k:], rcond=None)[0][-1] - h1[k]) < 2 / math.sqrt(len(y))
    by_lag = {k: curve(g, f"pacf{k}_by_series") for k in (1, 24, 168)}
    assert by_lag[168][0] == h1[168] and by_lag[1][0] == h1[1]
    for k, values in by_lag.items():
        assert g[f"pacf{k}_median"] == pytest.approx(float(np.median(values)), rel=1e-12)
    outside = np.abs(by_lag[168]) > 2 / np.sqrt(n)
    assert g["pacf168_share_outside"] == pytest.approx(float(outside.mean()), rel=1e-12)
    assert g["pacf168_share_outside_peak"] == pytest.approx(float(outside[_week_peak(g)].mean()), rel=1e-12)
    assert g["pacf_chance_outside"] == pytest.approx(1 - math.erf(2 / math.sqrt(2)), rel=1e-12)
    assert abs(g["pacf168_median"]) < min(abs(g["pacf24_median"]), g["pacf1_median"]), \
        "... at lag 1 and ... at lag 24, but only ... at lag 168"
    assert g["pacf_chance_outside"] < g["pacf168_share_outside"], "outside the band there, where chance alone would put about ..."
    assert g["n_hours_min"] == n.min() and g["n_hours_max"] == n.max()


@pytest.fixture(scope="module")
def mase_redone(m4_series):
    """The scaled errors of the direct forecasts for the first series, redone with lstsq."""
    out = {L: [] for L in (24, 48, 168)}
    for series, following in list(zip(*m4_series))[:ORACLE_SERIES]:
        z = (series - series.mean()) / series.std()
        naive = np.abs(series[24:] - series[:-24]).mean()
        for L in out:
            w = np.lib.stride_tricks.sliding_window_view(z, L + 48)
            coef = np.linalg.lstsq(np.column_stack([np.ones(len(w)), w[:, :L]]), w[:, L:], rcond=None)[0]
            forecast = (np.concatenate([[1.0], z[-L:]]) @ coef) * series.std() + series.mean()
            out[L].append(np.abs(forecast - following).mean() / naive)
    return out


@pytest.mark.claim("week-helps-half")
def test_a_week_of_context_lowers_the_median_error_but_helps_only_half_the_series(g, mase_redone):
    mase = {L: curve(g, f"mase{L}_by_series") for L in (24, 48, 168)}
    assert (g["context_short"], g["context_mid"], g["context_long"]) == (24, 48, 168)
    for L, values in mase.items():
        assert len(values) == 414
        assert values[:ORACLE_SERIES] == pytest.approx(mase_redone[L], rel=1e-4), f"context {L}: redone"
        assert g[f"mase{L}_median"] == pytest.approx(float(np.median(values)), rel=1e-12)
    assert g["mase168_median"] < g["mase48_median"] < g["mase24_median"], "the median error falls with the context"
    helps = mase[168] < mase[48]
    assert g["week_helps_share"] == pytest.approx(float(helps.mean()), rel=1e-12)


@pytest.mark.claim("week-helps-weekly-series", "takeaway-week")
def test_a_week_of_context_helps_where_the_series_peaks_at_the_week(g):
    helps = curve(g, "mase168_by_series") < curve(g, "mase48_by_series")
    peak = _week_peak(g)
    assert g["week_helps_share_peak"] == pytest.approx(float(helps[peak].mean()), rel=1e-12)
    assert g["week_helps_share_no_peak"] == pytest.approx(float(helps[~peak].mean()), rel=1e-12)
    assert g["week_helps_share_peak"] > 0.5 > g["week_helps_share_no_peak"], \
        "it helps where the series has a weekly pattern (takeaway: mainly in those)"


@pytest.mark.claim("mi-reach", "takeaway-mi")
def test_mutual_information_stays_above_the_floor_for_almost_three_lines(g):
    d, bits, floor = curve(g, "mi_distances"), curve(g, "mi_original_curve"), curve(g, "mi_shuffled_curve")
    assert g["mi_floor"] == pytest.approx(floor.mean(), rel=1e-12)
    above = bits > g["mi_floor_factor"] * g["mi_floor"]
    assert g["mi_reach"] == d[above].max()
    assert above[d <= g["mi_reach"]].all(), "it *stays* above the floor out to the reach"
    assert g["mi_d1"] == bits[0] and d[0] == 1
    assert bits[d < g["line_length"]].min() < bits[0] / 100, "it decays quickly (within a line) ..."
    assert (bits > floor).all(), "... but not to nothing"
    assert g["mi_d1"] == pytest.approx(g["H_cond_gain"], rel=1e-4), "I(X_t; X_t+1) = H(X) - H(X_t | X_t-1)"
    assert 2 * g["line_length"] < g["mi_reach"] < 3 * g["line_length"], "almost three lines"


@pytest.mark.claim("rebound-carries-dependence")
def test_mutual_information_rebounds_at_the_scale_of_a_line(g):
    d, bits = curve(g, "mi_distances"), curve(g, "mi_original_curve")
    i_dip = list(d).index(g["mi_dip_distance"])
    assert bits[i_dip] == g["mi_dip"] and bits[list(d).index(g["mi_bump_distance"])] == g["mi_bump"]
    assert (np.diff(bits[: i_dip + 1]) < 0).all() and bits[i_dip + 1] > bits[i_dip], "the first rise"
    assert g["mi_bump"] == bits[i_dip + 1:].max()
    assert g["mi_dip_distance"] < g["mi_bump_distance"] < g["mi_reach"]
    assert g["line_length"] < g["mi_bump_distance"] < 2 * g["line_length"], "between one and two line lengths"
    assert 0.8 * g["line_length"] < g["mi_dip_distance"] < 1.2 * g["line_length"], "the low point: about one line"
    assert g["mi_bump"] > g["mi_dip"], "the curve climbs back"
    # "just past a line it carries far more of the dependence than the weak tail further out"
    assert g["mi_bump"] - g["mi_floor"] > 5 * g["mi_tail_excess"]


@pytest.mark.claim("mi-above-null")
def test_the_text_lies_above_every_shuffled_estimate_almost_everywhere(g):
    d, bits = curve(g, "mi_distances"), curve(g, "mi_original_curve")
    null = np.array(ast.literal_eval(g["mi_null"]))
    assert g["mi_n_distances"] == len(d) and g["mi_null_n"] == null.size and g["mi_max_distance"] == d.max()
    assert g["mi_above_null"] == (bits > null.max()).sum()
    assert bits[-1] > null.max(), "... out to the largest one"


@pytest.mark.claim("mi-reach-convention")
def test_the_reach_depends_on_the_threshold(g):
    d, bits = curve(g, "mi_distances"), curve(g, "mi_original_curve")

    def stays_above(factor):
        below = np.flatnonzero(bits <= factor * g["mi_floor"])
        return d[below[0] - 1]

    assert stays_above(g["mi_floor_factor"]) == g["mi_reach"]
    assert g["mi_reach_low"] == stays_above(g["mi_factor_low"]) and g["mi_reach_high"] == stays_above(g["mi_factor_high"])
    assert g["mi_factor_low"] < g["mi_floor_factor"] < g["mi_factor_high"]
    assert g["mi_reach_high"] < g["mi_reach"] < g["mi_reach_low"], "a different convention, a different reach"


@pytest.mark.claim("mi-weak-tail", "takeaway-mi")
def test_a_weak_tail_stays_above_every_shuffled_estimate(g):
    d, bits = curve(g, "mi_distances"), curve(g, "mi_original_curve")
    null = np.array(ast.literal_eval(g["mi_null"]))  # (shuffles, distances)
    assert null.shape == (5, len(d)) and (null[0] == curve(g, "mi_shuffled_curve")).all(), "the figure's shuffle first"
    assert g["mi_null_n"] == null.size
    assert g["mi_floor_sd"] == pytest.approx(null.std(), rel=1e-12) and g["mi_floor_max"] == null.max()
    tail = d > g["mi_reach"]
    assert g["mi_tail_n"] == tail.sum() and g["mi_max_distance"] == d.max()
    assert g["mi_tail_above"] == (bits[tail] > null.max()).sum()
    assert g["mi_tail_above"] > g["mi_tail_n"] / 2, "a tail remains: above the highest shuffled estimate at most distances"
    excess = np.median(bits[tail] - g["mi_floor"])
    assert g["mi_tail_excess"] == pytest.approx(excess, rel=1e-12)
    assert 0 < excess < (g["mi_floor_factor"] - 1) * g["mi_floor"], "weak: below the threshold of the reach"
    assert g["mi_tail_share"] == pytest.approx(excess / bits[0], rel=1e-9)
    assert g["mi_tail_share"] < 1e-3, "a tiny fraction of what adjacent characters share"


@pytest.mark.claim("lstm-count")
def test_exercise_solutions(g):
    d_in, d_h, d_out = g["d_in"], g["d_hidden"], g["d_out"]
    block = d_h * d_in + d_h**2 + 2 * d_h
    assert g["lstm_params"] == g["lstm_params_formula"] == 4 * block
    gru_layer = g["rnn_params"] - (d_h * d_out + d_out)
    assert 3 * g["lstm_params"] == 4 * gru_layer, "one third more than the GRU's"


@pytest.mark.claim("word-order-needs-two-characters")
def test_word_shuffling_leaves_the_bigram_table_unchanged_but_for_the_ends(g):
    assert g["bigram_cells_changed"] == g["bigram_cells_predicted"], "only the predicted end effects"
    assert 0 < g["bigram_cells_changed"] <= 4 and g["bigram_max_cell_change"] == 1
    assert abs(g["H_cond_word_change"]) < 1e-4, "H(X_t | X_t-1) moves in the fifth decimal at most"


@pytest.mark.claim("word-shuffle-raises-H2", "word-order-needs-two-characters")
def test_two_characters_of_context_see_the_word_order(g):
    assert g["H2_gain"] == pytest.approx(g["H_cond_original"] - g["H2_original"], rel=1e-9)
    assert g["H2_gain"] > 0, "the bits that the second character of context saves"
    assert g["H2_word_shuffled"] > g["H2_original"], "shuffling the words raises H(X_t | X_t-1, X_t-2)"
    assert g["H2_word_share"] == pytest.approx(
        (g["H2_word_shuffled"] - g["H2_original"]) / g["H2_gain"], rel=1e-9)


@pytest.mark.claim("mi-floor-short", "mi-floor-between")
def test_plug_in_mutual_information_bias(g):
    K, N = g["n_vocab"], g["n_chars"]
    assert g["mi_bias_theory"] == pytest.approx((K - 1) ** 2 / (2 * N * math.log(2)), rel=1e-9)
    assert g["mi_floor_to_theory"] == pytest.approx(g["mi_floor"] / g["mi_bias_theory"], rel=1e-9)
    assert 0.8 < g["mi_floor_to_theory"] < 1.0, "measured floor slightly below the (K-1)^2/(2N ln 2) bias"
    assert g["mi_populated_margins"] == 2 * K, "every character occurs in both slices: the formula's 2K"
    assert g["mi_populated_cells"] < K * K, "rare characters leave cells of the joint table empty"
    assert g["mi_bias_populated"] == pytest.approx(
        (g["mi_populated_cells"] - g["mi_populated_margins"] + 1) / (2 * N * math.log(2)), rel=1e-9)
    assert g["mi_bias_populated"] < g["mi_floor"] < g["mi_bias_theory"], "the floor lies between the two formulas"
