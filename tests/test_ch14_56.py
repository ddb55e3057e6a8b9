"""§14.56: the claims its prose makes, asserted on the values its notebook glued.

Equalities, operation counts and memory are deterministic and tested tightly. Wall times vary
with the machine and its load: the prose quotes none and nothing here asserts one.
"""

import pytest
import torch

from helpers import charlm

STEM = "14_56_affordable_attention"


@pytest.fixture(scope="module")
def whole_split_bigram():
    """The add-one bigram model's loss on the whole validation split, computed here from the data."""
    train, val, tok = charlm.load_corpus()
    counts = torch.ones(tok.vocab_size, tok.vocab_size)
    counts.index_put_((train[:-1], train[1:]), torch.ones(len(train) - 1), accumulate=True)
    return float(-(counts / counts.sum(1, keepdim=True)).log()[val[:-1], val[1:]].mean())


def test_online_softmax_and_fused_kernel_are_exact(g):
    assert g["online_diff"] < 1e-5
    assert g["fused_diff"] < 1e-5 and g["fused_diff_T"] == 1024


def test_fused_kernel_memory_is_linear_and_far_smaller(g):
    T, H, d_k = g["T_max"], g["n_heads"], g["d_k"]
    assert g["scores_MiB_max"] == H * T * T * 4 / 2**20 and g["output_MiB_max"] == H * T * d_k * 4 / 2**20
    assert 2 * g["scores_MiB_max"] < g["mem_naive_max"] < 6 * g["scores_MiB_max"], \
        "the naive formula holds the scores and more (the masked copy, the softmax)"
    assert g["output_MiB_max"] <= g["mem_fused_max"] < 1.5 * g["output_MiB_max"], "fused: barely more than its output"
    assert g["mem_naive_over_fused"] == pytest.approx(g["mem_naive_max"] / g["mem_fused_max"])
    assert 35 < g["mem_naive_over_fused"] < 75
    assert 3.5 < g["mem_growth_naive"] < 4.2, "quadratic: x4 per doubling of T"
    assert 1.5 < g["mem_growth_fused"] <= 2.0, "no more than linear growth"
    assert 1.7 < g["mem_growth_window"] < 2.3, "linear: x2 per doubling"


def _scores_MiB(g, T):
    return g["n_heads"] * T * T * 4 / 2**20


def _band_scores_MiB(g, T):
    w = g["window"]
    return g["n_heads"] * -(-T // w) * w * 2 * w * 4 / 2**20  # ceil(T / w) blocks of (w, 2w) scores per head


def test_memory_against_the_score_matrices(g):
    """The profiler's peaks, in units of the score matrices each method must hold at least once."""
    for T, key in ((g["T_min"], "min"), (g["T_max"], "max")):
        assert 1.8 < g[f"mem_naive_{key}"] / _scores_MiB(g, T) < 2.6, "the (T, T) scores and their softmax"
    for T, key in ((g["T_min"], "min"), (g["T_max"], "max")):
        assert 3.5 < g[f"mem_window_{key}"] / _band_scores_MiB(g, T) < 5.0, "blocks of (w, 2w) scores and copies"


def test_window_memory_at_short_and_long_T(g):
    assert g["mem_window_min"] > 1.5 * g["mem_naive_min"], "at the shortest T the window needs more memory"
    assert g["mem_window_second"] == pytest.approx(g["mem_naive_second"], rel=0.2), "about as much at the second"
    assert g["mem_window_max"] < g["mem_naive_max"] / 3
    assert g["T_min"] == 2 * g["window"] and g["T_second"] == 4 * g["window"]


def test_the_model_uses_context(g, whole_split_bigram):
    """Issue 11: the model is at least 0.3 nats below the bigram model, the bigram quoted beside it."""
    assert g["below_bigram"] > 0.3
    assert 0.8 * (g["bigram_val"] - g["val_loss"]) < g["below_bigram"] <= g["bigram_val"] - g["val_loss"], \
        "the smallest gap over the sets is close to the mean gap"
    assert g["bigram_val"] - g["val_loss"] > 0.6
    assert abs(g["bigram_val"] - whole_split_bigram) < 0.1, "the sampled windows' bigram loss is the split's"
    assert abs(g["val_loss"] - g["val_loss_whole"]) < 0.1, "sampled windows agree with the whole split"
    assert 1.4 < g["val_loss_whole"] < 1.7
    assert 0.028 < g["val_loss_spread"] < 0.08, "sets of 64 windows differ by a few hundredths"
    assert g["uniform_loss"] == pytest.approx(4.174, abs=1e-3)  # ln 65: the vocabulary, not a setting


def test_kv_cache_gives_identical_tokens_with_far_fewer_flops(g):
    assert g["cache_identical"] is True
    assert g["cache_logit_diff"] < 1e-4
    assert g["cache_flop_ratio"] > 20
    assert g["cache_ratio_predicted"] < g["cache_flop_ratio"] < 1.3 * g["cache_ratio_predicted"], \
        "measured ratio somewhat above the prediction that ignores the t^2 d terms"


def test_cache_size(g):
    assert g["cache_bytes"] == g["cache_bytes_formula"] == 2 * g["n_layers"] * g["block"] * 128 * 4
    assert g["window_cache_identical"] is True
    assert g["window_cache_bytes"] == g["cache_bytes"] * 16 // g["block"]


def test_sliding_window_is_exact_for_long_windows_and_linear_in_cost(g):
    assert g["band_diff"] < 1e-5 and g["full_window_diff"] < 1e-5
    assert g["window_flop_ratio"] == pytest.approx(g["window_flop_ratio_formula"], rel=0.05)


def test_window_error_on_the_trained_model(g):
    assert g["logit_change_full"] < 1e-6 * g["logit_max"] * 100, "w = T: float rounding of logits this large"
    assert 10 < g["logit_max"] < 27, "a trained model's logits span tens of units"
    assert 0.5 * g["loss_change_w32"] < g["lowest_loss_change"] <= g["loss_change_w32"], "the smallest cost: w = 32"
    assert g["logit_change_monotone"] is True, "logits move less as the window grows"
    assert g["loss_change_monotone"] is True and g["every_window_hurts"] is True
    assert 0 < g["lowest_loss_change"] < g["loss_change_w32"] < g["loss_change_w16"] < g["loss_change_w8"]
    assert g["loss_change_w8"] < g["loss_change_w4"] < g["loss_change_w2"] < g["loss_change_w1"]
    assert g["val_loss"] + g["loss_change_w1"] > g["bigram_val"], "one character: worse than the bigram model"
    assert 1.5 < g["loss_change_w1"] < 2.5 and 1.0 < g["loss_change_w2"] < 2.0, "one or two characters: over a nat"
    assert 0.15 < g["loss_change_w4"] < 0.38 and 0.045 < g["loss_change_w8"] < 0.1
    assert 0.03 < g["loss_change_w16"] < 0.075 and 0.005 < g["loss_change_w32"] < 0.014
    assert 0 < g["loss_change_w1_spread"] < 0.05 * g["loss_change_w1"], "the sets differ, by little against the cost"
    assert g["loss_change_w8_lowest"] <= g["loss_change_w8"] <= g["loss_change_w8_highest"]
    assert g["loss_change_w8_highest"] < 1.5 * g["loss_change_w8"] and g["loss_change_w8_lowest"] > 0.5 * g["loss_change_w8"]
    assert g["stacked_reach_w16"] == g["n_layers"] * 15 and g["stacked_reach_w16"] > 0.9 * g["block"]
    assert g["loss_change_w16"] > 0.02, "a window of 16 costs measurable loss although the stack could reach far"
    assert g["logit_change_w16"] > 1e-2


def test_exercise_solutions(g):
    assert g["kv_formula_ok"] is True
    assert g["kv_big_GiB"] == 2.0 and g["kv_big_gqa_GiB"] == 0.5, "KVCache.nbytes of the 7B-class shapes"
    assert g["kv_batch16_GiB"] == 16 * g["kv_big_GiB"] > g["weights_7b_GiB"]
    assert g["linear_diff"] < 1e-5
    assert 1.9 < g["linear_flop_growth"] < 2.1


@pytest.fixture(scope="module")
def window_experiment():
    """The sliding-window experiment on §14.59's cached GPT, run again here from the executed notebook's
    SEED and settings (no glued measurement is read): the same validation windows, every window width."""
    import torch.nn.functional as F

    from conftest import executed_parameters, glued_values, load_executed

    settings = glued_values(load_executed(STEM))
    seed0, n_windows, n_sets = executed_parameters(STEM)["SEED"], settings["n_windows"], settings["n_eval_seeds"]
    model, _, _ = charlm.trained_models(charlm.load())
    _, val, _ = charlm.load_corpus()
    block = model.config.block_size
    sets = []
    for s in range(n_sets):
        gen = torch.Generator().manual_seed(seed0 + s)
        starts = torch.randint(0, len(val) - block - 1, (n_windows,), generator=gen)
        at = starts[:, None] + torch.arange(block)
        sets.append((val[at], val[at + 1]))
    out = {}
    with torch.no_grad():
        full = [model(x)[0] for x, _ in sets]
        base = [F.cross_entropy(z.flatten(0, 1), y.flatten()).item() for z, (_, y) in zip(full, sets)]
        out["val_loss_spread"] = max(base) - min(base)
        out["logit_max"] = max(float(z.abs().max()) for z in full)
        for w in (1, 2, 4, 8, 16, 32):
            model.set_attention("banded", w)
            change = [F.cross_entropy(model(x)[0].flatten(0, 1), y.flatten()).item() - b for (x, y), b in zip(sets, base)]
            out[f"loss_change_w{w}"] = sum(change) / len(change)
            if w == 1:
                out["loss_change_w1_spread"] = max(change) - min(change)
        model.set_attention("fused")
    return out


def test_window_experiment_run_again(g, window_experiment):
    for key, value in window_experiment.items():
        assert g[key] == pytest.approx(value, rel=1e-4, abs=1e-6), key
