"""§14.45: the claims its prose makes, asserted on the values its notebook glued."""

import ast
import math

import numpy as np
import pytest
import torch
from torch import nn

from helpers.data import load_m4_hourly


STEM = "14_45_sequence_modelling_problems"


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


@pytest.mark.claim("text-order-matters", "shuffled-previous-character-useless")
def test_previous_character_helps_only_in_order(g):
    assert g["n_chars"] == 1_115_394 and g["n_vocab"] == 65
    assert g["H_cond_original"] < g["H_unigram"], "in order, the previous character saves bits"
    assert g["H_cond_gain"] == pytest.approx(g["H_unigram"] - g["H_cond_original"], rel=1e-12)
    assert abs(g["H_cond_shuffled"] - g["H_unigram"]) < 0.01, "shuffled: back to the unigram entropy"


@pytest.mark.claim("random-split-leaks")
def test_a_random_split_of_overlapping_windows_leaks_and_a_split_by_time_does_not(g):
    assert 0.95 < g["leak_random"] <= 1, "at random, (almost) every validation target was a training input"
    assert g["leak_by_time"] == 0.0, "by time, none was"


@pytest.mark.claim("weekly-dependence")
def test_the_weekly_autocorrelation_of_the_hourly_series(g):
    weekly = curve(g, "acf168_by_series")
    assert len(weekly) == 414
    assert g["acf168_median"] == pytest.approx(float(np.median(weekly)), rel=1e-12)
    assert g["acf168_share_above_half"] == pytest.approx(float(np.mean(weekly > g["acf168_threshold"])), rel=1e-12)
    assert g["acf168_median"] > g["acf168_threshold"], "the median series still correlates a week back"


@pytest.mark.claim("weekly-mostly-daily")
def test_the_weekly_correlation_is_mostly_the_daily_echo(g):
    by_lag = {lag: curve(g, f"acf{lag}_by_series") for lag in (144, 168, 192)}
    # oracle: the three autocorrelations recomputed from the raw series
    m4 = load_m4_hourly("train")
    for i, (_, grp) in enumerate(m4.groupby("unique_id", sort=False)):
        y = grp["y"].to_numpy() - grp["y"].mean()
        for lag, acf in by_lag.items():
            assert acf[i] == pytest.approx(np.dot(y[:-lag], y[lag:]) / np.dot(y, y), rel=1e-9, abs=1e-12)
    for lag in (144, 192):
        assert g[f"acf{lag}_median"] == pytest.approx(float(np.median(by_lag[lag])), rel=1e-12)
        assert g[f"acf{lag}_median"] > 0.5 * g["acf168_median"], "a day off the week keeps most of the correlation"
    peak = by_lag[168] > np.maximum(by_lag[144], by_lag[192])
    assert g["acf168_share_peak"] == pytest.approx(float(peak.mean()), rel=1e-12)
    assert g["acf168_share_peak"] < 0.5, "only a minority of series peak at the week"


@pytest.mark.claim("mi-reach")
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
    assert 10 <= g["mi_dip_distance"] < g["mi_bump_distance"] < g["mi_reach"]
    assert g["line_length"] < g["mi_bump_distance"] < 2 * g["line_length"], "between one and two line lengths"
    assert 0.8 * g["line_length"] < g["mi_dip_distance"] < 1.2 * g["line_length"], "the low point: about one line"
    assert g["mi_floor"] < g["mi_dip"] < 1.5 * g["mi_floor"], "at one line it is near the floor"
    assert g["mi_bump"] > 1.6 * g["mi_dip"], "the curve climbs back"
    # "just past a line it carries far more of the dependence than the weak tail further out"
    assert g["mi_bump"] - g["mi_floor"] > 5 * g["mi_tail_excess"]


@pytest.mark.claim("mi-weak-tail")
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
    assert g["H2_gain"] > 0.5, "the second character of context saves bits"
    assert g["H2_word_shuffled"] > g["H2_original"], "shuffling the words raises H(X_t | X_t-1, X_t-2)"
    assert 0.01 < g["H2_word_shuffled"] - g["H2_original"] < 0.1 * g["H2_gain"], "it gives back a little"
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
