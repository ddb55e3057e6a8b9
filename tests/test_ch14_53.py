"""§14.53: the claims its prose makes, asserted on the values its notebook glued."""

import pytest

STEM = "14_53_relative_and_rotary_positions"
SCHEMES_THAT_RUN_LONG = ("none", "sinusoidal", "rope", "alibi")


def test_learned_table_has_a_hard_edge_and_unseen_rows_get_no_gradient(g):
    assert g["learned_table_overflow"] is True, "position T_max has no row: IndexError"
    assert g["learned_table_params"] == g["T_TABLE"] * 32
    assert g["learned_seen_grad_min"] > 0, "every row the batch touched gets a gradient"
    assert g["learned_unseen_grad_max"] == 0.0, "rows beyond the training length get exactly none"


def test_rope_identities_hold_to_float64_rounding(g):
    assert g["rope_composition_error"] < 1e-12
    assert g["rope_complex_error"] < 1e-12


def test_rope_score_depends_only_on_the_offset(g):
    assert g["rope_max_position"] >= 5000
    assert g["rope_max_deviation"] < 2e-5, "float32 rounding only, across absolute positions 0..5000"
    assert g["rope_score_range"] > 1e5 * g["rope_max_deviation"], "while the score itself varies with the offset"
    assert g["additive_max_deviation"] > 1.0, "added sinusoids: the score depends on absolute position"
    assert g["additive_max_deviation"] > 1e5 * g["rope_max_deviation"]
    assert g["rope_norm_rel_error"] < 1e-6, "rotations preserve norms"


def test_alibi_heads_are_windows_of_increasing_width(g):
    assert g["alibi_head1_penalty_15"] == pytest.approx(-7.5)
    assert g["alibi_head8_penalty_15"] == pytest.approx(-15 / 256)
    assert g["alibi_mean_distance_increasing"] is True
    assert g["alibi_mean_distance_first"] < 2
    assert 0.8 * g["alibi_uniform_mean_distance"] < g["alibi_mean_distance_last"] < g["alibi_uniform_mean_distance"]


def test_experiment_attention_is_the_books_attention(g):
    assert g["attention_check_error"] < 1e-6
    assert (g["T_TRAIN"], g["T_EVAL"]) == (32, 128)


def test_learned_positions_cannot_run_past_the_training_length(g):
    assert g["learned_runs_long"] is False
    assert 0 < g["loss_trained_learned"] < 3.0, "but it did learn within the training length"
    assert "loss_far_learned" not in g


def test_all_models_learned_something_within_the_training_length(g):
    # a uniform guess over ~65 characters costs ln 65 = 4.17 nats
    for s in SCHEMES_THAT_RUN_LONG + ("learned",):
        assert g[f"loss_trained_{s}"] < 2.6, s


def test_rope_fits_the_training_length_best(g):
    assert g["best_trained_scheme"] == "RoPE"
    for s in ("none", "sinusoidal", "learned", "alibi"):
        assert g["loss_trained_rope"] < g[f"loss_trained_{s}"], s


def test_alibi_extrapolates_best(g):
    assert g["smallest_change_scheme"] == "ALiBi" and g["best_far_scheme"] == "ALiBi"
    assert abs(g["change_alibi"]) < 0.1, "ALiBi stays flat past the training length"
    for s in ("none", "sinusoidal", "rope"):
        assert g["loss_far_alibi"] < g[f"loss_far_{s}"], s


def test_sinusoidal_and_rope_degrade_and_more_than_no_positions(g):
    assert g["change_sinusoidal"] > 0.3 and g["change_rope"] > 0.3
    assert g["change_sinusoidal"] > 5 * abs(g["change_alibi"])
    assert g["change_rope"] > 5 * abs(g["change_alibi"])
    assert g["change_rope"] > g["change_sinusoidal"], "RoPE degrades even more than sinusoidal"
    assert g["change_none"] < 0.2
    assert g["change_none"] < g["change_sinusoidal"] / 2 and g["change_none"] < g["change_rope"] / 2


def test_exercise_1_complex_formula(g):
    assert g["ex1_formula_error"] < 1e-10


def test_exercise_2_split_halves_is_a_permuted_interleaved_rope(g):
    assert g["ex2_permutation_error"] < 1e-12
    assert g["ex2_relative_spread"] < 1e-9


def test_exercise_3_mean_attended_distance(g):
    assert g["ex3_finite_error"] < 1e-4
    assert g["ex3_infinite_head1"] == pytest.approx(g["alibi_mean_distance_first"], abs=1e-3)
    assert g["ex3_infinite_head8"] > 3 * g["alibi_mean_distance_last"], "the T -> infinity formula overshoots"


def test_exercise_4_rope_fails_on_unseen_offsets(g):
    assert g["ex4_rope_shift_change"] < 1e-4, "RoPE model is invariant to shifting all positions"
    assert g["ex4_sinusoidal_shift_change"] > 1.0, "the sinusoidal model is not"
    assert g["ex4_sinusoidal_shift_change"] > 1e4 * g["ex4_rope_shift_change"]
    assert g["ex4_window_loss_far"] < g["loss_far_rope"] - 0.3, "a 32-key window repairs RoPE"
    assert abs(g["ex4_window_gap"]) < 0.1, "to within a little of its loss on the trained positions"
    assert g["ex4_window_loss_trained"] == pytest.approx(g["loss_trained_rope"], abs=1e-6), \
        "the window changes nothing at positions < 32"


def test_each_change_is_the_far_loss_minus_the_trained_loss(g):
    # the prose: "the loss over positions 64-127 is <change> nats worse than over the trained positions"
    for s in SCHEMES_THAT_RUN_LONG:
        assert g[f"change_{s}"] == pytest.approx(g[f"loss_far_{s}"] - g[f"loss_trained_{s}"], abs=1e-5), s
    # Exercise 4 (b): the windowed far loss sits <gap> above RoPE's loss on the trained positions
    assert g["ex4_window_gap"] == pytest.approx(g["ex4_window_loss_far"] - g["loss_trained_rope"], abs=1e-5)


def test_rope_positions_span_what_the_prose_says(g):
    # "absolute positions n from 0 to 5000", the query Delta = 0..63 steps later
    assert g["rope_max_position"] == 5000 + 63


def test_alibi_uniform_distance_and_infinite_window_closed_forms(g):
    import math

    # a uniform average over T_WINDOW keys at distances 0..T-1 has mean (T - 1) / 2
    assert g["alibi_uniform_mean_distance"] == pytest.approx((g["T_WINDOW"] - 1) / 2)
    # T -> infinity: r / (1 - r) = 1 / (e^m - 1) with slopes m_1 = 1/2 and m_8 = 1/256 (H = 8)
    assert g["ex3_infinite_head1"] == pytest.approx(1 / math.expm1(1 / 2), rel=1e-6)
    assert g["ex3_infinite_head8"] == pytest.approx(1 / math.expm1(1 / 256), rel=1e-6)


def test_seen_row_gradients_have_the_size_the_set_up_implies(g):
    import math

    # loss = mean over B x T x d = 8 x 32 x 32 elements of (token + E[p])^2, tokens and rows N(0, 1):
    # dL/dE[p] = 2/(B T d) * sum_b (token[b, p] + E[p]), each coordinate N(0, B + B^2) = N(0, 72),
    # so a row's norm is 2 sqrt(72) chi_32 / 8192, typically 2 sqrt(72 * 31.5) / 8192 = 0.0116.
    # The smallest of 32 such rows lies below that typical size (all 32 above it: p ~ 2^-32) and
    # above half of it (chi^2_32 < 8: p ~ 1e-5 per row).
    B, T, d = 8, g["T_TABLE"], g["learned_table_params"] // g["T_TABLE"]
    typical = 2 * math.sqrt((B + B**2) * (d - 0.5)) / (B * T * d)
    assert 0.5 * typical < g["learned_seen_grad_min"] < typical
