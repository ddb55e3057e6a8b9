"""§14.50: the claims its prose makes, asserted on the values its notebook glued."""

import ast

import pytest


STEM = "14_50_scaled_dot_product_attention"


def test_worked_example_by_hand_and_by_code(g):
    """The hand calculation (closed forms in e) against the book's implementation run on the same numbers."""
    for i in (1, 2, 3):
        assert g[f"hand_a{i}"] == pytest.approx(g[f"code_a{i}"], rel=1e-6)
    assert g["hand_y1"] == pytest.approx(g["code_y1"], rel=1e-6)
    assert g["hand_y2"] == pytest.approx(g["code_y2"], rel=1e-6)
    assert g["hand_Z"] == pytest.approx(1 / g["code_a1"], rel=1e-6), "a_1 = e^0 / Z"
    assert g["hand_others"] == pytest.approx(g["code_a1"] + g["code_a2"], rel=1e-6)
    assert g["code_a3"] > g["code_a2"] > g["code_a1"], "the best-matching key gets the most weight"
    assert g["hand_vs_code_max_diff"] < 1e-6


def test_scaling_the_query_hardens_the_lookup(g):
    assert abs(g["uniform_a_c0"] - 1 / 3) < 1e-7
    assert 0.9999 < g["hard_a3_c10"] <= 1


def test_logit_spread_follows_sqrt_dk(g):
    assert 0.008 < g["spread_ratio_max_dev"] < 0.023, "sampling error of a standard deviation over 4000 pairs"
    assert g["spread_ratio_max_dev"] == pytest.approx(max(1 - g["spread_scaled_min"], g["spread_scaled_max"] - 1), rel=1e-5)
    assert 0.95 < g["spread_scaled_min"] <= g["spread_scaled_max"] < 1.05
    assert 20 < g["spread_unscaled_512"] < 25, "about sqrt(512) = 22.6"


def test_saturation_without_scaling(g):
    # scaled: flat in d_k (the bands are the measured values' order; the ratios encode "flat")
    assert g["sat_grad_scaled_max"] / g["sat_grad_scaled_min"] < 1.15, "scaled: gradient factor flat in d_k"
    assert 0.15 < g["sat_grad_scaled_min"] <= g["sat_grad_scaled_max"] < 0.33
    assert g["sat_entropy_scaled_max"] - g["sat_entropy_scaled_min"] < 0.15, "scaled: entropy flat in d_k"
    assert 0.8 * g["log_T_keys"] < g["sat_entropy_scaled_min"] <= g["sat_entropy_scaled_max"] < g["log_T_keys"]
    # unscaled at d_k = 512: saturated
    assert 0.9 < g["sat_maxw_unscaled_512"] <= 1 and 0.09 < g["sat_maxw_scaled_512"] < 0.24
    assert 0.5 < g["sat_share_saturated_512"] < 0.9 and g["sat_share_saturated_scaled_max"] == 0
    assert 0.09 < g["sat_entropy_unscaled_512"] < 0.24
    assert g["sat_grad_ratio_512"] == pytest.approx(g["sat_grad_scaled_min"] / g["sat_grad_unscaled_512"], rel=0.1)
    assert 70 < g["sat_grad_ratio_512"] < 180, "unscaled median gradient factor far below scaled"
    assert 0.001 < g["sat_grad_unscaled_512"] < 0.0027
    # the unscaled factor first rises
    assert g["sat_grad_unscaled_16"] > g["sat_grad_unscaled_4"] > g["sat_grad_scaled_max"]
    assert g["sat_grad_unscaled_16"] < 1.3 * g["sat_grad_unscaled_4"]


def test_entropy_surface_ridge(g):
    assert 0.45 < g["ridge_slope"] < 0.55, "the level ridge follows tau ~ d_k^(1/2)"
    assert g["ridge_entropy_max"] - g["ridge_entropy_min"] < 0.25, "near-constant entropy along the contour"
    assert 2.5 < g["ridge_entropy_min"] <= g["ridge_entropy_max"] < g["log_T_keys"]
    assert g["tau1_entropy_first"] - g["tau1_entropy_last"] > 1.5, "tau = 1 slides down the slope"
    assert 1.7 < g["tau1_entropy_first"] < g["ridge_entropy_min"], "even at d_k = 4, tau = 1 is below the contour"
    assert 0.1 < g["tau1_entropy_last"] < 0.25
    # 'drops to zero entropy' at small tau and 'rises to ln 32' at large tau
    assert g["surface_entropy_min"] < 0.05 * g["log_T_keys"], "nearly zero entropy at small tau"
    assert g["log_T_keys"] - 0.01 < g["surface_entropy_max"] <= g["log_T_keys"] + 1e-9


def test_causal_mask_before_softmax(g):
    assert g["causal_upper_max"] == 0.0
    assert g["causal_rowsum_max_dev"] < 1e-6
    assert g["causal_vs_torch"] < 1e-6
    assert g["leak_masked"] == 0.0 and g["leak_unmasked"] > 1e-2


def test_mask_after_softmax_leaks_the_future(g):
    """The behavioural test on the wrong variant: earlier outputs move when a later token changes."""
    assert g["leak_wrong"] > 1e4 * max(g["leak_masked"], 1e-9)
    assert g["leak_wrong"] == pytest.approx(g["leak_wrong_over_unmasked"] * g["leak_unmasked"])
    assert 0.02 < g["leak_wrong_over_unmasked"] < 2


def test_training_with_and_without_the_scaling(g):
    """d_k = 256: the unscaled layer ends with a clearly larger error (seed ranges apart); d_k = 16: close."""
    lo_u, mean_u, hi_u = (g[f"train_err_unscaled_256{s}"] for s in ("_lo", "", "_hi"))
    lo_s, mean_s, hi_s = (g[f"train_err_scaled_256{s}"] for s in ("_lo", "", "_hi"))
    assert lo_u <= mean_u <= hi_u and lo_s <= mean_s <= hi_s
    assert lo_u > hi_s, "the seeds' ranges do not overlap"
    assert g["train_err_ratio_256"] == pytest.approx(mean_u / mean_s)
    assert 1.5 < g["train_err_ratio_256"] < 8
    assert 0.13 < lo_s and hi_s < 0.45 and 0.45 < lo_u and hi_u < 1.2
    assert hi_u < 1.4 * mean_u and lo_s > 0.6 * mean_s
    assert 0.8 < g["train_acc_unscaled_256"] < g["train_acc_scaled_256"] <= 1
    assert 0.8 < g["train_err_ratio_16"] < 1.35, "narrow control: the two are close"
    assert g["train_err_ratio_16"] < g["train_err_ratio_256"] / 1.5
    # the first gradient on W_Q is larger without the scaling, not smaller
    assert g["train_grad_unscaled_256"] > 3 * g["train_grad_scaled_256"]
    assert 1.5 < g["train_grad_scaled_256"] < 3.8 and 13 < g["train_grad_unscaled_256"] < 37


def test_mask_after_softmax_does_not_normalise(g):
    assert g["wrong_rows_not_normalised"] == g["T_causal"] - 1, "every row but the last loses mass"
    assert abs(g["wrong_rowsum_last"] - 1) < 1e-6
    assert g["wrong_rowsum_min"] < 0.9
    assert 0.1 < g["wrong_rowsum_query0"] < 0.29
    assert g["wrong_rowsum_min"] <= g["wrong_rowsum_query0"]


def test_cross_attention(g):
    assert ast.literal_eval(g["cross_w_shape"]) == (2, 4, 7)
    assert ast.literal_eval(g["cross_out_shape"]) == (2, 4, 5)
    assert g["cross_pad_weight"] == 0.0
    assert g["cross_perm_out_diff"] < 1e-6 and g["cross_perm_w_diff"] < 1e-6


def test_exercise_solutions(g):
    assert abs(g["ex1_sd_measured"] / g["ex1_sd_predicted"] - 1) < 0.03
    assert g["ex2_jacobian_diff"] < 1e-14, "float64: autograd and the formula agree to rounding"
    assert abs(g["ex2_uniform_norm"] - g["ex2_uniform_formula"]) < 1e-12
    assert g["ex3_renorm_diff"] < 1e-6
    assert g["ex3_nan_after"] == 3 and g["ex3_nan_before"] == 0, "every weight of the 3-key row is NaN"
    assert 0.1 < g["ex4_ratio_min"] <= g["ex4_ratio_max"] < 0.55, "gradient-optimal divisor: a fraction of sqrt(d_k)"
    assert 1.55 < g["ex4_ratio_max"] / g["ex4_ratio_min"] < 3, "its location is noisy (the maximum is flat)"
    assert 0.4 < g["ex4_slope"] < 0.6
