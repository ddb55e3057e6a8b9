"""§14.55: the claims its prose makes, asserted on the values its notebook glued.

Operation counts and peak memory are deterministic and tested tightly. Wall times depend on the
machine and its load: the notebook prints them and no test reads them (speed is measured in
benchmarks/, not asserted).

Each verdict sentence of the notebook is marked ``<!-- claim: id -->`` and asserted here by the tests that
carry its id, from the grid the notebook glued (``cost_table``: layer, T, d, counted FLOPs, peak MiB per
cell) and the formulas, never from a boolean the notebook decided.
"""

import ast
from collections import defaultdict

import numpy as np
import pytest

STEM = "14_55_cost_of_attention"


def data(g, name):
    """A glued list (written as its repr: glue takes scalars only)."""
    return ast.literal_eval(g[name])


@pytest.fixture
def grid(g):
    """cost_table as {(T, d): {"attention": (flops, MiB), "GRU": (flops, MiB)}}."""
    cells = defaultdict(dict)
    for layer, T, d, flops, mib in data(g, "cost_table"):
        cells[(T, d)][layer] = (flops, mib)
    return dict(cells)


def memory_ratios(grid):
    return {cell: v["attention"][1] / v["GRU"][1] for cell, v in grid.items()}


@pytest.mark.claim("takeaway-formulas")
def test_flop_formulas_match_the_counter_everywhere(g, grid):
    assert len(grid) == g["n_cells"]
    B = g["batch"]
    for (T, d), v in grid.items():
        assert v["attention"][0] == B * (8 * T * d * d + 4 * T * T * d), (T, d)
        assert v["GRU"][0] == B * 12 * T * d * d, (T, d)
    assert g["flop_ratio_error"] < 1e-12, "ratio is exactly (2 + T/d) / 3"


@pytest.mark.claim("ops-crossover", "misconception-fewer", "wins-short")
def test_attention_needs_fewer_operations_exactly_where_T_is_below_d(grid):
    for (T, d), v in grid.items():
        attention, gru = v["attention"][0], v["GRU"][0]
        assert (attention < gru) == (T < d) and (attention == gru) == (T == d), (T, d)


@pytest.mark.claim("ops-extremes")
def test_flop_crossover_is_exactly_T_equals_d(g):
    assert g["flop_ratio_square"] == 1.0
    T, d = g["T_max"], g["d_min"]
    assert g["flop_ratio_long"] == pytest.approx((2 + T / d) / 3)
    assert g["flop_ratio_long"] > 10, "long sequence, narrow model: attention needs far more operations"
    assert g["flop_ratio_short"] == pytest.approx((2 + g["T_min"] / g["d_max"]) / 3) and g["flop_ratio_short"] < 1
    # T < d in 3 of the 12 cells of the 4 x 3 grid
    assert g["flop_share_attention_cheaper"] == pytest.approx(3 / g["n_cells"])


@pytest.mark.claim("scores-twice", "takeaway-memory")
def test_attention_memory_is_two_score_matrices_at_long_T(g, grid):
    """'{scores} MiB ... twice over while the masked scores and the softmax weights are both alive'."""
    B, T, d = g["batch"], g["T_max"], g["d_min"]
    assert g["scores_MiB"] == B * T * T * 4 / 2**20, "B float32 T x T score matrices"
    assert g["mem_attention_long_MiB"] == grid[(T, d)]["attention"][1]
    assert g["mem_gru_long_MiB"] == grid[(T, d)]["GRU"][1]
    assert 2 * g["scores_MiB"] < g["mem_attention_long_MiB"] < 2.2 * g["scores_MiB"]
    assert g["mem_ratio_long"] == pytest.approx(memory_ratios(grid)[(T, d)], rel=1e-12)
    # "grows as T^2": at width d_min, 4 x the length takes more than 8 x the memory
    assert grid[(T, d)]["attention"][1] > 8 * grid[(T // 4, d)]["attention"][1]
    # the GRU holds its output and the three input projections, 4 B T d float32 numbers, and little else
    gru_floor_MiB = 4 * B * T * d * 4 / 2**20
    assert gru_floor_MiB <= g["mem_gru_long_MiB"] < 1.3 * gru_floor_MiB


@pytest.mark.claim("memory-no-crossover", "memory-never-less", "memory-ratio-shape", "wins-short",
                   "takeaway-never-below")
def test_memory_never_crosses(g, grid):
    """'attention needs at least as much as the GRU in every cell' -- no memory crossover."""
    ratio = memory_ratios(grid)
    assert min(ratio.values()) >= 1.0, "attention never needs less"
    assert g["n_mem_cells_attention_below"] == sum(r < 1 for r in ratio.values()) == 0
    # smallest, about 1, where T << d
    smallest = min(ratio, key=ratio.get)
    assert g["mem_ratio_min"] == pytest.approx(ratio[smallest], rel=1e-12) == g["mem_ratio_short"]
    assert (g["mem_ratio_min_T"], g["mem_ratio_min_d"]) == smallest == (g["T_min"], g["d_max"])
    assert g["mem_ratio_min"] < 1.05, "about the same memory"
    # on the diagonal T = d ...
    diagonal = [r for (T, d), r in ratio.items() if T == d]
    assert g["mem_ratio_diag_lo"] == pytest.approx(min(diagonal), rel=1e-12)
    assert g["mem_ratio_diag_hi"] == pytest.approx(max(diagonal), rel=1e-12)
    # ... and growing with T/d beyond it, at every width
    for d in {d for _, d in ratio}:
        beyond = sorted((T, r) for (T, dd), r in ratio.items() if dd == d and T >= d)
        assert all(a[1] < b[1] for a, b in zip(beyond, beyond[1:])), d
    # cells with the same T/d: their ratios differ by at most mem_ratio_same_Td_spread (relative)
    by_Td = defaultdict(list)
    for (T, d), r in ratio.items():
        by_Td[T / d].append(r)
    spread = max(max(rs) / min(rs) - 1 for rs in by_Td.values() if len(rs) > 1)
    assert g["mem_ratio_same_Td_spread"] == pytest.approx(spread, rel=1e-9)
    assert g["mem_ratio_same_Td_spread"] < 0.05, "the ratio depends on T/d alone"


@pytest.mark.claim("flop-growth")
def test_flop_growth_quadratic_versus_linear(g):
    T0, T1, d = g["T_min"], g["T_max"], g["d_min"]
    expected = (8 * T1 * d * d + 4 * T1**2 * d) / (8 * T0 * d * d + 4 * T0**2 * d)
    assert g["attention_flop_growth"] == pytest.approx(expected)
    assert g["gru_flop_growth"] == pytest.approx(T1 / T0)
    assert g["attention_flop_growth"] > 10 * g["gru_flop_growth"]


@pytest.mark.claim("calls-constant", "wins-short", "takeaway-depth")
def test_sequential_depth(g):
    assert g["attn_calls_short"] == g["attn_calls_long"] == 6, "attention: a constant number of products"
    assert g["gru_calls_long"] == g["depth_T_long"] + 1, "GRU: one input projection plus one product per step"
    assert g["gru_calls_short"] == 17


def test_machine_is_read_from_torch(g):
    import re

    assert re.fullmatch(r"a CPU, \d+ threads?", g["machine"])


@pytest.mark.claim("sol1-lstm")
def test_exercise_1_lstm_flops_and_crossover(g):
    d = 16
    assert g["lstm_flops_counted"] == 16 * (2 * d) * d * d, "16 T d^2 at T = 2d"
    assert g["lstm_crossover_ratio"] == 1.0, "attention and LSTM cost the same at T = 2d"


def test_exercise_solutions(g):
    one, four = data(g, "heads_flops")
    assert one == four == 8 * 512 * 64**2 + 4 * 512**2 * 64, "the FLOPs do not depend on the heads"
    assert 1 < g["heads_memory_ratio"] < 4, "four heads: more memory, at most four times (the weights are part of it)"
    assert data(g, "loop_flops") == [[T, 4 * T * 16 * 16] for T in (32, 64)], "4 T d^2"
    assert g["loop_calls_per_step"] == 2
