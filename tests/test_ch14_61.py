"""§14.61: the claims its prose makes, asserted on the values its notebook glued."""

import math

import pytest

STEM = "14_61_transformer_families"


def test_the_masks_have_the_sizes_the_prose_states(g):
    T, S, T_dec = g["T_ex"], g["S_ex"], g["T_dec_ex"]
    assert g["visible_encoder"] == T * T
    assert g["visible_causal"] == T * (T + 1) // 2
    assert g["visible_cross"] == T_dec * S and T_dec != S, "cross-attention is rectangular"


def test_measured_dependence_reproduces_the_masks(g):
    assert g["mlm_influence_share"] == 1.0
    assert g["clm_past_influence_share"] == 1.0
    assert g["clm_future_influence_share"] == 0.0
    assert g["cross_influence_share"] == 1.0
    assert g["dec_future_influence_share"] == 0.0


def test_parameter_counts(g):
    assert g["same_param_count"] is True, "encoder-only and decoder-only differ only in the mask"
    assert 1.8 < g["s2s_param_ratio"] < 2.6


def test_losses_reach_their_derived_floors(g):
    assert g["clm_loss_floor"] == pytest.approx(5 * math.log(8) / 12)
    assert -0.01 < g["clm_heldout_loss"] - g["clm_loss_floor"] < 0.03, "CLM has learned what the left allows"
    assert 0.15 < g["mlm_unpredictable_share"] < 0.25, "a little above the 0.15 masking rate"
    assert g["mlm_loss_floor"] == pytest.approx(math.log(8) * g["mlm_unpredictable_share"])
    assert -0.02 < g["mlm_heldout_loss"] - g["mlm_loss_floor"] < 0.1
    assert g["mlm_loss_floor"] < g["clm_loss_floor"]


def test_mlm_gets_thinner_supervision(g):
    assert g["clm_targets_per_seq"] == 12
    assert 2 < g["mlm_targets_per_seq"] < 4
    assert g["clm_targets_per_seq"] > 3 * g["mlm_targets_per_seq"]


def test_only_the_bidirectional_model_fills_the_first_half(g):
    assert g["chance"] == 1 / 8
    assert g["mlm_first_half_acc"] > 0.95
    assert abs(g["clm_first_half_acc"] - g["chance"]) < 0.03, "CLM at chance where the answer is to the right"
    assert g["mlm_second_half_acc"] > 0.95 and g["clm_second_half_acc"] > 0.95


def test_the_causal_model_generates(g):
    assert 0.85 < g["gen_valid_share"] < 1.0, "most samples valid; some tail mistakes at temperature 1"
    assert g["gen_distinct"] > 0.95 * g["gen_n"]
    assert 2.9 < g["gen_entropy_bits"] <= 3.0, "first half close to uniform"
    assert g["gen_valid_share_top_p"] > g["gen_valid_share"] and g["gen_valid_share_top_p"] > 0.99
    assert 2.9 < g["gen_entropy_bits_top_p"] <= 3.0, "top-p keeps the randomness of the first half"
    assert g["clm_completion_exact"] > 0.95, "decoder-only does the seq2seq task from a prompt"


def test_the_encoder_decoder_maps_to_another_length(g):
    assert g["s2s_exact"] > 0.95 and g["s2s_exact_min_by_length"] > 0.9
    assert g["s2s_len_ratio_n3"] == pytest.approx(2 + 1 / 3, abs=0.05)
    assert g["s2s_len_ratio_n6"] == pytest.approx(2 + 1 / 6, abs=0.05)
    assert g["cross_alignment_steps"] == 13
    assert g["cross_alignment_share"] > 0.6, "most copying steps attend to the letter they copy"
    assert g["last_step_attends_eos"] is True, "the last step looks at the source's <eos>"


def test_exercise_solutions(g):
    assert g["deep_future_influence_share"] == 0.0 and g["deep_past_influence_share"] == 1.0
    assert g["pairs_s2s_formula"] == g["pairs_s2s_masks"] == 4**2 + 8 * 9 // 2 + 8 * 4
    assert g["mlm_gen_valid_share"] > 0.5
    assert abs(g["mlm_gen_valid_share"] - g["gen_valid_share"]) < 0.2, "comparable in this world"


def test_the_nucleus_keeps_randomness_and_cuts_mistakes(g):
    assert g["nucleus_first_half"] > 7.5, "near-uniform first half: the 0.9-nucleus holds (almost) all 8 letters"
    assert g["nucleus_mirror_half"] < 1.05, "determined half: the nucleus is (almost always) one token"


def test_shares_and_counts_stay_in_their_ranges(g):
    # a share is at most 1, a count of distinct samples at most the number drawn, a nucleus between
    # one token and the eight letters
    for name in ("clm_second_half_acc", "mlm_first_half_acc", "mlm_second_half_acc", "gen_valid_share_top_p",
                 "s2s_exact", "s2s_exact_min_by_length", "clm_completion_exact", "cross_alignment_share"):
        assert 0 <= g[name] <= 1, name
    assert g["gen_distinct"] <= g["gen_n"]
    assert 1 <= g["nucleus_mirror_half"] <= g["nucleus_first_half"] <= 8


def test_pair_counts_of_the_two_sequence_to_sequence_designs(g):
    S, T = 4, 8
    assert g["pairs_dec_formula"] == g["pairs_dec_mask"] == (S + T) * (S + T + 1) // 2
    assert g["pairs_s2s_formula"] - g["pairs_dec_formula"] == S * (S - 1) // 2
