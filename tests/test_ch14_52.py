"""§14.52: the claims its prose makes, asserted on the values its notebook glued.

Each verdict sentence of the notebook is marked ``<!-- claim: id -->`` and asserted here by the test that
carries its id: from the glued data (the probe table per width) or from closed forms and recomputations
of the encoding (numpy, from its definition), not from a boolean the notebook decided.
"""

import ast
import functools
import math

import numpy as np
import pytest
import torch

from helpers.positional import sinusoidal_encoding

STEM = "14_52_positional_encoding"


def data(g, name):
    """A glued list (written as its repr: glue takes scalars only)."""
    return ast.literal_eval(g[name])


def similarity_profile(d, ks):
    """PE_pos . PE_pos+k = sum_i cos(k w_i), w_i = 10000^(-2i/d): the closed form, for each k in ks."""
    omega = 10000.0 ** (-np.arange(0, d, 2) / d)
    return np.cos(np.asarray(ks, dtype=float)[:, None] * omega).sum(axis=1)


@pytest.mark.claim("block-passes", "own-passes", "float32-rounding", "takeaway-pooled")
def test_self_attention_is_permutation_equivariant_to_rounding(g):
    assert g["equivariance_error"] < 1e-6, "f(PX) = P f(X) up to float32 rounding"
    assert g["equivariance_error"] < 1e-4 * g["equivariance_output_scale"]
    assert g["own_equivariance_error"] < 1e-6, "the book's own module too"
    assert g["block_equivariance_error"] < 1e-6, "a whole encoder block is equivariant too"
    assert g["block_pooled_error"] < 1e-6, "pooled: invariant"


@pytest.mark.claim("bag-identical", "takeaway-pooled")
def test_report_and_slides_identical_without_positions_different_with(g):
    assert g["bag_token_diff"] < 1e-6 and g["bag_pooled_diff"] < 1e-6, "rounding error"
    assert g["pos_token_diff"] > 1e-2 and g["pos_pooled_diff"] > 1e-2
    assert g["pos_token_diff"] > 1e4 * g["bag_token_diff"]
    # every token changes, including "send", which sits at position 0 in both sentences
    assert g["pos_min_token_change"] > 1e-2 and g["pos_change_send"] > 1e-2
    assert g["pos_min_token_change"] <= g["pos_change_send"], "the smallest change in the table"
    # one metric (the Euclidean norm of a token's output difference): the largest change bounds every other
    assert g["pos_change_send"] <= g["pos_token_diff"] and g["pos_min_token_change"] <= g["pos_token_diff"]


@pytest.mark.claim("wavelengths", "row-norms")
def test_sinusoidal_encoding_basic_facts(g):
    """The wavelengths are read off the helper's matrix (atan2 of row 1); the formula is the oracle."""
    assert g["wavelength_min"] == pytest.approx(2 * math.pi, rel=1e-5)
    d = g["D_PE"]
    assert g["wavelength_max"] == pytest.approx(2 * math.pi * 10000 ** ((d - 2) / d), rel=1e-4)
    assert g["wavelength_ratio_error"] < 1e-4, "a geometric progression with ratio 10000^(2/d)"
    assert g["row_norm_max_dev"] < 1e-5, "every row has norm sqrt(d/2)"


@pytest.mark.claim("rotation-check", "takeaway-rotation")
def test_shift_by_k_is_a_rotation_independent_of_position(g):
    assert g["rotation_max_error"] < 1e-6
    assert g["rotation_orthogonality_error"] < 1e-6


@pytest.mark.claim("diagonals-constant", "ahead-back-equal", "takeaway-rotation")
def test_dot_product_depends_only_on_the_offset(g):
    assert g["dot_spread_max"] < 1e-4, "every diagonal of PE PE^T is constant (float32)"
    assert g["dot_closed_form_error"] < 1e-4, "and equals sum_i cos(k w_i)"
    # the shown numbers are measured on the Gram matrix; the closed form sum_i cos(k w_i), computed here, is the oracle
    d, T = g["D_PE"], g["T_PE"]
    profile = similarity_profile(d, range(T))
    assert g["dot_at_zero"] == pytest.approx(d / 2, rel=1e-5), "k = 0: the squared row norm d/2"
    assert g["dot_profile_min"] == pytest.approx(profile.min(), abs=1e-3)
    assert g["dot_profile_range"] == pytest.approx(profile.max() - profile.min(), abs=1e-3)
    assert g["dot_profile_min_closed"] == pytest.approx(profile.min(), rel=1e-9)
    assert g["dot_profile_range_closed"] == pytest.approx(profile.max() - profile.min(), rel=1e-9)
    # near positions look alike, far ones less so: every offset of 16 or more is less similar than any of
    # 4 or less (the profile is not monotone in k: see the ripples test below)
    assert profile[16:].max() < profile[1:5].min()
    assert g["dot_asymmetry"] < 1e-4, "k ahead and k back equally similar: no sense of direction"


@pytest.mark.claim("profile-ripples", "envelope-falls", "near-alike")
def test_the_similarity_profile_falls_in_envelope_and_ripples(g):
    """The shown numbers are measured (diagonal means of the Gram matrix); the closed form is the oracle."""
    d, T = g["D_PE"], g["T_PE"]
    closed = similarity_profile(d, range(T))
    measured = np.asarray(data(g, "dot_profile"))
    assert measured == pytest.approx(closed, abs=1e-3), "the glued profile is the offset profile, k = 0 .. T-1"
    steps = np.diff(closed)
    # ripples: not monotone, many steps go up
    assert g["dot_n_steps"] == T - 1
    assert g["dot_n_rises"] == int((steps > 0).sum()) and g["dot_n_rises"] > 0
    assert g["dot_first_rise_k"] == int(np.argmax(steps > 0)) + 1
    assert g["dot_largest_rise"] == pytest.approx(steps.max(), rel=1e-3) and g["dot_largest_rise"] > 0
    # the upper envelope falls: offsets 1..4 >= near_min > everything from 16 on; from 64 on lower still
    assert g["dot_near_min"] == pytest.approx(closed[1:5].min(), rel=1e-4)
    assert g["dot_envelope_16"] == pytest.approx(closed[16:].max(), rel=1e-4)
    assert g["dot_envelope_64"] == pytest.approx(closed[64:].max(), rel=1e-4)
    assert g["dot_near_min"] > g["dot_envelope_16"] > g["dot_envelope_64"]


@pytest.mark.claim("probe-128", "wider-cleaner", "takeaway-adding")
def test_adding_positions_keeps_the_token(g):
    widths = data(g, "probe_d")
    token, exact, within1, cos = (data(g, f"probe_{c}_curve") for c in ("token_acc", "pos_exact", "within1", "cos"))
    at = {name: dict(zip(widths, curve)) for name, curve in
          [("token", token), ("exact", exact), ("within1", within1), ("cos", cos)]}
    # the values the prose shows, read off the table
    assert g["probe_token_acc_128"] == pytest.approx(at["token"][128], rel=1e-9)
    assert g["probe_pos_within1_128"] == pytest.approx(at["within1"][128], rel=1e-9)
    assert g["probe_pos_exact_128"] == pytest.approx(at["exact"][128], rel=1e-9)
    assert g["probe_cos_128"] == pytest.approx(at["cos"][128], rel=1e-9)
    assert g["probe_within1_32"] == pytest.approx(at["within1"][32], rel=1e-9)
    assert g["probe_within1_256"] == pytest.approx(at["within1"][256], rel=1e-9)
    assert g["probe_cos_32"] == pytest.approx(at["cos"][32], rel=1e-9)
    assert g["probe_cos_256"] == pytest.approx(at["cos"][256], rel=1e-9)
    assert g["probe_token_acc_min"] == pytest.approx(min(token), rel=1e-9)
    # at d = 128 both are read back: the position exactly "against a chance rate of ..."
    assert g["probe_pos_exact_128"] > g["probe_chance"], "exactly in ..., against a chance rate of ..."
    assert g["probe_pos_exact_128"] < g["probe_pos_within1_128"] <= 1, "exact is stricter than within one"
    # the wider the model, the more orthogonal and the cleaner the decoding: both trends at every step
    assert all(b > a for a, b in zip(within1, within1[1:])), "within one step: strictly up at every width"
    assert all(b < a for a, b in zip(cos, cos[1:])), "mean |cos|: strictly down at every width"
    # oracle: a Gaussian vector against a fixed one has mean |cos| = sqrt(2 / (pi d)) (to leading order)
    for d in (32, 128, 256):
        assert g[f"probe_cos_{d}"] == pytest.approx(math.sqrt(2 / (math.pi * d)), rel=0.15)


@pytest.fixture(scope="module")
def shift_fit_conditions():
    """cond(A) for A = PE[0 : T - 7] at d = 16: T = 5000 from the definition (numpy), T = 128 from the helper
    (float64) as the notebook computes it (that one sits at the rounding level, 1e15, where only the same
    arithmetic reproduces it)."""
    d, k = 16, 7
    omega = 10000.0 ** (-np.arange(0, d, 2) / d)
    pos = np.arange(5000)[:, None] * omega
    pe = np.empty((5000, d))
    pe[:, 0::2], pe[:, 1::2] = np.sin(pos), np.cos(pos)
    short = sinusoidal_encoding(128, d, dtype=torch.float64)[:-k]
    mid = sinusoidal_encoding(256, d, dtype=torch.float64)
    M_mid = torch.linalg.lstsq(mid[:-k], mid[k:]).solution.T   # as the notebook fits it
    R = torch.zeros(d, d, dtype=torch.float64)                  # R(7) from the definition
    c, s = torch.cos(k * torch.tensor(omega)), torch.sin(k * torch.tensor(omega))
    R[0::2, 0::2], R[0::2, 1::2], R[1::2, 0::2], R[1::2, 1::2] = torch.diag(c), torch.diag(s), torch.diag(-s), torch.diag(c)
    return {"long": float(np.linalg.cond(pe[:-k])), "short": torch.linalg.cond(short).item(),
            "smin_short": torch.linalg.svdvals(short)[-1].item(), "vs_formula_mid": (M_mid - R).abs().max().item()}


@pytest.mark.claim("ex1-same-matrix", "ex1-prompt", "ex1-long", "ex1-cond")
def test_exercise_1_least_squares_recovers_the_rotation_only_from_enough_positions(g, shift_fit_conditions):
    assert g["lstsq_residual_long"] < 1e-9 and g["lstsq_residual_short"] < 1e-9, "both fit (float64 rounding; the thread count moves it between 1e-13 and 4e-11)"
    assert g["lstsq_vs_formula_long"] < 1e-11, "T = 5000: M = R(7)"
    assert g["lstsq_vs_formula_short"] > 1e6 * g["lstsq_vs_formula_long"], "T = 128: fits equally well, but is not R(7)"
    assert g["lstsq_cond_long"] == pytest.approx(shift_fit_conditions["long"], rel=1e-6)
    assert g["lstsq_cond_short"] == pytest.approx(shift_fit_conditions["short"], rel=1e-6)
    assert g["lstsq_cond_short"] > 1e6 * g["lstsq_cond_long"], "the condition number jumps"
    assert (g["EX1_T_LONG"], g["EX1_T_MID"], g["EX1_T_SHORT"]) == (5000, 256, 128), "the fixture's lengths"
    # the smallest singular value at T = 128 is at float64 rounding level
    assert g["lstsq_smin_short"] == pytest.approx(shift_fit_conditions["smin_short"], rel=1e-2)
    assert g["lstsq_smin_short"] < 1e-12


@pytest.mark.claim("ex1-between")
def test_exercise_1_the_error_shrinks_between_the_two_lengths(g, shift_fit_conditions):
    assert g["lstsq_vs_formula_256"] == pytest.approx(shift_fit_conditions["vs_formula_mid"], rel=0.25)  # rounding-level: the thread count moved it by 13 %
    assert g["lstsq_vs_formula_long"] < g["lstsq_vs_formula_256"] < 1e-3 * g["lstsq_vs_formula_short"]


@pytest.mark.claim("closest-neighbours")
def test_exercise_2_and_3_distances(g):
    assert g["distance_formula_error"] < 1e-10
    assert g["min_distance_all"] == pytest.approx(g["min_distance_by_offset"], abs=1e-9), "brute force = formula"
    assert g["min_distance_offset"] == 1, "the closest distinct positions are neighbours"
    # the oracle: |PE_pos - PE_pos+k| = sqrt(d - 2 sum_i cos(k w_i)), from the definition
    d, ks = g["D_PE"], np.arange(1, 2000)
    distance = np.sqrt(np.clip(d - 2 * similarity_profile(d, ks), 0, None))
    assert distance.argmin() == 0 and g["min_distance_all"] == pytest.approx(distance[0], rel=1e-9)
    assert g["min_distance_far"] == pytest.approx(distance[ks >= 10].min(), rel=1e-9)
    assert g["min_distance_far"] > g["min_distance_all"]


@pytest.mark.claim("causal-sees-order")
def test_exercise_4_causal_mask_breaks_equivariance(g):
    assert g["causal_diff"] > 1e-2
    assert g["causal_diff"] > 1e4 * g["equivariance_error"]


@functools.lru_cache(maxsize=4)
def scale_probe(seed, n_vocab=500, t_probe=64, d=128):
    """The notebook's read-out at width d, one N(0, 1) draw rescaled: {key: (|PE|/|E|, token acc, within 1, std)}."""
    pe = sinusoidal_encoding(t_probe, d)
    out = {}
    for key, std in {"unit": 1.0, "inv_sqrt_d": 1 / np.sqrt(d), "small": 0.02, "small_sqrt_d": 0.02 * np.sqrt(d)}.items():
        E = torch.randn(n_vocab, d, generator=torch.Generator().manual_seed(seed)) * std
        x = E[:, None, :] + pe[None]
        token = ((x @ E.T).argmax(dim=-1) == torch.arange(n_vocab)[:, None]).float().mean().item()
        pos_hat = torch.cdist(x.reshape(-1, d), pe).argmin(dim=-1).reshape(n_vocab, t_probe)
        within1 = ((pos_hat - torch.arange(t_probe)).abs() <= 1).float().mean().item()
        out[key] = ((pe.norm(dim=1).mean() / E.norm(dim=1).mean()).item(), token, within1, std)
    return out


@pytest.mark.claim("scale-ratio", "scale-small-drowns", "scale-unit-holds")
def test_the_embedding_scale_decides_which_message_dominates(g):
    assert g["D_SCALE"] == 128 and g["token_chance"] == pytest.approx(1 / 500)
    recomputed = scale_probe(int(g["scale_seed"]))
    for key, (ratio, token, within1, std) in recomputed.items():
        # the glued table is the read-out (recomputed here from the same draw) ...
        assert g[f"scale_ratio_{key}"] == pytest.approx(ratio, rel=1e-4)
        assert g[f"scale_token_{key}"] == pytest.approx(token, abs=1e-3)
        assert g[f"scale_within1_{key}"] == pytest.approx(within1, abs=1e-3)
        # ... and the ratio follows |PE| / |E| = sqrt(d/2) / (std sqrt(d)) = 1 / (std sqrt 2)
        assert g[f"scale_ratio_{key}"] == pytest.approx(1 / (std * math.sqrt(2)), rel=0.03)
    # small unscaled embeddings: the position still reads back, the token falls to near chance
    assert g["scale_within1_small"] > 0.99, "the position is still read back"
    assert g["scale_token_small"] < 5 * g["token_chance"], "falls to ..., near the chance rate of ..."
    assert g["scale_token_unit"] == 1.0, "at this section's scale the token reads back from every pair"
