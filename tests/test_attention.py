"""helpers.attention against torch's own kernels, closed forms and its error messages."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from helpers.attention import (
    MultiHeadAttention,
    causal_mask,
    load_torch_mha_weights,
    scaled_dot_product_attention,
)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _torch_sdpa(q, k, v, mask=None):
    """torch's kernel; its boolean mask means 'may attend', ours means 'blocked'."""
    return F.scaled_dot_product_attention(q, k, v, attn_mask=None if mask is None else ~mask)


# ---------------------------------------------------------------- scaled dot-product attention

@pytest.mark.parametrize("shape_q, shape_k, d_v", [((5, 8), (7, 8), 3), ((2, 5, 8), (2, 7, 8), 4),
                                                    ((2, 3, 6, 16), (2, 3, 9, 16), 16)])
def test_sdpa_matches_torch_without_mask(shape_q, shape_k, d_v):
    q, k = torch.randn(shape_q, dtype=torch.float64), torch.randn(shape_k, dtype=torch.float64)
    v = torch.randn(*shape_k[:-1], d_v, dtype=torch.float64)
    out, w = scaled_dot_product_attention(q, k, v)
    assert out.shape == (*shape_q[:-1], d_v) and w.shape == (*shape_q[:-1], shape_k[-2])
    torch.testing.assert_close(out, _torch_sdpa(q, k, v), rtol=0, atol=1e-12)
    torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1], dtype=torch.float64), rtol=0, atol=1e-12)


def test_weights_are_softmax_of_scaled_scores():
    q, k, v = torch.randn(2, 4, 6), torch.randn(2, 5, 6), torch.randn(2, 5, 3)
    _, w = scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(w, torch.softmax(q @ k.transpose(1, 2) / math.sqrt(6), dim=-1))


@pytest.mark.parametrize("mask_shape", [(6, 6), (1, 6, 6), (2, 3, 6, 6), (2, 1, 1, 6), (3, 1, 6)])
def test_sdpa_matches_torch_with_broadcast_masks(mask_shape):
    B, h, T, d = 2, 3, 6, 8
    q, k, v = (torch.randn(B, h, T, d, dtype=torch.float64) for _ in range(3))
    mask = torch.rand(mask_shape) < 0.4
    mask[..., 0] = False  # every query keeps at least one key
    out, w = scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(out, _torch_sdpa(q, k, v, mask), rtol=0, atol=1e-12)
    assert torch.all(w.masked_select(mask.expand_as(w)) == 0), "blocked pairs get exactly zero weight"


def test_causal_masked_attention_matches_torch_is_causal():
    q, k, v = (torch.randn(2, 4, 7, 8, dtype=torch.float64) for _ in range(3))
    out, w = scaled_dot_product_attention(q, k, v, causal_mask(7))
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True), rtol=0, atol=1e-12)
    assert torch.all(w.triu(1) == 0)


def test_uniform_weights_when_queries_are_zero():
    T_k = 5
    q, k, v = torch.zeros(3, 4, 8), torch.randn(3, T_k, 8), torch.randn(3, T_k, 2)
    out, w = scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(w, torch.full_like(w, 1 / T_k))
    torch.testing.assert_close(out, v.mean(dim=1, keepdim=True).expand_as(out))


def test_hand_worked_example():
    # scores (0, 1, 2) after dividing by sqrt(d_k)=2 -> weights (1, e, e^2)/(1 + e + e^2)
    q = torch.tensor([[1.0, 1.0, 1.0, 1.0]], dtype=torch.float64)
    k = torch.tensor([[1.0, -1, 1, -1], [1, 1, 0, 0], [1, 1, 1, 1]], dtype=torch.float64)
    v = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]], dtype=torch.float64)
    out, w = scaled_dot_product_attention(q, k, v)
    z = 1 + math.e + math.e**2
    torch.testing.assert_close(w[0], torch.tensor([1 / z, math.e / z, math.e**2 / z], dtype=torch.float64))
    torch.testing.assert_close(out[0], torch.tensor([(1 + 2 * math.e**2) / z, (math.e + 2 * math.e**2) / z],
                                                    dtype=torch.float64))


def test_gradients_match_torch():
    q1, k1, v1 = (torch.randn(2, 5, 8, dtype=torch.float64, requires_grad=True) for _ in range(3))
    q2, k2, v2 = (t.detach().clone().requires_grad_() for t in (q1, k1, v1))
    g = torch.randn(2, 5, 8, dtype=torch.float64)
    (scaled_dot_product_attention(q1, k1, v1, causal_mask(5))[0] * g).sum().backward()
    (F.scaled_dot_product_attention(q2, k2, v2, is_causal=True) * g).sum().backward()
    for a, b in ((q1, q2), (k1, k2), (v1, v2)):
        torch.testing.assert_close(a.grad, b.grad, rtol=0, atol=1e-12)


def test_fully_blocked_row_is_nan():
    q, k, v = torch.randn(1, 3, 4), torch.randn(1, 3, 4), torch.randn(1, 3, 2)
    mask = torch.zeros(3, 3, dtype=torch.bool)
    mask[1] = True
    out, w = scaled_dot_product_attention(q, k, v, mask)
    assert torch.isnan(w[0, 1]).all() and not torch.isnan(w[0, [0, 2]]).any()


@pytest.mark.parametrize("q_shape, k_shape, v_shape, message", [
    ((2, 5, 8), (2, 7, 6), (2, 7, 3), r"q and k must have the same last dimension d_k: q has shape \(2, 5, 8\)"),
    ((2, 5, 8), (2, 7, 8), (2, 6, 3), r"k and v must have the same number of positions Tk.*\(2, 7, 8\).*\(2, 6, 3\)"),
    ((8,), (7, 8), (7, 3), r"q must be a tensor of shape \(\.\.\., T, d\).*got \(8,\)"),
    ((2, 5, 8), (3, 7, 8), (3, 7, 3), r"leading \(batch/head\) dimensions.*q \(2, 5, 8\), k \(3, 7, 8\)"),
])
def test_shape_errors_name_the_shapes(q_shape, k_shape, v_shape, message):
    with pytest.raises(ValueError, match=message):
        scaled_dot_product_attention(torch.randn(q_shape), torch.randn(k_shape), torch.randn(v_shape))


def test_mask_errors():
    q, k, v = torch.randn(2, 5, 8), torch.randn(2, 7, 8), torch.randn(2, 7, 3)
    with pytest.raises(ValueError, match=r"mask of shape \(5, 5\) does not broadcast.*\(2, 5, 7\)"):
        scaled_dot_product_attention(q, k, v, causal_mask(5))
    with pytest.raises(ValueError, match="mask must be a boolean tensor.*torch.float32"):
        scaled_dot_product_attention(q, k, v, torch.zeros(5, 7))
    with pytest.raises(ValueError, match=r"does not broadcast"):  # would enlarge the output's batch shape
        scaled_dot_product_attention(q, k, v, torch.zeros(3, 2, 5, 7, dtype=torch.bool))


def test_causal_mask():
    m = causal_mask(4)
    assert m.dtype == torch.bool and m.shape == (4, 4)
    expected = torch.tensor([[j > i for j in range(4)] for i in range(4)])
    assert torch.equal(m, expected)
    assert torch.equal(causal_mask(1), torch.tensor([[False]]))
    for bad, message in ((0, "T must be >= 1, got 0"), (-2, "T must be >= 1"), (2.5, "T must be an integer"),
                         (True, "T must be an integer")):
        with pytest.raises(ValueError, match=message):
            causal_mask(bad)


# ---------------------------------------------------------------- multi-head attention

def _pair(d_model=16, n_heads=4, bias=False, dtype=torch.float64):
    theirs = nn.MultiheadAttention(d_model, n_heads, bias=bias, batch_first=True, dtype=dtype)
    if bias:  # torch initialises the biases to zero; make them matter
        with torch.no_grad():
            theirs.in_proj_bias.normal_()
            theirs.out_proj.bias.normal_()
    ours = load_torch_mha_weights(MultiHeadAttention(d_model, n_heads, bias=bias).to(dtype), theirs)
    return ours.eval(), theirs.eval()


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_self_attention_matches_torch_multihead_attention(bias, causal):
    ours, theirs = _pair(bias=bias)
    x = torch.randn(3, 7, 16, dtype=torch.float64)
    mask = causal_mask(7) if causal else None
    out, w = ours(x, mask=mask)
    ref_out, ref_w = theirs(x, x, x, attn_mask=mask, need_weights=True, average_attn_weights=True)
    _, ref_w_heads = theirs(x, x, x, attn_mask=mask, need_weights=True, average_attn_weights=False)
    assert out.shape == (3, 7, 16) and w.shape == (3, 4, 7, 7)
    torch.testing.assert_close(out, ref_out, rtol=0, atol=1e-12)
    torch.testing.assert_close(w.mean(dim=1), ref_w, rtol=0, atol=1e-12)
    torch.testing.assert_close(w, ref_w_heads, rtol=0, atol=1e-12)


@pytest.mark.parametrize("causal", [False, True])
def test_cross_attention_matches_torch_multihead_attention(causal):
    ours, theirs = _pair(d_model=24, n_heads=3, bias=True)
    x, c = torch.randn(2, 5, 24, dtype=torch.float64), torch.randn(2, 9, 24, dtype=torch.float64)
    mask = torch.ones(5, 9, dtype=torch.bool).triu(5) if causal else None  # any (Tq, Tk) pattern
    out, w = ours(x, mask=mask, context=c)
    ref_out, ref_w = theirs(x, c, c, attn_mask=mask, need_weights=True)
    assert out.shape == (2, 5, 24) and w.shape == (2, 3, 5, 9)
    torch.testing.assert_close(out, ref_out, rtol=0, atol=1e-12)
    torch.testing.assert_close(w.mean(dim=1), ref_w, rtol=0, atol=1e-12)


def test_key_padding_mask_matches_torch():
    ours, theirs = _pair()
    x = torch.randn(2, 6, 16, dtype=torch.float64)
    pad = torch.tensor([[False] * 6, [False] * 4 + [True] * 2])  # (B, Tk), True = padding
    out, w = ours(x, mask=pad[:, None, None, :])
    ref_out, ref_w = theirs(x, x, x, key_padding_mask=pad, need_weights=True)
    torch.testing.assert_close(out, ref_out, rtol=0, atol=1e-12)
    torch.testing.assert_close(w.mean(dim=1), ref_w, rtol=0, atol=1e-12)
    assert torch.all(w[1, :, :, 4:] == 0)


def test_float32_agreement_below_1e_6():
    ours, theirs = _pair(d_model=64, n_heads=8, dtype=torch.float32)
    x = torch.randn(4, 12, 64)
    out, _ = ours(x, mask=causal_mask(12))
    ref, _ = theirs(x, x, x, attn_mask=causal_mask(12))
    assert (out - ref).abs().max().item() < 1e-6


def test_heads_are_independent_sdpa_calls():
    mha = MultiHeadAttention(12, 3).double()
    x = torch.randn(2, 5, 12, dtype=torch.float64)
    out, w = mha(x)
    q, k, v = mha.w_q(x), mha.w_k(x), mha.w_v(x)
    heads = [scaled_dot_product_attention(q[..., i * 4:(i + 1) * 4], k[..., i * 4:(i + 1) * 4],
                                          v[..., i * 4:(i + 1) * 4]) for i in range(3)]
    torch.testing.assert_close(out, mha.w_o(torch.cat([h[0] for h in heads], dim=-1)))
    torch.testing.assert_close(w, torch.stack([h[1] for h in heads], dim=1))
    torch.testing.assert_close(mha.merge_heads(mha.split_heads(x)), x)


@pytest.mark.parametrize("d_model, bias", [(64, False), (64, True), (96, False)])
def test_parameter_count_does_not_depend_on_heads(d_model, bias):
    counts = {h: sum(p.numel() for p in MultiHeadAttention(d_model, h, bias=bias).parameters())
              for h in (1, 2, 4, 8, 16, 32) if d_model % h == 0}
    assert set(counts.values()) == {4 * d_model**2 + (4 * d_model if bias else 0)}
    names = {n for n, _ in MultiHeadAttention(d_model, 4, bias=bias).named_parameters()}
    assert {"w_q.weight", "w_k.weight", "w_v.weight", "w_o.weight"} <= names


def test_multihead_errors():
    with pytest.raises(ValueError, match=r"d_model must be divisible by n_heads: d_model=10, n_heads=4"):
        MultiHeadAttention(10, 4)
    with pytest.raises(ValueError, match="n_heads must be >= 1, got 0"):
        MultiHeadAttention(8, 0)
    mha = MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match=r"x must have shape \(B, T, d_model=8\), got \(2, 5, 6\)"):
        mha(torch.randn(2, 5, 6))
    with pytest.raises(ValueError, match=r"context must have shape \(B, T, d_model=8\), got \(2, 5\)"):
        mha(torch.randn(2, 3, 8), context=torch.randn(2, 5))
    with pytest.raises(ValueError, match=r"same batch size B: x \(2, 3, 8\), context \(3, 5, 8\)"):
        mha(torch.randn(2, 3, 8), context=torch.randn(3, 5, 8))
    with pytest.raises(ValueError, match=r"mask of shape \(3, 3\) does not broadcast"):
        mha(torch.randn(2, 3, 8), mask=causal_mask(3), context=torch.randn(2, 5, 8))
    with pytest.raises(ValueError, match="shape mismatch"):
        load_torch_mha_weights(mha, nn.MultiheadAttention(8, 4, bias=False))
    with pytest.raises(ValueError, match="bias mismatch"):
        load_torch_mha_weights(mha, nn.MultiheadAttention(8, 2, bias=True))


@pytest.mark.parametrize("which", ["q", "k", "v"])
def test_integer_tensors_are_refused_by_name(which):
    """Before, torch's "expected scalar type Float but found Long" from inside the matmul."""
    qkv = {name: torch.ones(2, 3, 4) for name in "qkv"}
    qkv[which] = torch.ones(2, 3, 4, dtype=torch.long)
    with pytest.raises(ValueError, match=rf"{which} must be a floating-point tensor .*got torch.int64; "
                                         rf"convert it with {which}.float\(\)"):
        scaled_dot_product_attention(qkv["q"], qkv["k"], qkv["v"])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_every_floating_point_dtype_is_accepted(dtype):
    x = torch.ones(1, 2, 3, dtype=dtype)
    out, weights = scaled_dot_product_attention(x, x, x)
    assert out.dtype == dtype and torch.allclose(weights.double(), torch.full((1, 2, 2), 0.5, dtype=torch.float64))


@pytest.mark.parametrize("dtypes", [(torch.float32, torch.float64, torch.float64),
                                    (torch.float32, torch.float32, torch.float64),
                                    (torch.float64, torch.float32, torch.float32)])
def test_attention_refuses_mixed_float_dtypes(dtypes):
    """Before: torch's 'expected scalar type Float but found Double' from inside the product."""
    q, k, v = (torch.randn(2, 3, 4, dtype=d) for d in dtypes)
    with pytest.raises(ValueError, match=r"q, k and v must have one dtype, got q torch\.float\d+, k torch\.float\d+, "
                                         r"v torch\.float\d+"):
        scaled_dot_product_attention(q, k, v)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16])
def test_attention_accepts_any_one_float_dtype(dtype):
    q = torch.randn(2, 3, 4).to(dtype)
    out, w = scaled_dot_product_attention(q, q, q)
    assert out.dtype == w.dtype == dtype and out.shape == (2, 3, 4)
