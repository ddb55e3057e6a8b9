"""§14.46: the claims its prose makes, asserted on the values its notebook glued."""

import ast

import pytest

from conftest import executed_parameters

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


@pytest.fixture(scope="module")
def redone():
    """The section's measurements redone from helpers.gradients with the build's seed (reads no glue)."""
    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch import nn

    from helpers.gradients import gradient_norm_by_lag, matrix_with_spectral_radius, state_gradient_by_lag

    seed, out = executed_parameters(STEM)["SEED"], {}
    # taps K_k = W^k U of the linear recurrence, rho = 0.8, d = 6
    gen = torch.Generator().manual_seed(seed)
    W, U = matrix_with_spectral_radius(6, 0.8, gen).double(), torch.randn(6, 2, generator=gen, dtype=torch.float64)
    out["tap_ratio_20"] = (torch.linalg.matrix_norm(torch.linalg.matrix_power(W, 20) @ U, 2)
                           / torch.linalg.matrix_norm(U, 2)).item()
    # gradient against the theorem's bound under ||W||_2 = 0.9
    gen = torch.Generator().manual_seed(seed)
    W_check = matrix_with_spectral_radius(32, 0.95, gen)
    U_check, x_check = 0.1 * torch.randn(32, 4, generator=gen), torch.randn(3, 40, 4, generator=gen)
    W_contract = 0.9 * W_check / torch.linalg.matrix_norm(W_check, 2)
    ratio = state_gradient_by_lag(W_contract, U_check, x_check).numpy() / (np.sqrt(32) * 0.9 ** np.arange(41))
    out["bound_max_ratio"] = float(ratio[:, 1:].max())
    # gradient by lag, geometric mean over 8 matrices, and the per-step factor over lags 30..60
    for nl in ("linear", "tanh"):
        for rho in (0.7, 0.95, 1.0, 1.15):
            runs = np.array([gradient_norm_by_lag(rho, T=60, d=32, seed=seed + s, nonlinearity=nl) for s in range(8)])
            out[(nl, rho)] = np.exp(np.log(runs).mean(axis=0))
    out["saturation_001"] = float(np.exp(np.log(np.array(
        [gradient_norm_by_lag(1.0, T=60, seed=seed + s, input_scale=0.01) for s in range(8)])[:, 40]).mean()))
    # weight gradients, full and with the state cut 20 steps before the loss
    gen = torch.Generator().manual_seed(seed + 1)
    U_w, x_w = 0.1 * torch.randn(32, 4, generator=gen), torch.randn(1, 60, 4, generator=gen)

    def weight_gradient(W_hh, phi, truncate=None):
        Wg = W_hh.clone().requires_grad_(True)
        h = torch.zeros(1, 32)
        for t in range(60):
            if truncate is not None and t == 60 - truncate:
                h = h.detach()
            h = phi(h @ Wg.T + x_w[:, t] @ U_w.T)
        h.sum().backward()
        return Wg.grad

    for nl, rho in [("tanh", 0.7), ("tanh", 0.95), ("linear", 1.15)]:
        phi = torch.tanh if nl == "tanh" else (lambda z: z)
        W_w = matrix_with_spectral_radius(32, rho, torch.Generator().manual_seed(seed + 2))
        full, recent = weight_gradient(W_w, phi), weight_gradient(W_w, phi, truncate=20)
        out[("wgrad", nl, rho)] = full.norm().item()
        out[("share", nl, rho)] = ((full - recent).norm() / full.norm()).item()
        if nl == "linear":
            p = nn.Parameter(torch.zeros_like(full))
            p.grad = full.clone()
            torch.nn.utils.clip_grad_value_([p], clip_value=0.01)
            out["value_clip_cosine"] = F.cosine_similarity(full.flatten().double(), p.grad.flatten().double(), dim=0).item()
    return out


def _factor(curve):
    return float((curve[60] / curve[30]) ** (1 / 30))


def test_shown_measurements_are_what_the_helpers_give(g, redone):
    # an oracle for every shown figure that is a single measurement: the helpers, rerun
    assert g["tap_ratio_20"] == pytest.approx(redone["tap_ratio_20"], rel=1e-6)
    assert g["bound_max_ratio"] == pytest.approx(redone["bound_max_ratio"], rel=1e-4)
    assert g["linear115_growth"] == pytest.approx(redone[("linear", 1.15)][60] / g["start_norm"], rel=1e-4)
    assert g["tanh115_lag60"] == pytest.approx(redone[("tanh", 1.15)][60], rel=1e-4)
    for key, rho in {"070": 0.7, "095": 0.95, "100": 1.0, "115": 1.15}.items():
        assert g[f"factor_tanh_{key}"] == pytest.approx(_factor(redone[("tanh", rho)]), rel=1e-4), key
    errors = [_factor(redone[("linear", rho)]) - rho for rho in (0.7, 0.95, 1.0, 1.15)]
    assert g["max_linear_factor_error"] == pytest.approx(max(abs(e) for e in errors), rel=1e-3)
    assert g["min_linear_factor_shortfall"] == pytest.approx(min(-e for e in errors), rel=1e-3)
    assert g["saturation_001"] == pytest.approx(redone["saturation_001"], rel=1e-4)
    assert g["wgrad_tanh095"] == pytest.approx(redone[("wgrad", "tanh", 0.95)], rel=1e-4)
    assert g["share_tanh07"] == pytest.approx(redone[("share", "tanh", 0.7)], rel=1e-3)
    assert g["share_linear115"] == pytest.approx(redone[("share", "linear", 1.15)], rel=1e-4)
    assert g["value_clip_cosine"] == pytest.approx(redone["value_clip_cosine"], rel=1e-6)


def test_saturation_at_input_scale_01_is_the_rho_1_curve_at_lag_40(g):
    # Exercise 3's middle scale is the section's default input weights: the same measurement
    assert g["saturation_01"] == pytest.approx(g["tanh_lag40_100"], rel=1e-6)


def test_crossing_lags_follow_from_the_per_step_factor(g):
    import math

    # past lag 30 the tanh rho = 0.7 curve shrinks by factor_tanh_070 per step: from its value at lag 40
    # it crosses 1e-6 and 1e-8 where that geometric law says (to a step)
    f, at40 = g["factor_tanh_070"], g["tanh07_lag40"]
    for name, level in (("tanh07_below_1e6", 1e-6), ("tanh07_below_1e8", 1e-8)):
        predicted = 40 + math.log(level / at40) / math.log(f)
        assert abs(g[name] - math.ceil(predicted)) <= 1, name
