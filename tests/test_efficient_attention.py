"""helpers.efficient_attention against oracles: torch's kernels, full recomputation, brute force, closed forms."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from helpers.attention import causal_mask, scaled_dot_product_attention
from helpers.efficient_attention import (
    KVCache,
    attention_mask,
    count_flops,
    count_kernel_calls,
    peak_memory_bytes,
    sliding_window_attention,
    sliding_window_mask,
    time_call,
)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _qkv(*shape, dtype=torch.float64):
    return (torch.randn(*shape, dtype=dtype) for _ in range(3))


# ------------------------------------------------------------------------- the naive formula and torch's kernel

@pytest.mark.parametrize("T", [1, 7, 64])
def test_naive_formula_equals_torch_fused_kernel(T):
    q, k, v = _qkv(2, 3, T, 16, dtype=torch.float32)
    naive, _ = scaled_dot_product_attention(q, k, v, causal_mask(T))
    fused = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(naive, fused, rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------------------- masks and windows

def test_sliding_window_mask_brute_force():
    T, w = 9, 3
    m = sliding_window_mask(T, w)
    for i in range(T):
        for j in range(T):
            assert bool(m[i, j]) == (not (i - w < j <= i))


def test_window_at_least_T_is_the_causal_mask():
    for w in (5, 6, 100):
        assert torch.equal(sliding_window_mask(5, w), causal_mask(5))


def test_attention_mask_with_offset_positions():
    # one query at position 10 against keys 6..10 with window 3 sees keys 8, 9, 10
    m = attention_mask(torch.tensor([10]), torch.arange(6, 11), window=3)
    assert m.tolist() == [[True, True, False, False, False]]


@pytest.mark.parametrize("T, w", [(1, 1), (8, 1), (8, 3), (10, 4), (16, 4), (13, 13), (13, 20), (33, 7)])
def test_banded_sliding_window_equals_masked_naive_attention(T, w):
    q, k, v = _qkv(2, 3, T, 8)
    v = torch.randn(2, 3, T, 5, dtype=torch.float64)
    ours = sliding_window_attention(q, k, v, w)
    reference, _ = scaled_dot_product_attention(q, k, v, sliding_window_mask(T, w))
    assert ours.shape == (2, 3, T, 5)
    torch.testing.assert_close(ours, reference, rtol=0, atol=1e-12)


@pytest.mark.parametrize("T", [5, 12])
def test_window_at_least_T_equals_full_causal_attention(T):
    q, k, v = _qkv(4, T, 6)
    full = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    for w in (T, T + 3):
        torch.testing.assert_close(sliding_window_attention(q, k, v, w), full, rtol=0, atol=1e-12)


def test_window_one_returns_the_values():
    q, k, v = _qkv(3, 10, 4)
    torch.testing.assert_close(sliding_window_attention(q, k, v, 1), v, rtol=0, atol=1e-12)


def test_banded_cost_is_linear_in_T():
    w, d = 16, 8
    flops = [count_flops(lambda T=T: sliding_window_attention(*_qkv(1, T, d, dtype=torch.float32), w))
             for T in (64, 128, 256)]
    assert flops == [8 * T * w * d for T in (64, 128, 256)], "two (w, 2w) products per block of w queries"


def test_sliding_window_errors():
    q, k, v = _qkv(2, 5, 4)
    with pytest.raises(ValueError, match="window"):
        sliding_window_attention(q, k, v, 0)
    with pytest.raises(ValueError, match="q and k"):
        sliding_window_attention(q, k[:, :3], v, 2)
    with pytest.raises(ValueError, match="v must"):
        sliding_window_attention(q, k, v[:, :3], 2)
    with pytest.raises(ValueError, match="T must"):
        sliding_window_mask(0, 2)


# ------------------------------------------------------------------------------------------- measuring cost

def test_count_flops_matches_the_closed_form():
    a, b = torch.randn(6, 5), torch.randn(5, 7)
    assert count_flops(lambda: a @ b) == 2 * 6 * 5 * 7
    gru, x = nn.GRU(8, 8, batch_first=True), torch.randn(2, 10, 8)
    with torch.no_grad():
        assert count_flops(lambda: gru(x)) == 2 * 12 * 10 * 8 * 8  # 3 gates x (input + recurrent) per step
        assert count_flops(lambda: nn.LSTM(8, 8, batch_first=True)(x)) == 2 * 16 * 10 * 8 * 8  # 4 gates


def test_peak_memory_counts_a_known_allocation():
    n = 1 << 20
    assert peak_memory_bytes(lambda: torch.empty(n, dtype=torch.float32)) == 4 * n
    # two temporaries alive together, then one freed before the third is made
    def f():
        a = torch.ones(n)
        b = a + 1
        del a
        return b * 2
    assert 2 * 4 * n <= peak_memory_bytes(f) < 2 * 4 * n + 64  # (+ a few bytes for the scalars 1 and 2)


def test_peak_memory_of_naive_attention_holds_the_T_by_T_scores():
    T, d = 256, 16
    q, k, v = _qkv(1, T, d, dtype=torch.float32)
    naive = peak_memory_bytes(lambda: scaled_dot_product_attention(q, k, v))
    assert naive >= 2 * 4 * T * T, "scores and their softmax are both T x T"
    with pytest.raises(ValueError, match="fn"):
        peak_memory_bytes(3)


def test_kernel_calls_of_a_recurrence_grow_with_T():
    gru = nn.GRU(4, 4, batch_first=True)
    with torch.no_grad():
        calls = [count_kernel_calls(lambda T=T: gru(torch.randn(1, T, 4))) for T in (5, 10)]
    steps = [c["addmm"] for c in calls]
    assert steps[1] - steps[0] == 5, "one recurrent product per time step"


def test_time_call_is_positive_and_checks_arguments():
    calls = []
    assert time_call(lambda: calls.append(1), repeats=3, warmup=2) > 0
    assert len(calls) == 5
    assert time_call(lambda: torch.ones(10), statistic="median") > 0
    with pytest.raises(ValueError, match="repeats"):
        time_call(lambda: None, repeats=0)
    with pytest.raises(ValueError, match="statistic"):
        time_call(lambda: None, statistic="mean")


# ------------------------------------------------------------------------------------------------ KV cache
# The cache is exercised through the book's GPT (helpers.gpt), the model it serves.

def _model():
    from helpers.gpt import GPT, GPTConfig

    torch.manual_seed(1)
    return GPT(GPTConfig(vocab_size=11, d_model=16, n_heads=2, n_layers=2, block_size=40)).eval().double()


@pytest.mark.parametrize("kernel", ["naive", "fused"])
def test_cached_forward_gives_the_same_logits_as_full_recomputation(kernel):
    model = _model().set_attention(kernel)
    idx = torch.randint(0, 11, (3, 20))
    with torch.no_grad():
        full = model(idx)[0]
        cache = model.new_cache()
        pieces = [model(idx[:, :7], cache=cache)[0], *(model(idx[:, t:t + 1], cache=cache)[0] for t in range(7, 20))]
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, rtol=0, atol=1e-10)
    assert len(cache) == 20 and cache.position == 20
    assert cache.nbytes() == 2 * 2 * 3 * 20 * 16 * 8  # K and V, 2 layers, B=3, t=20, d=16, float64


@pytest.mark.parametrize("window", [None, 5])
def test_cached_greedy_decoding_gives_identical_tokens_and_logits(window):
    model = _model().set_attention("fused", window)
    prompt = torch.randint(0, 11, (2, 4))
    tok_c, log_c = model.generate(prompt, 30, temperature=0, use_cache=True, return_logits=True)
    tok_f, log_f = model.generate(prompt, 30, temperature=0, use_cache=False, return_logits=True)
    assert torch.equal(tok_c, tok_f) and tok_c.shape == (2, 34)
    torch.testing.assert_close(log_c, log_f, rtol=0, atol=1e-10)


def test_windowed_cache_stops_growing():
    model = _model().set_attention("naive", 6)
    cache = model.new_cache()
    with torch.no_grad():
        model(torch.randint(0, 11, (1, 10)), cache=cache)
        for _ in range(5):
            model(torch.randint(0, 11, (1, 1)), cache=cache)
    assert len(cache) == 6 and cache.position == 15


def test_model_kernels_agree_and_window_T_is_full():
    model = _model()
    idx = torch.randint(0, 11, (2, 25))
    with torch.no_grad():
        fused = model.set_attention("fused")(idx)[0]
        naive = model.set_attention("naive")(idx)[0]
        banded = model.set_attention("banded", 25)(idx)[0]
        windowed_naive = model.set_attention("naive", 6)(idx)[0]
        windowed_banded = model.set_attention("banded", 6)(idx)[0]
    torch.testing.assert_close(naive, fused, rtol=0, atol=1e-10)
    torch.testing.assert_close(banded, fused, rtol=0, atol=1e-10)
    torch.testing.assert_close(windowed_banded, windowed_naive, rtol=0, atol=1e-10)
    assert (windowed_naive - fused).abs().max() > 1e-3, "a short window changes the function"
    torch.testing.assert_close(windowed_naive[:, :6], fused[:, :6], rtol=0, atol=1e-10)


def test_model_and_cache_errors():
    model = _model()
    with pytest.raises(ValueError, match="kernel"):
        model.set_attention("flash")
    with pytest.raises(ValueError, match="window"):
        model.set_attention("banded")
    with pytest.raises(ValueError, match="block_size"):
        model(torch.zeros(1, 41, dtype=torch.long))
    with pytest.raises(ValueError, match="idx"):
        model(torch.zeros(1, 4))
    with pytest.raises(ValueError, match="n_layers"):
        KVCache(0)
    with pytest.raises(ValueError, match="max_new_tokens"):
        model.generate(torch.zeros(1, 3, dtype=torch.long), 0)
    assert model.generate(torch.zeros(1, 30, dtype=torch.long), 20).shape == (1, 50), \
        "past block_size generation restarts from the last block_size // 2 tokens instead of failing"


@pytest.mark.parametrize("make, message", [
    (lambda: [torch.randn(1, 6, 4), torch.randn(1, 6, 4, dtype=torch.float64), torch.randn(1, 6, 4)],
     r"q, k and v must be floating-point tensors of one dtype, got q torch\.float32, k torch\.float64"),
    (lambda: [torch.ones(1, 6, 4, dtype=torch.long)] * 3,
     r"q, k and v must be floating-point tensors of one dtype, got q torch\.int64"),
    (lambda: [torch.randn(1, 0, 4)] * 3, r"q, k and v must hold at least one position T >= 1, got q of shape \(1, 0, 4\)"),
])
def test_sliding_window_attention_refuses_mixed_dtypes_integers_and_no_positions(make, message):
    """Before: torch's 'expected scalar type Float but found Double/Long', and ZeroDivisionError for T = 0."""
    with pytest.raises(ValueError, match=message):
        sliding_window_attention(*make(), 2)


def test_sliding_window_attention_accepts_one_position_in_float64():
    q = torch.randn(1, 1, 4, dtype=torch.float64)
    out = sliding_window_attention(q, q, q, 3)
    assert out.dtype == torch.float64 and torch.allclose(out, q)
