"""§14.46: the claims its prose makes, asserted on the values its notebook glued."""

import ast

import pytest

STEM = "14_46_recurrent_networks"


def test_hand_written_recurrence_reproduces_torch(g):
    assert g["rnn_by_hand_gap"] < 1e-5
    assert ast.literal_eval(g["out_shape"]) == (8, 25, 16)
    assert ast.literal_eval(g["hn_shape"]) == (1, 8, 16)


def test_parameter_count_is_shared_across_time(g):
    assert g["rnn_param_count"] == g["rnn_param_formula"] == 16 * 4 + 16 * 16 + 2 * 16
    assert g["rnn_counts_distinct"] == 1
    assert ast.literal_eval(g["shape_T_short"])[1] == g["T_short"]
    assert ast.literal_eval(g["shape_T_long"])[1] == g["T_long"] > g["T_short"]
    assert g["T_long_over_short"] == g["T_long"] // g["T_short"]


def test_linear_recurrence_is_a_convolution(g):
    assert g["conv_gap"] < 1e-12, "equal up to float64 rounding"
    assert g["tap_ratio_20"] < 1e-2, "taps shrink like W^k"


def test_bound_and_derivation(g):
    assert g["product_gap"] < 1e-4, "autograd and the explicit Jacobian product agree"
    assert g["opnorm_over_rho"] > 1 / 0.7, "||W||_2 > 1 at rho = 0.7: the theorem guarantees nothing there"
    # oracle: for large Gaussian matrices ||W||_2 -> 2 sigma sqrt(d) while rho -> sigma sqrt(d) (circular law)
    assert g["opnorm_over_rho"] < 2.1


def test_the_bound_holds_where_it_says_something(g):
    assert g["bound_max_ratio"] <= 1 + 1e-5, "below (gamma ||W||)^k at every lag, under ||W||_2 = 0.9"
    assert g["bound_max_ratio"] > 0.05, "... and not absurdly far below it at every lag"
    assert g["bound_ratio_lag40"] < 1e-8, "by lag 40 the bound is loose by many orders of magnitude"


def test_linear_factor_per_step_is_the_spectral_radius(g):
    assert g["max_linear_factor_error"] < 0.05
    rhos = {"070": 0.7, "095": 0.95, "100": 1.0, "115": 1.15}
    for key, rho in rhos.items():
        assert g[f"factor_tanh_{key}"] < g[f"factor_linear_{key}"], "tanh saturation shrinks each factor"
        assert g[f"factor_tanh_{key}"] < rho, "every tanh factor is smaller than rho"
        assert rho - g["max_linear_factor_error"] - 1e-9 <= g[f"factor_linear_{key}"] < rho, "approaches rho from below"
    assert 0 < g["min_linear_factor_shortfall"] <= g["max_linear_factor_error"]
    assert g["factor_linear_115"] > 1 > g["factor_linear_095"]


def test_vanishing_at_rho_07_and_ordering_of_curves(g):
    assert g["tanh07_lag40"] < 1e-6
    assert g["tanh07_ratio40"] == pytest.approx(g["tanh07_lag40"] / g["start_norm"], rel=1e-9)
    assert g["tanh07_below_1e6"] <= 40 < g["tanh07_below_1e8"] <= 60
    assert g["tanh_lag40_070"] < g["tanh_lag40_095"] < g["tanh_lag40_100"] < g["tanh_lag40_115"]
    assert g["linear115_growth"] > 100, "linear recurrence with rho = 1.15 explodes"
    assert g["tanh115_lag60"] < g["start_norm"], "saturation tames the explosion of the tanh network"


def test_vanishing_is_silent_and_exploding_is_loud(g):
    assert g["share_tanh07"] < 1e-3, "almost nothing of the weight gradient comes from beyond lag 20"
    assert 0.1 * g["wgrad_tanh095"] < g["wgrad_tanh07"] < 10 * g["wgrad_tanh095"], "unremarkable norm"
    assert g["wgrad_linear115"] > 1000 * g["wgrad_tanh07"]
    assert g["share_linear115"] > 0.5, "the exploding gradient is dominated by the distant past"


def test_clipping_keeps_direction_and_sets_length(g):
    assert abs(g["clip_cosine"] - 1) < 1e-6
    assert g["clip_norm_after"] == pytest.approx(10.0, rel=1e-5) and g["clip_norm_before"] > 1000
    assert g["clip_vanishing_unchanged"] is True and g["clip_vanishing_norm"] < 10
    assert g["clip_norm_before"] == pytest.approx(g["wgrad_linear115"], rel=1e-6), "the exploding gradient above"
    assert g["clip_vanishing_norm"] == pytest.approx(g["wgrad_tanh07"], rel=1e-6), "the vanishing gradient above"


def test_exercise_solutions(g):
    assert g["two_layer_formula"] == g["two_layer_count"]
    assert g["orthogonal_rel_error"] < 1e-4
    assert g["saturation_001"] > g["saturation_01"] > g["saturation_1"], "bigger inputs, shorter reach"
    assert g["saturation_1"] < 1e-9 < 1e-2 < g["saturation_001"], "input scale 1: real saturation; 0.01: none"
    assert g["value_clip_cosine"] < 0.99, "clipping by value turns the gradient"
