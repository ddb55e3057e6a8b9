"""§14.50: the claims its prose makes, asserted on the values its notebook glued."""

import ast
import math


STEM = "14_50_scaled_dot_product_attention"


def test_worked_example_by_hand_and_by_code(g):
    assert abs(g["hand_Z"] - (1 + math.e + math.e**2)) < 1e-12
    assert abs(g["hand_a1"] + g["hand_a2"] + g["hand_a3"] - 1) < 1e-12
    assert g["hand_a3"] > g["hand_a2"] > g["hand_a1"], "the best-matching key gets the most weight"
    assert abs(g["hand_others"] - (g["hand_a1"] + g["hand_a2"])) < 1e-12
    assert 0.25 < g["hand_others"] < 0.4
    assert g["hand_vs_code_max_diff"] < 1e-6


def test_scaling_the_query_hardens_the_lookup(g):
    assert abs(g["uniform_a_c0"] - 1 / 3) < 1e-7
    assert g["hard_a3_c10"] > 0.9999


def test_logit_spread_follows_sqrt_dk(g):
    assert g["spread_ratio_max_dev"] < 0.05
    assert 0.95 < g["spread_scaled_min"] <= g["spread_scaled_max"] < 1.05
    assert 20 < g["spread_unscaled_512"] < 25, "about sqrt(512) = 22.6"


def test_saturation_without_scaling(g):
    assert g["sat_grad_scaled_max"] / g["sat_grad_scaled_min"] < 1.15, "scaled: gradient factor flat in d_k"
    assert g["sat_entropy_scaled_max"] - g["sat_entropy_scaled_min"] < 0.15, "scaled: entropy flat in d_k"
    assert g["sat_entropy_scaled_min"] > 0.8 * g["log_T_keys"]
    assert g["sat_maxw_unscaled_512"] > 0.9 and g["sat_maxw_scaled_512"] < 0.3
    assert g["sat_share_saturated_512"] > 0.5 and g["sat_share_saturated_scaled_max"] == 0
    assert g["sat_entropy_unscaled_512"] < 0.25
    assert g["sat_grad_ratio_512"] > 20, "unscaled median gradient factor far below scaled"
    assert g["sat_grad_unscaled_512"] < 0.01
    assert g["sat_grad_unscaled_16"] > g["sat_grad_unscaled_4"], "the unscaled factor first rises"


def test_entropy_surface_ridge(g):
    assert 0.45 < g["ridge_slope"] < 0.55, "the level ridge follows tau ~ d_k^(1/2)"
    assert g["ridge_entropy_max"] - g["ridge_entropy_min"] < 0.25, "near-constant entropy along the ridge"
    assert g["tau1_entropy_first"] - g["tau1_entropy_last"] > 1.5, "tau = 1 slides down the slope"
    assert g["tau1_entropy_last"] < 0.25
    assert g["surface_entropy_max"] < g["log_T_keys"] + 1e-9


def test_causal_mask_before_softmax(g):
    assert g["causal_upper_max"] == 0.0
    assert g["causal_rowsum_max_dev"] < 1e-6
    assert g["causal_vs_torch"] < 1e-6
    assert g["leak_masked"] == 0.0 and g["leak_unmasked"] > 1e-2


def test_mask_after_softmax_does_not_normalise(g):
    assert g["wrong_rows_not_normalised"] == g["T_causal"] - 1, "every row but the last loses mass"
    assert abs(g["wrong_rowsum_last"] - 1) < 1e-6
    assert g["wrong_rowsum_min"] < 0.9
    assert g["wrong_rowsum_query0"] < 1 - 1e-3
    assert g["wrong_rowsum_min"] <= g["wrong_rowsum_query0"]


def test_cross_attention(g):
    assert ast.literal_eval(g["cross_w_shape"]) == (2, 4, 7)
    assert ast.literal_eval(g["cross_out_shape"]) == (2, 4, 5)
    assert g["cross_pad_weight"] == 0.0
    assert g["cross_perm_out_diff"] < 1e-6 and g["cross_perm_w_diff"] < 1e-6


def test_exercise_solutions(g):
    assert abs(g["ex1_sd_measured"] / g["ex1_sd_predicted"] - 1) < 0.03
    assert g["ex2_jacobian_diff"] < 1e-12
    assert abs(g["ex2_uniform_norm"] - g["ex2_uniform_formula"]) < 1e-12
    assert g["ex3_renorm_diff"] < 1e-6
    assert g["ex3_nan_after"] > 0 and g["ex3_nan_before"] == 0
    assert 0.1 < g["ex4_ratio_min"] <= g["ex4_ratio_max"] < 0.6, "gradient-optimal divisor: a fraction of sqrt(d_k)"
    assert g["ex4_ratio_max"] / g["ex4_ratio_min"] < 3
    assert 0.4 < g["ex4_slope"] < 0.6
