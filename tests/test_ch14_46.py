"""§14.46: the claims its prose makes, asserted on the values its notebook glued."""

import ast
import math

import numpy as np
import pytest

from conftest import executed_parameters

STEM = "14_46_recurrent_networks"
RHOS = {"070": 0.7, "095": 0.95, "100": 1.0, "115": 1.15}


def curve(g, name):
    """A glued list (glued as its repr, since glue takes only scalars) read back as a numpy array."""
    return np.array(ast.literal_eval(g[name]), dtype=float)


def per_step_factor(c, start, stop):
    return float((c[stop] / c[start]) ** (1 / (stop - start)))


@pytest.mark.claim("loop-matches-torch")
def test_hand_written_recurrence_reproduces_torch(g):
    assert g["rnn_by_hand_gap"] <= 16 * 2.0**-23, "float32 rounding error: a few units in the last place"
    assert ast.literal_eval(g["out_shape"]) == (8, 25, 16)
    assert ast.literal_eval(g["hn_shape"]) == (1, 8, 16)


@pytest.mark.claim("count-whatever-length")
def test_parameter_count_is_shared_across_time(g):
    assert g["rnn_param_count"] == g["rnn_param_formula"] == 16 * 4 + 16 * 16 + 2 * 16
    assert g["rnn_counts_distinct"] == 1
    assert ast.literal_eval(g["shape_T_short"])[1] == g["T_short"]
    assert ast.literal_eval(g["shape_T_long"])[1] == g["T_long"] > g["T_short"]


@pytest.mark.claim("recurrence-is-convolution")
def test_linear_recurrence_is_a_convolution(g):
    assert g["conv_gap"] < 1e-12, "equal up to float64 rounding"
    assert g["tap_ratio_20"] < 1e-2, "taps shrink like W^k"


@pytest.mark.claim("theorem-silent-but-vanishes")
def test_the_theorem_says_nothing_at_rho_07_yet_the_gradient_vanishes(g):
    assert 0.7 * g["opnorm_over_rho"] > 1, "||W||_2 > 1 at rho = 0.7: the theorem guarantees nothing there"
    # oracle: for large Gaussian matrices ||W||_2 -> 2 sigma sqrt(d) while rho -> sigma sqrt(d) (circular law)
    assert g["opnorm_over_rho"] < 2.1
    for rec in ("linear", "tanh"):
        c = curve(g, f"curve_{rec}_070")
        assert (c[1:] < c[:-1]).all() and c[-1] < 1e-3 * c[0], f"{rec}: the product still vanishes"


@pytest.mark.claim("autograd-matches-product")
def test_autograd_agrees_with_the_jacobian_product(g):
    assert g["product_gap"] < 1e-4, "autograd and the explicit Jacobian product agree"


@pytest.mark.claim("bound-holds-loosely")
def test_the_bound_holds_where_it_says_something(g):
    ratio = np.array(ast.literal_eval(g["bound_ratio_table"]))  # (sequence, lag)
    assert ratio.shape[1] == 41
    assert (ratio[:, 1:] <= 1 + 1e-5).all(), "below (gamma ||W||)^k at every lag, under ||W||_2 = 0.9"
    assert g["bound_max_ratio"] == ratio[:, 1:].max()
    assert g["bound_ratio_lag40"] == ratio[:, 40].max()
    assert g["bound_ratio_lag40"] < 1e-8, "by lag 40 the bound is loose by many orders of magnitude"


@pytest.mark.claim("linear-factors-approach-rho", "non-normal-shortfall", "takeaway-rate")
def test_linear_factor_per_step_is_the_spectral_radius(g):
    errors = {}
    for key, rho in RHOS.items():
        c = curve(g, f"curve_linear_{key}")
        assert g[f"factor_linear_{key}"] == pytest.approx(per_step_factor(c, g["fit_start"], g["T_lag"]), rel=1e-6)
        errors[key] = g[f"factor_linear_{key}"] - rho
        assert errors[key] < 0, f"rho = {rho}: the fitted factor falls short of rho"
    assert g["max_linear_factor_error"] == pytest.approx(max(abs(e) for e in errors.values()), rel=1e-6)
    assert g["min_linear_factor_shortfall"] == pytest.approx(min(-e for e in errors.values()), rel=1e-6)
    assert g["max_linear_factor_error"] < 0.05, "within a few hundredths of rho"
    # for a normal matrix (W = rho Q) the rate is exact at every lag: the shortfall is the non-normal matrix's
    assert g["orthogonal_rel_error"] < 1e-4 < g["min_linear_factor_shortfall"]


@pytest.mark.claim("below-one-vanishes-above-explodes")
def test_below_one_the_gradient_vanishes_above_one_it_explodes(g):
    for key, rho in RHOS.items():
        c = curve(g, f"curve_linear_{key}")
        if rho < 1:
            assert g[f"factor_linear_{key}"] < 1 and c[-1] < c[0], f"rho = {rho}: vanishes geometrically"
    c115 = curve(g, "curve_linear_115")
    assert g["factor_linear_115"] > 1
    assert g["start_norm"] == pytest.approx(c115[0], rel=1e-6) == pytest.approx(math.sqrt(32), rel=1e-6)
    assert g["linear115_growth"] == pytest.approx(c115[g["T_lag"]] / g["start_norm"], rel=1e-6)
    assert g["linear115_growth"] > 100, "it explodes"


@pytest.mark.claim("tanh-factors-below-rho", "takeaway-rate")
def test_every_tanh_factor_is_smaller_than_rho(g):
    for key, rho in RHOS.items():
        c = curve(g, f"curve_tanh_{key}")
        assert g[f"factor_tanh_{key}"] == pytest.approx(per_step_factor(c, g["fit_start"], g["T_lag"]), rel=1e-6)
        assert g[f"factor_tanh_{key}"] < rho, "every tanh factor is smaller than rho"
        assert g[f"factor_tanh_{key}"] < g[f"factor_linear_{key}"], "tanh saturation shrinks each factor"


@pytest.mark.claim("tanh07-crossings")
def test_vanishing_at_rho_07(g):
    c = curve(g, "curve_tanh_070")
    assert g["start_norm"] == pytest.approx(c[0], rel=1e-6)
    assert g["tanh07_lag40"] == pytest.approx(c[40], rel=1e-6) == g["tanh_lag40_070"]
    assert g["tanh07_ratio40"] == pytest.approx(c[40] / c[0], rel=1e-6)
    assert g["tanh07_below_1e6"] == int(np.argmax(c < g["level_small"])) and c[g["tanh07_below_1e6"] - 1] >= 1e-6
    assert g["tanh07_below_1e8"] == int(np.argmax(c < g["level_tiny"])) and c[g["tanh07_below_1e8"] - 1] >= 1e-8
    assert g["tanh07_below_1e6"] < g["tanh07_below_1e8"] <= g["T_lag"]


@pytest.mark.claim("necessary-not-sufficient")
def test_saturation_tames_the_explosion(g):
    assert 0.7 * g["opnorm_over_rho"] > 1, "||W||_2 > 1 already at rho = 0.7, so at 1.15 too: the condition holds"
    c = curve(g, "curve_tanh_115")
    assert g["tanh115_lag60"] == pytest.approx(c[g["T_lag"]], rel=1e-6)
    assert g["tanh115_lag60"] < g["start_norm"], "... and the tanh network's gradient does not grow"
    lag40 = [g[f"tanh_lag40_{key}"] for key in RHOS]
    assert lag40 == sorted(lag40)
    for key in RHOS:
        assert g[f"tanh_lag40_{key}"] == pytest.approx(curve(g, f"curve_tanh_{key}")[40], rel=1e-6)


@pytest.mark.claim("vanishing-share-tiny", "exploding-dominated", "takeaway-silent")
def test_vanishing_is_silent_and_exploding_is_loud(g):
    assert g["share_tanh07"] < 1e-3, "almost nothing of the weight gradient comes from beyond lag 20"
    assert 0.1 * g["wgrad_tanh095"] < g["wgrad_tanh07"] < 10 * g["wgrad_tanh095"], "unremarkable norm"
    assert g["wgrad_linear115"] > 1000 * g["wgrad_tanh07"]
    assert g["share_linear115"] > 0.5, "the exploding gradient is dominated by the distant past"


@pytest.mark.claim("one-update-wrecks")
def test_one_update_with_the_exploding_gradient_wrecks_the_weights(g):
    assert g["explode_step_rho"] > 10 * 1.15, "one step multiplies the spectral radius many times over"
    assert g["explode_step_rho"] ** g["T_lag"] > float(np.finfo(np.float32).max), "... so the states overflow"
    assert math.isnan(float(g["explode_step_loss"])), "and the loss becomes nan"


@pytest.mark.claim("vanishing-passes-untouched", "norm-clipping-cosine-one")
def test_clipping_keeps_direction_and_sets_length(g):
    assert abs(g["clip_cosine"] - 1) < 1e-6
    assert g["clip_norm_after"] == pytest.approx(10.0, rel=1e-5) and g["clip_norm_before"] > 1000
    assert g["clip_vanishing_norm"] < 10, "below the threshold"
    assert g["clip_vanishing_max_change"] == 0.0, "passes through bit for bit"
    assert g["clip_norm_before"] == pytest.approx(g["wgrad_linear115"], rel=1e-6), "the exploding gradient above"
    assert g["clip_vanishing_norm"] == pytest.approx(g["wgrad_tanh07"], rel=1e-6), "the vanishing gradient above"


@pytest.mark.claim("two-layer-count")
def test_two_layer_count(g):
    d_in, d_h = 4, 16
    assert g["two_layer_formula"] == g["two_layer_count"] == (d_h * d_in + d_h**2 + 2 * d_h) + (2 * d_h**2 + 2 * d_h)


@pytest.mark.claim("larger-inputs-shorter-reach")
def test_larger_inputs_shorter_reach(g):
    assert g["saturation_001"] > g["saturation_01"] > g["saturation_1"], "bigger inputs, shorter reach"
    assert g["saturation_1"] < 1e-9 < 1e-2 < g["saturation_001"], "input scale 1: real saturation; 0.01: none"
    # the middle scale is the section's default input weights: the rho = 1 tanh curve at lag 40
    assert g["saturation_01"] == pytest.approx(curve(g, "curve_tanh_100")[40], rel=1e-6)


@pytest.mark.claim("value-clipping-turns")
def test_clipping_by_value_turns_the_gradient(g):
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
            from helpers.gradients import spectral_radius

            out["explode_step_rho"] = spectral_radius(W_w - 1e-3 * full)  # one step at the notebook's rate
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
    assert g["wgrad_tanh07"] == pytest.approx(redone[("wgrad", "tanh", 0.7)], rel=1e-4)
    assert g["wgrad_linear115"] == pytest.approx(redone[("wgrad", "linear", 1.15)], rel=1e-4)
    assert g["explode_lr"] == 1e-3 and g["explode_step_rho"] == pytest.approx(redone["explode_step_rho"], rel=1e-4)
    assert g["share_tanh07"] == pytest.approx(redone[("share", "tanh", 0.7)], rel=1e-3)
    assert g["share_linear115"] == pytest.approx(redone[("share", "linear", 1.15)], rel=1e-4)
    assert g["value_clip_cosine"] == pytest.approx(redone["value_clip_cosine"], rel=1e-6)
