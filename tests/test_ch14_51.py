"""§14.51: the claims its prose makes, asserted on the values its notebook glued.

Each verdict sentence of the notebook is marked ``<!-- claim: id -->`` and asserted here by the test that
carries its id, from the data the notebook glued (the per-h table, per-setting differences, per-offset
accuracies, the ablation table, the pruning curves), not from a boolean the notebook decided.
"""

import ast
import itertools
import math

import numpy as np
import pytest
import torch

from conftest import executed_parameters

STEM = "14_51_multi_head_attention"
FLOAT32_EPS = float(np.finfo(np.float32).eps)


def data(g, name):
    """A glued list (written as its repr: glue takes scalars only)."""
    return ast.literal_eval(g[name])


@pytest.mark.claim("head-is-slice")
def test_heads_are_slices_of_one_projection(g):
    assert g["head_slice_diff"] < 1e-6
    assert ast.literal_eval(g["walk_w_shape"]) == (2, 3, 5, 5)


@pytest.mark.claim("same-params-flops")
def test_parameters_and_flops_do_not_depend_on_heads(g):
    params, params_bias, flops = data(g, "param_counts"), data(g, "param_bias_counts"), data(g, "flop_counts")
    assert len(params) == len(params_bias) == len(flops) == len(data(g, "param_heads"))
    assert len(set(params)) == len(set(params_bias)) == len(set(flops)) == 1, "the same for every h"
    assert g["params_distinct"] == len(set(params)) and g["flops_distinct"] == len(set(flops))
    assert g["params_bias_distinct"] == len(set(params_bias))
    d, T = g["d_big"], 128
    assert g["params_value"] == params[0] == 4 * d**2
    assert g["params_bias_value"] == params_bias[0] == 4 * d**2 + 4 * d
    assert g["flops_value"] == flops[0] == 2 * (4 * T * d**2 + 2 * T**2 * d)
    assert g["params_formula"] == 4 * d**2 and g["params_bias_formula"] == 4 * d**2 + 4 * d
    assert g["flops_formula"] == 2 * (4 * T * d**2 + 2 * T**2 * d)


@pytest.mark.claim("agree-torch", "takeaway-agrees")
def test_agrees_with_torch_kernels(g):
    out, w, fused = data(g, "agree_out_diffs"), data(g, "agree_w_diffs"), data(g, "agree_fused_diffs")
    scales = data(g, "agree_out_scales")
    assert len(out) == len(w) == len(fused) == len(scales) == 3, "three settings"
    assert g["agree_out_max"] == max(out) and g["agree_w_max"] == max(w) and g["agree_fused_max"] == max(fused)
    assert g["agree_out_scale"] == pytest.approx(scales[-1], rel=1e-9), "the outputs compared (cross-attention)"
    # single-precision rounding: within a few float32 ulps of the outputs compared, in every setting
    for diff_out, diff_fused, scale in zip(out, fused, scales):
        assert max(diff_out, diff_fused) < 8 * FLOAT32_EPS * scale
    assert max(w) < 8 * FLOAT32_EPS, "weights are at most 1"


@pytest.mark.claim("same-params-toy", "one-head-fails", "ex4-premise", "takeaway-heads")
def test_four_heads_solve_what_one_head_cannot(g):
    counts = data(g, "acc_params")
    assert len(counts) == 2 and counts[0] == counts[1], "the same number of parameters"
    acc4, acc1 = data(g, "acc4_per_offset"), data(g, "acc1_per_offset")
    assert g["acc4_min"] == min(acc4) and g["acc4_min"] > 0.99, "four heads: solved"
    assert g["acc1_mean"] == pytest.approx(np.mean(acc1), rel=1e-9)
    assert g["acc1_max"] == pytest.approx(max(acc1), rel=1e-9)
    # one softmax cannot keep the four offsets apart: it gets at most one of them, the others stay far off
    assert sorted(acc1)[-2] < 0.5 < g["acc1_max"] < g["acc4_min"]


@pytest.mark.claim("heads-specialise", "takeaway-heads")
def test_heads_specialise_on_distinct_offsets(g):
    trained, init = np.array(data(g, "offset_weights")), np.array(data(g, "offset_weights_init"))  # (head, 0-5 back)
    favourite = trained.argmax(axis=1)
    assert sorted(favourite.tolist()) == [1, 2, 3, 4] == ast.literal_eval(g["dominant_offsets"]), "one offset each"
    assert g["own_offset_weight_min"] == pytest.approx(trained.max(axis=1).min(), rel=1e-9)
    assert g["init_offset_weight_max"] == pytest.approx(init.max(), rel=1e-9)
    assert g["own_offset_weight_min"] > 0.9 and g["own_offset_weight_min"] > 5 * g["init_offset_weight_max"]


@pytest.mark.claim("corr-small-negative", "init-more-alike")
def test_head_correlations(g):
    trained, init = data(g, "corr_trained_pairs"), data(g, "corr_init_pairs")
    assert len(trained) == len(init) == math.comb(4, 2)
    assert g["corr_trained_mean"] == pytest.approx(np.mean(trained), rel=1e-9)
    assert g["corr_trained_max"] == pytest.approx(max(trained), rel=1e-9)
    assert g["corr_trained_max_abs"] == pytest.approx(max(abs(c) for c in trained), rel=1e-9)
    assert all(c < 0 for c in trained), "every pair negative"
    assert all(abs(c) < 0.15 for c in trained), "every pair small"
    # "no accident": disjoint one-hot heads correlate at -p/(1-p), p = the share of allowed entries one uses
    p = g["corr_n_used"] / g["corr_n_allowed"]
    assert g["corr_disjoint_theory"] == pytest.approx(-p / (1 - p), rel=1e-12)
    assert abs(g["corr_trained_mean"] - g["corr_disjoint_theory"]) < 0.01
    # at initialisation more alike, and no head specialised yet (no offset holds even twice a uniform share)
    assert g["corr_init_mean"] == pytest.approx(np.mean(init), rel=1e-9)
    assert g["corr_init_mean"] > g["corr_trained_mean"]
    assert np.array(data(g, "offset_weights_init")).max() < 0.5 * np.array(data(g, "offset_weights")).max(axis=1).min()


def _ablation(g, heads):
    """{head removed: [accuracy at t-1 .. t-4]} for the model with `heads` heads."""
    return {row[1]: row[2:] for row in data(g, "ablation_rows") if row[0] == heads}


@pytest.mark.claim("four-indispensable", "eight-spare")
def test_single_head_ablation(g):
    chance = g["recall_chance"]
    abl4, abl8 = _ablation(g, 4), _ablation(g, 8)
    assert sorted(abl4) == list(range(4)) and sorted(abl8) == list(range(8))
    # four heads: every removal leaves one offset at about chance
    assert g["abl4_worst_offset_max"] == pytest.approx(max(min(a) for a in abl4.values()), rel=1e-9)
    assert g["abl4_worst_offset_max"] < 1.5 * chance
    assert g["abl4_mean_max"] == pytest.approx(max(np.mean(a) for a in abl4.values()), rel=1e-9)
    # eight heads: solved with all in place; some can go alone while the mean stays above the threshold
    full8 = data(g, "acc8_full_per_offset")
    assert g["acc8_full_min"] == min(full8) and g["acc8_full_min"] > 0.99
    assert g["abl8_n_harmless"] == sum(np.mean(a) > g["keep_threshold"] for a in abl8.values())
    assert 0 < g["abl8_n_harmless"] < g["ex3_n_heads"] == len(abl8)
    assert g["abl8_worst_offset_min"] == pytest.approx(min(min(a) for a in abl8.values()), rel=1e-9)


@pytest.mark.claim("prune4-drops", "prune8-graceful", "pruned-below-trained", "spread-over-more",
                   "pruning-not-training-small", "takeaway-pruning")
def test_greedy_pruning(g):
    p8, p4 = data(g, "prune8_curve"), data(g, "prune4_curve")   # mean test accuracy after k heads removed
    assert len(p8) == 8 and len(p4) == 4
    chance, keep, loose = g["recall_chance"], g["keep_threshold"], g["keep_loose"]
    # four heads: the first removal sends one offset to chance (it is one of the single ablations)
    assert g["prune4_after_one"] == pytest.approx(p4[1], rel=1e-12)
    removed = [a for a in _ablation(g, 4).values() if np.mean(a) == pytest.approx(p4[1], rel=1e-12)]
    assert removed and all(sorted(a)[0] < 1.5 * chance and sorted(a)[1] > keep for a in removed)
    # eight heads: the first goes for free, above the thresholds while up to prune8_free / prune8_n95 are gone
    assert g["prune8_after_one"] == pytest.approx(p8[1], rel=1e-12) and g["prune8_after_one"] > keep
    assert g["prune8_free"] == next(k for k, a in enumerate(p8) if a < keep) - 1
    assert g["prune8_n95"] == next(k for k, a in enumerate(p8) if a < loose) - 1
    assert g["prune8_free"] >= 1 and g["prune8_n95"] >= g["prune8_free"]
    # ahead of the four-head model at every step down to four heads (1, 2, 3 removed)
    assert all(p8[k] > p4[k] for k in range(1, 4))
    # pruned to four, below the model trained with four; and no four of the eight heads hold everything
    assert g["prune8_at_4"] == pytest.approx(p8[4], rel=1e-12) and g["prune4_full"] == pytest.approx(p4[0], rel=1e-12)
    assert g["prune8_at_4"] < g["prune4_full"]
    subsets = data(g, "subset4_means")
    assert len(subsets) == math.comb(8, 4) and max(subsets) < keep < g["prune4_full"]


@pytest.mark.claim("ex3-at-minimum", "ex3-spearman")
def test_exercise_3_head_importance(g):
    assert g["ex3_loss_model8"] < 1e-4, "trained to (nearly) zero loss: a minimum"
    assert g["ex3_loss_model8"] < 1e-3 * g["ex3_loss_early"]
    importance, increase = np.array(data(g, "ex3_importance")), np.array(data(g, "ex3_increase"))
    assert len(importance) == len(increase) == g["ex3_n_heads"]
    assert importance.min() == pytest.approx(g["ex3_importance_min"], rel=1e-9) and importance.min() > 1e-3
    ranks = lambda x: x.argsort().argsort().astype(float)  # noqa: E731 (no ties here)
    assert g["ex3_spearman"] == pytest.approx(np.corrcoef(ranks(importance), ranks(increase))[0, 1], rel=1e-6)
    assert g["ex3_spearman"] > 0, "the two rankings broadly agree"


@pytest.mark.claim("ex4-margins", "ex4-room")
def test_exercise_4_margins(g):
    """The margins recomputed from their definition: the circle in closed form, the random keys redrawn."""
    seed = executed_parameters(STEM)["SEED"]

    def worst_margin(keys):
        keys = keys / keys.norm(dim=-1, keepdim=True)
        cos = keys @ keys.T - 2 * torch.eye(len(keys), dtype=keys.dtype)
        return 1 - cos.max().item()

    assert g["ex4_margin_circle"] == pytest.approx(1 - math.cos(2 * math.pi / 200), rel=1e-9)
    for d, name in ((g["d_toy_quarter"], "ex4_margin_8"), (g["d_toy"], "ex4_margin_32")):
        keys = torch.randn(200, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        assert g[name] == pytest.approx(worst_margin(keys), rel=1e-9)
    # random keys already leave more room than the best circle; the full-width head much more than a quarter
    assert g["ex4_margin_circle"] < g["ex4_margin_8"] < g["ex4_margin_32"]
    assert g["ex4_margin_32"] > 4 * g["ex4_margin_8"]


def test_exercise_solutions(g):
    assert abs(g["ex1_flop_ratio"] - 1) < 1e-12, "attention overtakes the projections at T = 2d"
    assert g["ex2_perm_diff"] < 1e-4, "head order is arbitrary"
