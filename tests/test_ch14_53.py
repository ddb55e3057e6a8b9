"""§14.53: the claims its prose makes, asserted on the values its notebook glued."""

import math

import numpy as np
import pytest
import torch

from conftest import executed_parameters

STEM = "14_53_relative_and_rotary_positions"
SCHEMES = ("none", "sinusoidal", "learned", "rope", "alibi")
RUN_LONG = ("none", "sinusoidal", "rope", "alibi")


# ------------------------------------------------------------------------- oracles for the demonstrations

@pytest.fixture(scope="module")
def offset_scores():
    """§14.53's query, key and projections redrawn from the notebook's SEED, scores by closed forms in float64."""
    seed, d, offsets, absolute = executed_parameters(STEM)["SEED"], 64, np.arange(64), (0, 100, 1000, 5000)
    draw = torch.Generator().manual_seed(seed)
    q, k = torch.randn(d, generator=draw).double().numpy(), torch.randn(d, generator=draw).double().numpy()
    W_Q, W_K = ((torch.randn(d, d, generator=draw) / math.sqrt(d)).double().numpy() for _ in range(2))
    theta = 10000.0 ** (-np.arange(0, d, 2) / d)
    # RoPE: Re sum_j q_j conj(k_j) e^{i (m - n) theta_j}, q_j = q[2j] + i q[2j+1]  (Exercise 1's formula)
    qc, kc = q[0::2] + 1j * q[1::2], k[0::2] + 1j * k[1::2]
    rope = (qc * kc.conj() * np.exp(1j * offsets[:, None] * theta)).sum(-1).real          # (offsets,)

    def pe(pos):                                                                          # (len(pos), d)
        out = np.empty((len(pos), d))
        out[:, 0::2], out[:, 1::2] = np.sin(pos[:, None] * theta), np.cos(pos[:, None] * theta)
        return out

    additive = np.stack([(((q + pe(n + offsets)) @ W_Q) * ((k + pe(np.full(64, n))) @ W_K)).sum(-1)
                         for n in absolute])                                              # (4, offsets)
    return {"rope_range": rope.max() - rope.min(), "additive_spread": (additive.max(0) - additive.min(0)).max()}


def test_learned_table_has_a_hard_edge_and_unseen_rows_get_no_gradient(g):
    assert g["learned_table_overflow"] is True, "position T_max has no row: IndexError"
    assert g["learned_table_params"] == g["T_TABLE"] * g["D_TABLE"]
    assert g["learned_seen_grad_min"] > 0, "every row the batch touched gets a gradient"
    assert g["learned_unseen_grad_max"] == 0.0, "rows beyond the training length get exactly none"


def test_seen_row_gradients_have_the_size_the_set_up_implies(g):
    # loss = mean over B x T x d = 8 x 32 x 32 elements of (token + E[p])^2, tokens and rows N(0, 1):
    # dL/dE[p] = 2/(B T d) * sum_b (token[b, p] + E[p]), each coordinate N(0, B + B^2) = N(0, 72),
    # so a row's norm is 2 sqrt(72) chi_32 / 8192, typically 2 sqrt(72 * 31.5) / 8192 = 0.0116.
    # The smallest of 32 such rows lies below that typical size (all 32 above it: p ~ 2^-32) and
    # above half of it (chi^2_32 < 8: p ~ 1e-5 per row).
    B, T, d = 8, g["T_TABLE"], g["D_TABLE"]
    typical = 2 * math.sqrt((B + B**2) * (d - 0.5)) / (B * T * d)
    assert 0.5 * typical < g["learned_seen_grad_min"] < typical


def test_rope_identities_hold_to_float64_rounding(g):
    assert g["rope_composition_error"] < 1e-12
    assert g["rope_complex_error"] < 1e-12


def test_rope_score_depends_only_on_the_offset(g, offset_scores):
    assert g["rope_max_position"] == 5000 + 63, "absolute positions n from 0 to 5000, the query up to 63 later"
    assert g["rope_max_deviation"] < 2e-5, "float32 rounding only, across absolute positions 0..5000"
    assert g["rope_norm_rel_error"] < 1e-6, "rotations preserve norms"
    # "while the score itself ranges over ..." : the closed form Re sum q_j conj(k_j) e^{i delta theta_j}
    assert g["rope_score_range"] == pytest.approx(offset_scores["rope_range"], rel=1e-4)
    assert g["rope_score_range"] > 1e5 * g["rope_max_deviation"]


def test_added_sinusoids_make_the_score_depend_on_absolute_position(g, offset_scores):
    # the bilinear form (x_m + PE_m) W_Q W_K^T (x_n + PE_n)^T in float64, PE from its closed form
    assert g["additive_max_deviation"] == pytest.approx(offset_scores["additive_spread"], rel=1e-4)
    assert g["additive_max_deviation"] > 1e5 * g["rope_max_deviation"]


def test_alibi_heads_are_windows_of_increasing_width(g):
    assert g["alibi_head1_penalty_15"] == pytest.approx(-0.5 * g["ALIBI_LAST_DISTANCE"])
    assert g["alibi_head8_penalty_15"] == pytest.approx(-g["ALIBI_LAST_DISTANCE"] / 256)
    assert g["alibi_mean_distance_increasing"] is True
    assert g["alibi_mean_distance_first"] < 2
    assert 0.8 * g["alibi_uniform_mean_distance"] < g["alibi_mean_distance_last"] < g["alibi_uniform_mean_distance"]


def test_alibi_uniform_distance_and_infinite_window_closed_forms(g):
    # a uniform average over T_WINDOW keys at distances 0..T-1 has mean (T - 1) / 2
    assert g["alibi_uniform_mean_distance"] == pytest.approx((g["T_WINDOW"] - 1) / 2)
    # T -> infinity: r / (1 - r) = 1 / (e^m - 1) with slopes m_1 = 1/2 and m_8 = 1/256 (H = 8)
    assert g["ex3_infinite_head1"] == pytest.approx(1 / math.expm1(1 / 2), rel=1e-6)
    assert g["ex3_infinite_head8"] == pytest.approx(1 / math.expm1(1 / 256), rel=1e-6)


def test_exercise_1_complex_formula(g):
    assert g["ex1_formula_error"] < 1e-12, "float64 rounding of a sum of eight products"


def test_exercise_2_split_halves_is_a_permuted_interleaved_rope(g):
    assert g["ex2_permutation_error"] < 1e-12
    assert g["ex2_relative_spread"] < 1e-9


def test_exercise_3_mean_attended_distance(g):
    assert g["ex3_finite_error"] < 1e-4
    assert g["ex3_infinite_head1"] == pytest.approx(g["alibi_mean_distance_first"], abs=1e-3)
    assert g["ex3_infinite_head8"] > 3 * g["alibi_mean_distance_last"], "the T -> infinity formula overshoots"


# ------------------------------------------------------------------------------- train short, test long

@pytest.fixture(scope="module")
def runs():
    """Per-seed mean losses over the trained and the far positions, read from cache/position_lm itself."""
    from helpers import position_lm

    cached, run = position_lm.load(), position_lm.HEAVY_RUN
    T, curves = run["T_train"], cached.results["per_position"]
    out = {}
    for s in SCHEMES:
        c = np.array([curves[f"{s}/{seed}"] for seed in run["seeds"]])               # (seeds, T_eval)
        out[s] = {"trained": c[:, :T].mean(1), "far": c[:, 2 * T:].mean(1)}
        out[s]["change"] = out[s]["far"] - out[s]["trained"]
    return out


@pytest.fixture(scope="module")
def bigram_oracle():
    """The add-one bigram table by counting pairs with numpy, scored on the notebook's held-out windows."""
    from helpers import position_lm

    train, val, tok = position_lm.load_corpus()
    V = tok.vocab_size
    pairs = np.bincount(train[:-1].numpy() * V + train[1:].numpy(), minlength=V * V).reshape(V, V) + 1.0
    log_p = np.log(pairs / pairs.sum(1, keepdims=True))
    x, y = position_lm.eval_windows(val)
    return float(-log_p[x.numpy(), y.numpy()].mean())


def test_bigram_baseline_is_the_bigram_table(g, bigram_oracle):
    assert g["bigram_loss"] == pytest.approx(bigram_oracle, abs=1e-5)
    assert 2.3 < g["bigram_loss"] < 2.6, "the character bigram entropy of tiny Shakespeare is about 2.45-2.5 nats"


def test_only_the_learned_table_adds_parameters(g):
    assert g["learned_extra_params"] == g["T_TRAIN"] * g["D_MODEL"]


def test_glued_means_and_spreads_are_the_cached_runs(g, runs):
    """The notebook's table is the cache's per-seed numbers, averaged (mean) and spread (max - min)."""
    for s in SCHEMES:
        assert g[f"loss_trained_{s}"] == pytest.approx(runs[s]["trained"].mean(), abs=1e-6), s
        assert g[f"spread_trained_{s}"] == pytest.approx(np.ptp(runs[s]["trained"]), abs=1e-6), s
        assert g[f"below_bigram_min_{s}"] == pytest.approx(g["bigram_loss"] - runs[s]["trained"].max(), abs=1e-6), s
    for s in RUN_LONG:
        assert g[f"loss_far_{s}"] == pytest.approx(runs[s]["far"].mean(), abs=1e-6), s
        assert g[f"change_{s}"] == pytest.approx(runs[s]["change"].mean(), abs=1e-6), s
        assert g[f"spread_change_{s}"] == pytest.approx(np.ptp(runs[s]["change"]), abs=1e-6), s


def _ranking(means: dict, lows: dict, highs: dict, names: dict) -> str:
    """Schemes by mean; '<' where the higher one's best seed is worse than the lower one's worst, else '≈'."""
    order = sorted(means, key=means.get)
    text = names[order[0]]
    for a, b in zip(order, order[1:]):
        text += (" < " if highs[a] < lows[b] else " ≈ ") + names[b]
    return text


WITH_POSITIONS = ("sinusoidal", "learned", "rope", "alibi")
NAMES = {"none": "no positions", "sinusoidal": "sinusoidal", "learned": "learned table", "rope": "RoPE", "alibi": "ALiBi"}


def test_models_with_positions_use_their_context_for_every_seed(g, runs):
    # "every model with positions sits at least <margin> nats below [the bigram baseline], for every seed"
    for s in WITH_POSITIONS:
        assert runs[s]["trained"].max() <= g["bigram_loss"] - 0.3, s
    assert g["margin_min_with_positions"] >= 0.3
    assert g["margin_min_with_positions"] == pytest.approx(min(g[f"below_bigram_min_{s}"] for s in WITH_POSITIONS))


def test_the_position_free_model_is_the_exception(g, runs):
    # "its worst seed is only <x> nats below the baseline ... much less out of the context"
    assert 0 < g["below_bigram_min_none"] < 0.3
    assert runs["none"]["trained"].min() > max(runs[s]["trained"].max() for s in WITH_POSITIONS) + 0.1


def test_trained_ranking_orders_schemes_only_beyond_their_seed_spread(g, runs):
    means = {s: runs[s]["trained"].mean() for s in SCHEMES}
    lows = {s: runs[s]["trained"].min() for s in SCHEMES}
    highs = {s: runs[s]["trained"].max() for s in SCHEMES}
    assert g["trained_ranking"] == _ranking(means, lows, highs, NAMES)
    for s in SCHEMES:  # the spreads glued beside the means are what makes a gap "beyond the spread"
        assert g[f"spread_trained_{s}"] < 0.05, "seeds of one scheme agree to a few hundredths of a nat"


def test_learned_positions_cannot_run_past_the_training_length(g):
    assert g["learned_runs_long"] is False
    assert "block_size" in g["learned_error"] and "loss_far_learned" not in g


def test_sinusoidal_and_rope_degrade_past_the_training_length_for_every_seed(g, runs):
    for s in ("sinusoidal", "rope"):
        assert runs[s]["change"].min() > 0.3, s
        assert g[f"spread_change_{s}"] < g[f"change_{s}"] / 2, "the seeds agree that it degrades"
        assert g[f"change_{s}"] > 10 * abs(g["change_alibi"]), s


def test_alibi_stays_flat_and_is_best_far_for_every_seed(g, runs):
    assert np.abs(runs["alibi"]["change"]).max() < 0.05, "flat for every seed"
    for s in ("none", "sinusoidal", "rope"):
        assert runs["alibi"]["far"].max() < runs[s]["far"].min(), s
        assert g["loss_far_alibi"] < g[f"loss_far_{s}"], s


def test_no_positions_loses_less_than_sinusoids_or_rope(g, runs):
    assert runs["none"]["change"].max() < min(runs["sinusoidal"]["change"].min(), runs["rope"]["change"].min())
    assert g["change_none"] > 3 * abs(g["change_alibi"])


@pytest.fixture(scope="module")
def sinusoidal_shift_change(glued):
    """Solution 4 (a) by a second route: positions start..start+T-1 fed to the blocks directly, no KV cache."""
    from helpers import position_lm
    from helpers.positional import sinusoidal_encoding

    shift, cached, run = glued(STEM)["EX4_SHIFT"], position_lm.load(), position_lm.HEAVY_RUN
    _, val, tok = position_lm.load_corpus()
    x = position_lm.eval_windows(val)[0][:16]
    changes = []
    with torch.no_grad():
        for seed in run["seeds"]:
            m = position_lm.model_from_tensors(cached.tensors, "sinusoidal", seed, tok.vocab_size)

            def logits(start):
                h = m.tok(x) + sinusoidal_encoding(start + x.shape[1], m.config.d_model)[start:]
                for layer, block in enumerate(m.blocks):
                    h = block(h, None, layer, start)
                return m.head(m.ln_f(h))

            changes.append((logits(0) - logits(shift)).abs().max().item())
    return max(changes)


def test_exercise_4a_rope_ignores_a_shift_and_sinusoids_do_not(g, sinusoidal_shift_change):
    assert g["ex4_rope_shift_change"] < 1e-4, "RoPE models are invariant to shifting all positions"
    assert g["ex4_sinusoidal_shift_change"] == pytest.approx(sinusoidal_shift_change, rel=1e-4)
    assert g["ex4_sinusoidal_shift_change"] > 1e4 * g["ex4_rope_shift_change"]


def test_exercise_4b_checks(g):
    assert g["ex4_reload_error"] < 1e-5, "the cached weights reproduce the cached losses"
    assert g["ex4_clamp_check_error"] < 1e-4, "a clamp beyond every offset changes nothing (float32 rounding)"
    for v in ("window", "clamp", "sample"):
        assert abs(g[f"ex4_{v}_trained_change"]) < 1e-5, f"{v}: nothing changes at positions < T_TRAIN"
    # full attention on the first EX4_WINDOWS windows: the same failure as on all of them
    assert abs(g["ex4_full_loss_far"] - g["loss_far_rope"]) < 0.2
    assert g["ex4_full_loss_far"] > g["loss_trained_rope"] + 1.0


def test_exercise_4b_unseen_offsets_not_the_number_of_keys_broke_rope(g):
    # window and clamp repair it: below the trained-position average (the far positions have full context),
    # by less than a few tenths; every seed's result lies far from full attention's
    for v in ("window", "clamp"):
        assert g["loss_trained_rope"] - 0.3 < g[f"ex4_{v}_loss_far"] < g["loss_trained_rope"], v
        assert g[f"ex4_{v}_loss_far"] + g[f"ex4_{v}_spread_far"] < g["ex4_full_loss_far"] - 1.0, v
    # T_TRAIN random keys do not: "within a few tenths of full attention's"
    assert abs(g["ex4_sample_loss_far"] - g["ex4_full_loss_far"]) < 0.3
    assert g["ex4_sample_loss_far"] > g["loss_trained_rope"] + 1.0


def test_rope_loses_more_than_sinusoids_for_every_seed(runs):
    assert runs["rope"]["change"].min() > runs["sinusoidal"]["change"].max()


def test_alibi_far_positions_are_lower_for_every_seed(runs):
    assert (runs["alibi"]["change"] < 0).all()
