"""§14.52: the claims its prose makes, asserted on the values its notebook glued."""

import math

import pytest

STEM = "14_52_positional_encoding"


def test_self_attention_is_permutation_equivariant_to_rounding(g):
    assert g["n_permutations"] >= 100
    assert g["equivariance_error"] < 1e-6, "f(PX) = P f(X) up to float32 rounding"
    assert g["equivariance_error"] < 1e-4 * g["equivariance_output_scale"]
    assert g["own_equivariance_error"] < 1e-6, "the book's own module too"
    assert g["block_equivariance_error"] < 1e-6, "a whole encoder block is equivariant too"
    assert g["block_pooled_error"] < 1e-6, "pooled: invariant"


def test_report_and_slides_identical_without_positions_different_with(g):
    assert g["bag_token_diff"] < 1e-6 and g["bag_pooled_diff"] < 1e-6
    assert g["pos_token_diff"] > 1e-2 and g["pos_pooled_diff"] > 1e-2
    assert g["pos_token_diff"] > 1e4 * g["bag_token_diff"]
    # every token changes, including "send", which sits at position 0 in both sentences
    assert g["pos_min_token_change"] > 1e-2 and g["pos_change_send"] > 1e-2


def test_sinusoidal_encoding_basic_facts(g):
    assert g["wavelength_min"] == pytest.approx(2 * math.pi)
    d = g["D_PE"]
    assert g["wavelength_max"] == pytest.approx(2 * math.pi * 10000 ** ((d - 2) / d))
    assert g["row_norm_max_dev"] < 1e-5, "every row has norm sqrt(d/2)"


def test_shift_by_k_is_a_rotation_independent_of_position(g):
    assert g["rotation_n_offsets"] >= 5 and g["rotation_k_max"] >= 50
    assert g["rotation_max_error"] < 1e-6
    assert g["rotation_orthogonality_error"] < 1e-6


def test_dot_product_depends_only_on_the_offset(g):
    assert g["dot_spread_max"] < 1e-4, "every diagonal of PE PE^T is constant (float32)"
    assert g["dot_closed_form_error"] < 1e-4, "and equals sum_i cos(k w_i)"
    assert g["dot_profile_range"] > 5, "while the profile itself varies with k"
    assert g["dot_at_zero"] == pytest.approx(g["D_PE"] / 2)
    assert g["dot_profile_min"] < g["dot_at_zero"] - 5
    assert g["dot_asymmetry"] < 1e-9, "even in k: the dot product has no sense of direction"


def test_adding_positions_keeps_the_token(g):
    assert g["probe_token_acc_128"] >= 0.999
    assert g["probe_pos_within1_128"] > 0.9
    assert g["probe_pos_exact_128"] > 20 * g["probe_chance"]
    assert g["probe_cos_128"] < 0.15
    assert g["probe_within1_increasing"] is True and g["probe_cos_decreasing"] is True


def test_exercise_1_least_squares_recovers_the_rotation_only_from_enough_positions(g):
    assert g["lstsq_residual_long"] < 1e-10 and g["lstsq_residual_short"] < 1e-10
    assert g["lstsq_vs_formula_long"] < 1e-8, "T = 5000: M = R(7)"
    assert g["lstsq_vs_formula_short"] > 0.1, "T = 128: fits equally well, but is not R(7)"
    assert g["lstsq_cond_short"] > 1e6 * g["lstsq_cond_long"]
    assert 5000 > g["lstsq_slowest_wavelength"] / 4 > 128


def test_exercise_2_and_3_distances(g):
    assert g["distance_formula_error"] < 1e-10
    assert g["min_distance_all"] == pytest.approx(g["min_distance_by_offset"], abs=1e-9)
    assert g["min_distance_offset"] == 1, "the closest distinct positions are neighbours"
    assert g["min_distance_far"] > 2 * g["min_distance_all"]


def test_exercise_4_causal_mask_breaks_equivariance(g):
    assert g["causal_diff"] > 1e-2
    assert g["causal_diff"] > 1e4 * g["equivariance_error"]
