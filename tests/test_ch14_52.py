"""§14.52: the claims its prose makes, asserted on the values its notebook glued."""

import math

import pytest

STEM = "14_52_positional_encoding"


def test_self_attention_is_permutation_equivariant_to_rounding(g):
    assert g["equivariance_error"] < 1e-6, "f(PX) = P f(X) up to float32 rounding"
    assert g["equivariance_error"] < 1e-4 * g["equivariance_output_scale"]
    assert 0.07 < g["equivariance_output_scale"] < 0.18, "outputs of the measured size, not zeros"
    assert g["own_equivariance_error"] < 1e-6, "the book's own module too"
    assert g["block_equivariance_error"] < 1e-6, "a whole encoder block is equivariant too"
    assert g["block_pooled_error"] < 1e-6, "pooled: invariant"


def test_report_and_slides_identical_without_positions_different_with(g):
    assert g["bag_token_diff"] < 1e-6 and g["bag_pooled_diff"] < 1e-6
    assert g["pos_token_diff"] > 1e-2 and g["pos_pooled_diff"] > 1e-2
    assert g["pos_token_diff"] > 1e4 * g["bag_token_diff"]
    # every token changes, including "send", which sits at position 0 in both sentences
    assert g["pos_min_token_change"] > 1e-2 and g["pos_change_send"] > 1e-2
    # seeded random layer: the sizes the prose quotes, pinned to their measured order
    assert 0.1 < g["pos_token_diff"] < 0.27 and 0.027 < g["pos_pooled_diff"] < 0.075
    assert 0.2 < g["pos_change_send"] < 0.5 and 0.014 < g["pos_min_token_change"] < 0.039
    assert g["pos_min_token_change"] <= g["pos_change_send"], "the smallest change in the table"


def test_sinusoidal_encoding_basic_facts(g):
    """The wavelengths are read off the helper's matrix (atan2 of row 1); the formula is the oracle."""
    assert g["wavelength_min"] == pytest.approx(2 * math.pi, rel=1e-5)
    d = g["D_PE"]
    assert g["wavelength_max"] == pytest.approx(2 * math.pi * 10000 ** ((d - 2) / d), rel=1e-4)
    assert g["wavelength_ratio_error"] < 1e-4, "a geometric progression with ratio 10000^(2/d)"
    assert g["row_norm_max_dev"] < 1e-5, "every row has norm sqrt(d/2)"


def test_shift_by_k_is_a_rotation_independent_of_position(g):
    assert g["rotation_max_error"] < 1e-6
    assert g["rotation_orthogonality_error"] < 1e-6


def test_dot_product_depends_only_on_the_offset(g):
    assert g["dot_spread_max"] < 1e-4, "every diagonal of PE PE^T is constant (float32)"
    assert g["dot_closed_form_error"] < 1e-4, "and equals sum_i cos(k w_i)"
    # the shown numbers are measured on the Gram matrix; the closed form sum_i cos(k w_i) is the oracle
    assert g["dot_at_zero"] == pytest.approx(g["D_PE"] / 2, rel=1e-5), "k = 0: the squared row norm d/2"
    assert g["dot_profile_min"] == pytest.approx(g["dot_profile_min_closed"], abs=1e-3)
    assert g["dot_profile_range"] == pytest.approx(g["dot_profile_range_closed"], abs=1e-3)
    assert g["dot_profile_range"] > 5, "while the profile itself varies with k"
    assert g["dot_profile_min"] < g["dot_at_zero"] - 5
    assert g["dot_asymmetry"] < 1e-4, "k ahead and k back equally similar: no sense of direction"


def test_adding_positions_keeps_the_token(g):
    assert 0.999 <= g["probe_token_acc_128"] <= 1
    assert 0.9 < g["probe_token_acc_min"] < g["probe_token_acc_128"], "narrowest width: a few tokens lost"
    assert g["probe_pos_within1_128"] > 0.9
    assert g["probe_pos_exact_128"] > 20 * g["probe_chance"]
    assert 0.4 < g["probe_pos_exact_128"] < g["probe_pos_within1_128"], "exact is stricter than within one"
    assert g["probe_within1_32"] > 0.4
    assert g["probe_cos_128"] < 0.15
    assert g["probe_within1_increasing"] is True and g["probe_cos_decreasing"] is True  # strictly, at every step
    assert g["probe_within1_32"] < g["probe_pos_within1_128"] <= g["probe_within1_256"] <= 1
    assert g["probe_within1_256"] > 1.05 * g["probe_within1_32"]
    assert g["probe_cos_256"] < g["probe_cos_128"] < g["probe_cos_32"]
    # oracle: a Gaussian vector against a fixed one has mean |cos| = sqrt(2 / (pi d)) (to leading order)
    for d in (32, 128, 256):
        assert g[f"probe_cos_{d}"] == pytest.approx(math.sqrt(2 / (math.pi * d)), rel=0.15)


def test_exercise_1_least_squares_recovers_the_rotation_only_from_enough_positions(g):
    assert g["lstsq_residual_long"] < 1e-11 and g["lstsq_residual_short"] < 1e-11
    assert g["lstsq_vs_formula_long"] < 1e-11, "T = 5000: M = R(7)"
    assert 0.5 < g["lstsq_vs_formula_short"] < 1.3, "T = 128: fits equally well, but is not R(7)"
    assert 5 < g["lstsq_cond_long"] < 12 and 7e14 < g["lstsq_cond_short"] < 1.7e15
    assert g["lstsq_cond_short"] > 1e6 * g["lstsq_cond_long"]


def test_exercise_2_and_3_distances(g):
    assert g["distance_formula_error"] < 1e-10
    assert g["min_distance_all"] == pytest.approx(g["min_distance_by_offset"], abs=1e-9)
    assert g["min_distance_offset"] == 1, "the closest distinct positions are neighbours"
    assert g["min_distance_far"] > 2 * g["min_distance_all"]
    assert 3 < g["min_distance_far"] < 6.5


def test_exercise_4_causal_mask_breaks_equivariance(g):
    assert g["causal_diff"] > 1e-2
    assert g["causal_diff"] > 1e4 * g["equivariance_error"]
