"""§14.51: the claims its prose makes, asserted on the values its notebook glued.

Each verdict sentence of the notebook is marked ``<!-- claim: id -->`` and asserted here by the test that
carries its id, from the data the notebook glued (the per-h table, per-setting differences, per-offset
accuracies, the ablation table, the pruning curves), not from a boolean the notebook decided.
"""

import ast
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
    scales = data(g, "head_out_scales")  # per example: the largest output of the head compared
    assert len(scales) == 2 and g["head_out_scale"] == pytest.approx(max(scales), rel=1e-9)
    assert g["head_slice_diff"] < 8 * FLOAT32_EPS * g["head_out_scale"], "single-precision rounding of the outputs"
    assert ast.literal_eval(g["walk_w_shape"]) == (2, 3, 5, 5)


@pytest.mark.claim("same-params-flops", "flops-share", "takeaway-cost")
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
    assert g["flops_attn_share"] == pytest.approx(2 * 2 * T**2 * d / flops[0], rel=1e-12), "scores and mixing"


@pytest.mark.claim("weights-grow-with-h", "softmax-grows-with-h", "takeaway-cost")
def test_attention_weights_grow_with_heads(g):
    heads, counts, kib = data(g, "param_heads"), data(g, "weight_counts"), data(g, "weight_kib")
    T = 128
    assert counts == [h * T**2 for h in heads], "h T x T matrices per sequence"
    assert kib == [4 * n / 2**10 for n in counts], "single precision"
    assert g["weights_h_min"] == counts[0] and g["weights_h_max"] == counts[-1]
    assert g["weights_kib_h_min"] == kib[0] and g["weights_mib_h_max"] == kib[-1] / 2**10
    assert g["weights_h_max"] / g["weights_h_min"] == g["h_max"] / g["h_min"], "h-fold"


@pytest.mark.claim("agree-torch", "takeaway-agrees")
def test_agrees_with_torch_kernels(g):
    out, w, fused = data(g, "agree_out_diffs"), data(g, "agree_w_diffs"), data(g, "agree_fused_diffs")
    scales = data(g, "agree_out_scales")
    assert len(out) == len(w) == len(fused) == len(scales) == 3, "three settings"
    assert g["agree_out_max"] == max(out) and g["agree_w_max"] == max(w) and g["agree_fused_max"] == max(fused)
    assert g["agree_out_scale"] == pytest.approx(max(scales), rel=1e-9), "the largest output compared, any setting"
    # single-precision rounding: within a few float32 ulps of the outputs compared, in every setting
    for diff_out, diff_fused, scale in zip(out, fused, scales):
        assert max(diff_out, diff_fused) < 8 * FLOAT32_EPS * scale
    assert max(w) < 8 * FLOAT32_EPS, "weights are at most 1"


@pytest.mark.claim("same-params-toy", "one-head-mean", "one-head-fails", "ex4-premise", "takeaway-heads")
def test_four_heads_solve_what_one_head_cannot(g):
    counts = data(g, "acc_params")
    assert len(counts) == 2 and counts[0] == counts[1], "the same number of parameters"
    acc4s, acc1s = data(g, "acc4_per_offset_seeds"), data(g, "acc1_per_offset_seeds")  # one list per seed
    assert len(acc4s) == len(acc1s) == g["n_seeds"] == 3
    assert acc4s[0] == data(g, "acc4_per_offset") and acc1s[0] == data(g, "acc1_per_offset"), "the table is seed 1"
    assert g["acc4_min"] == min(min(a) for a in acc4s) and g["acc4_min"] > 0.99, "four heads: solved, every seed"
    assert g["acc1_mean"] == pytest.approx(np.mean(acc1s[0]), rel=1e-9)
    assert g["acc1_max"] == pytest.approx(max(acc1s[0]), rel=1e-9)
    assert g["acc1_mean_lo"] == pytest.approx(min(np.mean(a) for a in acc1s), rel=1e-9)
    assert g["acc1_mean_hi"] == pytest.approx(max(np.mean(a) for a in acc1s), rel=1e-9)
    assert g["acc1_mean_hi"] < 0.5 * g["acc4_min"], "the single head, every seed: well below the four-head model"
    assert g["acc1_max_lo"] == pytest.approx(min(max(a) for a in acc1s), rel=1e-9)
    assert g["acc1_max_hi"] == pytest.approx(max(max(a) for a in acc1s), rel=1e-9)
    # one softmax cannot keep the four offsets apart: in every seed it gets one of them, each other stays below half
    assert g["acc1_others_max"] == pytest.approx(max(sorted(a)[-2] for a in acc1s), rel=1e-9)
    for acc1 in acc1s:
        assert sorted(acc1)[-2] <= g["acc1_others_max"] < 0.5 * g["acc1_max_lo"] and max(acc1) < g["acc4_min"]


@pytest.mark.claim("one-head-longer")
def test_one_head_gains_a_second_offset_not_four(g):
    acc1_long = data(g, "acc1_long_per_offset")
    assert len(acc1_long) == 4 and g["acc1_long_steps"] == 4 * g["train_steps"], "four times the steps"
    best, second, third, _ = sorted(acc1_long, reverse=True)
    assert (g["acc1_long_best"], g["acc1_long_second"], g["acc1_long_rest_max"]) == (best, second, third)
    assert g["acc1_long_mean"] == pytest.approx(np.mean(acc1_long), rel=1e-9)
    # a second offset: better than any second-best offset after the short runs
    assert second > 2 * g["acc1_others_max"] and second > 5 * g["recall_chance"]
    # the other two stay low, and the mean far below the four-head model
    assert third < 0.5 * second and g["acc1_long_mean"] < 0.6 * g["acc4_min"]


@pytest.mark.claim("takeaway-heads")
def test_one_head_learns_one_or_two_offsets_not_four(g):
    runs = data(g, "acc1_per_offset_seeds") + [data(g, "acc1_long_per_offset")]  # every seed, and the longer run
    learned = [sum(a > 0.5 for a in acc) for acc in runs]
    assert all(n in (1, 2) for n in learned) and 2 in learned, "one or two offsets"
    assert all(min(acc) < 3 * g["recall_chance"] for acc in runs), "never all four"


@pytest.mark.claim("heads-specialise", "takeaway-heads")
def test_heads_specialise_on_distinct_offsets(g):
    trained, init = np.array(data(g, "offset_weights")), np.array(data(g, "offset_weights_init"))  # (head, 0-5 back)
    favourite = trained.argmax(axis=1)
    assert sorted(favourite.tolist()) == [1, 2, 3, 4] == ast.literal_eval(g["dominant_offsets"]), "one offset each"
    assert g["own_offset_weight_min"] == pytest.approx(trained.max(axis=1).min(), rel=1e-9)
    assert g["init_offset_weight_max"] == pytest.approx(init.max(), rel=1e-9)
    assert g["own_offset_weight_min"] > 0.9 and g["own_offset_weight_min"] > 5 * g["init_offset_weight_max"]


@pytest.mark.claim("corr-small-negative")
def test_head_correlations_after_training(g):
    trained = data(g, "corr_trained_pairs")  # centred: each weight minus its row's uniform share 1/(t + 1)
    assert len(trained) == math.comb(4, 2)
    assert g["corr_trained_mean"] == pytest.approx(np.mean(trained), rel=1e-9)
    assert g["corr_trained_max"] == pytest.approx(max(trained), rel=1e-9)
    assert g["corr_trained_max_abs"] == pytest.approx(max(abs(c) for c in trained), rel=1e-9)
    assert all(c < 0 for c in trained), "every pair negative"
    assert all(abs(c) < 0.15 for c in trained), "every pair small"
    # "no accident": disjoint one-hot heads, centred by row, correlate at -p/(1-p), p = the mean of 1/(t + 1)
    T, start = 16, 4  # the recall task's length and its first complete row
    p_bar = np.mean([1 / (t + 1) for t in range(start, T)])
    assert g["corr_p_bar"] == pytest.approx(p_bar, rel=1e-12)
    assert g["corr_disjoint_theory"] == pytest.approx(-p_bar / (1 - p_bar), rel=1e-12)
    assert abs(g["corr_trained_mean"] - g["corr_disjoint_theory"]) < 0.01
    assert max(abs(c - g["corr_disjoint_theory"]) for c in trained) < 0.01


def test_the_disjoint_formula_is_the_correlation_of_disjoint_one_hot_heads():
    """Brute force: two heads one-hot on different keys in every row t = 4..15, centred by 1/(t + 1)."""
    T, start = 16, 4
    a, b = [], []
    for t in range(start, T):
        n = t + 1
        row_a, row_b = np.full(n, -1 / n), np.full(n, -1 / n)
        row_a[t - 1] += 1
        row_b[t - 2] += 1
        a.extend(row_a)
        b.extend(row_b)
    p_bar = np.mean([1 / (t + 1) for t in range(start, T)])
    assert np.corrcoef(a, b)[0, 1] == pytest.approx(-p_bar / (1 - p_bar), rel=1e-12)


@pytest.fixture(scope="module")
def independent_pair():
    """The notebook's pair of heads with independent random scores, redrawn: (not centred, centred) correlation."""
    seed, T, start, sd = executed_parameters(STEM)["SEED"], 16, 4, 0.6
    scores = sd * torch.randn(500, 2, T, T, generator=torch.Generator().manual_seed(seed))
    causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    w = torch.softmax(scores.masked_fill(causal, float("-inf")), dim=-1)
    allowed = ~causal
    allowed[:start] = False
    centred = w - 1.0 / torch.arange(1, T + 1, dtype=w.dtype)[:, None]
    corr = [torch.corrcoef(x[..., allowed].transpose(0, 1).reshape(2, -1))[0, 1].item() for x in (w, centred)]
    return tuple(corr)


@pytest.mark.claim("init-unrelated", "raw-corr-artefact")
def test_head_correlations_at_initialisation(g, independent_pair):
    init, raw = data(g, "corr_init_pairs"), data(g, "corr_init_raw_pairs")
    assert len(init) == len(raw) == math.comb(4, 2)
    assert g["corr_init_mean"] == pytest.approx(np.mean(init), rel=1e-9)
    assert g["corr_init_min"] == pytest.approx(min(init), rel=1e-9)
    assert g["corr_init_max"] == pytest.approx(max(init), rel=1e-9)
    # centred, around zero with both signs, and far from the trained value, in every seed
    assert g["corr_init_min"] < 0 < g["corr_init_max"] < 0.15 and abs(g["corr_init_mean"]) < 0.03
    seeds = data(g, "corr_seed_means")  # per seed: [mean at initialisation, mean after training]
    assert len(seeds) == g["n_seeds"] and seeds[0][0] == pytest.approx(g["corr_init_mean"], rel=1e-9)
    assert g["corr_init_seed_lo"] == pytest.approx(min(s[0] for s in seeds), rel=1e-9)
    assert g["corr_init_seed_hi"] == pytest.approx(max(s[0] for s in seeds), rel=1e-9)
    assert max(abs(s[0]) for s in seeds) < 0.08
    # not centred: positive for these heads and for two independent random heads, which centring brings to ~0
    assert g["corr_init_raw_mean"] == pytest.approx(np.mean(raw), rel=1e-9)
    assert all(c > 0.15 for c in raw) and g["corr_init_raw_mean"] > 0.2
    assert g["score_sd"] == 0.6
    assert g["corr_independent_raw"] == pytest.approx(independent_pair[0], rel=1e-4)
    assert g["corr_independent"] == pytest.approx(independent_pair[1], rel=1e-3)
    assert g["corr_independent_raw"] > 0.15 and abs(g["corr_independent"]) < 0.02
    assert abs(g["corr_independent_raw"] - g["corr_init_raw_mean"]) < 0.1, "the same size as the model's"
    # and no head specialised yet (no offset holds even half a trained head's share)
    assert np.array(data(g, "offset_weights_init")).max() < 0.5 * np.array(data(g, "offset_weights")).max(axis=1).min()


def _ablation(g, heads):
    """{head removed: [accuracy at t-1 .. t-4]} for the model with `heads` heads."""
    return {row[1]: row[2:] for row in data(g, "ablation_rows") if row[0] == heads}


@pytest.mark.claim("four-indispensable", "eight-spare", "eight-some-harmless")
def test_single_head_ablation(g):
    chance = g["recall_chance"]
    abl4, abl8 = _ablation(g, 4), _ablation(g, 8)
    assert sorted(abl4) == list(range(4)) and sorted(abl8) == list(range(8))
    seeds = data(g, "single_removals_seeds")  # per seed: {heads: [accuracy per offset, one head removed]}
    assert len(seeds) == g["n_seeds"] == 3
    assert seeds[0][4] == [abl4[i] for i in range(4)] and seeds[0][8] == [abl8[i] for i in range(8)], "table: seed 1"
    # four heads, every seed: every removal leaves one offset at about chance
    assert g["abl4_worst_offset_max"] == pytest.approx(max(min(a) for s in seeds for a in s[4]), rel=1e-9)
    assert g["abl4_worst_offset_max"] < 1.5 * chance
    assert g["abl4_mean_max"] == pytest.approx(max(np.mean(a) for s in seeds for a in s[4]), rel=1e-9)
    assert g["abl4_mean_max"] < (3 + 1.5 * chance) / 4, "one offset of the four at chance, the others intact at best"
    # eight heads: solved with all in place in every seed; some can go alone, how many depends on the seed
    fulls = data(g, "acc8_full_seeds")
    assert fulls[0] == data(g, "acc8_full_per_offset")
    assert g["acc8_full_min"] == min(min(f) for f in fulls) and g["acc8_full_min"] > 0.99
    harmless = [sum(np.mean(a) > g["keep_threshold"] for a in s[8]) for s in seeds]
    assert g["abl8_n_harmless"] == harmless[0]
    assert g["abl8_n_harmless_lo"] == min(harmless) and g["abl8_n_harmless_hi"] == max(harmless)
    assert 0 < min(harmless) and max(harmless) < len(abl8) == 8, "some but not all, every seed"
    # the others each hold a share of an offset no other head covers: removing one leaves an offset near chance
    worst = [min(min(a) for a in s[8]) for s in seeds]
    assert g["abl8_worst_offset_lo"] == pytest.approx(min(worst), rel=1e-9)
    assert g["abl8_worst_offset_hi"] == pytest.approx(max(worst), rel=1e-9)
    assert g["abl8_worst_offset_hi"] < 1.5 * chance, "in every seed the worst removal leaves an offset near chance"


def _removed_before(curve, level):
    """Heads removed before the curve (mean accuracy after k removed, k = 0, 1, ...) first dips below level."""
    return next(k for k, a in enumerate(curve) if a < level) - 1


@pytest.mark.claim("prune4-drops", "prune8-graceful", "takeaway-pruning")
def test_greedy_pruning_redundancy(g):
    p8s, p4s = data(g, "prune8_curves"), data(g, "prune4_curves")   # per seed: mean test accuracy after k removed
    assert len(p8s) == len(p4s) == g["n_seeds"] == 3
    assert all(len(c) == 8 for c in p8s) and all(len(c) == 4 for c in p4s)
    chance, keep, loose = g["recall_chance"], g["keep_threshold"], g["keep_loose"]
    # four heads: the first removal sends one offset to chance (it is one of the single ablations), every seed
    assert g["prune4_after_one"] == pytest.approx(p4s[0][1], rel=1e-12)
    assert g["prune4_after_one_hi"] == pytest.approx(max(c[1] for c in p4s), rel=1e-12)
    assert g["prune4_after_one_hi"] < (3 + 1.5 * chance) / 4
    for s, c4 in zip(data(g, "single_removals_seeds"), p4s):
        removed = [a for a in s[4] if np.mean(a) == pytest.approx(c4[1], rel=1e-12)]
        assert removed and all(sorted(a)[0] < 1.5 * chance and sorted(a)[1] > keep for a in removed)
    # eight heads: the first goes for free; above the thresholds while up to prune8_free / prune8_n95 are gone
    assert g["prune8_after_one_min"] == pytest.approx(min(c[1] for c in p8s), rel=1e-12)
    assert g["prune8_after_one_min"] > keep
    free, n95 = [_removed_before(c, keep) for c in p8s], [_removed_before(c, loose) for c in p8s]
    assert g["prune8_free"] == free[0] and g["prune8_free_lo"] == min(free) and g["prune8_free_lo"] >= 1
    assert g["prune8_n95"] == n95[0]
    assert g["prune8_n95_lo"] == min(n95) and g["prune8_n95_hi"] == max(n95) and min(n95) >= min(free)


@pytest.mark.claim("pruned-below-trained", "prune-level-at-two", "spread-over-more", "takeaway-pruning")
def test_pruned_eight_heads_trail_a_small_model_trained_at_that_size(g):
    p8s, p4s = data(g, "prune8_curves"), data(g, "prune4_curves")
    assert g["d_toy_eighth"] * 8 == g["d_toy"], "each of the eight heads, and each of the control's four, is d/8 wide"
    assert g["n_kept"] == 4, "pruned to as many heads as there are offsets"
    # four left: the pruned eight-head model, against four heads of that width trained from scratch, every seed
    assert g["prune8_at_4"] == pytest.approx(p8s[0][4], rel=1e-12)
    assert g["prune8_at_4_hi"] == pytest.approx(max(c[4] for c in p8s), rel=1e-12)
    small = data(g, "small_acc_seeds")  # per seed: the control's accuracy per offset
    assert len(small) == g["n_seeds"] and all(len(a) == 4 for a in small)
    assert g["small_acc_min"] == pytest.approx(min(np.mean(a) for a in small), rel=1e-12)
    assert g["prune8_at_4_hi"] < g["small_acc_min"], "the trained small model leads in every seed"
    # its working parameters: embeddings, Q, K, V of width 4 heads x d/8, W_o from that width, the read-out
    d, inner, vocab = g["d_toy"], g["n_kept"] * g["d_toy_eighth"], 10
    assert g["small_params"] == 16 * d + vocab * d + 3 * d * inner + inner * d + d * 4 * vocab + 4 * vocab
    assert g["small_params"] < data(g, "acc_params")[0]
    # two and one left: both pruned models on the line of r offsets recalled and the rest guessed, every seed
    chance = g["recall_chance"]
    gaps = [abs(c[len(c) - r] - (r + (4 - r) * chance) / 4) for c in p8s + p4s for r in (2, 1)]
    assert g["prune_floor_gap"] == pytest.approx(max(gaps), rel=1e-9) and g["prune_floor_gap"] < 0.01
    # no four of the eight heads hold everything, in any seed
    subsets = data(g, "subset4_means_seeds")
    assert g["n_subsets4"] == math.comb(8, 4) and all(len(s) == g["n_subsets4"] for s in subsets)
    assert g["subset4_best_hi"] == pytest.approx(max(max(s) for s in subsets), rel=1e-12)
    assert g["subset4_best_hi"] < g["keep_threshold"] < g["small_acc_min"], "no four survivors hold everything"


@pytest.mark.claim("ex2-permutation")
def test_exercise_2_permuting_heads_changes_nothing_but_rounding(g):
    diffs, scales = data(g, "ex2_diffs"), data(g, "ex2_scales")  # per sequence: largest change, largest output
    assert len(diffs) == len(scales) > 0
    assert g["ex2_perm_diff"] == pytest.approx(max(diffs), rel=1e-9)
    assert g["ex2_out_scale"] == pytest.approx(max(scales), rel=1e-9)
    # single-precision rounding: within a few float32 ulps of each sequence's outputs
    assert all(d < 8 * FLOAT32_EPS * sc for d, sc in zip(diffs, scales))


@pytest.mark.claim("ex3-small-scores", "ex3-spearman")
def test_exercise_3_head_importance(g):
    tail = data(g, "ex3_losses8_tail")
    assert len(tail) == 20 and g["ex3_loss_model8"] == pytest.approx(np.mean(tail), rel=1e-9)
    assert g["ex3_loss_model8"] < 1e-4 * math.log(10), "close to zero, against ln 10 for guessing"
    importance, increase = np.array(data(g, "ex3_importance_seeds")), np.array(data(g, "ex3_increase_seeds"))
    assert importance.shape == increase.shape == (g["n_seeds"], 8)
    assert g["ex3_importance_max"] == pytest.approx(importance.max(), rel=1e-9)
    assert g["ex3_importance_max"] < 1e-3, "small scores"
    ranks = lambda x: x.argsort().argsort().astype(float)  # noqa: E731 (no ties here)
    rho = [np.corrcoef(ranks(imp), ranks(inc))[0, 1] for imp, inc in zip(importance, increase)]
    assert g["ex3_spearman_lo"] == pytest.approx(min(rho), rel=1e-6)
    assert g["ex3_spearman_hi"] == pytest.approx(max(rho), rel=1e-6)
    assert min(rho) > 0.5, "broadly agree, every seed"
    assert max(rho) < 1, "though not exactly"


@pytest.fixture(scope="module")
def lookup_evidence():
    """Exercise 4's held-out look-ups, redrawn: (match's margin in others' sd, share where the match scores highest)
    when query and keys are compared on d_k coordinates, for d_k = 32 and 8."""
    seed, n, n_keys, d, noise = executed_parameters(STEM)["SEED"], 2000, 16, 32, 1.0
    gen = torch.Generator().manual_seed(seed + 5)
    keys = torch.randn(n, n_keys, d, generator=gen)
    match = torch.randint(0, n_keys, (n,), generator=gen)
    query = keys[torch.arange(n), match] + noise * torch.randn(n, d, generator=gen)
    out = {}
    for d_k in (32, 8):
        scores = (query[:, None, :d_k] * keys[..., :d_k]).sum(-1)
        is_match = torch.nn.functional.one_hot(match, n_keys).bool()
        others = scores[~is_match].view(n, -1)
        out[d_k] = (((scores[is_match] - others.mean(1)).mean() / others.std(1).mean()).item(),
                    (scores.argmax(1) == match).double().mean().item())
    return out


@pytest.mark.claim("ex4-snr")
def test_exercise_4_evidence_grows_as_sqrt_d_k(g, lookup_evidence):
    full, quarter = g["d_toy"], g["d_toy_quarter"]
    assert g["ex4_snr_full"] == pytest.approx(lookup_evidence[full][0], rel=1e-4)
    assert g["ex4_snr_quarter"] == pytest.approx(lookup_evidence[quarter][0], rel=1e-4)
    assert g["ex4_top_full"] == pytest.approx(lookup_evidence[full][1], rel=1e-9)
    assert g["ex4_top_quarter"] == pytest.approx(lookup_evidence[quarter][1], rel=1e-9)
    # about sqrt(d_k / 2) standard deviations, so the ratio is about sqrt(full / quarter)
    for d_k, snr in ((full, g["ex4_snr_full"]), (quarter, g["ex4_snr_quarter"])):
        assert snr == pytest.approx(math.sqrt(d_k / 2), rel=0.1)
    assert g["ex4_snr_full"] / g["ex4_snr_quarter"] == pytest.approx(math.sqrt(full / quarter), rel=0.1)
    assert g["ex4_top_full"] > g["ex4_top_quarter"]


@pytest.mark.claim("ex4-one-head-wins")
def test_exercise_4_one_wide_head_beats_four_narrow(g):
    rows = data(g, "ex4_rows")  # [heads, squared error, weight on the match], per seed and model
    one, four = [r for r in rows if r[0] == 1], [r for r in rows if r[0] == 4]
    assert len(one) == len(four) == g["n_seeds"]
    assert g["ex4_err_1_hi"] == pytest.approx(max(r[1] for r in one), rel=1e-9)
    assert g["ex4_err_4_lo"] == pytest.approx(min(r[1] for r in four), rel=1e-9)
    assert g["ex4_on_match_1"] == pytest.approx(np.mean([r[2] for r in one]), rel=1e-9)
    assert g["ex4_on_match_4"] == pytest.approx(np.mean([r[2] for r in four]), rel=1e-9)
    # in every seed the single wide head does better: a smaller error, more weight on the match
    assert g["ex4_err_1_hi"] < g["ex4_err_4_lo"]
    assert min(r[2] for r in one) > max(r[2] for r in four)
    # attending uniformly: the mean of N random unit-variance keys misses one of them by (1 - 1/N) per coordinate
    n = g["ex4_n_keys"]
    assert g["ex4_err_uniform"] == pytest.approx(1 - 1 / n, rel=0.03)


def test_exercise_solutions(g):
    assert abs(g["ex1_flop_ratio"] - 1) < 1e-12, "attention overtakes the projections at T = 2d"


@pytest.mark.claim("mlp-one-head", "takeaway-mlp")
def test_one_head_with_mlp_readout_learns_every_offset(g):
    mlp = data(g, "mlp1_per_offset_seeds")  # one list per seed, SEEDS' order
    acc1s = data(g, "acc1_per_offset_seeds")
    assert len(mlp) == g["n_seeds"] == 3 and all(len(a) == 4 for a in mlp)
    assert g["mlp1_min"] == pytest.approx(min(min(a) for a in mlp), rel=1e-9)
    assert g["mlp1_mean_lo"] == pytest.approx(min(np.mean(a) for a in mlp), rel=1e-9)
    assert g["mlp1_mean_hi"] == pytest.approx(max(np.mean(a) for a in mlp), rel=1e-9)
    # every offset, every seed: learned, well above the linear read-out's unlearned offsets and chance
    assert g["mlp1_min"] > 2 * max(sorted(a)[-2] for a in acc1s) and g["mlp1_min"] > 5 * g["recall_chance"]
    assert all(sum(x > 0.5 for x in a) == 4 for a in mlp), "all four offsets"
    # still below the four-head model after the same steps, and more parameters than the linear models
    assert g["mlp1_mean_hi"] < g["acc4_min"]
    assert g["mlp1_params"] > g["toy_params"] == data(g, "acc_params")[1]
    assert g["mlp_hidden"] == 128 and g["readout_width"] == 40
    d, vocab, T, hidden = g["d_toy"], 10, 16, g["mlp_hidden"]  # embeddings, positions, W_Q K V O (no bias), the MLP
    assert g["mlp1_params"] == vocab * d + T * d + 4 * d * d + (d * hidden + hidden) + (hidden * 40 + 40)
    assert g["toy_params"] == vocab * d + T * d + 4 * d * d + (d * 40 + 40)
