"""§14.50: the claims its prose makes, asserted on the values its notebook glued.

Each verdict sentence of the notebook is marked ``<!-- claim: id -->`` and asserted here by the test that
carries its id, from the data the notebook glued (per-width curves, per-seed results, the surface), not
from a boolean the notebook decided.
"""

import ast
import math

import numpy as np
import pytest


STEM = "14_50_scaled_dot_product_attention"


def data(g, name):
    """A glued list (written as its repr: glue takes scalars only)."""
    return ast.literal_eval(g[name])


def at(g, grid, curve, d_k):
    """The value of a glued per-width curve at width d_k."""
    return data(g, curve)[data(g, grid).index(d_k)]


@pytest.mark.claim("hand-code-agree", "third-key-dominates")
def test_worked_example_by_hand_and_by_code(g):
    """The hand calculation (closed forms in e) against the book's implementation run on the same numbers."""
    for i in (1, 2, 3):
        assert g[f"hand_a{i}"] == pytest.approx(g[f"code_a{i}"], rel=1e-6)
    assert g["hand_y1"] == pytest.approx(g["code_y1"], rel=1e-6)
    assert g["hand_y2"] == pytest.approx(g["code_y2"], rel=1e-6)
    assert g["hand_Z"] == pytest.approx(1 / g["code_a1"], rel=1e-6), "a_1 = e^0 / Z"
    # "Hand and code agree to 5e-08 (single-precision rounding)"
    diffs = [abs(g[f"hand_a{i}"] - g[f"code_a{i}"]) for i in (1, 2, 3)] + \
            [abs(g[f"hand_y{i}"] - g[f"code_y{i}"]) for i in (1, 2)]
    assert g["hand_vs_code_max_diff"] == pytest.approx(max(diffs), rel=1e-3)
    assert g["hand_vs_code_max_diff"] < 1e-6, "float32 rounding of numbers below 2"
    # "The third key matches best, so its value dominates, but the other two still receive 33 % of the weight"
    assert g["code_a3"] > g["code_a2"] > g["code_a1"] and g["code_a3"] > 0.5
    assert g["hand_others"] == pytest.approx(1 - g["code_a3"], rel=1e-6)


@pytest.mark.claim("scale-hardens")
def test_scaling_the_query_hardens_the_lookup(g):
    """At c = 0 the scores are equal (weights 1/3); at c = 10 the scores are 0, 10, 20 (closed form)."""
    assert abs(g["uniform_a_c0"] - 1 / 3) < 1e-7
    assert g["hard_a3_c10"] == pytest.approx(math.exp(20) / (1 + math.exp(10) + math.exp(20)), rel=1e-6)


@pytest.mark.claim("spread-sqrt-dk", "spread-within", "right-for-all", "takeaway-scaling")
def test_logit_spread_follows_sqrt_dk(g):
    widths, unscaled, scaled = data(g, "spread_dk"), data(g, "spread_sd_unscaled"), data(g, "spread_sd_scaled")
    # "grows like sqrt(d_k); dividing by sqrt(d_k) brings it back to 1 at every width" (4000 pairs: ~2 % noise)
    for d_k, u, s in zip(widths, unscaled, scaled):
        assert abs(u / math.sqrt(d_k) - 1) < 0.05, d_k
        assert abs(s - 1) < 0.05, d_k
    # "any fixed constant would be right for one width only": the unscaled spread varies over the widths
    assert unscaled[-1] / unscaled[0] > 10
    # "follows sqrt(d_k) to within 2.1 % at every width, so the scaled one stays between 0.996 and 1.021"
    assert g["spread_ratio_max_dev"] == pytest.approx(
        max(abs(u / math.sqrt(d) - 1) for d, u in zip(widths, unscaled)), rel=1e-4)
    assert g["spread_scaled_min"] == pytest.approx(min(scaled), rel=1e-9)
    assert g["spread_scaled_max"] == pytest.approx(max(scaled), rel=1e-9)
    assert g["spread_ratio_max_dev"] == pytest.approx(max(abs(s - 1) for s in scaled), rel=1e-4), "the same numbers"


def test_the_default_linear_layer_scales_the_variance_by_a_third(g):
    """PyTorch's default init, U(±1/sqrt(fan_in)): each weight has variance 1/(3 fan_in), the output 1/3 of the input's."""
    assert g["default_linear_var"] == pytest.approx(1 / 3, rel=0.05)


@pytest.mark.claim("scaled-flat", "takeaway-scaling")
def test_with_the_scaling_nothing_depends_on_the_width(g):
    grad, entropy = data(g, "sat_grad_scaled_curve"), data(g, "sat_entropy_scaled_curve")
    assert g["sat_grad_scaled_min"] == pytest.approx(min(grad), rel=1e-9)
    assert g["sat_grad_scaled_max"] == pytest.approx(max(grad), rel=1e-9)
    assert g["sat_entropy_scaled_min"] == pytest.approx(min(entropy), rel=1e-9)
    assert g["sat_entropy_scaled_max"] == pytest.approx(max(entropy), rel=1e-9)
    # flat: the widths differ by 256x, the gradient factor by under 15 %, the entropy by under 0.15 nats
    assert max(grad) / min(grad) < 1.15
    assert max(entropy) - min(entropy) < 0.15


@pytest.mark.claim("unscaled-hardens")
def test_without_the_scaling_the_rows_harden_at_512(g):
    def at512(name):
        return at(g, "sat_dk", name, 512)

    assert g["sat_maxw_unscaled_512"] == pytest.approx(at512("sat_maxw_unscaled_curve"), rel=1e-9)
    assert g["sat_maxw_scaled_512"] == pytest.approx(at512("sat_maxw_scaled_curve"), rel=1e-9)
    assert g["sat_share_saturated_512"] == pytest.approx(at512("sat_share_saturated_unscaled_curve"), rel=1e-9)
    assert g["sat_entropy_unscaled_512"] == pytest.approx(at512("sat_entropy_unscaled_curve"), rel=1e-9)
    assert g["sat_grad_unscaled_512"] == pytest.approx(at512("sat_grad_unscaled_curve"), rel=1e-9)
    assert g["sat_grad_ratio_512"] == pytest.approx(at512("sat_grad_scaled_curve") / at512("sat_grad_unscaled_curve"),
                                                    rel=1e-9)
    # the rows harden: a larger largest weight, rows past the one-hot threshold, less entropy, less gradient
    assert g["sat_maxw_unscaled_512"] > g["sat_maxw_scaled_512"]
    assert g["sat_share_saturated_512"] > at512("sat_share_saturated_scaled_curve")
    assert g["sat_entropy_unscaled_512"] < at512("sat_entropy_scaled_curve")
    assert g["sat_grad_ratio_512"] > 10, "'has fallen to ..., ... times smaller'"


@pytest.mark.claim("unscaled-first-rises")
def test_the_unscaled_gradient_factor_first_rises(g):
    assert g["sat_grad_unscaled_4"] == pytest.approx(at(g, "sat_dk", "sat_grad_unscaled_curve", 4), rel=1e-9)
    assert g["sat_grad_unscaled_16"] == pytest.approx(at(g, "sat_dk", "sat_grad_unscaled_curve", 16), rel=1e-9)
    assert g["sat_grad_unscaled_16"] > g["sat_grad_unscaled_4"], "rises from d_k = 4 to 16"
    assert data(g, "sat_grad_unscaled_curve")[-1] < g["sat_grad_unscaled_4"], "... first: it falls later"


@pytest.mark.claim("misconception-saturates", "takeaway-scaling")
def test_without_the_scaling_the_softmax_saturates(g):
    spread, maxw = data(g, "spread_sd_unscaled"), data(g, "sat_maxw_unscaled_curve")
    grad = data(g, "sat_grad_unscaled_curve")
    assert all(b > a for a, b in zip(spread, spread[1:])), "the logits' spread grows with the width"
    assert all(b > a for a, b in zip(maxw, maxw[1:])) and maxw[-1] > 0.9, "rows approach one-hot"
    assert grad[-1] < 0.01 * max(grad), "the gradient factor collapses"


def _seeds(g, short, key, d_k):
    return data(g, f"train_{short}_{key}_{d_k}_seeds")


def _sweep(g):
    """{arm: {rate: {"val": per-seed validation errors, "err": per-seed held-out errors}}} at d_k = 256."""
    return data(g, "train_sweep")


@pytest.mark.claim("best-rate-inside")
def test_each_arm_gets_its_best_rate_inside_the_sweep(g):
    """The rate kept for each arm is the one with the lowest mean validation error, and it is not at an end of the grid."""
    rates, sweep = data(g, "train_lrs"), _sweep(g)
    assert len(rates) == g["train_n_lrs"] and rates[0] == g["train_lr_lo"] and rates[-1] == g["train_lr_hi"]
    for key in ("scaled", "unscaled"):
        assert sorted(sweep[key]) == sorted(rates)
        best = min(rates, key=lambda lr: np.mean(sweep[key][lr]["val"]))
        assert g[f"train_best_lr_{key}"] == best
        assert rates[0] < best < rates[-1], "inside the swept range"
        # the per-seed results reported for d_k = 256 are those at the kept rate
        assert _seeds(g, "err", key, 256) == sweep[key][best]["err"]


@pytest.mark.claim("unscaled-ends-worse", "ends-further", "cost-ratio", "takeaway-trained", "ex4-constant")
def test_at_its_best_rate_the_unscaled_layer_ends_worse(g):
    """d_k = 256, each arm at its own best rate: the unscaled layer's held-out error is larger in every seed."""
    for key in ("scaled", "unscaled"):
        for d_k in (16, 256):
            for short in ("err", "acc", "grad"):
                seeds = _seeds(g, short, key, d_k)
                assert len(seeds) == g["train_seeds"]
                assert g[f"train_{short}_{key}_{d_k}"] == pytest.approx(np.mean(seeds), rel=1e-9)
                assert g[f"train_{short}_{key}_{d_k}_lo"] == pytest.approx(min(seeds), rel=1e-9)
                assert g[f"train_{short}_{key}_{d_k}_hi"] == pytest.approx(max(seeds), rel=1e-9)
    err_u, err_s = _seeds(g, "err", "unscaled", 256), _seeds(g, "err", "scaled", 256)
    assert all(u > s for u, s in zip(err_u, err_s)), "a larger error in every seed"
    assert min(err_u) > max(err_s), "the seeds' ranges do not overlap"
    assert g["train_err_ratio_256"] == pytest.approx(np.mean(err_u) / np.mean(err_s), rel=1e-9)
    assert g["train_err_ratio_256"] > 1


def test_the_scale_of_the_error(g):
    """Uniform attention over T values of width d_v: expected error d_v (1 - 1/T), measured on 10,000 examples."""
    assert g["train_err_uniform"] == pytest.approx(g["train_d_v"] * (1 - 1 / g["train_T"]), abs=0.15)


@pytest.mark.claim("unscaled-acc-lower")
def test_the_unscaled_layer_picks_the_right_key_less_often(g):
    acc_u, acc_s = _seeds(g, "acc", "unscaled", 256), _seeds(g, "acc", "scaled", 256)
    assert g["train_acc_unscaled_256"] < g["train_acc_scaled_256"]
    assert min(acc_u) > 10 / g["train_T"], "far above chance: it still learns"


@pytest.mark.claim("adam-equivalence")
def test_the_unscaled_layer_started_smaller_retraces_the_scaled_one(g):
    """Unscaled, started c times smaller at a c times smaller rate == scaled (same seed), to float32 rounding."""
    assert g["train_c"] ** 4 == g["train_dk_large"]
    assert g["train_equiv_err_scaled"] == _sweep(g)["scaled"][g["train_lr_control"]]["err"][0]
    assert g["train_equiv_diff"] == pytest.approx(abs(g["train_equiv_err_scaled"] - g["train_equiv_err_unscaled"]),
                                                  rel=1e-6, abs=1e-12)
    # the two errors agree to the four decimals shown
    assert abs(g["train_equiv_err_unscaled"] - g["train_equiv_err_scaled"]) < 5e-5


@pytest.mark.claim("first-grad-larger")
def test_the_first_gradient_is_larger_without_the_scaling(g):
    """The step-0 gradient to W_Q at d_k = 256 (means over the seeds): unscaled larger."""
    assert g["train_grad_unscaled_256"] > g["train_grad_scaled_256"]
    assert g["train_grad_unscaled_256"] == pytest.approx(np.mean(_seeds(g, "grad", "unscaled", 256)), rel=1e-9)
    assert g["train_grad_scaled_256"] == pytest.approx(np.mean(_seeds(g, "grad", "scaled", 256)), rel=1e-9)


def _split(g, key):
    """One batch at initialisation, d_k = 256: per-example gradient to W_Q, one-hot start, argmax on a wrong key."""
    grad = np.array(data(g, f"split_grad_{key}_examples"))
    onehot = np.array(data(g, f"split_onehot_{key}_examples"), dtype=bool)
    wrong = np.array(data(g, f"split_wrong_{key}_examples"), dtype=bool)
    assert len(grad) == len(onehot) == len(wrong) == g["split_n"]
    return grad, onehot, wrong


@pytest.mark.claim("start-spread", "start-sd", "query-variance")
def test_the_noisy_query_starts_the_logits_at_sqrt_2dk(g):
    """The query is a noisy copy: var(q) about 2, var(k) about 1, so the logits spread about sqrt(2 d_k), and the
    scaled ones about sqrt(2)."""
    d_k = g["train_dk_large"]
    assert 1.8 < g["split_q_var"] < 2.2 and 0.9 < g["split_k_var"] < 1.1
    assert abs(g["split_logit_sd_unscaled"] / math.sqrt(2 * d_k) - 1) < 0.1
    assert g["split_logit_sd_unscaled"] > 1.2 * g["train_sqrt_dk_large"], "not sqrt(d_k)"
    assert g["split_logit_sd_scaled"] == pytest.approx(g["split_logit_sd_unscaled"] / math.sqrt(d_k), rel=1e-6)
    assert abs(g["split_logit_sd_scaled"] / math.sqrt(2) - 1) < 0.1


@pytest.mark.claim("split-wrong-onehot", "split-gradient", "split-most", "misconception-split", "takeaway-scaling")
def test_without_the_divisor_most_examples_start_one_hot_on_a_wrong_key(g):
    grad_u, onehot_u, wrong_u = _split(g, "unscaled")
    grad_s, onehot_s, _ = _split(g, "scaled")
    share = (onehot_u & wrong_u).mean()
    assert g["split_wrong_onehot_unscaled"] == pytest.approx(share, rel=1e-9)
    assert share > 0.5, "most examples"
    assert g["split_onehot_scaled"] == pytest.approx(onehot_s.mean(), abs=1e-12) and g["split_onehot_scaled"] == 0.0
    med_onehot, med_other = np.median(grad_u[onehot_u]), np.median(grad_u[~onehot_u])
    assert g["split_grad_onehot_unscaled"] == pytest.approx(med_onehot, rel=1e-9)
    assert g["split_grad_other_unscaled"] == pytest.approx(med_other, rel=1e-9)
    assert g["split_grad_scaled"] == pytest.approx(np.median(grad_s), rel=1e-9)
    # "almost nothing back": the one-hot rows' median is a tiny fraction of every other median
    assert med_onehot < 1e-2 * min(med_other, g["split_grad_scaled"])
    # the unsaturated rows, amplified by sqrt(d_k), exceed the scaled rows and make the batch gradient larger
    assert med_other > g["split_grad_scaled"]
    assert g["train_grad_unscaled_256"] > g["train_grad_scaled_256"]


@pytest.mark.claim("entropy-approx")
def test_the_entropy_depends_on_d_k_over_tau_squared_only_approximately(g):
    """At tau = sqrt(d_k): higher at d_k = 4 than at 512, which is close to the limit; the residual is small."""
    h4, h512, hinf = g["approx_h_4"], g["approx_h_512"], g["approx_h_inf"]
    assert h4 > h512 > hinf - 2e-3
    assert h512 - hinf < 5e-3, "the dependence on d_k vanishes as d_k grows"
    assert 0 < h4 - hinf < 0.02 * g["log_T_keys"], "a small residual"


@pytest.mark.claim("narrow-control-close")
def test_the_narrow_control_is_close(g):
    """At d_k = 16 the two arms are much closer than at d_k = 256."""
    ratio_16 = np.mean(_seeds(g, "err", "unscaled", 16)) / np.mean(_seeds(g, "err", "scaled", 16))
    assert g["train_err_ratio_16"] == pytest.approx(ratio_16, rel=1e-9)
    assert abs(g["train_err_ratio_16"] - 1) < (g["train_err_ratio_256"] - 1) / 4


@pytest.mark.claim("narrow-worse", "narrow-rank")
def test_the_narrow_layer_compares_along_fewer_directions(g):
    """Both arms do worse at d_k = 16; the exact comparison along 16 of the 32 directions is about as good as the
    scaled layer at d_k = 16, and along all of them about as good as the scaled layer at d_k = 256."""
    for key in ("scaled", "unscaled"):
        assert min(_seeds(g, "err", key, 16)) > max(_seeds(g, "err", key, 256))
        assert max(_seeds(g, "acc", key, 16)) < min(_seeds(g, "acc", key, 256))
    assert g["train_dk_small"] < g["train_d_in"] <= g["train_dk_large"], "rank-limited at 16 only"
    assert g["train_acc_exact_16"] < g["train_acc_exact_full"]
    # "close to what the scaled layer reaches at the two widths": within 3 points (1,000 held-out queries per seed)
    assert abs(g["train_acc_scaled_16"] - g["train_acc_exact_16"]) < 0.03
    assert abs(g["train_acc_scaled_256"] - g["train_acc_exact_full"]) < 0.03


@pytest.mark.claim("surface-small-tau", "surface-large-tau", "surface-monotone")
def test_entropy_surface(g):
    surface = np.array(data(g, "surface_entropy"))  # (tau, d_k), tau ascending
    assert surface.shape == (len(data(g, "surface_tau")), len(data(g, "surface_dk")))
    assert (np.diff(surface, axis=0) > 0).all(), "rises monotonically with tau at every width"
    # the front (small tau) drops to nearly zero entropy; the back rises to ln 32
    assert np.unravel_index(surface.argmin(), surface.shape)[0] == 0 and surface.min() < 0.05 * g["log_T_keys"]
    assert np.unravel_index(surface.argmax(), surface.shape)[0] == len(surface) - 1
    assert g["surface_entropy_max"] == pytest.approx(surface.max(), rel=1e-12)
    assert g["log_T_keys"] - 0.01 < g["surface_entropy_max"] <= g["log_T_keys"] + 1e-9


@pytest.mark.claim("ridge-constant", "ridge-between", "same-contour", "surface-confirms", "takeaway-surface")
def test_entropy_surface_contour(g):
    surface = np.array(data(g, "surface_entropy"))
    contour, tau1 = data(g, "contour_curve"), data(g, "tau1_curve")
    assert len(contour) == len(tau1) == len(data(g, "surface_dk"))
    assert g["contour_entropy_min"] == pytest.approx(min(contour), rel=1e-12)
    assert g["contour_entropy_max"] == pytest.approx(max(contour), rel=1e-12)
    assert g["tau1_entropy_first"] == pytest.approx(tau1[0], rel=1e-12)
    assert g["tau1_entropy_last"] == pytest.approx(tau1[-1], rel=1e-12)
    # tau = sqrt(d_k) runs at constant height: its range is a small part of the surface's
    assert max(contour) - min(contour) < 0.1 * (surface.max() - surface.min())
    # tau = 1 slides down as d_k grows: lower at every doubling of d_k (4 grid steps), and falls overall
    assert all(tau1[j + 4] < tau1[j] for j in range(len(tau1) - 4))
    assert g["tau1_entropy_first"] > g["tau1_entropy_last"]
    # "the same contour as it gets wider": the located contour's exponent is the variance argument's 1/2
    assert 0.45 < g["contour_slope"] < 0.55


@pytest.mark.claim("causal-rows")
def test_causal_mask_before_softmax(g):
    assert g["causal_upper_max"] == 0.0
    assert g["causal_rowsum_max_dev"] < 1e-6
    assert g["causal_w00"] == pytest.approx(1.0, abs=1e-6), "the first query puts all its weight on itself"
    assert g["causal_vs_torch"] < 1e-6
    assert g["leak_masked"] == 0.0 and g["leak_unmasked"] > 1e-2


def test_mask_after_softmax_leaks_the_future(g):
    """The behavioural test on the wrong variant: earlier outputs move when a later token changes."""
    assert g["leak_wrong"] > 1e4 * max(g["leak_masked"], 1e-9)


@pytest.mark.claim("wrong-rows")
def test_mask_after_softmax_does_not_normalise(g):
    sums = data(g, "wrong_rowsums")
    assert g["T_causal"] == len(sums)
    assert abs(sums[-1] - 1) < 1e-6 and g["wrong_rowsum_last"] == pytest.approx(sums[-1], rel=1e-9)
    assert all(s < 1 - 1e-6 for s in sums[:-1]), "every row but the last loses mass"
    assert g["wrong_rows_not_normalised"] == sum(abs(s - 1) > 1e-6 for s in sums)
    assert g["wrong_rowsum_query0"] == pytest.approx(sums[0], rel=1e-9)


@pytest.mark.claim("context-set", "shuffle-same", "pad-and-perm", "takeaway-cross-set")
def test_cross_attention(g):
    assert ast.literal_eval(g["cross_w_shape"]) == (2, 4, 7)
    assert ast.literal_eval(g["cross_out_shape"]) == (2, 4, 5)
    assert g["cross_pad_weight"] == 0.0
    assert g["cross_perm_out_diff"] < 1e-6 and g["cross_perm_w_diff"] < 1e-6


@pytest.mark.claim("renorm-worse", "ex3-agree", "ex3-nan")
def test_renormalising_after_the_softmax(g):
    assert g["ex3_renorm_diff"] < 1e-6, "equivalent in exact arithmetic: float32 rounding only"
    assert g["ex3_nan_after"] == 3 and g["ex3_nan_before"] == 0, "every weight of the 3-key row is NaN"


@pytest.mark.claim("ex4-colder", "ex4-ratio")
def test_the_gradient_optimal_divisor(g):
    tau_J, d_k = np.array(data(g, "ex4_tau_J")), np.array(data(g, "surface_dk"), dtype=float)
    ratio = tau_J / np.sqrt(d_k)
    assert g["ex4_ratio_min"] == pytest.approx(ratio.min(), rel=1e-9)
    assert g["ex4_ratio_max"] == pytest.approx(ratio.max(), rel=1e-9)
    assert g["ex4_ratio_max"] < 1, "a smaller divisor than sqrt(d_k) at every width: a fraction of it"
    assert (np.diff(tau_J) < 0).any(), "the maximum is flat, its location noisy: tau_J is not monotone"
    slope = np.polyfit(np.log(d_k), np.log(tau_J), 1)[0]
    assert g["ex4_slope"] == pytest.approx(slope, rel=1e-9)
    assert 0.4 < g["ex4_slope"] < 0.6, "grows like sqrt(d_k)"


def test_exercise_solutions(g):
    assert abs(g["ex1_sd_measured"] / g["ex1_sd_predicted"] - 1) < 0.03
    assert g["ex2_jacobian_diff"] < 1e-14, "float64: autograd and the formula agree to rounding"
    assert abs(g["ex2_uniform_norm"] - g["ex2_uniform_formula"]) < 1e-12


@pytest.mark.claim("blocked-row", "blocked-row-scratch")
def test_a_fully_blocked_row(g):
    """From scratch and nn.MultiheadAttention: every entry NaN; the fused kernel: a row of zeros."""
    assert g["blocked_nan_scratch"] == g["blocked_d_v"]
    assert g["blocked_nan_mha"] == g["blocked_d_v"]
    assert g["blocked_nan_fused"] == 0
    assert g["blocked_abs_fused"] == 0.0
