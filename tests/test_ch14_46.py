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
    assert g["tap_ratio_20"] < g["tap_rho"] ** 20, "taps shrink like W^k: no slower than rho^k"


@pytest.mark.claim("taps-long-run-rate")
def test_rho_sets_the_taps_long_run_rate(g):
    taps = curve(g, "tap_norms")
    near, mid, far = g["tap_near"], g["tap_mid"], g["tap_far"]
    assert g["tap_ratio_mid_far"] == pytest.approx(taps[far] / taps[mid], rel=1e-9)
    assert g["tap_rho_pow_mid_far"] == pytest.approx(g["tap_rho"] ** (far - mid), rel=1e-12)
    assert abs(g["tap_ratio_mid_far"] / g["tap_rho_pow_mid_far"] - 1) < 0.05, "from tap 10 to 20: rho^10"


@pytest.mark.claim("taps-first-faster")
def test_the_first_taps_fall_faster_than_rho(g, redone):
    taps = curve(g, "tap_norms")
    near = g["tap_near"]
    assert g["tap_ratio_near"] == pytest.approx(taps[near] / taps[0], rel=1e-9)
    assert g["tap_rho_pow_near"] == pytest.approx(g["tap_rho"] ** near, rel=1e-12)
    assert g["tap_ratio_near"] < 0.1 * g["tap_rho_pow_near"], "the first taps fall much faster than that"
    assert g["tap_second_eigen"] == pytest.approx(redone["tap_second_eigen"], rel=1e-6)
    assert g["tap_second_eigen"] < g["tap_rho"], "directions whose eigenvalues are smaller"


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


@pytest.mark.claim("linear-factors-approach-rho", "takeaway-rate")
def test_linear_factor_per_step_is_the_spectral_radius(g):
    errors = {}
    for key, rho in RHOS.items():
        c = curve(g, f"curve_linear_{key}")
        assert g[f"factor_linear_{key}"] == pytest.approx(per_step_factor(c, g["fit_start"], g["T_lag"]), rel=1e-6)
        errors[key] = g[f"factor_linear_{key}"] - rho
        assert errors[key] < 0, f"rho = {rho}: the fitted factor falls short of rho"
    assert g["max_linear_factor_error"] == pytest.approx(max(abs(e) for e in errors.values()), rel=1e-6)
    assert g["min_linear_factor_shortfall"] == pytest.approx(min(-e for e in errors.values()), rel=1e-6)
    assert g["min_linear_factor_shortfall"] > 1e-3, "every one falls short"


@pytest.mark.claim("same-fraction-of-rho")
def test_every_linear_factor_is_the_same_fraction_of_its_rho(g):
    fractions = [g[f"factor_linear_{key}"] / rho for key, rho in RHOS.items()]
    assert max(fractions) - min(fractions) < 1e-5, "the same matrices, rescaled"
    assert g["linear_factor_over_rho"] == pytest.approx(np.mean(fractions), rel=1e-9)
    assert g["n_matrices"] == 8


@pytest.mark.claim("twins-short-by-less", "non-normality-does-most")
def test_normal_twins_fall_short_by_less(g, redone):
    twin, gauss = curve(g, "twin_curve"), curve(g, "gauss_curve_rho1")
    assert g["twin_factor"] == pytest.approx(per_step_factor(twin, g["fit_start"], g["T_lag"]), rel=1e-9)
    assert g["gauss_factor_rho1"] == pytest.approx(per_step_factor(gauss, g["fit_start"], g["T_lag"]), rel=1e-9)
    assert g["gauss_factor_rho1"] == pytest.approx(g["factor_linear_100"], rel=1e-5), "the figure's matrices"
    assert g["twin_gauss_gap"] < 1e-5 and g["twin_defect"] < 1e-12, "same matrices; the twins are normal"
    assert g["twin_count"] == 8 * 16
    assert twin.tolist() == pytest.approx(redone["twin_curve"], rel=1e-9), "twins rebuilt from the seeds"
    twin_short, gauss_short = 1 - g["twin_factor"], 1 - g["gauss_factor_rho1"]
    assert 0 < twin_short < gauss_short, "the twins fall short as well, by less"
    assert g["twin_shortfall_share"] == pytest.approx(twin_short / gauss_short, rel=1e-9)
    assert g["twin_shortfall_share"] < 0.5, "the non-normality does most of it"


@pytest.mark.claim("eigenvalues-near-rho")
def test_several_eigenvalues_lie_just_inside_rho(g, redone):
    counts, gaps = ast.literal_eval(g["near_counts"]), curve(g, "eigen_gaps")
    assert counts == redone["near_counts"] and gaps.tolist() == pytest.approx(redone["eigen_gaps"], rel=1e-9)
    assert g["near_rho_count"] == pytest.approx(np.mean(counts), rel=1e-12)
    assert g["second_eigen_ratio"] == pytest.approx(gaps.mean(), rel=1e-12)
    assert g["second_eigen_ratio"] > 1 - g["near_rho_margin"], "the largest of them (within the margin of rho)"
    assert (gaps < 1).all()


@pytest.mark.claim("orthogonal-exact")
def test_rho_q_is_exact(g):
    assert g["orthogonal_rel_error"] < 1e-4, "rho^k exactly, up to float32 rounding"
    assert g["orthogonal_moduli_spread"] < 1e-6, "every eigenvalue of rho Q has modulus rho"


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


@pytest.mark.claim("inputs-push-below-one")
def test_below_one_the_inputs_push_the_units_off_the_linear_part(g, redone):
    for key in ("small_070", "mid_070", "small_115", "mid_115"):
        for kind in ("first", "last"):
            assert g[f"dtanh_{kind}_{key}"] == pytest.approx(redone[f"dtanh_{kind}_{key}"], rel=1e-5), key
    assert g["dtanh_first_mid_070"] < g["dtanh_first_small_070"], "below rho = 1 the inputs do the pushing"
    assert g["input_scale_small"] < g["input_scale"]


@pytest.mark.claim("recurrence-saturates-above-one", "state-grows-above-one")
def test_above_one_the_recurrence_grows_the_state_into_saturation(g, redone):
    for key in ("late_small_115", "early_small_115"):
        assert g[f"sat_factor_{key}"] == pytest.approx(redone[f"sat_factor_{key}"], rel=1e-5)
    # the same small inputs, a larger rho: more saturation, and more of it later in the sequence
    assert g["dtanh_first_small_115"] < g["dtanh_first_small_070"]
    assert g["dtanh_last_small_115"] < g["dtanh_first_small_115"], "the recurrence grows the state until tanh bends it"
    assert g["sat_factor_late_small_115"] > 1 > g["sat_factor_early_small_115"], \
        "still grows over lags fit_start to T_lag, and shrinks over lags 0 to fit_start"
    assert g["sat_factor_late_small_115"] < 1.15, "oracle: tanh' <= 1, so never faster than rho = 1.15"


@pytest.mark.claim("tanh07-crossings")
def test_vanishing_at_rho_07(g):
    c = curve(g, "curve_tanh_070")
    assert g["start_norm"] == pytest.approx(c[0], rel=1e-6)
    assert g["tanh07_lag40"] == pytest.approx(c[40], rel=1e-6) == g["tanh_lag40_070"]
    assert g["tanh07_ratio40"] == pytest.approx(c[40] / c[0], rel=1e-6)
    assert g["tanh07_below_1e6"] == int(np.argmax(c < g["level_small"])) and c[g["tanh07_below_1e6"] - 1] >= 1e-6
    assert g["tanh07_below_1e8"] == int(np.argmax(c < g["level_tiny"])) and c[g["tanh07_below_1e8"] - 1] >= 1e-8
    assert g["tanh07_below_1e6"] < g["tanh07_below_1e8"] <= g["T_lag"]


@pytest.mark.claim("necessary-not-sufficient", "saturation-tames")
def test_saturation_tames_the_explosion(g):
    assert 0.7 * g["opnorm_over_rho"] > 1, "||W||_2 > 1 already at rho = 0.7, so at 1.15 too: the condition holds"
    c = curve(g, "curve_tanh_115")
    assert g["tanh115_lag60"] == pytest.approx(c[g["T_lag"]], rel=1e-6)
    assert g["tanh115_lag60"] < g["start_norm"], "... and the tanh network's gradient does not grow"
    lag40 = [g[f"tanh_lag40_{key}"] for key in RHOS]
    assert lag40 == sorted(lag40)
    for key in RHOS:
        assert g[f"tanh_lag40_{key}"] == pytest.approx(curve(g, f"curve_tanh_{key}")[40], rel=1e-6)


@pytest.mark.claim("vanishing-share-tiny", "takeaway-silent")
def test_vanishing_is_silent(g):
    assert g["share_tanh07"] < 1e-3, "almost nothing of the weight gradient comes from lag 20 on"
    assert 0.1 * g["wgrad_tanh095"] < g["wgrad_tanh07"] < 10 * g["wgrad_tanh095"], "unremarkable norm"
    assert g["truncate"] == 20 and g["truncate_last"] == g["truncate"] - 1


def _terms(g, key):
    terms = curve(g, f"terms_{key}")
    assert len(terms) == g["T_lag"] and terms[-1] == 0.0, "the last term multiplies h_0 = 0"
    return terms[:-1]


@pytest.mark.claim("vanishing-terms-die")
def test_the_vanishing_terms_die_out_with_the_lag(g):
    terms = _terms(g, "tanh07")
    assert g["term_tanh07_lag40_ratio"] == pytest.approx(terms[40] / terms[0], rel=1e-9)
    assert g["term_spread_tanh07"] == pytest.approx(terms.max() / terms.min(), rel=1e-6)
    assert g["last_nonzero_lag"] == len(terms) - 1
    assert g["term_tanh07_lag40_ratio"] < 1e-5 and g["term_spread_tanh07"] > 1e6


@pytest.mark.claim("exploding-every-lag", "terms-cancel")
def test_every_lag_contributes_to_the_exploding_gradient(g):
    terms = _terms(g, "linear115")
    assert g["term_spread_linear115"] == pytest.approx(terms.max() / terms.min(), rel=1e-6)
    assert g["term_spread_linear115"] < 10, "all lags within a factor of a few"
    assert g["lag_share_equal"] == pytest.approx((g["T_lag"] - g["truncate"]) / g["T_lag"], rel=1e-12)
    assert abs(g["share_linear115"] - g["lag_share_equal"]) < 0.1, "about the share of the lags"
    # each term is delta_t h_{t-1}^T (one sequence: a rank-one matrix): delta grows back in time, h shrinks
    delta, h_prev = curve(g, "delta_norms_linear115"), curve(g, "hprev_norms_linear115")
    assert terms == pytest.approx(delta[:-1] * h_prev[:-1], rel=1e-3)
    assert delta[58] > 100 * delta[1] and h_prev[1] > 100 * h_prev[58], "the two factors cancel"
    grow, shrink = (delta[58] / delta[1]) ** (1 / 57), (h_prev[1] / h_prev[58]) ** (1 / 57)
    assert 1.05 < grow < 1.2 and 1.05 < shrink < 1.2 and abs(grow - shrink) < 0.05, "each by about rho per step"
    assert g["terms_sum_gap"] < 1e-5, "the terms add up to the gradient"


@pytest.mark.claim("forward-exploded")
def test_the_forward_pass_has_exploded_too(g, redone):
    assert g["hT_linear115"] == pytest.approx(redone["hT_linear115"], rel=1e-4)
    assert g["hT_linear115"] > 100 * g["start_norm"], "the state has exploded"
    assert g["hT_tanh07"] < g["start_norm"] and g["hT_tanh095"] < g["start_norm"], "a tanh state stays below sqrt(32)"


@pytest.mark.claim("one-update-wrecks")
def test_one_update_with_the_exploding_gradient_wrecks_the_weights(g):
    assert g["explode_step_rho"] ** g["T_lag"] > float(np.finfo(np.float32).max), "... so the states overflow"
    assert math.isnan(float(g["explode_step_loss"])), "and the loss becomes nan"


@pytest.mark.claim("vanishing-passes-untouched", "norm-clipping-cosine-one")
def test_clipping_keeps_direction_and_sets_length(g):
    assert abs(g["clip_cosine"] - 1) < 1e-6
    assert g["clip_factor"] == pytest.approx(10.0 / g["clip_norm_before"], rel=1e-9)
    assert g["clip_norm_after"] == pytest.approx(10.0, rel=1e-5), "the threshold c = 10"
    assert g["clip_vanishing_norm"] < 10, "below the threshold (c = 10)"
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
    # the middle scale is the section's default input weights: the rho = 1 tanh curve at lag 40
    assert g["saturation_01"] == pytest.approx(curve(g, "curve_tanh_100")[40], rel=1e-6)


@pytest.mark.claim("value-clipping-turns")
def test_clipping_by_value_turns_the_gradient(g, redone):
    assert g["value_clip"] == 0.01
    assert g["value_clip_cosine"] == pytest.approx(redone["value_clip_cosine"], rel=1e-6)
    assert g["value_clip_cosine"] < 0.9, "clipping by value turns the gradient"


@pytest.mark.claim("value-clip-limit")
def test_below_every_component_value_clipping_gives_the_l1_over_l2_cosine(g, redone):
    assert g["value_clip_smallest"] == pytest.approx(redone["value_clip_smallest"], rel=1e-6)
    assert g["value_clip_limit"] == pytest.approx(redone["value_clip_limit"], rel=1e-9)
    assert g["value_clip_smallest"] > g["value_clip"], "c is below every component"
    assert abs(g["value_clip_cosine"] - g["value_clip_limit"]) < 1e-6, "so the measured cosine is the formula's"


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
    moduli = np.sort(np.abs(np.linalg.eigvals(W.numpy())))[::-1]
    out["tap_second_eigen"] = float(moduli[moduli < (1 - 1e-9) * moduli[0]][0])
    # the normal twins: the eigenvalues of each rho = 1 matrix in real block form, turned by a random Q
    twin_rng, twin_curves, out["near_counts"], out["eigen_gaps"] = np.random.default_rng(seed), [], [], []
    for s in range(8):
        W1 = matrix_with_spectral_radius(32, 1.0, torch.Generator().manual_seed(seed + s)).double().numpy()
        lam = np.linalg.eigvals(W1)
        m = np.sort(np.abs(lam))[::-1]
        others = m[m < (1 - 1e-9) * m[0]]
        out["near_counts"].append(int((others > 0.9 * m[0]).sum()))
        out["eigen_gaps"].append(float(others[0] / m[0]))
        blocks = [np.array([[v.real]]) for v in lam[lam.imag == 0]]
        blocks += [np.array([[v.real, -v.imag], [v.imag, v.real]]) for v in lam[lam.imag > 0]]
        D = np.zeros((32, 32))
        i = 0
        for b in blocks:
            D[i:i + len(b), i:i + len(b)] = b
            i += len(b)
        for _ in range(16):
            Q, _ = np.linalg.qr(twin_rng.standard_normal((32, 32)))
            powers = np.linalg.matrix_power
            N = Q @ D @ Q.T
            twin_curves.append([np.linalg.norm(powers(N.T, k) @ np.ones(32)) for k in range(61)])
    out["twin_curve"] = np.exp(np.log(twin_curves).mean(axis=0)).tolist()
    # mean tanh' over the first and the last 30 steps, and the factors, at input scales 0.01 and 0.1
    from helpers.gradients import rnn_states

    for label, scale in (("small", 0.01), ("mid", 0.1)):
        for key, rho in (("070", 0.7), ("115", 1.15)):
            slopes, runs = [], []
            for s in range(8):
                gen = torch.Generator().manual_seed(seed + s)
                Ws = matrix_with_spectral_radius(32, rho, gen)
                Us, xs = torch.randn(32, 4, generator=gen) * scale, torch.randn(1, 60, 4, generator=gen)
                with torch.no_grad():
                    slopes.append(1 - torch.stack(rnn_states(Ws, Us, xs)[1:], dim=1)[0] ** 2)
                runs.append(gradient_norm_by_lag(rho, T=60, d=32, seed=seed + s, input_scale=scale))
            slope, gm = torch.stack(slopes), np.exp(np.log(runs).mean(axis=0))
            out[f"dtanh_first_{label}_{key}"] = slope[:, :30].mean().item()
            out[f"dtanh_last_{label}_{key}"] = slope[:, 30:].mean().item()
            out[f"sat_factor_late_{label}_{key}"] = float((gm[60] / gm[30]) ** (1 / 30))
            out[f"sat_factor_early_{label}_{key}"] = float((gm[30] / gm[0]) ** (1 / 30))
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
    for key, scale in (("saturation_001", 0.01), ("saturation_1", 1.0)):
        out[key] = float(np.exp(np.log(np.array(
            [gradient_norm_by_lag(1.0, T=60, seed=seed + s, input_scale=scale) for s in range(8)])[:, 40]).mean()))
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
        out["hT", truncate] = h.norm().item()
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
            flat = full.double().flatten()
            out["value_clip_smallest"] = flat.abs().min().item()
            out["value_clip_limit"] = (flat.abs().sum() / (flat.numel() ** 0.5 * flat.norm())).item()
            out["hT_linear115"] = out["hT", None]
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
    assert g["saturation_1"] == pytest.approx(redone["saturation_1"], rel=1e-3)
    assert g["wgrad_tanh095"] == pytest.approx(redone[("wgrad", "tanh", 0.95)], rel=1e-4)
    assert g["wgrad_tanh07"] == pytest.approx(redone[("wgrad", "tanh", 0.7)], rel=1e-4)
    assert g["wgrad_linear115"] == pytest.approx(redone[("wgrad", "linear", 1.15)], rel=1e-4)
    assert g["explode_lr"] == 1e-3 and g["explode_step_rho"] == pytest.approx(redone["explode_step_rho"], rel=1e-4)
    assert g["share_tanh07"] == pytest.approx(redone[("share", "tanh", 0.7)], rel=1e-3)
    assert g["share_linear115"] == pytest.approx(redone[("share", "linear", 1.15)], rel=1e-4)
    assert g["value_clip_cosine"] == pytest.approx(redone["value_clip_cosine"], rel=1e-6)
