"""§14.54: the claims its prose makes, asserted on the values its notebook glued."""


import pytest

STEM = "14_54_transformer_block"


def test_residual_stream_is_the_sum_of_the_writes(g):
    assert g["stream_err"] < 1e-5
    assert g["identity_err_pre"] == 0.0, "pre-norm block with zeroed writes is exactly the identity"
    assert 6 < g["identity_err_post"] < 11, "post-norm block renormalises the stream anyway"


def test_layer_norm_is_per_position(g):
    assert g["ln_err"] < 1e-5
    assert g["ln_other_effect"] == 0.0
    assert 1.5 < g["bn_other_effect"] < 3.3, "BatchNorm: one example's output depends on the others"


def test_feed_forward_is_position_wise(g):
    assert g["ffn_loop_err"] < 1e-6 and g["ffn_conv_err"] < 1e-5
    assert g["ffn_positions_changed"] == 1
    assert g["attn_positions_changed"] == g["T_small"]


def test_encoder_block_matches_torch(g):
    assert g["enc_torch_max_diff"] < 1e-5


def test_pre_norm_gradients_shrink_towards_the_output(g):
    assert 1.5 < g["pre_first_last"] < 2.8, "pre-norm: first block gets clearly more gradient than the last"
    assert 1.2 < g["pre_first_last_min_over_inits"] <= g["pre_first_last"] * 1.1, "...in every initialisation"
    assert 0.8 <= g["pre_decreasing_steps"] <= 1.0, "mean gradient falls at most block-to-block steps"
    assert 1.5 < g["pre_max_min"] < 2.8


def test_post_norm_gradients_are_level_and_no_smaller(g):
    assert 0.8 < g["post_first_last"] < 1.25, "post-norm: first and last block about equal"
    assert 1.0 <= g["post_max_min"] < 1.3
    assert g["post_max_min"] < g["pre_max_min"], "post-norm is the more even of the two"
    assert g["post_over_pre_min"] >= 1.0, "post-norm's gradient at least as large as pre-norm's at every block"
    assert 1.0 <= g["post_over_pre_first"] < 1.3, "about the same at the first block, and no smaller"
    assert 1.5 < g["post_over_pre_last"] < 3.0


def test_residual_stream_grows_in_pre_norm_only(g):
    assert g["stream_pre_last"] > 1.5 * g["stream_pre_first"]
    assert 1.5 * g["stream_pre_first"] < g["stream_pre_last"] < 3 * g["stream_pre_first"]
    assert abs(g["stream_pre_first"] - g["sqrt_d"]) < 0.5, "embeddings of unit variance: norm sqrt(d)"
    assert g["stream_post_max_dev"] < 0.01


def test_depth_scaling_of_the_last_blocks_gradient(g):
    assert 0.8 < g["depth_ratio_shallow"] < 1.3, "shallow stacks: similar last-block gradients"
    assert 2.0 < g["depth_ratio_deep"] < 3.8 and g["depth_ratio_deep"] > 1.5 * g["depth_ratio_shallow"]
    assert g["pre_last_deep"] < 0.8 * g["pre_last_shallow"], "pre-norm's shrinks with depth"
    assert g["post_last_deep"] > 1.3 * g["post_last_shallow"], "post-norm's grows with depth"
    assert g["post_last_growth"] == pytest.approx(g["post_last_deep"] / g["post_last_shallow"])
    assert g["post_last_grows_every_step"] is True, "...at every doubling of the depth"
    # 'agrees in direction, not in size': pre-norm shrinks, but far less than 1/sqrt(L) predicts
    assert g["pre_last_shrink"] == pytest.approx(g["pre_last_shallow"] / g["pre_last_deep"])
    assert 1.2 < g["pre_last_shrink"] < g["sqrt_depth_ratio"] / 2


def test_xiong_setting_does_not_remove_the_disagreement(g):
    """W2 only, Xavier init: pre-norm falls more steeply; post-norm has no consistent direction, never rises."""
    assert 1.8 < g["torchw2_pre_first_last"] < 3.2 and 1.0 < g["torchw2_post_first_last"] < 1.5
    assert g["torchw2_pre_first_last"] > 1.5 * g["torchw2_post_first_last"]
    assert 3 < g["xiong_pre_first_last"] < 7
    assert g["xiong_pre_first_last"] > 1.5 * g["torchw2_pre_first_last"], "falls more steeply than before"
    assert 2 < g["xiong_pre_first_last_lo"] <= g["xiong_pre_first_last"] <= g["xiong_pre_first_last_hi"] < 9
    assert 0.85 <= g["xiong_pre_falling_steps"] <= 1.0
    assert 1.0 < g["xiong_post_first_last"] < 1.5, "on average it does not rise towards the output"
    assert 0.4 < g["xiong_post_first_last_lo"] < 0.9 and 1.3 < g["xiong_post_first_last_hi"] < 2.5, \
        "initialisations disagree on the direction"


def test_decoder_block_causality_and_cross_attention(g):
    assert g["t_change"] == 5
    assert g["dec_past_change"] < 1e-6
    # a seeded random perturbation: the sizes are pinned to their measured order, the claim is that they are not 0
    assert 0.07 < g["dec_future_change"] < 0.18
    assert 0.09 < g["dec_memory_min_change"] < 0.24
    assert g["dec_torch_max_diff"] < 1e-5


def test_parameter_accounting(g):
    assert g["params_all_match"] is True
    d = 512
    assert g["params_enc_512"] == 12 * d * d + 13 * d
    assert 1.0 < g["params_enc_512_over_12d2"] < 1.01
    assert abs(g["ffn_share_enc_512"] - 2 / 3) < 0.01, "FFN: two thirds of an encoder block"
    assert abs(g["ffn_share_dec_512"] - 0.5) < 0.01


def test_flop_accounting(g):
    assert g["flops_all_match"] is True
    assert g["flop_terms_match"] is True
    assert g["crossover_ratio"] == pytest.approx(1.0, abs=1e-9), "attention FLOPs equal the rest at T = 6d"
    assert g["share_formula_max_err"] < 1e-9
    assert g["flops_per_weight_T16"] == pytest.approx(1 + 16 / (6 * 64))


def test_exercise_solutions(g):
    assert abs(g["ln_grad_cos"]) < 1e-10, "LayerNorm's input gradient is orthogonal to its input"
    assert 0.08 < abs(g["ln_grad_cos_random"]) < 0.2, "a random direction is not"
    assert g["gpt2_params_formula"] == g["gpt2_params_counted"] == 124_439_808
    assert 0.25 < g["gpt2_embedding_share"] < 0.35
    assert g["backward_over_forward"] == pytest.approx(2.0)
