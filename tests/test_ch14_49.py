"""§14.49: the claims its prose makes, asserted on the values its notebook glued."""

import pytest

STEM = "14_49_attention_from_alignment"
LENGTHS = [4, 8, 16, 32]


def test_scores_from_the_definitions_agree_with_the_vectorised_helpers(g):
    assert g["check_max_diff"] < 1e-5
    assert g["params_additive"] == g["params_additive_formula"] > 0
    assert g["params_dot"] == 0


def test_toy_lookup_picks_the_matching_key(g):
    assert g["toy_weight_key3"] > 0.9


def test_reversal_is_learned(g):
    assert g["rev_loss_first"] > 0.8 * g["log_vocab"], "starts near guessing"
    assert g["rev_loss_final"] < 0.1 * g["rev_loss_first"]
    assert g["rev_acc"] > 0.95


def test_learned_alignment_is_the_anti_diagonal_band(g):
    assert g["mass_band"] > 0.6, "most attention lies on the anti-diagonal band"
    assert g["band_ratio"] > 3, "far above uniform weights"
    assert g["mass_band"] > 6 * g["uniform_weight"]
    assert g["argmax_on_band"] == 1.0, "at every step"
    assert g["step1_argmax"] == g["t_rev"], "step 1 looks at the last state"


def test_the_alignment_is_offset_by_one_step(g):
    assert g["mass_offset"] > 0.5, "the position after the needed one takes most weight"
    assert g["mass_offset"] > 3 * g["mass_needed"]


def test_attention_closes_the_bottleneck(g):
    fixed = [g[f"fixed_acc_{T}"] for T in LENGTHS]
    attn = [g[f"attn_acc_{T}"] for T in LENGTHS]
    assert all(a > b for a, b in zip(fixed, fixed[1:])), "falls with every doubling"
    assert fixed[-1] < 0.6
    assert g["attn_min"] == min(attn) and g["attn_min"] > 0.95, "attention stays high at every length"
    assert g["attn_range_pp"] == pytest.approx(100 * (max(attn) - min(attn)), rel=1e-6)
    assert g["attn_range_pp"] < 5
    assert all(a > f for a, f in zip(attn, fixed))
    assert g["gap_longest_pp"] == pytest.approx(100 * (attn[-1] - fixed[-1]), rel=1e-6)
    assert g["gap_longest_pp"] > 40
    assert g["params_fixed"] == g["params_attn"], "same parameters, different paths"


def test_exercise_solutions(g):
    assert g["ex1_min_slack"] >= -1e-6, "the softmax bound holds"
    assert g["ex1_mean_diff"] < 1e-6
    assert g["ex2_dot_acc"] > 0.9
    assert g["ex2_dot_band"] > 0.5
