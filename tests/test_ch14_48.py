"""§14.48: the claims its prose makes, asserted on the values its notebook glued.

The learning curves come from cache/bottleneck (helpers.bottleneck); `g` holds what the executed
notebook glued from them, and some tests read the cached runs themselves to check every seed.
"""

import ast
import json
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


@pytest.mark.claim("attention-fast", "wide-helps", "takeaway-training", "takeaway-more-training")
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
    assert g["copy_acc_32_first"] == g["copy_acc_32_at_125"]
    assert g["copy_acc_32"] > g["chance"], "a fixed-size context does not make copying impossible"


@pytest.mark.claim("seeds-agree")
def test_seeds_agree_far_better_than_lengths_differ(g):
    # "the seeds agree to within a few points, far less than the differences between lengths"
    spreads = [g[f"copy_acc_{T}_max"] - g[f"copy_acc_{T}_min"] for T in LENGTHS]
    assert max(spreads) < 0.05, "the seeds agree to within a few points"
    gaps = [g[f"copy_acc_{a}_min"] - g[f"copy_acc_{b}_max"] for a, b in zip(LENGTHS[1:], LENGTHS[2:])]
    assert min(gaps) > 3 * max(spreads), "far less than the differences between lengths"


@pytest.mark.claim("still-rising", "slow-not-impossible", "wide-faster", "takeaway-training", "takeaway-more-training")
def test_short_lengths_flatten_long_ones_still_rise(g, runs):
    # "At the short lengths, yes ... At T = 16 and 32 it still added ... at least <min> for every seed"
    for T in (16, 32):
        assert g[f"copy_gain_{T}_pp"] > g["copy_gain_8_pp"] >= g["copy_gain_4_pp"], "at the short lengths it flattens"
    for T in LENGTHS:
        seeds = [r for r in runs if (r["model"], r["task"], r["length"]) == ("fixed", "copy", T)]
        mean_gain = sum(100 * (r["accuracy"][-1] - r["accuracy"][-2]) for r in seeds) / len(seeds)
        assert g[f"copy_gain_{T}_pp"] == pytest.approx(mean_gain, abs=1e-3), T
    gains = [100 * (r["accuracy"][-1] - r["accuracy"][-2]) for r in runs
             if r["model"] == "fixed" and r["task"] == "copy" and r["length"] >= g["t_long"]]
    assert min(gains) == pytest.approx(g["copy_gain_min_pp"], abs=1e-3)
    assert g["copy_gain_min_pp"] > 0, "it still added ... at least ... for every seed"


@pytest.mark.claim("attention-fast", "attention-first-checkpoint", "takeaway-training")
def test_attention_learns_in_a_fraction_of_the_budget(g, runs):
    assert CFG["attention_checkpoints"][0] == g["steps_first"]
    firsts = [r["accuracy"][0] for r in runs if r["model"] == "dot"]
    assert {r["length"] for r in runs if r["model"] == "dot"} == set(LENGTHS), "every length"
    assert min(firsts) == pytest.approx(g["attn_first_min"], abs=1e-6)
    # the fixed context with budget_ratio times the steps stays far behind at T = 32 and T = 16
    assert g["budget_ratio"] * CFG["attention_checkpoints"][-1] == CFG["checkpoints"][-1]
    assert g["copy_acc_32_max"] < g["attn_first_min"] and g["copy_acc_16_max"] < g["attn_first_min"]


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
    assert g["sens_trained_first"] > g["sens_trained_last"], "trained encoders protect x_1"
    assert 1 < g["sens_trained_ratio_min"] <= g["sens_trained_ratio_max"], \
        "seed by seed, the first token moves it ... to ... times more than the last"


@pytest.mark.claim("copy-first-best", "copy-first-quarters", "misconception-late", "x1-best")
def test_copy_loses_the_late_tokens(g, runs):
    # "the first tokens are the best preserved ... lowest, <min>, at position <p> ... then recovers to <last>"
    T = g["t_probe"]
    mean_pos = [sum(r["positions"][i] for r in runs if (r["model"], r["task"], r["length"]) == ("fixed", "copy", T)) / 3
                for i in range(T)]
    assert mean_pos[0] == pytest.approx(g["copy16_first"], abs=1e-6) and mean_pos[0] == max(mean_pos)
    assert g["copy16_min_position"] == 1 + mean_pos.index(min(mean_pos))
    assert g["copy16_min_position"] == T - 1, "lowest just before the end"
    assert g["copy16_min"] == pytest.approx(min(mean_pos), abs=1e-6)
    assert g["copy16_last"] > g["copy16_min"], "then recovers to ... at the last"
    assert g["copy16_first_quarter"] > g["copy16_second_half"], "the first quarter ..., the second half only ..."
    assert g["copy16_mean"] == pytest.approx(g["copy_acc_16"], abs=1e-5)


@pytest.mark.claim("reversal-early-worst")
def test_reversal_loses_the_early_tokens(g, runs):
    assert g["rev16_first_quarter"] < g["rev16_last_quarter"], "the first quarter, needed last, ...; the last ..."
    T = g["t_probe"]
    q = T // 4
    by_source = mean_profile(runs, "reversal", T)[::-1]
    quarters = [sum(by_source[i * q:(i + 1) * q]) / q for i in range(4)]
    assert quarters[0] == min(quarters), "the earliest source tokens are the worst"


@pytest.mark.claim("lost-late-both")
def test_in_both_tasks_the_tokens_lost_most_are_needed_late(g, runs):
    # by output position: the worst position is in the last quarter of the output and the second half
    # is below the first, in the copy task and in reversal alike
    # "accuracy falls along the output, is lowest at step <T-1> of <T> and recovers at the last"
    T = g["t_probe"]
    assert g["rev16_min_step"] == g["copy16_min_position"] == T - 1
    for task in ("copy", "reversal"):
        out = mean_profile(runs, task, T)
        assert 1 + out.index(min(out)) == g["rev16_min_step"], task
        assert out[-1] > out[-2], ("recovers at the last", task)
        assert sum(out[T // 2:]) < sum(out[:T // 2]), task
        assert out[0] > out[T // 2], task


@pytest.mark.claim("reversal-easier")
def test_reversal_is_the_easier_task_for_every_seed(g, runs):
    T = g["t_probe"]
    copy = [sum(r["positions"]) / T for r in sorted(runs, key=lambda r: r["seed"])
            if (r["model"], r["task"], r["length"]) == ("fixed", "copy", T)]
    rev = [sum(r["positions"]) / T for r in sorted(runs, key=lambda r: r["seed"])
           if (r["model"], r["task"], r["length"]) == ("fixed", "reversal", T)]
    diffs = [100 * (b - a) for a, b in zip(copy, rev)]
    assert (min(diffs), max(diffs)) == pytest.approx((g["rev_minus_copy_min_pp"], g["rev_minus_copy_max_pp"]), abs=1e-3)
    assert g["rev_minus_copy_min_pp"] > 0, "ahead by ... to ... percentage points seed by seed"
    assert g["rev16_mean"] > g["copy16_mean"], "reversal is also the easier task"


def test_neither_task_is_a_perfect_copy(g):
    assert g["copy16_mean"] < 1 and g["rev16_mean"] < 1, "neither task is a perfect copy"


@pytest.mark.claim("wide-helps", "wide-faster")
def test_wider_context_helps_at_this_budget(g, runs):
    wide = final(runs, "wide", "copy", g["t_probe"])
    assert (g["copy16_acc_wide_min"], g["copy16_acc_wide_max"]) == pytest.approx((min(wide), max(wide)), abs=1e-6)
    assert g["copy16_acc_wide_min"] > g["copy_acc_16_max"] + 0.1, "a wider context helps a great deal"
    assert g["d_hidden_wide"] == 2 * g["d_hidden"]


@pytest.mark.claim("storage-far-inside")
def test_chance_and_storage_figures_follow_from_the_settings(g):
    assert g["chance"] == pytest.approx(1 / g["vocab"])
    assert g["bits_per_token"] == pytest.approx(math.log2(g["vocab"]))
    assert g["bits_longest"] == pytest.approx(g["len_max"] * math.log2(g["vocab"]))
    assert g["bits_context"] == 32 * g["d_hidden"]
    assert g["t_storage_limit"] == pytest.approx(32 * g["d_hidden"] / math.log2(g["vocab"]))
    assert g["storage_margin"] == pytest.approx(g["t_storage_limit"] / g["len_max"])
    assert g["bits_per_unit"] == pytest.approx(g["bits_longest"] / g["d_hidden"])


@pytest.mark.claim("copy-first-best", "reversal-early-worst", "wide-helps", "reversal-cuts-errors", "leads-both-ends",
                   "takeaway-reversal")
def test_profiles_and_gaps_are_those_of_the_cached_runs(g, runs):
    """Every per-position figure the prose quotes, recomputed from the cached runs (the oracle for
    the notebook's aggregation): means over seeds, then the quarter/half/end summaries, and seed by
    seed the error cut and reversal's lead at the first and the last output step."""
    T = g["t_probe"]

    def by_seed(model, task):
        return [r["positions"] for r in sorted(runs, key=lambda r: r["seed"])
                if (r["model"], r["task"], r["length"]) == (model, task, T)]

    copy, rev_out = by_seed("fixed", "copy"), by_seed("fixed", "reversal")  # by output step
    rev = [p[::-1] for p in rev_out]  # by source position
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
    cuts = [1 - (1 - sum(b) / T) / (1 - sum(a) / T) for a, b in zip(copy, rev_out)]
    assert (g["err_cut_min"], g["err_cut_max"]) == pytest.approx((min(cuts), max(cuts)), abs=1e-6)
    assert g["err_cut_min"] > 0, "feeding the source backwards cuts the errors"
    assert g["err_cut_min"] == pytest.approx(min(cuts), abs=1e-6), "'cuts the errors by <min> or more'"
    assert g["err_cut_max"] < 1, "but does not remove them"
    first = [100 * (b[0] - a[0]) for a, b in zip(copy, rev_out)]
    last = [100 * (b[-1] - a[-1]) for a, b in zip(copy, rev_out)]
    assert (g["lead_first_min_pp"], g["lead_first_max_pp"]) == pytest.approx((min(first), max(first)), abs=1e-3)
    assert (g["lead_last_min_pp"], g["lead_last_max_pp"]) == pytest.approx((min(last), max(last)), abs=1e-3)
    assert g["lead_first_min_pp"] > 0 and g["lead_last_min_pp"] > 0, "reversal leads ... and still leads"
    wide = final(runs, "wide", "copy", T)
    assert g["copy16_acc_wide"] == pytest.approx(sum(wide) / len(wide), abs=1e-6)


@pytest.mark.claim("short-fast", "takeaway-training", "takeaway-more-training")
def test_checkpoint_means_are_those_of_the_cached_runs(g, runs):
    # every copy_acc_<T>_at_<steps> the prose quotes is the mean over seeds at that checkpoint
    for T in LENGTHS:
        picked = [r for r in runs if (r["model"], r["task"], r["length"]) == ("fixed", "copy", T)]
        for k, steps in enumerate(CFG["checkpoints"]):
            assert g[f"copy_acc_{T}_at_{steps}"] == pytest.approx(sum(r["accuracy"][k] for r in picked) / len(picked), abs=1e-6)
    # "T = 4: ... after 125 steps and ... after 1000, an all but perfect copy"
    assert g["copy_acc_4_at_125"] < g["copy_acc_4_at_1000"]
    assert g["copy_acc_4_at_1000"] > 0.99, "an all but perfect copy"
    assert g["attn_steps"] == 1000 and g["steps_first"] == 125


@pytest.mark.claim("learned-in-order", "solution-learned-in-order")
def test_training_fixes_the_early_outputs_first(g, runs):
    # "after 125 steps at T = 16, position 1 is already right ..., position 4 ..., the second half ..."
    T = g["t_probe"]
    early = [sum(col) / len(col) for col in zip(*[r["positions_at"][0] for r in runs
                                                  if (r["model"], r["task"], r["length"]) == ("fixed", "copy", T)])]
    assert ast.literal_eval(g["early16"]) == pytest.approx(early, abs=1e-6)
    assert g["early16_first"] == pytest.approx(early[0], abs=1e-6)
    assert g["early16_fourth"] == pytest.approx(early[3], abs=1e-6)
    assert g["early16_second_half"] == pytest.approx(sum(early[T // 2:]) / (T - T // 2), abs=1e-6)
    assert g["early16_first"] > g["early16_fourth"] > g["early16_second_half"], "training fixes the early outputs first"
    assert early[0] == max(early)
    # early in training the first output is already closer to its final accuracy than the second half is
    assert g["early16_first"] / g["copy16_first"] > g["early16_second_half"] / g["copy16_second_half"], "already"


@pytest.fixture(scope="module")
def sensitivities():
    """||c(x) - c(x')|| for a changed first and last token, and the distance between the contexts of
    two unrelated sources, recomputed from the cached weights on the notebook's probe sequences
    (seeded by its SEED), without the notebook's function: (first, last, reference) for the
    untrained encoder and for each seed's copy and reversal encoders."""
    cached, T, V = bottleneck.load(), CFG["t_probe"], CFG["vocab_size"]
    src, _ = copy_task(CFG["n_test"], T, V, torch.Generator().manual_seed(executed_parameters(STEM)["SEED"] + 1))

    def moves(net):
        with torch.no_grad():
            ctx = lambda x: net.encoder(net.embed(x))[1][0]
            c = ctx(src)
            out = []
            for j in (0, T - 1):
                x = src.clone()
                x[:, j] = x[:, j] % V + 1
                out.append((ctx(x) - c).norm(dim=1).mean().item())
            half = len(src) // 2
            out.append((c[:half] - c[half:]).norm(dim=1).mean().item())
        return out

    run = lambda s, task="copy": {"model": "fixed", "task": task, "length": T, "seed": s}
    untrained = moves(bottleneck.build(run(CFG["seeds"][0])).eval())
    trained = [moves(bottleneck.trained_model(cached, run(s))) for s in CFG["seeds"]]
    reversal = [moves(bottleneck.trained_model(cached, run(s, "reversal"))) for s in CFG["seeds"]]
    return untrained, trained, reversal


@pytest.mark.claim("trained-protects-first", "untrained-is-last", "reversal-protects-last", "encoder-keeps-first",
                   "solution-reversal-encoders")
def test_sensitivities_recomputed_from_the_cached_encoders(g, sensitivities):
    (first, last, ref), trained, reversal = sensitivities
    assert (g["t_probe"], g["n_test"], g["vocab"]) == (CFG["t_probe"], CFG["n_test"], CFG["vocab_size"])
    assert (g["sens_untrained_first"], g["sens_untrained_last"], g["ref_untrained"]) == pytest.approx((first, last, ref), rel=1e-4)
    assert g["sens_untrained_last_frac"] == pytest.approx(last / ref, rel=1e-4)
    assert g["sens_untrained_last_frac"] > 0.9, "the untrained context is almost entirely x_T"
    n = len(trained)
    assert g["sens_trained_first"] == pytest.approx(sum(a for a, _, _ in trained) / n, rel=1e-4)
    assert g["sens_trained_last"] == pytest.approx(sum(b for _, b, _ in trained) / n, rel=1e-4)
    assert g["ref_trained"] == pytest.approx(sum(r for _, _, r in trained) / n, rel=1e-4)
    assert g["sens_trained_first_frac"] == pytest.approx(sum(a / r for a, _, r in trained) / n, rel=1e-4)
    assert g["sens_trained_last_frac"] == pytest.approx(sum(b / r for _, b, r in trained) / n, rel=1e-4)
    ratios = [a / b for a, b, _ in trained]
    assert min(ratios) > 1, "for every seed the first token moves c more than the last"
    assert (g["sens_trained_ratio_min"], g["sens_trained_ratio_max"]) == pytest.approx((min(ratios), max(ratios)), rel=1e-4)
    # reversal: "x_T moves c <min> to <max> times more than x_1, seed by seed"
    rev_ratios = [b / a for a, b, _ in reversal]
    assert (g["sens_rev_ratio_min"], g["sens_rev_ratio_max"]) == pytest.approx((min(rev_ratios), max(rev_ratios)), rel=1e-4)
    assert g["sens_rev_ratio_min"] > 1, "x_T moves c ... to ... times more than x_1, seed by seed"


@pytest.mark.claim("greedy-worse", "greedy-far-worse", "greedy-below-forced", "greedy-attention", "takeaway-greedy")
def test_free_running_scores_are_those_of_the_glued_table(g):
    """The glued table holds every cached run's four scores; the prose's means are its means, and
    every fixed-context model above the shortest length loses free-running, in every seed."""
    rows = json.loads(g["decoded"])
    assert len(rows) == len([r for r in bottleneck.runs() if r["model"] != "wide"])

    def seeds(model, task, T, score):
        picked = [r[score] for r in rows if (r["model"], r["task"], r["length"]) == (model, task, T)]
        assert len(picked) == len(CFG["seeds"])
        return picked

    mean = lambda xs: sum(xs) / len(xs)
    for T in LENGTHS:
        assert g[f"greedy_acc_{T}"] == pytest.approx(mean(seeds("fixed", "copy", T, "greedy_tokens")), abs=1e-6)
        assert g[f"seq_acc_{T}"] == pytest.approx(mean(seeds("fixed", "copy", T, "greedy_sequences")), abs=1e-6)
        assert g[f"attn_greedy_{T}"] == pytest.approx(mean(seeds("dot", "copy", T, "greedy_tokens")), abs=1e-6)
        assert g[f"attn_seq_{T}"] == pytest.approx(mean(seeds("dot", "copy", T, "greedy_sequences")), abs=1e-6)
        assert mean(seeds("fixed", "copy", T, "forced_tokens")) == pytest.approx(g[f"copy_acc_{T}"], abs=1e-5)
        if T > g["len_min"]:
            for forced, free in zip(seeds("fixed", "copy", T, "forced_tokens"), seeds("fixed", "copy", T, "greedy_tokens")):
                assert free < forced, (T, "lower free-running than teacher-forced, in every seed")
    for r in rows:  # a whole sequence is right free-running exactly when it is right teacher-forced
        assert r["greedy_sequences"] == pytest.approx(r["forced_sequences"])
    # "loses far more": at T = 16 ... of the tokens (teacher-forced ...) and ... of the whole sequences
    assert g["greedy_acc_16"] < g["copy_acc_16"] - 0.2, "free-running, the fixed context loses far more"
    assert g["greedy_32_over_chance"] == pytest.approx(g["greedy_acc_32"] / g["chance"])
    assert g["attn_greedy_32"] > g["greedy_acc_32"], "free-running, the fixed context does worse still"


@pytest.fixture(scope="module")
def decoded_oracle():
    """Greedy decoding redone for three cached runs, without helpers.seq2seq_eval: a loop over the
    model's own modules, fed back its argmax (fixed copy at 16 and 32, attention at 32, seed 0)."""
    from helpers.seq2seq import BOS

    cached, out = bottleneck.load(), {}
    for model, T in (("fixed", 16), ("fixed", 32), ("dot", 32)):
        run = {"model": model, "task": "copy", "length": T, "seed": CFG["seeds"][0]}
        net = bottleneck.trained_model(cached, run)
        src, tgt = bottleneck.test_set("copy", T)
        with torch.no_grad():
            enc, h = net.encoder(net.embed(src))
            state, y, pred = h, torch.full((len(src), 1), BOS), []
            for _ in range(T):
                s, state = net.decoder(net.embed(y), state)
                ctx = h.transpose(0, 1) if net.attention is None else net.attention(s, enc)[0]
                y = net.head(torch.cat([s, ctx], -1)).argmax(-1)
                pred.append(y)
        right = torch.cat(pred, 1) == tgt
        out[model, T] = (right.float().mean().item(), right.all(1).float().mean().item())
    return out


@pytest.mark.claim("greedy-worse", "greedy-attention")
def test_free_running_table_matches_an_independent_decoder(g, decoded_oracle):
    rows = {(r["model"], r["length"], r["seed"]): r for r in json.loads(g["decoded"]) if r["task"] == "copy"}
    for (model, T), (tokens, sequences) in decoded_oracle.items():
        row = rows[model, T, CFG["seeds"][0]]
        assert (row["greedy_tokens"], row["greedy_sequences"]) == pytest.approx((tokens, sequences), abs=1e-6)


@pytest.fixture(scope="module")
def head_probe():
    """For each seed's copy model at t_probe, recomputed from the cached weights: the accuracy per
    output position with its own context and with the test set's mean context in the output layer,
    the mean correlation of the direct path's logit for a token with that token's count, and the
    shares of inner-position errors that are the next and the previous target token; for each
    reversal model the next-token share."""
    cached, T, d = bottleneck.load(), CFG["t_probe"], CFG["d_hidden"]
    out = {"copy": [], "reversal": []}
    for task in out:
        src, tgt = bottleneck.test_set(task, T)
        for seed in CFG["seeds"]:
            net = bottleneck.trained_model(cached, {"model": "fixed", "task": task, "length": T, "seed": seed})
            with torch.no_grad():
                emb = net.embed(src)
                _, h = net.encoder(emb)
                dec_in = torch.cat([torch.zeros_like(tgt[:, :1]), tgt[:, :-1]], 1)
                s, _ = net.decoder(net.embed(dec_in), h)
                c = h.transpose(0, 1).expand_as(s)
                W, b = net.head.weight, net.head.bias
                pred = (s @ W[:, :d].T + c @ W[:, d:].T + b).argmax(-1)
                pred_mean = (s @ W[:, :d].T + c.mean(0) @ W[:, d:].T + b).argmax(-1)
                direct = h[0] @ W[:, d:].T
            inner_wrong = pred[:, 1:-1] != tgt[:, 1:-1]
            ahead = ((pred[:, 1:-1] == tgt[:, 2:]) & inner_wrong).sum().item() / inner_wrong.sum().item()
            behind = ((pred[:, 1:-1] == tgt[:, :-2]) & inner_wrong).sum().item() / inner_wrong.sum().item()
            corr = []
            for k in range(1, CFG["vocab_size"] + 1):
                x, y = direct[:, k], (src == k).sum(1).float()
                corr.append((((x - x.mean()) * (y - y.mean())).mean() / (x.std(unbiased=False) * y.std(unbiased=False))).item())
            out[task].append({"full": (pred == tgt).float().mean(0), "mean_c": (pred_mean == tgt).float().mean(0),
                              "corr": sum(corr) / len(corr), "ahead": ahead, "behind": behind})
    return out


@pytest.mark.claim("ablation-spread", "ablation-drops", "bag-of-tokens", "runs-ahead", "reversal-runs-ahead")
def test_the_head_probe_is_the_cached_models(g, head_probe):
    copy, rev = head_probe["copy"], head_probe["reversal"]
    n = len(copy)
    assert g["abl_full"] == pytest.approx(sum(p["full"].mean().item() for p in copy) / n, abs=1e-5)
    assert g["abl_full"] == pytest.approx(g["copy_acc_16"], abs=1e-5), "the teacher-forced accuracy"
    assert g["abl_mean_c"] == pytest.approx(sum(p["mean_c"].mean().item() for p in copy) / n, abs=1e-5)
    drops = (100 * sum(p["full"] - p["mean_c"] for p in copy) / n).tolist()
    assert ast.literal_eval(g["abl_drops_pp"]) == pytest.approx(drops, abs=1e-3)
    assert (g["abl_drop_min_pp"], g["abl_drop_max_pp"], g["abl_drop_last_pp"]) == pytest.approx(
        (min(drops), max(drops), drops[-1]), abs=1e-3)
    # "the loss is spread over the whole output ... the last position loses the least of all"
    assert g["abl_mean_c"] < g["abl_full"], "the copy model's accuracy falls from ... to ..."
    assert g["abl_drop_min_pp"] > 0, "the loss is spread over the whole output"
    assert g["abl_drop_last_pp"] == pytest.approx(g["abl_drop_min_pp"])
    # "its logit for a token rises with the number of times that token occurs in the source"
    assert g["count_corr"] == pytest.approx(sum(p["corr"] for p in copy) / n, abs=1e-4)
    assert g["count_corr_min"] == pytest.approx(min(p["corr"] for p in copy), abs=1e-4)
    assert g["count_corr_min"] > 0, "its logit for a token rises with the number of times that token occurs"
    # "... of the wrong predictions are the next token, and only ... the previous one, about chance"
    assert g["ahead_share"] == pytest.approx(sum(p["ahead"] for p in copy) / n, abs=1e-6)
    assert g["ahead_share_min"] == pytest.approx(min(p["ahead"] for p in copy), abs=1e-6)
    assert g["behind_share"] == pytest.approx(sum(p["behind"] for p in copy) / n, abs=1e-6)
    assert g["ahead_share"] > g["behind_share"], "... are the next token, and only ... the previous one"
    assert abs(g["behind_share"] - g["chance"]) < 0.05, "about what a wrong token picked at random would give"
    # reversal: "in every seed at least ... of them are the next token of the output"
    assert g["rev_ahead_share_min"] == pytest.approx(min(p["ahead"] for p in rev), abs=1e-6)
    assert g["rev_ahead_share_min"] > g["chance"], "reversal's errors run ahead too, in every seed"
