"""§14.53: the claims its prose makes, asserted on the values its notebook glued.

Each verdict sentence of the notebook is marked ``<!-- claim: id -->`` and asserted here by the tests that
carry its id, from the data: the glued values, the per-seed losses of cache/position_lm (read in the ``runs``
fixture), or an oracle recomputed here (closed forms, the bigram table, the models' configurations), never
from a boolean the notebook decided.
"""

import ast
import math

import numpy as np
import pytest
import torch

from conftest import executed_parameters

STEM = "14_53_relative_and_rotary_positions"
SCHEMES = ("none", "sinusoidal", "learned", "rope", "alibi")
RUN_LONG = ("none", "sinusoidal", "rope", "alibi")


def data(g, name):
    """A glued list (written as its repr: glue takes scalars only)."""
    return ast.literal_eval(g[name])


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
    pepe = np.stack([((pe(n + offsets) @ W_Q) * (pe(np.full(64, n)) @ W_K)).sum(-1) for n in absolute])
    cross = np.stack([((q @ W_Q) * (pe(np.full(64, n)) @ W_K)).sum(-1) + ((pe(n + offsets) @ W_Q) * (k @ W_K)).sum(-1)
                      for n in absolute])                                                 # x-PE and PE-x terms
    return {"rope_range": rope.max() - rope.min(), "additive_spread": (additive.max(0) - additive.min(0)).max(),
            "pepe_spread": (pepe.max(0) - pepe.min(0)).max(), "cross_spread": (cross.max(0) - cross.min(0)).max()}


@pytest.mark.claim("longer-table-no-help", "unseen-rows-no-gradient", "takeaway-learned")
def test_learned_table_has_a_hard_edge_and_unseen_rows_get_no_gradient(g):
    table = torch.nn.Embedding(g["T_TABLE"], g["D_TABLE"])
    with pytest.raises(IndexError):  # position T_max has no row
        table(torch.arange(g["T_TABLE"] + 1))
    assert g["learned_table_params"] == g["T_TABLE"] * g["D_TABLE"] == table.weight.numel()
    assert g["learned_seen_grad_min"] > 0, "every row the batch touched gets a gradient"
    assert g["learned_unseen_grad_max"] == 0.0, "rows beyond the training length get exactly none"


@pytest.mark.claim("unseen-rows-no-gradient")
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


@pytest.mark.claim("rope-curves-coincide", "rope-norms", "rope-exactly-relative", "takeaway-rope")
def test_rope_score_depends_only_on_the_offset(g, offset_scores):
    assert g["rope_max_position"] == 5000 + 63, "absolute positions n from 0 to 5000, the query up to 63 later"
    assert g["rope_max_deviation"] < 2e-5, "float32 rounding only, across absolute positions 0..5000"
    assert g["rope_norm_rel_error"] < 1e-6, "rotations preserve norms"
    # "while the score itself ranges over ..." : the closed form Re sum q_j conj(k_j) e^{i delta theta_j}
    assert g["rope_score_range"] == pytest.approx(offset_scores["rope_range"], rel=1e-4)
    assert g["rope_score_range"] > 1e5 * g["rope_max_deviation"]


@pytest.mark.claim("additive-absolute", "takeaway-rope")
def test_added_sinusoids_make_the_score_depend_on_absolute_position(g, offset_scores):
    # the bilinear form (x_m + PE_m) W_Q W_K^T (x_n + PE_n)^T in float64, PE from its closed form
    assert g["additive_max_deviation"] == pytest.approx(offset_scores["additive_spread"], rel=1e-4)
    assert g["additive_max_deviation"] > 1e5 * g["rope_max_deviation"]


@pytest.mark.claim("pepe-projected", "pepe-unprojected")
def test_the_projected_position_term_is_not_relative(g, offset_scores):
    assert g["pepe_projected_spread"] == pytest.approx(offset_scores["pepe_spread"], rel=1e-3)
    assert g["pepe_projected_spread"] > 1.0, "a spread of the order of the score itself"
    assert g["pepe_unprojected_spread"] < 1e-3, "the bare dot product is relative (float32)"
    assert g["cross_terms_spread"] == pytest.approx(offset_scores["cross_spread"], rel=1e-3)
    assert g["cross_terms_spread"] > 1.0, "the cross terms depend on absolute position too"


@pytest.mark.claim("alibi-penalties")
def test_alibi_penalties_after_the_last_distance(g):
    # "the first head's penalty reaches ... ; the last head's reaches only ...": slopes 1/2 and 1/256
    assert g["alibi_head1_penalty_15"] == pytest.approx(-0.5 * g["ALIBI_LAST_DISTANCE"])
    assert g["alibi_head8_penalty_15"] == pytest.approx(-g["ALIBI_LAST_DISTANCE"] / 256)
    assert abs(g["alibi_head8_penalty_15"]) < abs(g["alibi_head1_penalty_15"]), "the last head's only ..."


def _alibi_finite_means(T: int) -> np.ndarray:
    """Solution 3's finite-T mean distance r/(1-r) - T r^T/(1-r^T), r = exp(-m_h), m_h = 2^(-h), h = 1..8."""
    r = np.exp(-(2.0 ** -np.arange(1, 9)))
    return r / (1 - r) - T * r**T / (1 - r**T)


@pytest.mark.claim("alibi-windows", "takeaway-alibi", "ex3-finite")
def test_alibi_heads_are_windows_of_increasing_width(g):
    means = data(g, "alibi_mean_distances")                               # head 1..8, measured
    assert len(means) == 8
    assert all(a < b for a, b in zip(means, means[1:])), "the heads fill the range in order"
    assert means[0] == pytest.approx(g["alibi_mean_distance_first"], abs=1e-5)
    assert means[-1] == pytest.approx(g["alibi_mean_distance_last"], abs=1e-5)
    # the measured means are the softmax of -m_h delta: Solution 3's finite-T formula, in float64 here
    assert np.allclose(means, _alibi_finite_means(g["T_WINDOW"]), rtol=1e-5)
    # "close to the ... of a uniform average over all T_WINDOW keys"
    assert 0.8 * g["alibi_uniform_mean_distance"] < g["alibi_mean_distance_last"] < g["alibi_uniform_mean_distance"], \
        "close to the ... of a uniform average over all T_WINDOW keys"


@pytest.mark.claim("alibi-windows", "ex3-infinite")
def test_alibi_uniform_distance_and_infinite_window_closed_forms(g):
    # a uniform average over T_WINDOW keys at distances 0..T-1 has mean (T - 1) / 2
    assert g["alibi_uniform_mean_distance"] == pytest.approx((g["T_WINDOW"] - 1) / 2)
    # T -> infinity: r / (1 - r) = 1 / (e^m - 1) with slopes m_1 = 1/2 and m_8 = 1/256 (H = 8)
    assert g["ex3_infinite_head1"] == pytest.approx(1 / math.expm1(1 / 2), rel=1e-6)
    assert g["ex3_infinite_head8"] == pytest.approx(1 / math.expm1(1 / 256), rel=1e-6)


@pytest.mark.claim("ex1-formula")
def test_exercise_1_complex_formula(g):
    assert g["ex1_formula_error"] < 1e-12, "float64 rounding of a sum of eight products"


@pytest.mark.claim("ex2-permutation", "ex2-offset-only")
def test_exercise_2_split_halves_is_a_permuted_interleaved_rope(g):
    assert g["ex2_permutation_error"] < 1e-12
    assert g["ex2_relative_spread"] < 1e-11, "float64 rounding of angles up to 3000 radians"


@pytest.mark.claim("ex3-finite", "ex3-infinite")
def test_exercise_3_mean_attended_distance(g):
    means = data(g, "alibi_mean_distances")
    assert g["ex3_finite_error"] < 1e-4, "float32 softmax against the float64 formula"
    assert g["ex3_finite_error"] == pytest.approx(np.abs(_alibi_finite_means(g["T_WINDOW"]) - means).max(), abs=2e-6)
    # good for the steep head, overshooting for the shallow one
    assert g["ex3_infinite_head1"] == pytest.approx(g["alibi_mean_distance_first"], abs=1e-3)
    assert g["ex3_infinite_head8"] > g["alibi_mean_distance_last"], "for the shallow heads ... it overshoots"


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
        out[s] = {"trained": c[:, :T].mean(1), "near": c[:, T:2 * T].mean(1), "far": c[:, 2 * T:].mean(1)}
        out[s]["change"] = out[s]["far"] - out[s]["trained"]
    return out


@pytest.fixture(scope="module")
def bigram_oracle(corpus):
    """The add-one bigram table by counting pairs with numpy, scored on the notebook's held-out windows."""
    from helpers import position_lm

    train, val, tok = corpus
    V = tok.vocab_size
    pairs = np.bincount(train[:-1].numpy() * V + train[1:].numpy(), minlength=V * V).reshape(V, V) + 1.0
    log_p = np.log(pairs / pairs.sum(1, keepdims=True))
    x, y = position_lm.eval_windows(val)
    return float(-log_p[x.numpy(), y.numpy()].mean())


@pytest.mark.claim("context-used")
def test_bigram_baseline_is_the_bigram_table(g, bigram_oracle):
    assert g["bigram_loss"] == pytest.approx(bigram_oracle, abs=1e-5)


@pytest.fixture(scope="module")
def corpus():
    from helpers import position_lm

    return position_lm.load_corpus()


@pytest.fixture(scope="module")
def n_params(corpus):
    """The parameter count of each scheme's GPT, built from its configuration."""
    from helpers import position_lm
    from helpers.gpt import GPT
    from helpers.gradients import count_parameters

    return {s: count_parameters(GPT(position_lm.model_config(s, corpus[2].vocab_size))) for s in SCHEMES}


@pytest.mark.claim("only-learned-adds-params")
def test_only_the_learned_table_adds_parameters(g, n_params):
    others = {n_params[s] for s in SCHEMES if s != "learned"}
    assert len(others) == 1, "the four other schemes have the same parameters"
    assert g["learned_extra_params"] == n_params["learned"] - others.pop() > 0
    assert g["learned_extra_params"] == g["T_TRAIN"] * g["D_MODEL"], "T_TRAIN rows of width D_MODEL"


@pytest.mark.claim("none-exception", "sinusoidal-degrades", "rope-degrades-more", "alibi-flat", "none-rises-less",
                   "ex4b-below-trained", "takeaway-extrapolation")
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


@pytest.mark.claim("context-used", "every-seed", "takeaway-compare")
def test_models_with_positions_use_their_context_for_every_seed(g, runs, bigram_oracle):
    # "every model with positions sits at least <margin> nats below [the bigram baseline], for every seed"
    for s in WITH_POSITIONS:
        for loss in runs[s]["trained"]:
            assert g["bigram_loss"] - loss >= g["margin_min_with_positions"] - 1e-6, s
    # ... and the margin is the worst seed's: the cache's losses against the bigram table counted here
    worst = max(runs[s]["trained"].max() for s in WITH_POSITIONS)
    assert g["margin_min_with_positions"] == pytest.approx(bigram_oracle - worst, abs=1e-5)
    assert g["margin_min_with_positions"] > 0


@pytest.mark.claim("none-exception", "none-much-less", "none-last", "every-seed")
def test_the_position_free_model_is_the_exception(g, runs, bigram_oracle):
    # "its worst seed is only <x> nats below the baseline": below it, but by less than any model with positions
    assert g["below_bigram_min_none"] == pytest.approx(bigram_oracle - runs["none"]["trained"].max(), abs=1e-5)
    assert 0 < g["below_bigram_min_none"] < g["margin_min_with_positions"]
    # "much less out of the context": even its best seed gains less than 0.6 of the worst positional seed's gain
    assert bigram_oracle - runs["none"]["trained"].min() < 0.6 * g["margin_min_with_positions"], \
        "it gets much less out of the context than any model that is told where its tokens sit"
    # "last, far behind": its best seed is a tenth of a nat worse than every seed of every other scheme
    assert runs["none"]["trained"].min() > max(runs[s]["trained"].max() for s in WITH_POSITIONS) + 0.1, \
        "the position-free model is last, far behind"
    assert g["loss_trained_none"] == max(g[f"loss_trained_{s}"] for s in SCHEMES)


@pytest.mark.claim("trained-ranking")
def test_trained_ranking_orders_schemes_only_beyond_their_seed_spread(g, runs):
    means = {s: runs[s]["trained"].mean() for s in SCHEMES}
    lows = {s: runs[s]["trained"].min() for s in SCHEMES}
    highs = {s: runs[s]["trained"].max() for s in SCHEMES}
    assert g["trained_ranking"] == _ranking(means, lows, highs, NAMES)


@pytest.mark.claim("rope-fits-best", "every-seed", "takeaway-compare")
def test_rope_fits_best_beyond_the_seed_spread(runs):
    means = {s: runs[s]["trained"].mean() for s in SCHEMES}
    first, second = sorted(means, key=means.get)[:2]
    assert first == "rope"
    gap = means[second] - means["rope"]
    assert gap > np.ptp(runs["rope"]["trained"]) and gap > np.ptp(runs[second]["trained"])
    assert runs["rope"]["trained"].max() < min(runs[s]["trained"].min() for s in SCHEMES if s != "rope")


@pytest.mark.claim("middle-unordered", "takeaway-compare")
def test_the_middle_three_overlap_their_neighbours(runs):
    means = {s: runs[s]["trained"].mean() for s in SCHEMES}
    middle = sorted(means, key=means.get)[1:4]
    assert set(middle) == {"sinusoidal", "learned", "alibi"}
    for a, b in zip(middle, middle[1:]):  # b's best seed is no worse than a's worst: the seeds overlap
        assert runs[b]["trained"].min() <= runs[a]["trained"].max(), (a, b)


@pytest.mark.claim("learned-cannot-run", "takeaway-learned", "takeaway-extrapolation")
def test_learned_positions_cannot_run_past_the_training_length(g, corpus):
    from helpers import position_lm
    from helpers.gpt import GPT

    _, val, tok = corpus
    x = position_lm.eval_windows(val)[0][:1]                              # one T_EVAL window
    assert x.shape[1] == g["T_EVAL"] > g["T_TRAIN"]
    with pytest.raises(ValueError) as refused:
        GPT(position_lm.model_config("learned", tok.vocab_size))(x)
    assert str(refused.value) == g["learned_error"]
    assert "block_size" in g["learned_error"] and "loss_far_learned" not in g


@pytest.mark.claim("sinusoidal-degrades", "rope-fails-long", "relative-not-extrapolating", "every-seed",
                   "takeaway-extrapolation")
def test_sinusoidal_and_rope_degrade_past_the_training_length_for_every_seed(g, runs):
    for s in ("sinusoidal", "rope"):
        assert runs[s]["change"].min() > 0, (s, "degrades past the training length, every seed")


@pytest.mark.claim("alibi-flat", "every-seed", "takeaway-extrapolation")
def test_alibi_stays_flat_and_is_best_far_for_every_seed(g, runs):
    assert np.abs(runs["alibi"]["change"]).max() < 0.05, "ALiBi: flat"
    assert g["change_alibi"] < 0, "even a little better"
    for s in ("none", "sinusoidal", "rope"):
        assert runs["alibi"]["far"].max() < runs[s]["far"].min(), s
        assert g["loss_far_alibi"] < g[f"loss_far_{s}"], s


@pytest.mark.claim("none-rises-less", "every-seed")
def test_no_positions_loses_less_than_sinusoids_or_rope(g, runs):
    assert runs["none"]["change"].min() > 0, "the loss rises, for every seed"
    assert runs["none"]["change"].max() < min(runs["sinusoidal"]["change"].min(), runs["rope"]["change"].min())
    assert g["change_none"] < min(g["change_sinusoidal"], g["change_rope"]) / 2, "far less"
    # "though from a worse start": its best trained loss is worse than every other scheme's worst
    assert runs["none"]["trained"].min() > max(runs[s]["trained"].max() for s in ("sinusoidal", "rope"))


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


@pytest.mark.claim("ex4a-rope-shift")
def test_exercise_4a_rope_ignores_a_shift_and_sinusoids_do_not(g, sinusoidal_shift_change):
    assert g["ex4_rope_shift_change"] < 1e-4, "RoPE models are invariant to shifting all positions"
    assert g["ex4_sinusoidal_shift_change"] == pytest.approx(sinusoidal_shift_change, rel=1e-4)
    assert g["ex4_sinusoidal_shift_change"] > 1e4 * g["ex4_rope_shift_change"]


@pytest.mark.claim("ex4b-trained-unchanged")
def test_exercise_4b_checks(g):
    assert g["ex4_reload_error"] < 1e-5, "the cached weights reproduce the cached losses"
    assert g["ex4_clamp_check_error"] < 1e-4, "a clamp beyond every offset changes nothing (float32 rounding)"
    for v in ("window", "clamp", "recent", "recentclamp", "randclamp"):
        assert abs(g[f"ex4_{v}_trained_change"]) < 1e-5, f"{v}: nothing changes at positions < T_TRAIN"
    # full attention on the first EX4_WINDOWS windows: the same failure as on all of them
    assert abs(g["ex4_full_loss_far"] - g["loss_far_rope"]) < 0.2
    assert g["ex4_full_loss_far"] > g["loss_trained_rope"]


@pytest.fixture(scope="module")
def ex4_full_loss_trained(glued):
    """Solution 4 (b)'s full-attention row, recomputed: the cached RoPE models' mean loss over the trained
    positions of the first EX4_WINDOWS held-out windows, mean over the seeds."""
    from helpers import position_lm

    cached, run = position_lm.load(), position_lm.HEAVY_RUN
    _, val, tok = position_lm.load_corpus()
    n = glued(STEM)["EX4_WINDOWS"]
    x, y = (t[:n] for t in position_lm.eval_windows(val))
    losses = []
    for seed in run["seeds"]:
        model = position_lm.model_from_tensors(cached.tensors, "rope", seed, tok.vocab_size)
        losses.append(position_lm.loss_by_position(model, x, y)[:run["T_train"]].mean().item())
    return float(np.mean(losses))


@pytest.mark.claim("ex4b-repairs", "ex4b-below-trained", "relative-not-extrapolating")
def test_exercise_4b_window_and_clamp_repair_rope(g, ex4_full_loss_trained):
    # below the trained-position average of the same windows (the far positions have full context), by less
    # than a few tenths; every seed's result lies far from full attention's
    full = data(g, "ex4_full_far_seeds")
    assert g["ex4_full_loss_trained"] == pytest.approx(ex4_full_loss_trained, rel=1e-4), "the same models, recomputed"
    for v in ("window", "clamp", "recentclamp"):
        seeds = data(g, f"ex4_{v}_far_seeds")
        assert g[f"ex4_{v}_loss_far"] == pytest.approx(np.mean(seeds), abs=1e-5)
        assert g[f"ex4_{v}_loss_far"] < g["ex4_full_loss_trained"], (v, "the repaired losses lie below ...")
        assert max(seeds) < min(full), (v, "the window repairs RoPE, and so does the clamp")


@pytest.mark.claim("ex4b-keys", "ex4b-cause", "ex4b-cause2")
def test_exercise_4b_unseen_offsets_not_the_number_of_keys_broke_rope(g):
    clamp, capped = data(g, "ex4_clamp_far_seeds"), data(g, "ex4_recentclamp_far_seeds")
    recent = data(g, "ex4_recent_far_seeds")
    # the same T_TRAIN keys: clamped they match all keys clamped, unclamped they lose for every seed
    assert g["ex4_keys_effect"] == pytest.approx(np.mean(capped) - np.mean(clamp), abs=1e-5)
    assert abs(g["ex4_keys_effect"]) < 0.05, "as well as all of the keys"
    assert g["ex4_offsets_effect"] == pytest.approx(np.mean(recent) - np.mean(capped), abs=1e-5)
    assert min(r - c for r, c in zip(recent, capped)) > 0, "higher for every seed"
    assert min(recent) > g["bigram_loss"], "above the bigram baseline"


@pytest.mark.claim("ex4b-random-confounded")
def test_exercise_4b_random_keys_drop_the_recent_ones(g):
    assert min(data(g, "ex4_randclamp_far_seeds")) > g["bigram_loss"]
    assert g["ex4_randclamp_loss_far"] > g["ex4_recentclamp_loss_far"], "loses for that reason alone"


@pytest.mark.claim("rope-slower-near", "every-seed")
def test_rope_degrades_more_slowly_than_sinusoids_just_past_the_training_length(g, runs):
    assert runs["rope"]["near"].max() < runs["sinusoidal"]["near"].min()
    assert g["loss_near_rope"] == pytest.approx(runs["rope"]["near"].mean(), abs=1e-6)
    assert g["loss_near_sinusoidal"] == pytest.approx(runs["sinusoidal"]["near"].mean(), abs=1e-6)


@pytest.mark.claim("rope-degrades-more", "every-seed")
def test_rope_loses_more_than_sinusoids_for_every_seed(g, runs):
    assert runs["rope"]["change"].min() > runs["sinusoidal"]["change"].max()
    assert g["change_rope"] > g["change_sinusoidal"]


@pytest.mark.claim("alibi-flat", "every-seed")
def test_alibi_far_positions_are_lower_for_every_seed(runs):
    assert (runs["alibi"]["change"] < 0).all()


@pytest.mark.claim("training-tens-of-minutes")
def test_training_the_runs_took_tens_of_minutes_on_two_cores(g):
    from helpers import position_lm

    manifest = position_lm.load().manifest
    assert manifest["hardware"]["cpu_count"] == 2, "on a 2-core CPU"
    assert 10 * 60 <= manifest["wall_time_s"] < 60 * 60, "tens of minutes"
    assert g["N_RUNS"] == len(manifest["config"]["run"]["schemes"]) * len(manifest["config"]["run"]["seeds"])


@pytest.mark.claim("alibi-model-slopes")
def test_the_trained_models_alibi_slopes_are_the_formula_for_their_head_count(g):
    """The slopes read from a trained-size model's buffer are 2^(-8h/H) for its H heads, not the paper's 8-head ones."""
    H = g["N_HEADS"]
    formula = [2.0 ** (-8 * h / H) for h in range(1, H + 1)]
    assert data(g, "alibi_model_slope_values") == pytest.approx(formula, rel=1e-6)
    assert g["alibi_model_slopes"] == ", ".join(f"1/{round(2 ** (8 * h / H))}" for h in range(1, H + 1))
    if H == 4:  # "each a quarter of the one before", ending at 1/256 like the paper's eight
        assert g["alibi_model_slopes"] == "1/4, 1/16, 1/64, 1/256"
