"""§14.48: the claims its prose makes, asserted on the values its notebook glued.

The learning curves come from cache/bottleneck (helpers.bottleneck); `g` holds what the executed
notebook glued from them, and some tests read the cached runs themselves to check every seed.
"""

import math

import pytest

from helpers import bottleneck
import torch

from conftest import executed_parameters
from helpers.cache import read_manifest
from helpers.seq2seq import copy_task

STEM = "14_48_encoder_decoder_bottleneck"
CFG = bottleneck.CONFIG
LENGTHS = CFG["lengths"]


@pytest.fixture(scope="module")
def runs():
    return bottleneck.load().results["runs"]


def mean_profile(runs, task, T):
    """Accuracy by output position of the fixed-context models of one task at length T, mean over seeds."""
    rows = [r["positions"] for r in runs if (r["model"], r["task"], r["length"]) == ("fixed", task, T)]
    assert len(rows) == len(CFG["seeds"])
    return [sum(col) / len(col) for col in zip(*rows)]


def final(runs, model, task, length):
    """Final accuracy of each seed of one (model, task, length), in seed order."""
    picked = sorted((r for r in runs if (r["model"], r["task"], r["length"]) == (model, task, length)),
                    key=lambda r: r["seed"])
    assert len(picked) == len(CFG["seeds"])
    return [r["accuracy"][-1] for r in picked]


def test_parameter_count_matches_the_derived_formula(g):
    assert g["n_params"] == g["n_params_formula"]


def test_the_cost_line_is_the_manifests(g):
    manifest = read_manifest(bottleneck.CACHE_NAME)
    assert g["heavy_minutes"] == pytest.approx(manifest["wall_time_s"] / 60, rel=1e-6)
    assert g["heavy_cpus"] == manifest["hardware"]["cpu_count"]
    assert g["n_runs"] == len(bottleneck.runs())


@pytest.mark.claim("attention-fast", "wide-helps", "takeaway-training")
def test_glued_means_and_ranges_are_those_of_the_cached_seeds(g, runs):
    for T in LENGTHS:
        accs = final(runs, "fixed", "copy", T)
        assert g[f"copy_acc_{T}"] == pytest.approx(sum(accs) / len(accs), abs=1e-6)
        assert (g[f"copy_acc_{T}_min"], g[f"copy_acc_{T}_max"]) == pytest.approx((min(accs), max(accs)), abs=1e-6)
        dot = final(runs, "dot", "copy", T)
        assert g[f"attn_acc_{T}"] == pytest.approx(sum(dot) / len(dot), abs=1e-6)


@pytest.mark.claim("slow-not-impossible", "takeaway-training")
def test_every_doubling_of_the_length_slows_learning(g):
    # "every doubling of the length slows learning down": at every checkpoint the mean accuracy
    # falls with T (T = 4 may tie at a perfect copy), and at the end too
    for steps in CFG["checkpoints"]:
        accs = [g[f"copy_acc_{T}_at_{steps}"] for T in LENGTHS]
        assert all(a >= b for a, b in zip(accs, accs[1:])) and accs[1] > accs[2] > accs[3], steps
    assert g["copy_acc_4"] > 0.99 and g["copy_acc_4_at_125"] > 0.9, "all but perfect from the first checkpoint on"
    assert g["copy_acc_32_first"] < 3 * g["chance"], "T = 32 starts not far above chance"
    assert g["copy_acc_32_first"] == g["copy_acc_32_at_125"]
    assert g["copy_acc_32"] > 4 * g["chance"], "the longest source is copied far above chance: slow, not impossible"


@pytest.mark.claim("seeds-agree")
def test_seeds_agree_far_better_than_lengths_differ(g):
    # "the seeds agree to within a few points, far less than the differences between lengths"
    spreads = [g[f"copy_acc_{T}_max"] - g[f"copy_acc_{T}_min"] for T in LENGTHS]
    assert max(spreads) < 0.05
    gaps = [g[f"copy_acc_{a}_min"] - g[f"copy_acc_{b}_max"] for a, b in zip(LENGTHS[1:], LENGTHS[2:])]
    assert min(gaps) > 3 * max(spreads), "every seed of a length beats every seed of the next"


@pytest.mark.claim("still-rising", "slow-not-impossible", "wide-faster", "takeaway-training")
def test_short_lengths_flatten_long_ones_still_rise(g, runs):
    # "At the short lengths, yes ... At T = 16 and 32 it still added ... at least <min> for every seed"
    assert g["copy_gain_4_pp"] < 1 and g["copy_gain_8_pp"] < 5
    for T in (16, 32):
        assert g[f"copy_gain_{T}_pp"] > 2 * g["copy_gain_8_pp"]
    for T in LENGTHS:
        seeds = [r for r in runs if (r["model"], r["task"], r["length"]) == ("fixed", "copy", T)]
        mean_gain = sum(100 * (r["accuracy"][-1] - r["accuracy"][-2]) for r in seeds) / len(seeds)
        assert g[f"copy_gain_{T}_pp"] == pytest.approx(mean_gain, abs=1e-3), T
    gains = [100 * (r["accuracy"][-1] - r["accuracy"][-2]) for r in runs
             if r["model"] == "fixed" and r["task"] == "copy" and r["length"] >= g["t_long"]]
    assert min(gains) == pytest.approx(g["copy_gain_min_pp"], abs=1e-3)
    assert g["copy_gain_min_pp"] > 2, "every seed still rising: no plateau at the long lengths"


@pytest.mark.claim("attention-fast", "takeaway-training")
def test_attention_learns_in_a_fraction_of_the_budget(g, runs):
    assert CFG["attention_checkpoints"][0] == g["steps_first"]
    firsts = [r["accuracy"][0] for r in runs if r["model"] == "dot"]
    assert {r["length"] for r in runs if r["model"] == "dot"} == set(LENGTHS), "every length"
    assert min(firsts) == pytest.approx(g["attn_first_min"], abs=1e-6)
    assert g["attn_first_min"] > 0.95, "every length copied after the first checkpoint"
    assert g["attn_acc_32"] > 0.99
    # the fixed context with budget_ratio times the steps stays far behind at T = 32 and T = 16
    assert g["budget_ratio"] * CFG["attention_checkpoints"][-1] == CFG["checkpoints"][-1]
    assert g["copy_acc_32_max"] < g["attn_first_min"] - 0.3
    assert g["copy_acc_16_max"] < g["attn_first_min"] - 0.1


@pytest.mark.claim("falls-with-length")
def test_each_fourfold_budget_moves_the_fall_out(g):
    budgets = CFG["checkpoints"][1::2]
    assert len(budgets) == 3 and all(b == 4 * a for a, b in zip(budgets, budgets[1:]))
    for s in budgets:  # "at each one accuracy falls with length"
        accs = [g[f"copy_acc_{T}_at_{s}"] for T in LENGTHS]
        assert all(a > b for a, b in zip(accs, accs[1:])), s
    for T in LENGTHS[1:]:
        accs = [g[f"copy_acc_{T}_at_{s}"] for s in budgets]
        assert all(a < b for a, b in zip(accs, accs[1:])), T


@pytest.mark.claim("trained-protects-first")
def test_untrained_encoder_washes_out_early_tokens_and_training_reverses_it(g):
    assert g["sens_untrained_ratio"] == pytest.approx(g["sens_untrained_last"] / g["sens_untrained_first"], rel=1e-3)
    assert g["sens_untrained_ratio"] > 100, "last token moves c orders of magnitude more than the first"
    assert g["sens_trained_first"] > 3 * g["sens_trained_last"], "trained encoders protect x_1"
    assert 1 < g["sens_trained_ratio_min"] <= g["sens_trained_ratio_max"]
    assert g["sens_trained_ratio_min"] > 3, "for every seed"
    assert g["sens_trained_ratio_max"] < 2 * g["sens_trained_ratio_min"], "the seeds agree"


@pytest.mark.claim("copy-first-best", "misconception-late", "x1-best")
def test_copy_loses_the_late_tokens(g, runs):
    # "the first tokens are the best preserved ... lowest, <min>, at position <p> ... then recovers to <last>"
    T = g["t_probe"]
    mean_pos = [sum(r["positions"][i] for r in runs if (r["model"], r["task"], r["length"]) == ("fixed", "copy", T)) / 3
                for i in range(T)]
    assert mean_pos[0] == pytest.approx(g["copy16_first"], abs=1e-6) and mean_pos[0] == max(mean_pos)
    assert g["copy16_min_position"] == 1 + mean_pos.index(min(mean_pos))
    assert g["copy16_min_position"] == T - 1, "lowest just before the end"
    assert g["copy16_min"] == pytest.approx(min(mean_pos), abs=1e-6)
    assert g["copy16_last"] > g["copy16_min"] + 0.02, "then recovers at the last position"
    assert g["copy16_first_quarter"] > g["copy16_second_half"] + 0.05
    assert g["copy16_mean"] == pytest.approx(g["copy_acc_16"], abs=1e-5)


@pytest.mark.claim("reversal-early-worst")
def test_reversal_loses_the_early_tokens(g, runs):
    assert g["rev16_first_source"] < g["rev16_last_source"] - 0.03, "x_1, needed last, below x_T"
    assert g["rev16_first_quarter"] < g["rev16_last_quarter"] - 0.03
    T = g["t_probe"]
    q = T // 4
    by_source = mean_profile(runs, "reversal", T)[::-1]
    quarters = [sum(by_source[i * q:(i + 1) * q]) / q for i in range(4)]
    assert quarters[0] == min(quarters), "the earliest source tokens are the worst"


@pytest.mark.claim("lost-late-both")
def test_in_both_tasks_the_tokens_lost_most_are_needed_late(g, runs):
    # by output position: the worst position is in the last quarter of the output and the second half
    # is below the first, in the copy task and in reversal alike
    T = g["t_probe"]
    for task in ("copy", "reversal"):
        out = mean_profile(runs, task, T)
        worst = out.index(min(out))
        assert worst >= T - T // 4, (task, worst)
        assert sum(out[T // 2:]) < sum(out[:T // 2]), task


def test_reversal_is_the_easier_task_for_every_seed(g, runs):
    T = g["t_probe"]
    copy = [sum(r["positions"]) / T for r in sorted(runs, key=lambda r: r["seed"])
            if (r["model"], r["task"], r["length"]) == ("fixed", "copy", T)]
    rev = [sum(r["positions"]) / T for r in sorted(runs, key=lambda r: r["seed"])
           if (r["model"], r["task"], r["length"]) == ("fixed", "reversal", T)]
    diffs = [100 * (b - a) for a, b in zip(copy, rev)]
    assert (min(diffs), max(diffs)) == pytest.approx((g["rev_minus_copy_min_pp"], g["rev_minus_copy_max_pp"]), abs=1e-3)
    assert g["rev_minus_copy_min_pp"] > 5
    assert g["rev16_mean"] > g["copy16_mean"] + 0.05


@pytest.mark.claim("first-output-gap", "encoder-distance")
def test_first_output_gap_is_real_across_seeds(g):
    # "reversal is ahead by <gap> on average and by <min> to <max> seed by seed, while the seeds
    # differ with a standard deviation of at most <sd>"
    assert g["first_output_gap_pp"] == pytest.approx(100 * (g["rev16_last_source"] - g["copy16_first"]), abs=1e-3)
    assert g["first_output_gap_min_pp"] <= g["first_output_gap_pp"] <= g["first_output_gap_max_pp"]
    assert g["first_output_gap_min_pp"] > 3 * g["first_output_sd_max_pp"]
    # a binomial standard error on n_test sequences is of the order of the seed spread, not of the gap
    p, q, n = g["copy16_first"], g["rev16_last_source"], g["n_test"]
    assert g["first_output_gap_min_pp"] > 3 * 100 * math.sqrt(p * (1 - p) / n + q * (1 - q) / n)
    assert g["enc_updates_x1"] == g["t_probe"] - 1


def test_neither_task_is_a_perfect_copy(g):
    assert g["copy16_mean"] < 0.9 and g["rev16_mean"] < 0.97


@pytest.mark.claim("wide-helps", "wide-faster")
def test_wider_context_helps_at_this_budget(g, runs):
    wide = final(runs, "wide", "copy", g["t_probe"])
    assert (g["copy16_acc_wide_min"], g["copy16_acc_wide_max"]) == pytest.approx((min(wide), max(wide)), abs=1e-6)
    assert g["copy16_acc_wide_min"] > g["copy_acc_16_max"] + 0.1, "a great deal, for every seed"
    assert g["d_hidden_wide"] == 2 * g["d_hidden"]


@pytest.mark.claim("storage-far-inside")
def test_chance_and_storage_figures_follow_from_the_settings(g):
    assert g["chance"] == pytest.approx(1 / g["vocab"])
    assert g["bits_per_token"] == pytest.approx(math.log2(g["vocab"]))
    assert g["bits_longest"] == pytest.approx(g["len_max"] * math.log2(g["vocab"]))
    assert g["bits_context"] == 32 * g["d_hidden"]
    assert g["t_storage_limit"] == pytest.approx(32 * g["d_hidden"] / math.log2(g["vocab"]))
    assert g["storage_margin"] == pytest.approx(g["t_storage_limit"] / g["len_max"])
    assert g["bits_longest"] < g["bits_context"] / 5, "failures happen far inside the storage limit"


@pytest.mark.claim("copy-first-best", "reversal-early-worst", "first-output-gap", "wide-helps")
def test_profiles_and_gaps_are_those_of_the_cached_runs(g, runs):
    """Every per-position figure the prose quotes, recomputed from the cached runs (the oracle for
    the notebook's aggregation): means over seeds, then the quarter/half/end summaries."""
    T = g["t_probe"]

    def by_seed(model, task):
        return [r["positions"] for r in sorted(runs, key=lambda r: r["seed"])
                if (r["model"], r["task"], r["length"]) == (model, task, T)]

    copy, rev = by_seed("fixed", "copy"), [p[::-1] for p in by_seed("fixed", "reversal")]  # rev: by source position
    mean = lambda rows: [sum(col) / len(col) for col in zip(*rows)]
    c, r = mean(copy), mean(rev)
    q = T // 4
    expected = {
        "copy16_first": c[0], "copy16_last": c[-1], "copy16_min": min(c),
        "copy16_second_half": sum(c[T // 2:]) / (T - T // 2), "copy16_first_quarter": sum(c[:q]) / q,
        "rev16_first_source": r[0], "rev16_last_source": r[-1], "rev16_mean": sum(r) / T,
        "rev16_first_quarter": sum(r[:q]) / q, "rev16_last_quarter": sum(r[-q:]) / q,
    }
    for name, value in expected.items():
        assert g[name] == pytest.approx(value, abs=1e-6), name
    gaps = [100 * (b[-1] - a[0]) for a, b in zip(copy, rev)]
    assert g["first_output_gap_pp"] == pytest.approx(sum(gaps) / len(gaps), abs=1e-3)
    assert (g["first_output_gap_min_pp"], g["first_output_gap_max_pp"]) == pytest.approx((min(gaps), max(gaps)), abs=1e-3)
    sd = lambda xs: math.sqrt(sum((x - sum(xs) / len(xs)) ** 2 for x in xs) / (len(xs) - 1))
    assert g["first_output_sd_max_pp"] == pytest.approx(100 * max(sd([a[0] for a in copy]), sd([b[-1] for b in rev])), abs=1e-3)
    wide = final(runs, "wide", "copy", T)
    assert g["copy16_acc_wide"] == pytest.approx(sum(wide) / len(wide), abs=1e-6)


@pytest.fixture(scope="module")
def sensitivities():
    """||c(x) - c(x')|| for a changed first and last token, recomputed from the cached weights on the
    notebook's probe sequences (seeded by its SEED), without the notebook's function: the untrained
    encoder's (first, last) and each trained seed's."""
    cached, T, V = bottleneck.load(), CFG["t_probe"], CFG["vocab_size"]
    src, _ = copy_task(CFG["n_test"], T, V, torch.Generator().manual_seed(executed_parameters(STEM)["SEED"] + 1))

    def moves(net):
        with torch.no_grad():
            ctx = lambda x: net.encoder(net.embed(x))[1][0]
            out = []
            for j in (0, T - 1):
                x = src.clone()
                x[:, j] = x[:, j] % V + 1
                out.append((ctx(x) - ctx(src)).norm(dim=1).mean().item())
        return out

    run = lambda s: {"model": "fixed", "task": "copy", "length": T, "seed": s}
    untrained = moves(bottleneck.build(run(CFG["seeds"][0])).eval())
    trained = [moves(bottleneck.trained_model(cached, run(s))) for s in CFG["seeds"]]
    return untrained, trained


@pytest.mark.claim("trained-protects-first")
def test_sensitivities_recomputed_from_the_cached_encoders(g, sensitivities):
    (first, last), trained = sensitivities
    assert (g["t_probe"], g["n_test"], g["vocab"]) == (CFG["t_probe"], CFG["n_test"], CFG["vocab_size"])
    assert (g["sens_untrained_first"], g["sens_untrained_last"]) == pytest.approx((first, last), rel=1e-4)
    assert g["sens_trained_first"] == pytest.approx(sum(a for a, _ in trained) / len(trained), rel=1e-4)
    assert g["sens_trained_last"] == pytest.approx(sum(b for _, b in trained) / len(trained), rel=1e-4)
    ratios = [a / b for a, b in trained]
    assert min(ratios) > 1, "for every seed the first token moves c more than the last"
    assert (g["sens_trained_ratio_min"], g["sens_trained_ratio_max"]) == pytest.approx((min(ratios), max(ratios)), rel=1e-4)
