"""The Transformer block, written from its definition on top of ``helpers.attention`` (§14.54).

- ``FeedForward(d_model, d_ff, activation)``        the position-wise feed-forward network
- ``TransformerBlock(d_model, n_heads, ...)``       self-attention + feed-forward, each wrapped in a
                                                    residual connection and a LayerNorm, post-norm
                                                    (``norm_first=False``) or pre-norm (``norm_first=True``)
- ``EncoderBlock``                                  the block with bidirectional self-attention
- ``DecoderOnlyBlock``                              the block with causal self-attention (GPT-style)
- ``DecoderBlock(d_model, n_heads, ...)``           masked self-attention + cross-attention + feed-forward
- ``TransformerStack(blocks, final_norm)``          blocks applied in turn, with an optional final LayerNorm
- ``load_torch_encoder_layer`` / ``load_torch_decoder_layer``
                                                    copy a ``torch.nn.TransformerEncoderLayer`` /
                                                    ``TransformerDecoderLayer``'s weights into ours
- ``block_parameter_count(...)``                    the parameter count of a block, by formula
- ``block_flops(...)``                              the matmul FLOPs of a forward pass, by formula
- ``count_matmul_flops(module, ...)``               the same, counted by ``torch.utils.flop_counter``

The two orders, for a sublayer F (attention or feed-forward) and the residual stream x ``(B, T, d)``:

    post-norm (Vaswani et al., 2017):  x <- LayerNorm(x + F(x))
    pre-norm:                          x <- x + F(LayerNorm(x))

Masks follow ``helpers.attention``: boolean, ``True`` = blocked. Dropout (when > 0) is applied
where torch applies it: after the activation inside the feed-forward network and to each
sublayer's output before it is added to the stream (there is no dropout on attention weights).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch
from torch import nn

from .attention import MultiHeadAttention, causal_mask, load_torch_mha_weights
from .checks import check_positive

__all__ = [
    "FeedForward",
    "TransformerBlock",
    "EncoderBlock",
    "DecoderOnlyBlock",
    "DecoderBlock",
    "TransformerStack",
    "load_torch_encoder_layer",
    "load_torch_decoder_layer",
    "block_parameter_count",
    "block_flops",
    "count_matmul_flops",
    "ACTIVATIONS",
]

#: The feed-forward activations the blocks accept (torch's ``gelu`` is the exact, erf-based one).
ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU}
_KINDS = ("encoder", "decoder_only", "decoder")


# --------------------------------------------------------------------------- argument checks
def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


def _activation(activation: str) -> str:
    if not isinstance(activation, str) or activation.lower() not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
    return activation.lower()


def _dropout(dropout) -> float:
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must be a number in [0, 1), got {dropout!r}")
    return float(dropout)


def _kind(kind: str) -> str:
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {list(_KINDS)}, got {kind!r}")
    return kind


def _check_stream(name: str, t, d_model: int) -> None:
    if not isinstance(t, torch.Tensor) or t.dim() != 3 or t.shape[-1] != d_model:
        shape = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
        raise ValueError(f"{name} must have shape (B, T, d_model={d_model}), got {shape}")


def _combine(mask_a: torch.Tensor | None, mask_b: torch.Tensor | None) -> torch.Tensor | None:
    """Block a pair if either mask blocks it (masks are boolean, True = blocked)."""
    if mask_a is None:
        return mask_b
    if mask_b is None:
        return mask_a
    return mask_a | mask_b


@torch.no_grad()
def _torch_style_attention_init(attn: MultiHeadAttention) -> None:
    """Initialise as ``torch.nn.MultiheadAttention`` does: W_q, W_k, W_v drawn together by Xavier-uniform
    from their stacked ``(3d, d)`` matrix, i.e. U(-a, a) with a = sqrt(6 / (4 d)); zero biases; W_o keeps
    ``nn.Linear``'s default."""
    a = math.sqrt(6.0 / (4 * attn.d_model))
    for lin in (attn.w_q, attn.w_k, attn.w_v):
        nn.init.uniform_(lin.weight, -a, a)
        if lin.bias is not None:
            nn.init.zeros_(lin.bias)
    if attn.w_o.bias is not None:
        nn.init.zeros_(attn.w_o.bias)


# --------------------------------------------------------------------------- modules
class FeedForward(nn.Module):
    """The position-wise feed-forward network FFN(x) = W_2 φ(W_1 x + b_1) + b_2.

    The same two-layer network is applied to every position on its own: it mixes features,
    never positions (only attention does that).

    Args:
        d_model: width d of the input and output.
        d_ff: hidden width (4 d in Vaswani et al., 2017).
        activation: ``"relu"`` or ``"gelu"``.
        dropout: dropout probability after the activation (0 = none).
        bias: whether the two linear layers have biases.

    Shapes: ``(..., d_model)`` -> ``(..., d_model)``; typically ``(B, T, d)``.
    Submodules ``linear1`` ``(d_ff x d)`` and ``linear2`` ``(d x d_ff)``, named as in torch.
    """

    def __init__(self, d_model: int, d_ff: int, activation: str = "relu", dropout: float = 0.0, bias: bool = True):
        super().__init__()
        _positive_int("d_model", d_model)
        _positive_int("d_ff", d_ff)
        self.activation_name = _activation(activation)
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)
        self.activation = ACTIVATIONS[self.activation_name]()
        self.dropout = nn.Dropout(_dropout(dropout))
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(x, torch.Tensor) or x.shape[-1] != self.linear1.in_features:
            shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(f"x must have shape (..., d_model={self.linear1.in_features}), got {shape}")
        return self.linear2(self.dropout(self.activation(self.linear1(x))))


class TransformerBlock(nn.Module):
    """One Transformer block: self-attention and a feed-forward network on a residual stream.

    post-norm (``norm_first=False``, Vaswani et al. 2017, torch's default)::

        x = norm1(x + attn(x));  x = norm2(x + ffn(x))

    pre-norm (``norm_first=True``, GPT-2 and most models since)::

        x = x + attn(norm1(x));  x = x + ffn(norm2(x))

    Args:
        d_model: width d of the residual stream; divisible by ``n_heads``.
        n_heads: number of attention heads h.
        d_ff: hidden width of the feed-forward network (default 4 d).
        activation: ``"relu"`` or ``"gelu"``.
        norm_first: pre-norm if True, post-norm if False.
        causal: if True, every position attends only to itself and earlier positions.
        dropout: dropout probability on each sublayer's output and inside the FFN (0 = none).
        bias: biases in the attention projections, the FFN and the LayerNorms (torch's layers have them).
        eps: the LayerNorms' epsilon, a finite number > 0.

    Submodules: ``self_attn`` (``helpers.attention.MultiHeadAttention``), ``ffn`` (``FeedForward``),
    ``norm1``, ``norm2`` (``nn.LayerNorm``).
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int | None = None,
        activation: str = "relu",
        norm_first: bool = False,
        causal: bool = False,
        dropout: float = 0.0,
        bias: bool = True,
        eps: float = 1e-5,
    ):
        super().__init__()
        _positive_int("d_model", d_model)
        _positive_int("n_heads", n_heads)
        d_ff = 4 * d_model if d_ff is None else _positive_int("d_ff", d_ff)
        if not isinstance(norm_first, bool):
            raise ValueError(f"norm_first must be True (pre-norm) or False (post-norm), got {norm_first!r}")
        if not isinstance(causal, bool):
            raise ValueError(f"causal must be a bool, got {causal!r}")
        check_positive("eps", eps)
        self.d_model, self.n_heads, self.d_ff = d_model, n_heads, d_ff
        self.norm_first, self.causal = norm_first, causal
        self.self_attn = MultiHeadAttention(d_model, n_heads, bias=bias)
        self.ffn = FeedForward(d_model, d_ff, activation, dropout, bias)
        self.norm1 = nn.LayerNorm(d_model, eps=eps, bias=bias)
        self.norm2 = nn.LayerNorm(d_model, eps=eps, bias=bias)
        self.dropout1 = nn.Dropout(_dropout(dropout))
        self.dropout2 = nn.Dropout(dropout)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw fresh parameters the way torch initialises ``TransformerEncoderLayer``: attention as
        ``nn.MultiheadAttention`` (Xavier-uniform Q/K/V, zero biases), ``nn.Linear`` defaults in the
        FFN, LayerNorm gains 1 and shifts 0."""
        _torch_style_attention_init(self.self_attn)
        self.ffn.linear1.reset_parameters()
        self.ffn.linear2.reset_parameters()
        self.norm1.reset_parameters()
        self.norm2.reset_parameters()

    def _attend(self, x: torch.Tensor, mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        out, weights = self.self_attn(x, mask=mask)
        return self.dropout1(out), weights

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None, return_weights: bool = False
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Apply the block to the residual stream.

        Args:
            x: the residual stream ``(B, T, d_model)``.
            mask: optional extra boolean mask (True = blocked) broadcastable to ``(B, h, T, T)``,
                e.g. key padding ``(B, 1, 1, T)``; combined with the causal mask when ``causal``.
            return_weights: also return the attention weights ``(B, h, T, T)``.

        Returns:
            the new stream ``(B, T, d_model)`` (and the weights if asked).
        """
        _check_stream("x", x, self.d_model)
        if self.causal:
            mask = _combine(causal_mask(x.shape[1], device=x.device), mask)
        if self.norm_first:
            a, weights = self._attend(self.norm1(x), mask)
            x = x + a
            x = x + self.dropout2(self.ffn(self.norm2(x)))
        else:
            a, weights = self._attend(x, mask)
            x = self.norm1(x + a)
            x = self.norm2(x + self.dropout2(self.ffn(x)))
        return (x, weights) if return_weights else x


class EncoderBlock(TransformerBlock):
    """``TransformerBlock`` with bidirectional self-attention (every position sees every other)."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int | None = None, activation: str = "relu",
                 norm_first: bool = False, dropout: float = 0.0, bias: bool = True, eps: float = 1e-5):
        super().__init__(d_model, n_heads, d_ff, activation, norm_first, False, dropout, bias, eps)


class DecoderOnlyBlock(TransformerBlock):
    """``TransformerBlock`` with causal self-attention: the block of a decoder-only language model.

    Output position t depends on input positions 0..t only. Pre-norm by default, as in GPT-2.
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int | None = None, activation: str = "gelu",
                 norm_first: bool = True, dropout: float = 0.0, bias: bool = True, eps: float = 1e-5):
        super().__init__(d_model, n_heads, d_ff, activation, norm_first, True, dropout, bias, eps)


class DecoderBlock(nn.Module):
    """The decoder block of an encoder–decoder Transformer: three sublayers on a residual stream.

    1. masked (causal) self-attention over the decoder's own positions,
    2. cross-attention: queries from the decoder stream, keys and values from the encoder's
       output ``memory``,
    3. the position-wise feed-forward network,

    each wrapped as in ``TransformerBlock`` (post-norm ``x = norm_i(x + F_i(x))`` or pre-norm
    ``x = x + F_i(norm_i(x))``). Arguments as in ``TransformerBlock``. Submodules ``self_attn``,
    ``cross_attn``, ``ffn``, ``norm1``, ``norm2``, ``norm3``.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int | None = None,
        activation: str = "relu",
        norm_first: bool = False,
        dropout: float = 0.0,
        bias: bool = True,
        eps: float = 1e-5,
    ):
        super().__init__()
        _positive_int("d_model", d_model)
        _positive_int("n_heads", n_heads)
        d_ff = 4 * d_model if d_ff is None else _positive_int("d_ff", d_ff)
        if not isinstance(norm_first, bool):
            raise ValueError(f"norm_first must be True (pre-norm) or False (post-norm), got {norm_first!r}")
        check_positive("eps", eps)
        self.d_model, self.n_heads, self.d_ff, self.norm_first = d_model, n_heads, d_ff, norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, bias=bias)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, bias=bias)
        self.ffn = FeedForward(d_model, d_ff, activation, dropout, bias)
        self.norm1 = nn.LayerNorm(d_model, eps=eps, bias=bias)
        self.norm2 = nn.LayerNorm(d_model, eps=eps, bias=bias)
        self.norm3 = nn.LayerNorm(d_model, eps=eps, bias=bias)
        self.dropout1 = nn.Dropout(_dropout(dropout))
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw fresh parameters the way torch initialises ``TransformerDecoderLayer`` (see
        ``TransformerBlock.reset_parameters``)."""
        _torch_style_attention_init(self.self_attn)
        _torch_style_attention_init(self.cross_attn)
        for module in (self.ffn.linear1, self.ffn.linear2, self.norm1, self.norm2, self.norm3):
            module.reset_parameters()

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        mask: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
        return_weights: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Apply the block.

        Args:
            x: the decoder's residual stream ``(B, T, d_model)``.
            memory: the encoder's output ``(B, S, d_model)``; S may differ from T.
            mask: optional extra self-attention mask (True = blocked), broadcastable to
                ``(B, h, T, T)``; always combined with the causal mask.
            memory_mask: optional cross-attention mask broadcastable to ``(B, h, T, S)``,
                e.g. the encoder's key padding ``(B, 1, 1, S)``.
            return_weights: also return the self- and cross-attention weights
                ``(B, h, T, T)`` and ``(B, h, T, S)``.

        Returns:
            the new stream ``(B, T, d_model)`` (and the two weight tensors if asked).
        """
        _check_stream("x", x, self.d_model)
        _check_stream("memory", memory, self.d_model)
        if memory.shape[0] != x.shape[0]:
            raise ValueError(f"x and memory must have the same batch size B: x {tuple(x.shape)}, "
                             f"memory {tuple(memory.shape)}")
        mask = _combine(causal_mask(x.shape[1], device=x.device), mask)

        def self_attn(z):
            out, w = self.self_attn(z, mask=mask)
            return self.dropout1(out), w

        def cross_attn(z):
            out, w = self.cross_attn(z, mask=memory_mask, context=memory)
            return self.dropout2(out), w

        if self.norm_first:
            a, w_self = self_attn(self.norm1(x))
            x = x + a
            c, w_cross = cross_attn(self.norm2(x))
            x = x + c
            x = x + self.dropout3(self.ffn(self.norm3(x)))
        else:
            a, w_self = self_attn(x)
            x = self.norm1(x + a)
            c, w_cross = cross_attn(x)
            x = self.norm2(x + c)
            x = self.norm3(x + self.dropout3(self.ffn(x)))
        return (x, w_self, w_cross) if return_weights else x


class TransformerStack(nn.Module):
    """Blocks applied one after another, then an optional final LayerNorm.

    A pre-norm stack needs the final LayerNorm: its residual stream is never normalised
    inside the blocks (GPT-2's ``ln_f``); a post-norm stack's last block already ends in one.

    Args:
        blocks: ``TransformerBlock`` s (or any modules taking ``(x, mask)``), applied in order.
        final_norm: add ``nn.LayerNorm(d_model)`` after the last block; the default ``None``
            means "if the blocks are pre-norm".

    ``forward(x, mask=None)``: ``(B, T, d)`` -> ``(B, T, d)``; ``mask`` is passed to every block.
    """

    def __init__(self, blocks: Iterable[nn.Module], final_norm: bool | None = None):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        if len(self.blocks) == 0:
            raise ValueError("blocks must hold at least one block, got none")
        first = self.blocks[0]
        d_model = getattr(first, "d_model", None)
        if final_norm is None:
            final_norm = bool(getattr(first, "norm_first", False))
        if final_norm and d_model is None:
            raise ValueError("final_norm=True needs blocks with a d_model attribute")
        self.final_norm = nn.LayerNorm(d_model) if final_norm else nn.Identity()

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        for block in self.blocks:
            x = block(x, mask)
        return self.final_norm(x)


# --------------------------------------------------------------------------- torch interop
def _check_activation_matches(ours_ffn: FeedForward, theirs) -> None:
    act = theirs.activation
    name = getattr(act, "__name__", type(act).__name__).lower()
    if ours_ffn.activation_name not in name:
        raise ValueError(f"activation mismatch: ours is {ours_ffn.activation_name!r}, torch's is {name!r}")


@torch.no_grad()
def _copy_ffn_and_norms(ours, theirs, norms: tuple[str, ...]) -> None:
    ours.ffn.linear1.load_state_dict(theirs.linear1.state_dict())
    ours.ffn.linear2.load_state_dict(theirs.linear2.state_dict())
    for name in norms:
        getattr(ours, name).load_state_dict(getattr(theirs, name).state_dict())


def load_torch_encoder_layer(ours: TransformerBlock, theirs: nn.TransformerEncoderLayer) -> TransformerBlock:
    """Copy a ``torch.nn.TransformerEncoderLayer``'s weights into ``ours`` (in place; returns ``ours``).

    The two must agree on d_model, heads, d_ff, biases, activation and ``norm_first``.
    """
    if ours.norm_first != theirs.norm_first:
        raise ValueError(f"norm_first mismatch: ours {ours.norm_first}, torch's {theirs.norm_first}")
    if theirs.linear1.out_features != ours.d_ff:
        raise ValueError(f"d_ff mismatch: ours {ours.d_ff}, torch's {theirs.linear1.out_features}")
    _check_activation_matches(ours.ffn, theirs)
    load_torch_mha_weights(ours.self_attn, theirs.self_attn)
    _copy_ffn_and_norms(ours, theirs, ("norm1", "norm2"))
    return ours


def load_torch_decoder_layer(ours: DecoderBlock, theirs: nn.TransformerDecoderLayer) -> DecoderBlock:
    """Copy a ``torch.nn.TransformerDecoderLayer``'s weights into ``ours`` (in place; returns ``ours``).

    torch calls the cross-attention ``multihead_attn``; the rest is named as ours.
    """
    if ours.norm_first != theirs.norm_first:
        raise ValueError(f"norm_first mismatch: ours {ours.norm_first}, torch's {theirs.norm_first}")
    if theirs.linear1.out_features != ours.d_ff:
        raise ValueError(f"d_ff mismatch: ours {ours.d_ff}, torch's {theirs.linear1.out_features}")
    _check_activation_matches(ours.ffn, theirs)
    load_torch_mha_weights(ours.self_attn, theirs.self_attn)
    load_torch_mha_weights(ours.cross_attn, theirs.multihead_attn)
    _copy_ffn_and_norms(ours, theirs, ("norm1", "norm2", "norm3"))
    return ours


# --------------------------------------------------------------------------- accounting
def block_parameter_count(d_model: int, d_ff: int | None = None, kind: str = "encoder",
                          bias: bool = True) -> dict[str, int]:
    """Parameters of one block, by formula (``n_heads`` does not enter).

    attention sublayer: 4 d² weights (+ 4 d biases); FFN: 2 d d_ff (+ d_ff + d);
    LayerNorm: d gains (+ d shifts). An encoder or decoder-only block has one attention and two
    LayerNorms, a decoder block two attentions and three LayerNorms.

    Returns:
        dict with ``attention``, ``ffn``, ``norms`` and ``total``.
    """
    d = _positive_int("d_model", d_model)
    d_ff = 4 * d if d_ff is None else _positive_int("d_ff", d_ff)
    n_attn, n_norm = (2, 3) if _kind(kind) == "decoder" else (1, 2)
    b = 1 if bias else 0
    attention = n_attn * (4 * d * d + b * 4 * d)
    ffn = 2 * d * d_ff + b * (d_ff + d)
    norms = n_norm * (d + b * d)
    return {"attention": attention, "ffn": ffn, "norms": norms, "total": attention + ffn + norms}


def block_flops(batch: int, T: int, d_model: int, d_ff: int | None = None, kind: str = "encoder",
                T_memory: int | None = None) -> dict[str, int]:
    """Matmul FLOPs of one forward pass through a block, by formula (a multiply–add counts 2).

    Counted as ``torch.utils.flop_counter`` counts them: matrix products only (bias additions,
    softmax, LayerNorm, activation and residual additions are not matmuls, and are left out), and
    a causal mask saves nothing because the masked scores are still computed. With N = batch·T:

    - projections: 2 N d² per projection (Q, K, V, output: 8 N d²); a decoder's cross-attention
      projects K and V from the memory: 4·batch·S·d² for those two, 4 N d² for Q and output;
    - scores Q Kᵀ and weights·V: 2 N T d each (2 N S d each for cross-attention);
    - FFN: 4 N d d_ff.

    ``n_heads`` does not enter: h heads of width d/h do the same total work.

    Returns:
        dict with ``projections``, ``scores``, ``weighted_values``, ``ffn`` and ``total``.
    """
    Bz = _positive_int("batch", batch)
    T = _positive_int("T", T)
    d = _positive_int("d_model", d_model)
    d_ff = 4 * d if d_ff is None else _positive_int("d_ff", d_ff)
    N = Bz * T
    projections, scores, weighted = 8 * N * d * d, 2 * N * T * d, 2 * N * T * d
    if _kind(kind) == "decoder":
        S = T if T_memory is None else _positive_int("T_memory", T_memory)
        projections += 4 * N * d * d + 4 * Bz * S * d * d
        scores += 2 * N * S * d
        weighted += 2 * N * S * d
    elif T_memory is not None:
        raise ValueError(f"T_memory only applies to kind='decoder', got kind={kind!r}, T_memory={T_memory!r}")
    ffn = 4 * N * d * d_ff
    return {"projections": projections, "scores": scores, "weighted_values": weighted, "ffn": ffn,
            "total": projections + scores + weighted + ffn}


def count_matmul_flops(module: nn.Module, *args, **kwargs) -> int:
    """FLOPs of ``module(*args, **kwargs)`` as counted by ``torch.utils.flop_counter.FlopCounterMode``.

    It intercepts every aten operator and counts those with a FLOP formula (matmuls, convolutions,
    attention kernels), a multiply–add as 2. Runs under ``torch.no_grad()``; returns an int.
    """
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        module(*args, **kwargs)
    return int(counter.get_total_flops())
