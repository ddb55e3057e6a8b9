"""helpers.transformer: the from-scratch blocks against torch's own layers, masks, shapes and accounting."""

import math

import pytest
import torch
from torch import nn

from helpers.attention import causal_mask
from helpers.transformer import (
    DecoderBlock,
    DecoderOnlyBlock,
    EncoderBlock,
    FeedForward,
    TransformerBlock,
    TransformerStack,
    block_flops,
    block_parameter_count,
    count_matmul_flops,
    load_torch_decoder_layer,
    load_torch_encoder_layer,
)

D, H, DFF = 32, 4, 80


def randomise_norms(module):
    """LayerNorms start at gain 1, shift 0; make them non-trivial so that copying them is tested."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0, 0.3)
    return module


# --------------------------------------------------------------------------- against torch
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("train", [True, False])
def test_encoder_block_matches_torch_encoder_layer(norm_first, activation, train):
    torch.manual_seed(0)
    theirs = randomise_norms(nn.TransformerEncoderLayer(D, H, DFF, dropout=0.0, activation=activation,
                                                        batch_first=True, norm_first=norm_first))
    ours = load_torch_encoder_layer(EncoderBlock(D, H, DFF, activation, norm_first), theirs)
    theirs.train(train)
    ours.train(train)
    x = torch.randn(3, 11, D)
    with torch.set_grad_enabled(train):  # eval + no_grad lets torch take its fused fast path
        assert (ours(x) - theirs(x)).abs().max() < 1e-5
        # with a causal mask too
        mask = causal_mask(11)
        assert (ours(x, mask) - theirs(x, src_mask=mask)).abs().max() < 1e-5
        # and with key padding: sequence 0 has its last 4 positions padded
        pad = torch.zeros(3, 11, dtype=torch.bool)
        pad[0, 7:] = True
        out_ours, out_theirs = ours(x, pad[:, None, None, :]), theirs(x, src_key_padding_mask=pad)
        assert (out_ours[:, :7] - out_theirs[:, :7]).abs().max() < 1e-5


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_decoder_block_matches_torch_decoder_layer(norm_first, activation):
    torch.manual_seed(1)
    theirs = randomise_norms(nn.TransformerDecoderLayer(D, H, DFF, dropout=0.0, activation=activation,
                                                        batch_first=True, norm_first=norm_first))
    ours = load_torch_decoder_layer(DecoderBlock(D, H, DFF, activation, norm_first), theirs)
    x, memory = torch.randn(2, 9, D), torch.randn(2, 5, D)
    expected = theirs(x, memory, tgt_mask=causal_mask(9), tgt_is_causal=True)
    assert (ours(x, memory) - expected).abs().max() < 1e-5


def test_decoder_only_block_is_an_encoder_block_with_a_causal_mask():
    torch.manual_seed(2)
    enc = EncoderBlock(D, H, DFF, "gelu", norm_first=True)
    dec = DecoderOnlyBlock(D, H, DFF)  # gelu, pre-norm by default
    dec.load_state_dict(enc.state_dict())
    x = torch.randn(2, 8, D)
    assert torch.equal(dec(x), enc(x, causal_mask(8)))
    assert not torch.allclose(dec(x), enc(x))


def test_loading_rejects_mismatched_layers():
    theirs = nn.TransformerEncoderLayer(D, H, DFF, dropout=0.0, batch_first=True, norm_first=True)
    with pytest.raises(ValueError, match="norm_first"):
        load_torch_encoder_layer(EncoderBlock(D, H, DFF, norm_first=False), theirs)
    with pytest.raises(ValueError, match="d_ff"):
        load_torch_encoder_layer(EncoderBlock(D, H, 2 * DFF, norm_first=True), theirs)
    with pytest.raises(ValueError, match="activation"):
        load_torch_encoder_layer(EncoderBlock(D, H, DFF, "gelu", norm_first=True), theirs)
    with pytest.raises(ValueError, match="bias"):
        load_torch_encoder_layer(EncoderBlock(D, H, DFF, norm_first=True, bias=False), theirs)


# --------------------------------------------------------------------------- causality
@pytest.mark.parametrize("norm_first", [False, True])
def test_changing_a_future_token_leaves_earlier_outputs_unchanged(norm_first):
    torch.manual_seed(3)
    t = 6
    x = torch.randn(2, 10, D)
    x2 = x.clone()
    x2[:, t] += torch.randn(2, D)  # change position t only
    memory = torch.randn(2, 4, D)
    for block, call in [(DecoderOnlyBlock(D, H, norm_first=norm_first), lambda b, z: b(z)),
                        (DecoderBlock(D, H, norm_first=norm_first), lambda b, z: b(z, memory))]:
        y, y2 = call(block, x), call(block, x2)
        assert (y[:, :t] - y2[:, :t]).abs().max() < 1e-6, "the past must not see the future"
        assert (y[:, t:] - y2[:, t:]).abs().amax(dim=(0, 2)).min() > 1e-4, "position t and later do change"
    # a stack of causal blocks is causal too
    stack = TransformerStack([DecoderOnlyBlock(D, H) for _ in range(3)])
    y, y2 = stack(x), stack(x2)
    assert (y[:, :t] - y2[:, :t]).abs().max() < 1e-6
    assert (y[:, t:] - y2[:, t:]).abs().max() > 1e-3
    # an encoder block is not causal: every position changes
    enc = EncoderBlock(D, H)
    assert (enc(x)[:, :t] - enc(x2)[:, :t]).abs().max() > 1e-3


def test_cross_attention_sees_all_of_the_memory():
    torch.manual_seed(4)
    block = DecoderBlock(D, H)
    x, memory = torch.randn(2, 7, D), torch.randn(2, 5, D)
    memory2 = memory.clone()
    memory2[:, -1] += 1.0  # change the last memory position only
    delta = (block(x, memory) - block(x, memory2)).abs().amax(dim=-1)
    assert (delta > 1e-5).all(), "every decoder position attends to every memory position"
    # masking that memory position in cross-attention removes its influence
    blocked = torch.zeros(1, 1, 1, 5, dtype=torch.bool)
    blocked[..., -1] = True
    assert (block(x, memory, memory_mask=blocked) - block(x, memory2, memory_mask=blocked)).abs().max() < 1e-6


# --------------------------------------------------------------------------- shapes and pieces
def test_shapes_and_weights():
    torch.manual_seed(5)
    x, memory = torch.randn(3, 7, D), torch.randn(3, 4, D)
    out, w = EncoderBlock(D, H)(x, return_weights=True)
    assert out.shape == (3, 7, D) and w.shape == (3, H, 7, 7)
    assert torch.allclose(w.sum(-1), torch.ones(3, H, 7))
    out, w = DecoderOnlyBlock(D, H)(x, return_weights=True)
    assert w[..., 0, 1:].abs().max() == 0 and torch.allclose(w[..., 0, 0], torch.ones(3, H))
    out, w_self, w_cross = DecoderBlock(D, H)(x, memory, return_weights=True)
    assert out.shape == (3, 7, D) and w_self.shape == (3, H, 7, 7) and w_cross.shape == (3, H, 7, 4)
    assert torch.equal(w_self.triu(1), torch.zeros_like(w_self))
    assert TransformerBlock(D, H).d_ff == 4 * D


def test_feed_forward_is_position_wise_and_a_kernel_1_convolution():
    torch.manual_seed(6)
    ffn = FeedForward(D, DFF, "gelu")
    x = torch.randn(2, 9, D)
    whole = ffn(x)
    one_at_a_time = torch.stack([ffn(x[:, t]) for t in range(9)], dim=1)
    assert torch.allclose(whole, one_at_a_time, atol=1e-6)
    conv1, conv2 = nn.Conv1d(D, DFF, 1), nn.Conv1d(DFF, D, 1)
    with torch.no_grad():
        conv1.weight.copy_(ffn.linear1.weight[:, :, None]); conv1.bias.copy_(ffn.linear1.bias)
        conv2.weight.copy_(ffn.linear2.weight[:, :, None]); conv2.bias.copy_(ffn.linear2.bias)
    conv = conv2(nn.functional.gelu(conv1(x.transpose(1, 2)))).transpose(1, 2)
    assert torch.allclose(whole, conv, atol=1e-5)


def test_pre_norm_block_with_zero_writes_is_the_identity():
    torch.manual_seed(7)
    x = torch.randn(2, 5, D) * 3
    for norm_first in (True, False):
        block = EncoderBlock(D, H, norm_first=norm_first)
        with torch.no_grad():
            for lin in (block.self_attn.w_o, block.ffn.linear2):
                lin.weight.zero_(); lin.bias.zero_()
        if norm_first:
            assert torch.equal(block(x), x)
        else:  # post-norm renormalises the stream: LayerNorm(LayerNorm(x))
            assert torch.allclose(block(x), block.norm2(block.norm1(x)), atol=1e-6)
            assert not torch.allclose(block(x), x, atol=1e-2)


def test_stack_adds_a_final_norm_only_for_pre_norm():
    pre = TransformerStack([EncoderBlock(D, H, norm_first=True) for _ in range(2)])
    post = TransformerStack([EncoderBlock(D, H, norm_first=False) for _ in range(2)])
    assert isinstance(pre.final_norm, nn.LayerNorm) and isinstance(post.final_norm, nn.Identity)
    y = pre(torch.randn(2, 4, D))
    assert torch.allclose(y.mean(-1), torch.zeros(2, 4), atol=1e-5)


def test_initialisation_follows_torch():
    torch.manual_seed(8)
    block = DecoderBlock(64, 4)
    bound = math.sqrt(6 / (4 * 64))
    for attn in (block.self_attn, block.cross_attn):
        for lin in (attn.w_q, attn.w_k, attn.w_v):
            assert lin.weight.abs().max() <= bound and lin.weight.abs().max() > 0.9 * bound
            assert torch.equal(lin.bias, torch.zeros(64))
        assert torch.equal(attn.w_o.bias, torch.zeros(64))
        assert attn.w_o.weight.abs().max() <= 1 / math.sqrt(64)
    theirs = nn.TransformerDecoderLayer(64, 4, 256, batch_first=True)
    for ours_t, their_t in [(block.self_attn.w_q.weight, theirs.self_attn.in_proj_weight[:64]),
                            (block.ffn.linear1.weight, theirs.linear1.weight)]:
        assert abs(ours_t.std() / their_t.std() - 1) < 0.1


# --------------------------------------------------------------------------- accounting
@pytest.mark.parametrize("kind", ["encoder", "decoder_only", "decoder"])
@pytest.mark.parametrize("d,h,d_ff,bias", [(32, 4, 80, True), (64, 8, 256, False), (48, 3, 100, True)])
def test_parameter_formula_matches_numel(kind, d, h, d_ff, bias):
    cls = {"encoder": EncoderBlock, "decoder_only": DecoderOnlyBlock, "decoder": DecoderBlock}[kind]
    block = cls(d, h, d_ff, bias=bias)
    count = block_parameter_count(d, d_ff, kind, bias)
    assert count["total"] == sum(p.numel() for p in block.parameters())
    assert count["ffn"] == sum(p.numel() for p in block.ffn.parameters())
    if bias:  # the same count as torch's layers
        torch_cls = nn.TransformerDecoderLayer if kind == "decoder" else nn.TransformerEncoderLayer
        assert count["total"] == sum(p.numel() for p in torch_cls(d, h, d_ff, batch_first=True).parameters())


@pytest.mark.parametrize("B,T,S,d,h,d_ff", [(2, 7, 5, 32, 4, 80), (1, 16, 16, 64, 8, 256), (3, 4, 9, 24, 2, 24)])
def test_flop_formula_matches_the_flop_counter(B, T, S, d, h, d_ff):
    x, memory = torch.randn(B, T, d), torch.randn(B, S, d)
    assert count_matmul_flops(EncoderBlock(d, h, d_ff), x) == block_flops(B, T, d, d_ff)["total"]
    assert count_matmul_flops(DecoderOnlyBlock(d, h, d_ff), x) == block_flops(B, T, d, d_ff, "decoder_only")["total"]
    assert count_matmul_flops(DecoderBlock(d, h, d_ff), x, memory) == block_flops(B, T, d, d_ff, "decoder", S)["total"]
    # the count does not depend on the number of heads
    assert count_matmul_flops(EncoderBlock(d, 1, d_ff), x) == block_flops(B, T, d, d_ff)["total"]


def test_flop_formula_by_hand():
    f = block_flops(1, 10, 8, 32)
    assert f["projections"] == 4 * (2 * 10 * 8 * 8)
    assert f["scores"] == f["weighted_values"] == 2 * 10 * 10 * 8
    assert f["ffn"] == 2 * (2 * 10 * 8 * 32)
    assert f["total"] == sum(v for k, v in f.items() if k != "total")


# --------------------------------------------------------------------------- bad arguments
@pytest.mark.parametrize("kwargs,name", [
    (dict(d_model=0, n_heads=1), "d_model"),
    (dict(d_model=30, n_heads=4), "d_model"),          # not divisible (MultiHeadAttention's message)
    (dict(d_model=32, n_heads=0), "n_heads"),
    (dict(d_model=32, n_heads=4, d_ff=-1), "d_ff"),
    (dict(d_model=32, n_heads=4, activation="tanh"), "activation"),
    (dict(d_model=32, n_heads=4, dropout=1.0), "dropout"),
    (dict(d_model=32, n_heads=4, norm_first="yes"), "norm_first"),
    (dict(d_model=32, n_heads=4, causal=1), "causal"),
])
def test_bad_constructor_arguments_raise_value_error_naming_them(kwargs, name):
    with pytest.raises(ValueError, match=name):
        TransformerBlock(**kwargs)


def test_bad_inputs_raise_value_error_naming_them():
    block, dec = EncoderBlock(D, H), DecoderBlock(D, H)
    with pytest.raises(ValueError, match="x must have shape"):
        block(torch.randn(2, 5, D + 1))
    with pytest.raises(ValueError, match="x must have shape"):
        block(torch.randn(5, D))
    with pytest.raises(ValueError, match="memory must have shape"):
        dec(torch.randn(2, 5, D), torch.randn(2, 5, D - 1))
    with pytest.raises(ValueError, match="batch size"):
        dec(torch.randn(2, 5, D), torch.randn(3, 5, D))
    with pytest.raises(ValueError, match="x must have shape"):
        FeedForward(D, DFF)(torch.randn(2, 3, D + 2))
    with pytest.raises(ValueError, match="kind"):
        block_parameter_count(D, kind="gpt")
    with pytest.raises(ValueError, match="T_memory"):
        block_flops(1, 4, D, kind="encoder", T_memory=3)
    with pytest.raises(ValueError, match="T"):
        block_flops(1, 0, D)
    with pytest.raises(ValueError, match="blocks"):
        TransformerStack([])


@pytest.mark.parametrize("make", [lambda eps: TransformerBlock(8, 2, eps=eps), lambda eps: DecoderBlock(8, 2, eps=eps)])
@pytest.mark.parametrize("eps", [0, -1.0, float("nan")])
def test_blocks_refuse_a_layernorm_epsilon_that_is_not_positive(make, eps):
    """Before: eps = -1 built a block whose output held NaN rows; eps = 0 divided a constant row by zero."""
    with pytest.raises(ValueError, match=rf"eps must be a finite number > 0, got {eps!r}"):
        make(eps)


def test_blocks_accept_a_tiny_epsilon():
    x = torch.randn(1, 3, 8)
    assert torch.isfinite(TransformerBlock(8, 2, eps=1e-12)(x)).all()
    assert torch.isfinite(DecoderBlock(8, 2, eps=1e-12)(x, x)).all()
