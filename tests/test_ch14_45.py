"""§14.45: the claims its prose makes, asserted on the values its notebook glued."""

import ast
import math

import pytest


STEM = "14_45_sequence_modelling_problems"


def test_the_four_shapes(g):
    aligned, unaligned = ast.literal_eval(g["shape_aligned"]), ast.literal_eval(g["shape_unaligned"])
    assert aligned[1] == g["T_in"], "aligned: one output per input step"
    assert unaligned[1] == g["T_out"] != g["T_in"], "unaligned: the writer sets the output length"
    assert len(ast.literal_eval(g["shape_many_to_one"])) == 2
    assert ast.literal_eval(g["shape_one_to_many"])[1] == g["T_out"]


def test_parameter_count_is_independent_of_length_and_matches_the_formula(g):
    assert g["rnn_params_distinct"] == 1
    assert g["rnn_params"] == g["rnn_params_formula"]
    # the flattening MLP grows roughly in proportion to T
    assert 0.5 * g["T_ratio"] < g["mlp_params_growth"] <= g["T_ratio"]


def test_shuffling_keeps_values_and_destroys_autocorrelation(g):
    assert g["same_values"] is True
    assert g["m4_n"] == 700, "M4 Hourly H1 has 700 training hours"
    assert 0.5 < g["acf1_original"] <= 1 and 0.5 < g["acf24_original"] <= 1
    assert g["acf24_original"] < g["acf1_original"]
    assert g["acf_band"] == pytest.approx(2 / math.sqrt(g["m4_n"]), rel=1e-9)
    assert abs(g["acf1_shuffled"]) < g["acf_band"] and abs(g["acf24_shuffled"]) < g["acf_band"], "shuffled: noise"
    assert 0.85 <= g["acf_shuffled_in_band"] <= 1, "about 95% of the lags inside +-2/sqrt(n)"
    # "... inside the band, where a series without any dependence puts about <coverage> of them"
    assert abs(g["acf_shuffled_in_band"] - g["acf_band_coverage"]) < 0.05, "the shuffled share is what no dependence gives"


def test_previous_character_helps_only_in_order(g):
    assert g["n_chars"] == 1_115_394 and g["n_vocab"] == 65
    assert g["H_cond_gain"] > 0.5, "knowing the previous character saves bits"
    assert abs(g["H_cond_shuffled"] - g["H_unigram"]) < 0.01, "shuffled: back to the unigram entropy"


def test_a_random_split_of_overlapping_windows_leaks_and_a_split_by_time_does_not(g):
    assert 0.95 < g["leak_random"] <= 1, "at random, (almost) every validation target was a training input"
    assert g["leak_by_time"] == 0.0, "by time, none was"


def test_dependence_reaches_far_back(g):
    assert 0.5 < g["acf168_median"] <= 1 and 0.5 < g["acf168_share_above_half"] <= 1
    assert g["mi_d1"] > 100 * g["mi_floor"]
    assert g["mi_d1"] == pytest.approx(g["H_cond_gain"], rel=1e-4), "I(X_t; X_t+1) = H(X) - H(X_t | X_t-1)"
    assert 2 * g["line_length"] < g["mi_reach"] < 3 * g["line_length"], "MI above the floor for almost three lines"
    assert 25 < g["line_length"] < 45, "a line of text, newline included"


def test_mutual_information_rebounds_at_the_scale_of_a_line(g):
    assert 10 <= g["mi_dip_distance"] < g["mi_bump_distance"] < g["mi_reach"]
    assert g["line_length"] < g["mi_bump_distance"] < 2 * g["line_length"], "between one and two line lengths"
    assert g["mi_bump"] > 1.6 * g["mi_dip"], "the curve climbs back"
    assert g["mi_floor"] < g["mi_dip"] < 1.5 * g["mi_floor"], "... from close to (not at) the floor"
    assert 0.8 * g["line_length"] < g["mi_dip_distance"] < 1.2 * g["line_length"], "the low point: about one line"
    assert g["mi_bump"] < 4 * g["mi_floor"]


def test_exercise_solutions(g):
    assert g["lstm_params"] == g["lstm_params_formula"]


def test_word_shuffling_leaves_the_bigram_table_unchanged_but_for_the_ends(g):
    assert g["bigram_cells_changed"] == g["bigram_cells_predicted"], "only the predicted end effects"
    assert 0 < g["bigram_cells_changed"] <= 4 and g["bigram_max_cell_change"] == 1
    assert g["n_bigrams"] == g["n_chars"] - 1
    assert abs(g["H_cond_word_change"]) < 1e-4, "H(X_t | X_t-1) moves in the fifth decimal at most"
    assert g["H_cond_word_shuffled"] == pytest.approx(g["H_cond_original"] + g["H_cond_word_change"], abs=1e-12)


def test_two_characters_of_context_see_the_word_order(g):
    assert g["H2_gain"] == pytest.approx(g["H_cond_original"] - g["H2_original"], rel=1e-9)
    assert g["H2_gain"] > 0.5, "the second character of context saves bits"
    assert 0.01 < g["H2_word_shuffled"] - g["H2_original"] < 0.1 * g["H2_gain"], "word shuffling costs a little"
    assert g["H2_word_share"] == pytest.approx(
        (g["H2_word_shuffled"] - g["H2_original"]) / g["H2_gain"], rel=1e-9)


def test_plug_in_mutual_information_bias(g):
    K, N = g["n_vocab"], g["n_chars"]
    assert g["mi_bias_theory"] == pytest.approx((K - 1) ** 2 / (2 * N * math.log(2)), rel=1e-9)
    assert 0.8 < g["mi_floor_to_theory"] < 1.0, "measured floor slightly below the (K-1)^2/(2N ln 2) bias"
    assert g["mi_floor_to_theory"] == pytest.approx(g["mi_floor"] / g["mi_bias_theory"], rel=1e-9)
