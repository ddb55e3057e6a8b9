"""§14.48: the claims its prose makes, asserted on the values its notebook glued."""

import math

import pytest


STEM = "14_48_encoder_decoder_bottleneck"
LENGTHS = [4, 8, 16, 32]


def test_parameter_count_matches_the_derived_formula(g):
    assert g["n_params"] == g["n_params_formula"]


def test_copy_accuracy_falls_with_length_through_a_fixed_vector(g):
    accs = [g[f"copy_acc_{T}"] for T in LENGTHS]
    assert all(a > b for a, b in zip(accs, accs[1:])), "strictly falling with every doubling"
    assert accs[0] > 0.9, "short sequences are copied almost perfectly"
    assert accs[-1] < 0.6, "the longest is far from a copy"
    assert accs[-1] > 1.5 * g["chance"], "... but still above chance"
    assert accs[0] - accs[-1] > 0.35


def test_untrained_encoder_washes_out_early_tokens_and_training_reverses_it(g):
    assert g["sens_untrained_ratio"] > 50, "last token moves c far more than the first"
    assert g["sens_untrained_last"] > 50 * g["sens_untrained_first"]
    assert g["sens_trained_first"] > 2 * g["sens_trained_last"], "trained encoder protects x_1"


def test_copy_loses_the_late_tokens(g):
    assert g["copy16_first"] > g["copy16_last"] + 0.15
    assert g["copy16_first_quarter"] > g["copy16_second_half"] + 0.15


def test_reversal_loses_the_early_tokens(g):
    assert g["rev16_first_source"] < g["rev16_last_source"] - 0.15, "earliest source token worst"
    assert g["rev16_first_quarter"] < g["rev16_last_quarter"] - 0.15


def test_first_output_gap_is_within_about_two_standard_errors(g):
    # the prose: a gap of the size of its own binomial standard error, from one run, says nothing
    gap = 100 * abs(g["copy16_first"] - g["rev16_last_source"])
    assert g["first_output_gap_pp"] == pytest.approx(gap, rel=1e-4)
    p, q, n = g["copy16_first"], g["rev16_last_source"], g["n_test"]
    assert g["first_output_gap_se_pp"] == pytest.approx(100 * math.sqrt(p * (1 - p) / n + q * (1 - q) / n), rel=1e-4)
    assert g["first_output_gap_pp"] < 2.5 * g["first_output_gap_se_pp"]
    assert g["copy16_first"] > g["copy16_second_half"] and g["rev16_last_source"] > g["rev16_first_quarter"]


def test_neither_task_is_close_to_a_copy(g):
    assert g["copy16_mean"] < 0.7 and g["rev16_mean"] < 0.7


def test_exercise_solutions(g):
    assert g["d_hidden_wide"] == 2 * g["d_hidden"]
    assert g["copy_acc_16"] < g["copy16_acc_wide"] < 0.95, "wider helps, but does not solve T = 16"
    assert g["bits_per_token"] == 3 and g["bits_context"] == 1024
    assert g["bits_longest"] < g["bits_context"] / 5, "failures happen far inside the storage limit"
    assert g["storage_margin"] > 5


def test_chance_and_storage_figures_follow_from_the_settings(g):
    # closed forms: chance is one token in V; a token carries log2 V bits; float32 c holds 32 d_h bits
    assert g["chance"] == pytest.approx(1 / g["vocab"])
    assert g["bits_per_token"] == pytest.approx(math.log2(g["vocab"]))
    assert g["bits_longest"] == pytest.approx(g["len_max"] * math.log2(g["vocab"]))
    assert g["bits_context"] == 32 * g["d_hidden"]
    assert g["t_storage_limit"] == pytest.approx(32 * g["d_hidden"] / math.log2(g["vocab"]))
    # "more than <margin> times the longest source tried"
    assert g["storage_margin"] == pytest.approx(g["t_storage_limit"] / g["len_max"])


def test_untrained_factor_is_the_quotient_of_the_two_shown_sensitivities(g):
    # the prose: "a factor of <ratio>" between the last-token and first-token sensitivities
    assert g["sens_untrained_ratio"] == pytest.approx(g["sens_untrained_last"] / g["sens_untrained_first"], rel=1e-3)


def test_copy_profile_falls_along_the_output(g):
    # the T = t_probe copy model scored by position and overall is the same measurement
    assert g["copy16_mean"] == pytest.approx(g["copy_acc_16"], abs=1e-5)
    # "the first tokens are the best preserved": no quarter/half of the output beats output step 1 ...
    assert g["copy16_first_quarter"] <= g["copy16_first"]
    first_half = 2 * g["copy16_mean"] - g["copy16_second_half"]
    assert first_half <= g["copy16_first"]
    # ... and accuracy falls along the output: the first half is at least as good as the second
    assert g["copy16_second_half"] <= first_half


def test_reversal_mirrors_the_copy_profile(g):
    # "same architecture, same kind of c, opposite profile": a source token is scored by the output
    # step that produces it. Reversal's x_1 is output last, like copy's x_T; reversal's last quarter
    # of the source is output first, like copy's first quarter. Within 3 binomial standard errors.
    n = g["n_test"]

    def close(p, q):
        return abs(p - q) < 3 * math.sqrt(p * (1 - p) / n + q * (1 - q) / n)

    assert close(g["rev16_first_source"], g["copy16_last"])
    assert close(g["rev16_last_quarter"], g["copy16_first_quarter"])
    # the earliest quarter is the worst and the middle half lies between the two end quarters
    middle = (16 * g["rev16_mean"] - 4 * g["rev16_first_quarter"] - 4 * g["rev16_last_quarter"]) / 8
    assert g["t_probe"] == 16
    assert g["rev16_first_quarter"] <= middle <= g["rev16_last_quarter"]


def test_wider_bottleneck_does_not_remove_the_fall(g):
    # "helps but does not remove the fall": the wide model at T = t_probe stays nearer the narrow
    # model's score at that length than the near-perfect score at the shortest length
    assert g["copy16_acc_wide"] < (g["copy_acc_4"] + g["copy_acc_16"]) / 2
