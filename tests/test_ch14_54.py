"""§14.54: the claims its prose makes, asserted on the values its notebook glued.

Each verdict sentence of the notebook is marked ``<!-- claim: id -->`` and asserted here by the tests that
carry its id, from the data the notebook glued (the per-block gradient and stream profiles, the per-init
ratios, the depth sweep, the per-position decoder changes, the parameter and FLOP tables, as reprs of
lists) or from the closed forms of the parameter and FLOP counts, never from a boolean the notebook decided.
"""

import ast

import numpy as np
import pytest

STEM = "14_54_transformer_block"


def data(g, name):
    """A glued list (written as its repr: glue takes scalars only)."""
    return ast.literal_eval(g[name])


# ----------------------------------------------------------------------------- the residual stream, LN, FFN

@pytest.mark.claim("writes-sum", "pre-identity", "post-changes")
def test_residual_stream_is_the_sum_of_the_writes(g):
    assert g["stream_err"] < 1e-5, "float32 rounding"
    assert g["identity_err_pre"] == 0.0, "pre-norm block with zeroed writes is exactly the identity"
    assert g["identity_err_post"] > g["identity_err_pre"], "while the post-norm block moves it by up to ..."


@pytest.mark.claim("post-std-identity")
def test_zeroed_post_norm_block_is_nearly_the_identity_on_a_standardised_input(g):
    assert g["identity_err_post_std"] < 1e-4, "the identity to within float32 rounding of a LayerNorm"
    assert g["identity_err_post_std"] < g["identity_err_post"] / 1e4, "far below its change of a raw input"


@pytest.mark.claim("ln-matches", "ln-independent", "ln-misconception")
def test_layer_norm_is_per_position(g):
    assert g["ln_err"] < 1e-5
    assert g["ln_other_effect"] == 0.0, "the rest of the batch cannot change a position's LayerNorm output"
    assert g["bn_other_effect"] > g["ln_other_effect"], "... moves its BatchNorm output by ..."


@pytest.mark.claim("ffn-three-ways", "division-of-labour")
def test_feed_forward_is_position_wise(g):
    assert g["ffn_loop_err"] < 1e-6 and g["ffn_conv_err"] < 1e-5
    assert g["ffn_positions_changed"] == 1
    assert g["attn_positions_changed"] == g["T_small"]


@pytest.mark.claim("encoder-matches-torch")
def test_encoder_block_matches_torch(g):
    assert g["enc_torch_max_diff"] < 1e-5


# ------------------------------------------------------------------------- gradients across depth at init

@pytest.mark.claim("pre-falls", "takeaway-pre")
def test_pre_norm_gradients_shrink_towards_the_output(g):
    m, by_init = np.array(data(g, "grad_mean_pre")), data(g, "pre_first_last_by_init")
    assert len(m) == g["n_layers"] and len(by_init) == g["n_inits"]
    assert g["pre_first_last"] == pytest.approx(m[0] / m[-1], rel=1e-9)
    assert g["pre_first_last"] > 1, "the block nearest the input gets more gradient than the one nearest the output"
    assert min(by_init) > 1, "... in every initialisation"


@pytest.mark.claim("post-flatter", "misconception-not-vanish", "takeaway-gradients")
def test_post_norm_gradients_are_level_and_no_smaller(g):
    post, pre = np.array(data(g, "grad_mean_post")), np.array(data(g, "grad_mean_pre"))
    assert g["post_max_min"] == pytest.approx(post.max() / post.min(), rel=1e-9)
    # "nearly level": its spread across the blocks is a small fraction of pre-norm's
    assert g["post_max_min"] - 1 < (pre.max() / pre.min() - 1) / 4, "post-norm is nearly level"
    # "on average over the initialisations, at least as large as pre-norm's at every block (<x> times at the first)"
    ratio = post / pre
    assert ratio.min() >= 1.0
    assert g["post_over_pre_first"] == pytest.approx(ratio[0], rel=1e-9)


@pytest.mark.claim("post-pre-per-init")
def test_post_norm_beats_pre_norm_per_initialisation_only_above_the_lowest_blocks(g):
    """At block 1 post > pre in k of the initialisations; in every initialisation only from block m on."""
    post, pre = np.array(data(g, "grad_by_init_post")), np.array(data(g, "grad_by_init_pre"))
    assert post.shape == pre.shape == (g["n_inits"], g["n_layers"])
    wins = (post > pre).sum(axis=0)  # per block
    assert g["post_gt_pre_block1"] == wins[0] < g["n_inits"], "at block 1 not in every initialisation"
    m = g["post_gt_pre_all_from"]
    assert 1 < m <= g["n_layers"]
    assert np.all(wins[m - 1:] == g["n_inits"]), "the larger in every initialisation from block m on"
    assert wins[m - 2] < g["n_inits"], "... and only from there"
    # the per-initialisation data are those behind the means of the other claims
    assert np.allclose(post.mean(axis=0), data(g, "grad_mean_post"), rtol=1e-9)
    assert np.allclose(pre.mean(axis=0), data(g, "grad_mean_pre"), rtol=1e-9)


@pytest.mark.claim("stream-grows", "sol4-stream-grew", "fact-stream", "takeaway-pre", "takeaway-stream")
def test_residual_stream_grows_in_pre_norm_only(g):
    pre, post = data(g, "stream_mean_pre"), np.array(data(g, "stream_mean_post"))
    assert len(pre) == g["n_layers"] + 1
    assert g["stream_pre_first"] == pytest.approx(pre[0]) and g["stream_pre_last"] == pytest.approx(pre[-1])
    assert all(a < b for a, b in zip(pre, pre[1:])), "every block adds to it"
    assert abs(g["stream_pre_first"] - g["sqrt_d"]) < 0.5, "embeddings of unit variance: norm sqrt(d)"
    # post-norm: every block ends with a LayerNorm, the stream stays at sqrt(d)
    assert g["stream_post_max_dev"] == pytest.approx(np.abs(post[1:] - g["sqrt_d"]).max(), rel=1e-6)
    assert g["stream_post_max_dev"] < 0.01
    # and it grows with the depth of the stack too (the depth sweep, both initialisations)
    for init in ("xavier", "torch"):
        stream = by_depth(g, f"depth_{init}_pre_stream").mean(axis=1)
        assert all(a < b for a, b in zip(stream, stream[1:])), f"{init}: the deeper the stack, the larger the stream"


def by_depth(g, name):
    """A glued depth sweep: one list of per-initialisation values per depth, as an array (depths, inits)."""
    return np.array(data(g, name))


@pytest.mark.claim("depth-law-xavier", "depth-fold-changes", "depth-rule", "fact-pre-shrinks", "takeaway-pre")
def test_pre_norm_last_block_follows_one_over_sqrt_L_in_xiongs_setting(g):
    """W2 of the last block, Xavier init: the stream grows about sqrt(32/2) = 4-fold; the gradient shrinks somewhat less."""
    blocks = data(g, "depth_blocks")
    assert blocks[0] == g["depth_shallow"] and blocks[-1] == g["depth_deep"]
    assert g["sqrt_depth_ratio"] == pytest.approx(np.sqrt(blocks[-1] / blocks[0]))
    runs = by_depth(g, "depth_xavier_pre_w2")
    assert runs.shape == (len(blocks), g["n_inits"])
    mean = runs.mean(axis=1)
    assert all(a > b for a, b in zip(mean, mean[1:])), "shrinks at every doubling of the depth"
    shrink = mean[0] / mean[-1]
    assert g["xiong_depth_pre_shrink"] == pytest.approx(shrink, rel=1e-9)
    assert 0.8 < shrink / g["sqrt_depth_ratio"] < 1, "somewhat less than the sqrt(L) fall"
    stream = by_depth(g, "depth_xavier_pre_stream").mean(axis=1)
    assert g["stream_growth_xavier"] == pytest.approx(stream[-1] / stream[0], rel=1e-9)
    assert abs(g["stream_growth_xavier"] / g["sqrt_depth_ratio"] - 1) < 0.05, "about the sqrt(L) growth"
    assert shrink < g["stream_growth_xavier"], "the gradient shrinks somewhat less than the stream grows"
    # "roughly like 1/sqrt(L)": gradient x sqrt(L) stays within 25 % of its mean at every depth
    scaled = mean * np.sqrt(blocks)
    assert np.all(np.abs(scaled / scaled.mean() - 1) < 0.25)


def loglog_slope(blocks, values):
    return np.polyfit(np.log(blocks), np.log(values), 1)[0]


@pytest.mark.claim("depth-law-xavier", "fact-pre-shrinks", "takeaway-pre")
def test_pre_norm_slope_under_xavier_is_shallower_than_minus_one_half(g):
    blocks = data(g, "depth_blocks")
    assert len(blocks) == g["n_depths"]
    slope = loglog_slope(blocks, by_depth(g, "depth_xavier_pre_w2").mean(axis=1))
    assert g["slope_xavier_pre"] == pytest.approx(slope, rel=1e-9)
    assert -0.5 < slope < -0.35, "shallower than the bound's -1/2 at these depths"


@pytest.mark.claim("depth-law-torch", "fact-pre-shrinks", "takeaway-pre")
def test_pre_norm_slope_under_torch_init_is_shallower(g):
    blocks = data(g, "depth_blocks")
    slope = loglog_slope(blocks, by_depth(g, "depth_torch_pre_w2").mean(axis=1))
    assert g["slope_torch_pre"] == pytest.approx(slope, rel=1e-9)
    assert slope < 0, "it still shrinks"
    assert slope > g["slope_xavier_pre"], "more slowly than under Xavier"
    assert slope > -0.5 * 0.75, "well short of the bound's -1/2: not 'like 1/sqrt(L)'"


@pytest.mark.claim("depth-post-grows", "fact-post-not", "misconception-size", "takeaway-gradients")
def test_post_norm_last_block_does_not_shrink_with_depth(g):
    runs, pre = by_depth(g, "depth_xavier_post_w2"), by_depth(g, "depth_xavier_pre_w2")
    growth, pairs = runs[-1].mean() / runs[0].mean(), runs[-1] / runs[0]
    assert g["xiong_depth_post_growth"] == pytest.approx(growth, rel=1e-9)
    assert g["n_inits_post_grows"] == int((pairs > 1).sum()) == g["n_inits"], "in every initialisation"
    assert growth > 1 and pairs.min() > 1, "larger at the deepest stack than at the shallowest, in every initialisation"
    assert g["depth_post_over_pre_deep"] == pytest.approx(runs[-1].mean() / pre[-1].mean(), rel=1e-9)
    assert g["depth_post_over_pre_deep"] > runs[0].mean() / pre[0].mean(), "the gap widens with depth"


@pytest.mark.claim("depth-law-torch")
def test_under_torch_init_the_gradient_shrinks_as_much_as_the_stream_grows(g):
    """Torch init: the stream grows less than under Xavier, and the last-block W2 gradient shrinks about as much."""
    stream = by_depth(g, "depth_torch_pre_stream").mean(axis=1)
    growth = stream[-1] / stream[0]
    assert g["stream_growth_torch"] == pytest.approx(growth, rel=1e-9)
    assert growth < g["stream_growth_xavier"] / 1.5, "grows only ...-fold (well short of Xavier's)"
    w2 = by_depth(g, "depth_torch_pre_w2").mean(axis=1)
    assert g["torchw2_depth_pre_shrink"] == pytest.approx(w2[0] / w2[-1], rel=1e-9)
    assert 0.8 < g["torchw2_depth_pre_shrink"] / growth < 1.25, "shrinks about as much as the stream grows"


@pytest.mark.claim("xiong-pre-steeper")
def test_pre_norm_profile_falls_in_xiongs_setting(g):
    """W2 only, Xavier init, the 24-block stack: the first block gets several times the gradient of the last."""
    pre_mean, pre_by_init = data(g, "xiong_pre_mean"), data(g, "xiong_pre_ratio_by_init")
    assert len(pre_mean) == g["n_layers"] and len(pre_by_init) == g["n_inits"]
    assert g["xiong_pre_first_last"] == pytest.approx(pre_mean[0] / pre_mean[-1], rel=1e-9)
    assert min(pre_by_init) > 1, "the early blocks get larger gradients in every initialisation"
    assert g["xiong_pre_first_last"] > g["pre_first_last"], "and more so than under torch's init (all parameters)"


@pytest.mark.claim("xiong-depth")
def test_a_shallower_stack_has_a_flatter_but_not_level_profile(g):
    mean6 = data(g, "xiong6_pre_mean")
    assert len(mean6) == g["depth_original"] < g["n_layers"]
    r6 = mean6[0] / mean6[-1]
    assert g["xiong6_pre_first_last"] == pytest.approx(r6, rel=1e-9)
    assert r6 < g["xiong_pre_first_last"], "flatter than at 24 blocks"
    assert r6 > 1.5, "but not level: the first block still gets clearly more"


# ------------------------------------------------------------------------------------------- decoder block

@pytest.mark.claim("decoder-causal", "decoder-matches-torch")
def test_decoder_block_causality_and_cross_attention(g):
    target, memory, t = data(g, "dec_change_target"), data(g, "dec_change_memory"), g["t_change"]
    assert t == 5, "the prose names positions 0 to 4 as the past"
    assert g["dec_past_change"] == max(target[:t]) == 0.0, "positions before t_change do not move"
    assert g["dec_future_change"] == pytest.approx(min(target[t:]), rel=1e-6)
    assert g["dec_future_change"] > 1e-3, "every position from t_change on moves, far beyond rounding"
    assert g["dec_memory_min_change"] == pytest.approx(min(memory), rel=1e-6)
    assert g["dec_memory_min_change"] > 1e-3, "changing one memory position moves every output position"
    assert g["dec_torch_max_diff"] < 1e-5


# ------------------------------------------------------------------------------- parameter and FLOP counts

@pytest.mark.claim("params-agree", "ffn-most-room", "division-of-labour", "takeaway-accounting", "takeaway-exact")
def test_parameter_accounting(g):
    formula, ours, torch_ = data(g, "param_formula"), data(g, "param_numel_ours"), data(g, "param_numel_torch")
    assert len(formula) == g["n_param_checks"]
    assert formula == ours == torch_, "every row agrees three ways"
    d = 512
    assert g["params_enc_512"] == 12 * d * d + 13 * d and g["params_enc_512"] in formula
    assert g["params_enc_512_over_12d2"] == pytest.approx((12 * d * d + 13 * d) / (12 * d * d), rel=1e-12)
    # FFN: 2 d d_ff + d_ff + d = 8d^2 + 5d of the encoder's 12d^2 + 13d and the decoder's 16d^2 + 19d
    ffn = 8 * d * d + 5 * d
    assert g["ffn_share_enc_512"] == pytest.approx(ffn / (12 * d * d + 13 * d), rel=1e-12)
    assert g["ffn_share_dec_512"] == pytest.approx(ffn / (16 * d * d + 19 * d), rel=1e-12)
    assert abs(g["ffn_share_enc_512"] - 2 / 3) < 0.01, "oracle: 8d^2 of 12d^2, two thirds of an encoder block"


@pytest.mark.claim("gpt2-ffn-share")
def test_gpt2_small_ffn_and_embedding_shares(g):
    """GPT-2 small by closed form: 12 blocks of 12d^2 + 13d, embeddings (50257 + 1024) d, final LayerNorm 2d."""
    d = 768
    total = 12 * (12 * d * d + 13 * d) + (50257 + 1024) * d + 2 * d
    assert total == 124_439_808
    assert g["gpt2_ffn_share"] == pytest.approx(12 * (8 * d * d + 5 * d) / total, rel=1e-12)
    assert g["gpt2_ffn_share"] < 0.5, "less than half of all parameters"
    assert g["gpt2_token_embedding_share"] == pytest.approx(50257 * d / total, rel=1e-12)


@pytest.mark.claim("flops-agree", "crossover-6d", "two-flops-per-weight", "takeaway-accounting", "takeaway-exact")
def test_flop_accounting(g):
    formula, counted = data(g, "flop_formula"), data(g, "flop_counted")
    assert len(formula) == g["n_flop_checks"] and formula == counted, "every count equals the formula exactly"
    terms_formula, terms_counted = data(g, "flop_term_formula"), data(g, "flop_term_counted")
    assert len(terms_formula) == 3 and terms_formula == terms_counted, "and so does each of the three terms"
    assert g["crossover_T"] == 6 * 64
    assert g["crossover_ratio"] == pytest.approx(1.0, abs=1e-9), "attention FLOPs equal the rest at T = 6d"
    assert g["share_formula_max_err"] < 1e-9
    # per position (8d^2 + 4d d_ff + 4Td) / (2 x 12 d^2 weights) = 1 + T/(6d): about 2 FLOPs per weight for T << 6d,
    # 4 at the crossover
    assert g["flops_per_weight_T16"] == pytest.approx(1 + 16 / (6 * 64))
    assert 1 <= g["flops_per_weight_T16"] < 1.1
    assert g["flops_per_weight_T384"] == pytest.approx(2.0, rel=1e-9)


@pytest.mark.claim("flops-per-weight-column")
def test_flops_per_weight_column_is_one_plus_T_over_6d(g):
    T, column = data(g, "share_T"), data(g, "share_flops_per_weight")
    d = 64
    assert g["crossover_T"] == 6 * d
    assert column == pytest.approx([1 + t / (6 * d) for t in T], rel=1e-9), "the last column is 1 + T/6d at every length"
    assert g["flops_per_weight_T16"] == pytest.approx(column[T.index(16)], rel=1e-12)
    assert g["flops_per_weight_T384"] == pytest.approx(column[T.index(g["crossover_T"])], rel=1e-12)


@pytest.mark.claim("ln-grad-orthogonal")
def test_exercise_1_layer_norm_gradient_is_orthogonal_to_its_input(g):
    assert abs(g["ln_grad_cos"]) < 1e-10, "LayerNorm's input gradient is orthogonal to its input"
    grad, random = np.array(data(g, "ln_grad_vector")), np.array(data(g, "ln_random_vector"))
    cos = grad @ random / (np.linalg.norm(grad) * np.linalg.norm(random))
    assert g["ln_grad_cos_random"] == pytest.approx(cos, rel=1e-9)
    assert abs(g["ln_grad_cos_random"]) > 1e6 * abs(g["ln_grad_cos"]), "a random direction is not orthogonal"


def test_exercise_solutions(g):
    assert g["gpt2_params_formula"] == g["gpt2_params_counted"] == 124_439_808
    assert g["gpt2_embedding_share"] == pytest.approx(50257 * 768 / 124_439_808, rel=1e-12)
    assert g["backward_over_forward"] == pytest.approx(2.0)


@pytest.mark.claim("nograd-input-saves")
def test_an_input_without_gradient_saves_part_of_the_backward_pass(g):
    # the products that read such an input skip dL/dX; every other product still pays two
    assert 1.0 < g["backward_over_forward_nograd"] < g["backward_over_forward"], \
        "the products that read that input directly compute only dL/dW"


@pytest.mark.claim("nograd-prenorm-none")
def test_a_pre_norm_block_spares_nothing(g):
    # every matmul reads a LayerNorm's output (or the attention's), so each pays dL/dX and dL/dW: exactly 2
    assert g["backward_over_forward_nograd_pre"] == pytest.approx(2.0, abs=1e-9)
    assert g["backward_over_forward_nograd_pre"] > g["backward_over_forward_nograd"]


@pytest.mark.claim("grad-times-stream", "takeaway-pre")
def test_pre_norm_gradient_scales_inversely_with_the_stream_entering_the_block(g):
    grad = np.array(data(g, "grad_mean_pre"))
    stream_in = np.array(data(g, "stream_mean_pre"))[:-1]  # the stream entering each block
    assert len(grad) == len(stream_in) == g["n_layers"]
    assert g["pre_stream_in_growth"] == pytest.approx(stream_in[-1] / stream_in[0], rel=1e-9)
    product = grad * stream_in
    assert g["pre_grad_x_stream_first_last"] == pytest.approx(product[0] / product[-1], rel=1e-9)
    assert abs(g["pre_stream_in_growth"] / g["pre_first_last"] - 1) < 0.1, "the stream grows about as much as the gradient falls"
    assert abs(np.log(g["pre_grad_x_stream_first_last"])) < np.log(g["pre_first_last"]) / 4, "the product is nearly level"
    assert np.ptp(np.log(product)) < np.ptp(np.log(grad)) / 2, "level across all blocks, not only at the ends"


def bootstrap_slopes(g, name, rng):
    blocks = np.array(data(g, "depth_blocks"))
    runs = np.array(data(g, name))  # (depths, inits)
    n = runs.shape[1]
    slopes = [np.polyfit(np.log(blocks), np.log(runs[:, rng.integers(0, n, n)].mean(axis=1)), 1)[0]
              for _ in range(g["n_boot"])]
    level = g["ci_level"]
    return np.percentile(slopes, [(100 - level) / 2, (100 + level) / 2])


@pytest.mark.claim("depth-law-xavier", "depth-post-grows", "fact-post-not", "takeaway-gradients")
def test_depth_slopes_with_bootstrap_intervals(g):
    rng = np.random.default_rng(g["bootstrap_seed"])  # the notebook's order: pre-norm, then post-norm
    pre = bootstrap_slopes(g, "depth_xavier_pre_w2", rng)
    post = bootstrap_slopes(g, "depth_xavier_post_w2", rng)
    assert [g["slope_xavier_pre_lo"], g["slope_xavier_pre_hi"]] == pytest.approx(list(pre), rel=1e-9)
    assert [g["slope_xavier_post_lo"], g["slope_xavier_post_hi"]] == pytest.approx(list(post), rel=1e-9)
    assert -0.5 < g["slope_xavier_pre_lo"] <= g["slope_xavier_pre"] <= g["slope_xavier_pre_hi"] < 0, \
        "the interval excludes -1/2: shallower than the bound's rate"
    blocks = np.array(data(g, "depth_blocks"))
    post_mean = np.array(data(g, "depth_xavier_post_w2")).mean(axis=1)
    assert g["slope_xavier_post"] == pytest.approx(np.polyfit(np.log(blocks), np.log(post_mean), 1)[0], rel=1e-9)
    assert 0 < g["slope_xavier_post_lo"] <= g["slope_xavier_post"] < 0.25, "post-norm grows, mildly"


@pytest.mark.claim("depth-stream-sqrt", "takeaway-pre")
def test_pre_norm_stream_after_the_last_block_grows_close_to_sqrt_L(g):
    """Xavier init: the log-log slope of the mean stream against L is close to the 1/2 of a sqrt(L) law."""
    blocks = data(g, "depth_blocks")
    stream = by_depth(g, "depth_xavier_pre_stream").mean(axis=1)
    slope = loglog_slope(blocks, stream)
    assert g["stream_slope_xavier"] == pytest.approx(slope, rel=1e-9)
    assert abs(slope - 0.5) < 0.05, "close to sqrt(L)"
    assert np.ptp(stream / np.sqrt(blocks)) / np.mean(stream / np.sqrt(blocks)) < 0.15, "stream / sqrt(L) nearly flat"


@pytest.mark.claim("depth-grad-x-stream", "takeaway-pre")
def test_pre_norm_last_block_gradient_falls_slightly_less_than_one_over_the_stream(g):
    """Gradient x stream (means over the initialisations) rises from the shallowest to the deepest stack, a little."""
    blocks = data(g, "depth_blocks")
    grad = by_depth(g, "depth_xavier_pre_w2").mean(axis=1)
    stream = by_depth(g, "depth_xavier_pre_stream").mean(axis=1)
    product = grad * stream
    assert g["grad_x_stream_shallow"] == pytest.approx(product[0], rel=1e-9)
    assert g["grad_x_stream_deep"] == pytest.approx(product[-1], rel=1e-9)
    assert 1 < product[-1] / product[0] < 1.3, "rises, slightly"
    # hence the gradient's slope is the stream's slope, negated, plus the product's (positive) slope
    assert loglog_slope(blocks, product) > 0
    assert loglog_slope(blocks, grad) == pytest.approx(loglog_slope(blocks, product) - loglog_slope(blocks, stream))
    assert loglog_slope(blocks, grad) > -0.5, "shallower than -1/2"
