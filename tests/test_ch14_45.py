"""§14.45: the claims its prose makes, asserted on the values its notebook glued."""

import ast


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
    assert g["acf1_original"] > 0.5 and g["acf24_original"] > 0.5
    assert abs(g["acf1_shuffled"]) < 0.1 and abs(g["acf24_shuffled"]) < 0.1
    assert g["acf_shuffled_max_abs"] < 0.15


def test_previous_character_helps_only_in_order(g):
    assert g["n_chars"] == 1_115_394 and g["n_vocab"] == 65
    assert g["H_cond_gain"] > 0.5, "knowing the previous character saves bits"
    assert abs(g["H_cond_shuffled"] - g["H_unigram"]) < 0.01, "shuffled: back to the unigram entropy"


def test_permuting_windows_keeps_within_window_statistics(g):
    assert abs(g["acf1_windows"] - g["acf1_windows_permuted"]) < 1e-12


def test_dependence_reaches_far_back(g):
    assert g["acf168_median"] > 0.5 and g["acf168_share_above_half"] > 0.5
    assert g["mi_d1"] > 100 * g["mi_floor"]
    assert g["mi_reach"] > g["line_length"], "MI above the floor further than a line of verse"


def test_exercise_solutions(g):
    assert g["lstm_params"] == g["lstm_params_formula"]
    rise = g["H_cond_word_shuffled"] - g["H_cond_original"]
    assert 0 < rise < 0.3 * (g["H_cond_shuffled"] - g["H_cond_original"]), "word shuffling: only a slight rise"
    assert 0.8 < g["mi_floor_to_theory"] < 1.0, "measured floor slightly below the (K-1)^2/(2N ln 2) bias"
