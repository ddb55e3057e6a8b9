"""§14.51: the claims its prose makes, asserted on the values its notebook glued."""

import ast


STEM = "14_51_multi_head_attention"


def test_heads_are_slices_of_one_projection(g):
    assert g["head_slice_diff"] < 1e-6
    assert ast.literal_eval(g["walk_w_shape"]) == (2, 3, 5, 5)
    assert g["walk_d_k"] == 4


def test_parameters_and_flops_do_not_depend_on_heads(g):
    assert g["params_distinct"] == 1 and g["params_bias_distinct"] == 1 and g["flops_distinct"] == 1
    assert g["params_value"] == g["params_formula"] == 4 * 256**2
    assert g["params_bias_value"] == g["params_bias_formula"]
    assert g["flops_value"] == g["flops_formula"]
    assert g["h_min"] == 1 and g["h_max"] >= 32


def test_agrees_with_torch_kernels(g):
    assert g["agree_out_max"] < 1e-6, "outputs vs nn.MultiheadAttention with copied weights"
    assert g["agree_w_max"] < 1e-6, "head-averaged weights vs nn.MultiheadAttention"
    assert g["agree_fused_max"] < 1e-6, "outputs vs F.scaled_dot_product_attention"
    assert g["agree_out_scale"] > 1, "the comparison is on outputs of order one, not on zeros"


def test_four_heads_solve_what_one_head_cannot(g):
    assert g["acc_params_equal"] is True
    assert g["acc4_min"] > 0.99
    assert g["acc1_mean"] < 0.6 and g["acc1_max"] < 0.95, "one head cannot keep four positions apart"


def test_heads_specialise_on_distinct_offsets(g):
    assert ast.literal_eval(g["dominant_offsets"]) == [1, 2, 3, 4] and g["dominant_distinct"] == 4
    assert g["own_offset_weight_min"] > 0.9
    assert g["init_offset_weight_max"] < 0.3, "no structure at initialisation"


def test_head_correlations(g):
    assert g["corr_trained_mean"] < 0 and g["corr_trained_max_abs"] < 0.15
    assert abs(g["corr_trained_mean"] - g["corr_disjoint_theory"]) < 0.01, "disjoint one-hot heads: -p/(1-p)"
    assert abs(g["corr_disjoint_theory"] - (-12 / 114)) < 1e-12
    assert g["corr_n_used"] == 12 and g["corr_n_allowed"] == 126
    assert g["corr_init_mean"] > g["corr_trained_mean"] + 0.1, "at initialisation heads are more alike"


def test_single_head_ablation(g):
    assert g["abl4_worst_offset_max"] < 0.2, "4 heads: every removal sends one offset to about chance"
    assert g["abl4_mean_max"] < 0.85
    assert g["acc8_full_min"] > 0.99
    assert 1 <= g["abl8_n_harmless"] < 8
    assert g["abl8_worst_offset_min"] < 0.5


def test_greedy_pruning(g):
    assert g["prune4_after_one"] < 0.85 and g["prune4_full"] > 0.99
    assert g["prune8_after_one"] > 0.99
    assert g["prune8_free"] >= 1 and g["prune8_n95"] >= g["prune8_free"] and g["prune8_n95"] >= 2
    assert g["prune8_above_4_throughout"] is True
    assert g["prune8_at_4"] < g["prune4_full"], "pruned to four heads is worse than trained with four"


def test_exercise_solutions(g):
    assert abs(g["ex1_flop_ratio"] - 1) < 1e-12, "attention overtakes the projections at T = 2d"
    assert g["ex2_perm_diff"] < 1e-4, "head order is arbitrary"
    assert g["ex3_spearman"] > 0.3, "first-order importance ranks heads roughly like removal does"
