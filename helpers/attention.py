"""Scaled dot-product attention, the causal mask and multi-head attention, written from the definitions.

- ``scaled_dot_product_attention(q, k, v, mask)``  softmax(q kᵀ / √d_k) v, with optional blocking mask (§14.50)
- ``causal_mask(T)``                                 the (T, T) mask that hides the future (§14.50)
- ``MultiHeadAttention(d_model, n_heads)``           h heads of width d_model / h, self- or cross-attention (§14.51)
- ``load_torch_mha_weights(ours, theirs)``           copy a ``torch.nn.MultiheadAttention``'s weights into ours

Mask convention throughout: a **boolean** tensor, ``True`` = *blocked* (this query may not see this key),
the same convention as ``torch.nn.MultiheadAttention``'s ``attn_mask`` (and the opposite of
``torch.nn.functional.scaled_dot_product_attention``, where ``True`` means "may attend").
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .checks import check_int

__all__ = ["scaled_dot_product_attention", "causal_mask", "MultiHeadAttention", "load_torch_mha_weights"]


def _shape(t: torch.Tensor) -> tuple[int, ...]:
    return tuple(t.shape)


def scaled_dot_product_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V, with blocked pairs set to -inf *before* the softmax.

    Args:
        q: queries ``(..., Tq, d_k)``.
        k: keys ``(..., Tk, d_k)``.
        v: values ``(..., Tk, d_v)``.
        mask: optional boolean tensor broadcastable to ``(..., Tq, Tk)``; ``True`` = blocked.
            A query row whose keys are *all* blocked has no distribution to normalise and
            comes out as NaN (0/0), as in ``nn.MultiheadAttention``; torch's fused
            ``F.scaled_dot_product_attention`` returns zeros for it instead. Avoid such rows.

    The leading dimensions ``...`` (batch, heads) must broadcast against each other.

    Returns:
        ``(out, weights)``: out ``(..., Tq, d_v)`` and the attention weights ``(..., Tq, Tk)``,
        each row of which is non-negative and sums to 1.

    Raises:
        ValueError: naming the offending shapes, when q and k disagree on d_k, k and v on Tk,
            a tensor has fewer than two dimensions or is not floating point, q, k and v differ in
            dtype, the leading dimensions do not broadcast,
            or ``mask`` is not boolean or does not broadcast to ``(..., Tq, Tk)``.
    """
    _check_qkv(q, k, v, mask)
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))  # a blocked pair gets weight exp(-inf) = 0
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def _check_qkv(q, k, v, mask) -> None:
    """The argument checks of :func:`scaled_dot_product_attention` (its Raises section)."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.dim() < 2:
            shape = _shape(t) if isinstance(t, torch.Tensor) else type(t).__name__
            raise ValueError(f"{name} must be a tensor of shape (..., T, d) with at least 2 dimensions, got {shape}")
        if not t.dtype.is_floating_point:
            raise ValueError(f"{name} must be a floating-point tensor (attention takes a softmax of q kᵀ / √d_k), "
                             f"got {t.dtype}; convert it with {name}.float()")
    if not q.dtype == k.dtype == v.dtype:
        raise ValueError(f"q, k and v must have one dtype, got q {q.dtype}, k {k.dtype}, v {v.dtype}; "
                         f"convert them to one, e.g. k.to(q.dtype)")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must have the same last dimension d_k: q has shape {_shape(q)} (d_k={q.shape[-1]}), "
            f"k has shape {_shape(k)} (d_k={k.shape[-1]})"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have the same number of positions Tk (dimension -2): k has shape {_shape(k)}, "
            f"v has shape {_shape(v)}"
        )
    try:
        batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"the leading (batch/head) dimensions of q, k and v must broadcast: q {_shape(q)}, k {_shape(k)}, "
            f"v {_shape(v)}"
        ) from None
    if mask is not None:
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
            got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
            raise ValueError(f"mask must be a boolean tensor (True = blocked), got {got}")
        target = (*batch, q.shape[-2], k.shape[-2])
        try:
            ok = torch.broadcast_shapes(mask.shape, target) == torch.Size(target)
        except RuntimeError:
            ok = False
        if not ok:
            raise ValueError(
                f"mask of shape {_shape(mask)} does not broadcast to the scores' shape (..., Tq, Tk) = {target} "
                f"(q {_shape(q)}, k {_shape(k)})"
            )


def causal_mask(T: int, device: torch.device | str | None = None) -> torch.Tensor:
    """The causal mask: a boolean ``(T, T)`` tensor, True strictly above the diagonal (key j > query i).

    Query i may attend to keys 0..i only. Broadcasts against scores ``(..., T, T)``.
    """
    T = check_int("T", T, 1)
    return torch.ones(T, T, dtype=torch.bool, device=device).triu(diagonal=1)


class MultiHeadAttention(nn.Module):
    """Multi-head attention: h scaled dot-product attentions in d_model/h-dimensional subspaces.

    head_i = Attention(x W_q[:, i], c W_k[:, i], c W_v[:, i]);  out = Concat(head_1..head_h) W_o,
    with c = x (self-attention) or c = ``context`` (cross-attention). The projections are
    ``nn.Linear(d_model, d_model, bias=bias)`` modules named ``w_q``, ``w_k``, ``w_v``, ``w_o``;
    head i uses columns ``i*d_k:(i+1)*d_k`` of the projected queries, keys and values.
    The parameter count, 4 d_model² (+ 4 d_model with bias), does not depend on ``n_heads``.

    Args:
        d_model: model width d; must be divisible by ``n_heads``.
        n_heads: number of heads h; each has width d_k = d_v = d_model // n_heads.
        bias: whether the four projections have a bias.
    """

    def __init__(self, d_model: int, n_heads: int, bias: bool = False):
        super().__init__()
        for name, value in (("d_model", d_model), ("n_heads", n_heads)):
            check_int(name, value, 1)
        if d_model % n_heads != 0:
            raise ValueError(
                f"d_model must be divisible by n_heads: d_model={d_model}, n_heads={n_heads} "
                f"(d_model % n_heads = {d_model % n_heads})"
            )
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def split_heads(self, z: torch.Tensor) -> torch.Tensor:
        """``(B, T, d_model)`` -> ``(B, h, T, d_k)``: head i gets columns i*d_k:(i+1)*d_k."""
        B, T, _ = z.shape
        return z.view(B, T, self.n_heads, self.d_k).transpose(1, 2)

    def merge_heads(self, z: torch.Tensor) -> torch.Tensor:
        """``(B, h, T, d_k)`` -> ``(B, T, d_model)``, the inverse of ``split_heads`` (the Concat)."""
        B, h, T, d_k = z.shape
        return z.transpose(1, 2).reshape(B, T, h * d_k)

    def _check(self, x, context) -> None:
        for name, t in (("x", x), ("context", context)):
            if not isinstance(t, torch.Tensor) or t.dim() != 3 or t.shape[-1] != self.d_model:
                shape = _shape(t) if isinstance(t, torch.Tensor) else type(t).__name__
                raise ValueError(f"{name} must have shape (B, T, d_model={self.d_model}), got {shape}")
        if context.shape[0] != x.shape[0]:
            raise ValueError(f"x and context must have the same batch size B: x {_shape(x)}, context {_shape(context)}")

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None, context: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Attend from ``x`` to itself, or to ``context`` (cross-attention).

        Args:
            x: queries' source ``(B, Tq, d_model)``.
            mask: optional boolean mask, True = blocked, broadcastable to ``(B, h, Tq, Tk)``:
                e.g. ``causal_mask(T)`` of shape ``(Tq, Tk)``, or a key-padding mask ``(B, 1, 1, Tk)``.
            context: keys' and values' source ``(B, Tk, d_model)``; None means ``x`` (self-attention).

        Returns:
            ``(out, weights)``: out ``(B, Tq, d_model)`` and per-head weights ``(B, h, Tq, Tk)``.
        """
        context = x if context is None else context
        self._check(x, context)
        q = self.split_heads(self.w_q(x))        # (B, h, Tq, d_k)
        k = self.split_heads(self.w_k(context))  # (B, h, Tk, d_k)
        v = self.split_heads(self.w_v(context))  # (B, h, Tk, d_k)
        heads, weights = scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(self.merge_heads(heads)), weights


@torch.no_grad()
def load_torch_mha_weights(ours: MultiHeadAttention, theirs: nn.MultiheadAttention) -> MultiHeadAttention:
    """Copy the weights of a ``torch.nn.MultiheadAttention`` into ``ours`` (in place; returns ``ours``).

    torch stacks the three input projections in ``in_proj_weight`` ``(3 d_model, d_model)`` as
    [W_q; W_k; W_v] and keeps the output projection in ``out_proj``. Both modules must have the
    same ``d_model``, number of heads and biases (torch's module must use packed projections,
    i.e. ``kdim = vdim = embed_dim``).
    """
    if theirs.embed_dim != ours.d_model or theirs.num_heads != ours.n_heads:
        raise ValueError(
            f"shape mismatch: torch module has embed_dim={theirs.embed_dim}, num_heads={theirs.num_heads}; "
            f"ours has d_model={ours.d_model}, n_heads={ours.n_heads}"
        )
    if theirs.in_proj_weight is None:
        raise ValueError("theirs must use packed input projections (kdim = vdim = embed_dim)")
    has_bias = theirs.in_proj_bias is not None
    if has_bias != (ours.w_q.bias is not None):
        raise ValueError(f"bias mismatch: torch module bias={has_bias}, ours bias={ours.w_q.bias is not None}")
    d = ours.d_model
    for i, lin in enumerate((ours.w_q, ours.w_k, ours.w_v)):
        lin.weight.copy_(theirs.in_proj_weight[i * d:(i + 1) * d])
        if has_bias:
            lin.bias.copy_(theirs.in_proj_bias[i * d:(i + 1) * d])
    ours.w_o.weight.copy_(theirs.out_proj.weight)
    if has_bias:
        ours.w_o.bias.copy_(theirs.out_proj.bias)
    return ours
