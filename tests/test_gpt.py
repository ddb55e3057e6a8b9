"""helpers.gpt: the book's one GPT, against torch's kernels and its own definitions."""

import pytest
import torch

from helpers.attention import causal_mask, scaled_dot_product_attention
from helpers.gpt import GPT, POSITIONS, GPTConfig, alibi_slopes, causal_attention
from helpers.positional import alibi_bias

V = 11


def _idx(B=2, T=12, seed=0, vocab=V):
    return torch.randint(0, vocab, (B, T), generator=torch.Generator().manual_seed(seed))


def _model(seed=0, **kw):
    torch.manual_seed(seed)
    cfg = dict(vocab_size=V, block_size=16, n_layers=2, n_heads=2, d_model=16)
    return GPT(GPTConfig(**{**cfg, **kw})).eval()


# ------------------------------------------------------------------ the model's definitions

@pytest.mark.parametrize("positions", POSITIONS)
def test_causal_future_tokens_do_not_change_past_logits(positions):
    m = _model(positions=positions)
    x = _idx(1, 12)
    y = x.clone()
    y[0, 7:] = (y[0, 7:] + 1) % V
    with torch.no_grad():
        a, b = m(x)[0], m(y)[0]
    assert torch.allclose(a[:, :7], b[:, :7], atol=1e-6)
    assert (a[:, 7:] - b[:, 7:]).abs().max() > 1e-4


@pytest.mark.parametrize("positions", POSITIONS)
@pytest.mark.parametrize("window", [None, 4])
def test_naive_fused_and_banded_kernels_agree(positions, window):
    m = _model(positions=positions, window=window, kernel="naive")
    x = _idx(2, 13)
    with torch.no_grad():
        naive = m(x)[0]
        fused = m.set_attention("fused", window)(x)[0]
        assert torch.allclose(naive, fused, atol=1e-5)
        if window is not None and positions != "alibi":
            assert torch.allclose(naive, m.set_attention("banded", window)(x)[0], atol=1e-5)


@pytest.mark.parametrize("positions", POSITIONS)
def test_absolute_positions_see_an_offset_relative_ones_do_not(positions):
    m = _model(positions=positions)
    x = _idx(1, 10)
    with torch.no_grad():
        at_0 = m(x)[0]
        cache = m.new_cache()
        cache.position = 5  # the same tokens, read as if they sat at positions 5..14
        at_5 = m(x, cache=cache)[0]
    diff = (at_0 - at_5).abs().max()
    assert (diff > 1e-3) if positions in ("learned", "sinusoidal") else (diff < 1e-5)


def test_alibi_attention_matches_the_positional_bias():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 9, 8) for _ in range(3))
    pos = torch.arange(9)
    scores = q @ k.transpose(-2, -1) / 8 ** 0.5 + alibi_bias(4, 9)
    expected = torch.softmax(scores.masked_fill(causal_mask(9), float("-inf")), -1) @ v
    for kernel in ("naive", "fused"):
        got = causal_attention(q, k, v, pos, pos, kernel, None, alibi_slopes(4).float())
        assert torch.allclose(got, expected, atol=1e-5)


def test_loss_is_the_cross_entropy_of_the_logits():
    m = _model()
    x, y = _idx(2, 10, seed=1), _idx(2, 10, seed=2)
    logits, loss = m(x, y)
    assert loss.item() == pytest.approx(torch.nn.functional.cross_entropy(logits.reshape(-1, V), y.reshape(-1)).item())
    assert m(x)[1] is None


def test_gpt2_init_and_tied_weights():
    m = _model(n_layers=8, d_model=64, n_heads=4)
    assert m.head.weight is m.tok.weight and m.head.bias is None
    std = m.blocks[0].ffn.linear2.weight.std().item()
    assert std == pytest.approx(0.02 / 4, rel=0.1), "residual projections scaled by 1/sqrt(2 n_layers)"
    untied = _model(tie_weights=False, bias=True)
    assert untied.head.weight is not untied.tok.weight and untied.head.bias is not None
    assert _model(bias=True).blocks[0].self_attn.w_q.bias is not None
    assert _model().blocks[0].self_attn.w_q.bias is None and _model().blocks[0].norm1.bias is not None


# ------------------------------------------------------------------ the KV cache

@pytest.mark.parametrize("positions", POSITIONS)
@pytest.mark.parametrize("window", [None, 3])
def test_cached_forward_equals_the_full_forward(positions, window):
    m = _model(positions=positions, window=window)
    x = _idx(2, 12)
    with torch.no_grad():
        full = m(x)[0]
        cache = m.new_cache()
        steps = [m(x[:, :5], cache=cache)[0]] + [m(x[:, i:i + 1], cache=cache)[0] for i in range(5, 12)]
    assert torch.allclose(torch.cat(steps, dim=1), full, atol=1e-5)
    assert len(cache) == (12 if window is None else window)


@pytest.mark.parametrize("temperature,top_k", [(0.0, None), (1.0, 5)])
def test_generation_with_the_cache_gives_the_same_tokens(temperature, top_k):
    m = _model()
    prompt = _idx(3, 4)
    kw = dict(temperature=temperature, top_k=top_k, keep=6, return_logits=True)
    a, la = m.generate(prompt, 30, use_cache=True, generator=torch.Generator().manual_seed(5), **kw)
    b, lb = m.generate(prompt, 30, use_cache=False, generator=torch.Generator().manual_seed(5), **kw)
    assert a.shape == (3, 34) and torch.equal(a[:, :4], prompt)
    assert torch.equal(a, b), "30 new tokens past block_size 16: the context restarts twice"
    assert torch.allclose(la, lb, atol=1e-4)


def test_greedy_generation_is_the_argmax_of_the_full_forward():
    m = _model()
    tokens, logits = m.generate(_idx(1, 3), 5, temperature=0, return_logits=True)
    with torch.no_grad():
        full = m(tokens[:, :-1])[0]
    assert torch.equal(tokens[0, 3:], full[0, 2:].argmax(-1))
    assert torch.allclose(logits[0], full[0, 2:], atol=1e-5)


# ------------------------------------------------------------------ bad input

@pytest.mark.parametrize("kw,match", [
    (dict(d_model=10, n_heads=4), "divisible"), (dict(n_layers=0), "n_layers"), (dict(positions="abs"), "positions"),
    (dict(kernel="banded"), "window"), (dict(kernel="flash"), "kernel"), (dict(dropout=1.0), "dropout"),
    (dict(kernel="banded", window=4, positions="alibi"), "ALiBi"), (dict(bias=1), "bias"),
])
def test_bad_config_is_named(kw, match):
    with pytest.raises(ValueError, match=match):
        GPTConfig(**{"vocab_size": V, **kw})


def test_bad_input_is_named():
    m = _model()
    with pytest.raises(ValueError, match="idx"):
        m(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="outside"):
        m(torch.full((1, 3), V))
    with pytest.raises(ValueError, match="block_size"):
        m(_idx(1, 17))
    with pytest.raises(ValueError, match="targets"):
        m(_idx(1, 4), _idx(1, 5))
    with pytest.raises(ValueError, match="keep"):
        m.generate(_idx(1, 4), 3, keep=16)
    with pytest.raises(ValueError, match="banded"):
        m.set_attention("banded", 4)(_idx(1, 4), cache=m.new_cache())
    assert _model(positions="rope")(_idx(1, 40))[0].shape == (1, 40, V), "relative positions reach past block_size"


def test_alibi_slopes_refuses_no_heads_and_accepts_one():
    for bad in (0, -2):
        with pytest.raises(ValueError, match=f"n_heads must be >= 1, got {bad}"):
            alibi_slopes(bad)
    with pytest.raises(ValueError, match="n_heads must be an integer, got 2.0"):
        alibi_slopes(2.0)
    assert torch.equal(alibi_slopes(1), torch.tensor([2.0 ** -8], dtype=torch.float64))
