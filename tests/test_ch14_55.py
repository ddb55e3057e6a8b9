"""§14.55: the claims its prose makes, asserted on the values its notebook glued.

Operation counts and peak memory are deterministic and tested tightly. Wall times depend on the
machine and its load: the notebook prints them and no test reads them (speed is measured in
benchmarks/, not asserted).
"""

import pytest

STEM = "14_55_cost_of_attention"


def test_flop_formulas_match_the_counter_everywhere(g):
    assert g["flop_formula_ok"] is True
    assert g["flop_ratio_error"] < 1e-12, "ratio is exactly (2 + T/d) / 3"


def test_flop_crossover_is_exactly_T_equals_d(g):
    assert g["flop_ratio_square"] == 1.0
    T, d = g["T_max"], g["d_min"]
    assert g["flop_ratio_long"] == pytest.approx((2 + T / d) / 3)
    assert g["flop_ratio_long"] > 10, "long sequence, narrow model: attention needs far more operations"
    assert g["flop_ratio_short"] == pytest.approx((2 + g["T_min"] / g["d_max"]) / 3) and g["flop_ratio_short"] < 1
    # T < d in 3 of the 12 cells of the 4 x 3 grid
    assert g["flop_share_attention_cheaper"] == pytest.approx(3 / g["n_cells"])


def test_attention_memory_is_two_score_matrices_at_long_T(g):
    """'{scores} MiB ... twice over while the masked scores and the softmax weights are both alive'."""
    assert 2 * g["scores_MiB"] < g["mem_attention_long_MiB"] < 2.2 * g["scores_MiB"]
    assert g["mem_ratio_long"] == pytest.approx(g["mem_attention_long_MiB"] / g["mem_gru_long_MiB"])
    # the GRU holds its output and the three input projections, 4 B T d float32 numbers, and little else
    B, T, d = g["batch"], g["T_max"], g["d_min"]
    gru_floor_MiB = 4 * B * T * d * 4 / 2**20
    assert gru_floor_MiB <= g["mem_gru_long_MiB"] < 1.3 * gru_floor_MiB
    assert 20 < g["mem_ratio_long"] < 35


def test_memory_never_crosses(g):
    """'attention needs at least as much as the GRU in every cell' -- no memory crossover."""
    assert g["n_mem_cells_attention_below"] == 0
    assert 0.999 <= g["mem_ratio_min"] < 1.05, "smallest ratio: about the same memory, never less"
    assert g["mem_ratio_min"] == g["mem_ratio_short"]
    assert (g["mem_ratio_min_T"], g["mem_ratio_min_d"]) == (g["T_min"], g["d_max"]), "smallest where T << d"
    assert 1.1 < g["mem_ratio_diag_lo"] <= g["mem_ratio_diag_hi"] < 1.3, "on T = d: somewhat more"
    assert g["mem_ratio_diag_hi"] / g["mem_ratio_diag_lo"] < 1.03
    assert 0.006 < g["mem_ratio_same_Td_spread"] < 0.017, "the ratio depends on T/d alone (to about 1 %)"
    assert g["mem_ratio_long"] > 10 * g["mem_ratio_diag_hi"], "grows with T/d beyond the diagonal"


def test_flop_growth_quadratic_versus_linear(g):
    T0, T1, d = g["T_min"], g["T_max"], g["d_min"]
    expected = (8 * T1 * d * d + 4 * T1**2 * d) / (8 * T0 * d * d + 4 * T0**2 * d)
    assert g["attention_flop_growth"] == pytest.approx(expected)
    assert g["gru_flop_growth"] == pytest.approx(T1 / T0)
    assert g["attention_flop_growth"] > 10 * g["gru_flop_growth"]


def test_sequential_depth(g):
    assert g["attn_calls_short"] == g["attn_calls_long"] == 6, "attention: a constant number of products"
    assert g["gru_calls_long"] == g["depth_T_long"] + 1, "GRU: one input projection plus one product per step"
    assert g["gru_calls_short"] == 17


def test_machine_is_read_from_torch(g):
    import re

    assert re.fullmatch(r"a CPU, \d+ threads?", g["machine"])


def test_exercise_solutions(g):
    assert g["lstm_flops_ok"] is True
    assert g["lstm_crossover_ratio"] == 1.0, "attention and LSTM cost the same at T = 2d"
    assert g["heads_flops_equal"] is True
    assert 2.5 < g["heads_memory_ratio"] < 4.5, "four heads: several times the memory of one"
    assert g["loop_flops_ok"] is True
    assert g["loop_calls_per_step"] == 2
