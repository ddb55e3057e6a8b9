"""§14.51: the claims its prose makes, asserted on the values its notebook glued."""

import ast
import math

import pytest

STEM = "14_51_multi_head_attention"


def test_heads_are_slices_of_one_projection(g):
    assert g["head_slice_diff"] < 1e-6
    assert ast.literal_eval(g["walk_w_shape"]) == (2, 3, 5, 5)


def test_parameters_and_flops_do_not_depend_on_heads(g):
    assert g["params_distinct"] == 1 and g["params_bias_distinct"] == 1 and g["flops_distinct"] == 1
    assert g["params_value"] == g["params_formula"] == 4 * 256**2
    assert g["params_bias_value"] == g["params_bias_formula"]
    assert g["flops_value"] == g["flops_formula"]


def test_agrees_with_torch_kernels(g):
    assert g["agree_out_max"] < 1e-6, "outputs vs nn.MultiheadAttention with copied weights"
    assert g["agree_w_max"] < 1e-6, "head-averaged weights vs nn.MultiheadAttention"
    assert g["agree_fused_max"] < 1e-6, "outputs vs F.scaled_dot_product_attention"
    assert 1.8 < g["agree_out_scale"] < 5, "the comparison is on outputs of order one, not on zeros"


def test_four_heads_solve_what_one_head_cannot(g):
    assert g["acc_params_equal"] is True
    assert 0.99 < g["acc4_min"] <= 1
    assert 0.2 < g["acc1_mean"] < 0.55 and 0.45 < g["acc1_max"] < 0.95, "one head cannot keep four positions apart"
    assert g["acc1_max"] > g["acc1_mean"]


def test_heads_specialise_on_distinct_offsets(g):
    assert ast.literal_eval(g["dominant_offsets"]) == [1, 2, 3, 4], "one offset each"
    assert 0.9 < g["own_offset_weight_min"] <= 1
    assert 0.07 < g["init_offset_weight_max"] < 0.2, "no structure at initialisation"


def test_head_correlations(g):
    # 'all small and negative': every pair, not only the mean
    assert g["corr_trained_max"] < 0, "every pair negative"
    assert g["corr_trained_max"] < -0.06, "...and all about -p/(1-p)"
    assert g["corr_trained_max_abs"] < 0.15, "every pair small"
    assert g["corr_trained_max"] >= g["corr_trained_mean"] >= -g["corr_trained_max_abs"]
    assert abs(g["corr_trained_mean"] - g["corr_disjoint_theory"]) < 0.01, "disjoint one-hot heads: -p/(1-p)"
    assert g["corr_init_mean"] > g["corr_trained_mean"] + 0.1, "at initialisation heads are more alike"
    assert 0.13 < g["corr_init_mean"] < 0.38


def test_single_head_ablation(g):
    # chance is 0.1; three offsets intact and one at chance gives a mean of about (3 + 0.1) / 4
    assert 0.06 < g["abl4_worst_offset_max"] < 0.15, "4 heads: every removal sends one offset to about chance"
    assert 0.7 < g["abl4_mean_max"] < (3 + 0.15) / 4
    assert 0.99 < g["acc8_full_min"] <= 1
    assert g["abl8_n_harmless"] == 4, "half of the eight heads are spare, one at a time"
    assert 0.07 < g["abl8_worst_offset_min"] < 0.18


def test_greedy_pruning(g):
    assert 0.7 < g["prune4_after_one"] < (3 + 0.15) / 4 and 0.99 < g["prune4_full"] <= 1
    assert 0.99 < g["prune8_after_one"] <= 1
    assert g["prune8_free"] == 2 and g["prune8_n95"] == 4, "chosen on validation, measured on test"
    assert 0.9 < g["prune8_at_4"] < 0.99
    assert g["prune8_above_4_throughout"] is True
    assert g["prune8_at_4"] < g["prune4_full"], "pruned to four heads is worse than trained with four"


def test_exercise_solutions(g):
    assert abs(g["ex1_flop_ratio"] - 1) < 1e-12, "attention overtakes the projections at T = 2d"
    assert g["ex2_perm_diff"] < 1e-4, "head order is arbitrary"
    # Solution 3: a model with a non-zero loss, per-example |dL/dxi| on validation, removal measured on test
    assert g["ex3_loss_model8"] < 1e-3 * g["ex3_loss_early"], "the fully trained model sits at a minimum"
    assert 2e-6 < g["ex3_loss_model8"] < 1.5e-5
    assert 0.25 < g["ex3_loss_early"] < 0.6, "the stopped model is far from zero loss"
    assert g["ex3_importance_min"] > 1e-3, "no head's score rounds to zero"
    assert 0.6 < g["ex3_spearman"] <= 1, "first-order importance ranks heads like removal does"
    # Solution 4: margins, the best 2-D circle against random keys in 8 and 32 dimensions
    assert g["ex4_margin_circle"] == pytest.approx(1 - math.cos(2 * math.pi / 200), rel=1e-9)
    assert g["ex4_margin_circle"] < 0.02 * g["ex4_margin_8"], "even the best 2-D arrangement leaves almost no gap"
    assert 0.03 < g["ex4_margin_8"] < 0.075 and 0.27 < g["ex4_margin_32"] < 0.6
    assert g["ex4_margin_32"] > 4 * g["ex4_margin_8"]
