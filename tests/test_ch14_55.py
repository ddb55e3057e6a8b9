"""§14.55: the claims its prose makes, asserted on the values its notebook glued.

Operation counts and memory are deterministic and tested tightly; wall times vary with the
machine and its load, so only claims with wide margins are tested on them.
"""

import pytest

STEM = "14_55_cost_of_attention"


def test_flop_formulas_match_the_counter_everywhere(g):
    assert g["flop_formula_ok"] is True
    assert g["n_cells"] == 12
    assert g["flop_ratio_error"] < 1e-12, "ratio is exactly (2 + T/d) / 3"


def test_flop_crossover_is_exactly_T_equals_d(g):
    assert g["flop_ratio_square"] == 1.0
    T, d = g["T_max"], g["d_min"]
    assert g["flop_ratio_long"] == pytest.approx((2 + T / d) / 3)
    assert g["flop_ratio_long"] > 10, "long sequence, narrow model: attention needs far more operations"
    assert g["flop_ratio_short"] == pytest.approx((2 + g["T_min"] / g["d_max"]) / 3) and g["flop_ratio_short"] < 1
    assert g["flop_share_attention_cheaper"] == pytest.approx(3 / 12), "T < d in 3 of the 12 cells"


def test_attention_memory_is_dominated_by_the_scores_at_long_T(g):
    assert g["scores_MiB"] == g["batch"] * g["T_max"] ** 2 * 4 / 2**20
    assert g["mem_attention_long_MiB"] > g["scores_MiB"], "scores plus the masked copy and softmax"
    assert g["mem_attention_long_MiB"] < 4 * g["scores_MiB"]
    assert g["mem_ratio_long"] > 10
    assert g["mem_ratio_long"] == pytest.approx(g["mem_attention_long_MiB"] / g["mem_gru_long_MiB"])


def test_memory_crosses_near_T_equals_d(g):
    assert g["mem_ratio_short"] < 1.3, "T << d: about the same memory"
    # the first T at which attention needs more memory is never far beyond T = d
    for d in (16, 64, 256):
        cross = g[f"mem_cross_d{d}"]
        assert cross.startswith("T = ")
        assert int(cross.split("= ")[1]) <= d


def test_wall_time_claims_with_wide_margins(g):
    assert g["attention_time_growth"] > 10, "64x longer sequences: attention much slower"
    assert g["gru_time_growth"] > 5
    assert g["time_share_attention_faster"] > g["flop_share_attention_cheaper"], \
        "attention wins on time in more cells than it wins on operations"
    for d in (16, 64, 256):
        assert g[f"time_cross_d{d}"] == "no T in the grid" or g[f"time_cross_d{d}"].startswith("T = ")


def test_flop_growth_quadratic_versus_linear(g):
    T0, T1, d = g["T_min"], g["T_max"], g["d_min"]
    assert g["T_growth"] == T1 // T0
    expected = (8 * T1 * d * d + 4 * T1**2 * d) / (8 * T0 * d * d + 4 * T0**2 * d)
    assert g["attention_flop_growth"] == pytest.approx(expected)
    assert g["gru_flop_growth"] == pytest.approx(T1 / T0)


def test_sequential_depth(g):
    assert g["attn_calls_short"] == g["attn_calls_long"] == 6, "attention: a constant number of products"
    assert g["gru_calls_long"] == g["depth_T_long"] + 1, "GRU: one input projection plus one product per step"
    assert g["gru_calls_short"] == 17


def test_exercise_solutions(g):
    assert g["lstm_flops_ok"] is True
    assert g["lstm_crossover_ratio"] == 1.0, "attention and LSTM cost the same at T = 2d"
    assert g["heads_flops_equal"] is True
    assert 2 < g["heads_memory_ratio"] < 4.5, "four heads: several times the memory of one"
    assert g["loop_flops_ok"] is True
    assert g["loop_calls_per_step"] == 2
