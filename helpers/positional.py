"""Positional encodings: patterns that tell an order-blind attention layer where a token sits.

Shapes follow the book's convention: ``T`` positions, model width ``d``; an encoding is a
``(T, d)`` tensor that is *added* to token embeddings of shape ``(B, T, d)`` (it broadcasts).

- ``sinusoidal_encoding(T, d)``   the fixed sinusoidal encoding, added to the embeddings (§14.52)
- ``apply_rope(x, positions)``    rotary positions: rotate queries/keys ``(..., T, d)`` pair by pair (§14.53)
- ``alibi_bias(n_heads, T)``      ALiBi: per-head linear distance penalties ``(n_heads, T, T)``
                                  added to the attention scores (§14.53)
"""

from __future__ import annotations

import numbers

import torch

from .checks import check_int as _check_int




def sinusoidal_encoding(T: int, d: int, *, base: float = 10000.0, dtype: torch.dtype | None = None) -> torch.Tensor:
    """The sinusoidal positional encoding of Vaswani et al. (2017) -> tensor ``(T, d)``.

    Row ``pos`` (``0 <= pos < T``) encodes position ``pos``; columns come in ``d / 2`` pairs
    ``(2i, 2i + 1)`` that share the angular frequency ``w_i = base ** (-2i / d)``::

        PE[pos, 2i]     = sin(pos * w_i)
        PE[pos, 2i + 1] = cos(pos * w_i)

    so row 0 is ``[0, 1, 0, 1, ...]``, the first pair turns once every ``2*pi`` positions and
    the last pair almost ``base`` times more slowly. Because each pair is a point on the unit
    circle, ``PE[pos + k]`` is ``PE[pos]`` rotated pair by pair through the angles ``k * w_i``:
    the same rotation for every ``pos``.

    Parameters
    ----------
    T : int, >= 1
        Number of positions (rows).
    d : int, even, >= 2
        Width of the encoding (columns). It must be even: the encoding is made of
        (sin, cos) pairs, and an unpaired sine column would break the shift-is-a-rotation
        property (``d`` odd raises ``ValueError`` rather than silently dropping or padding
        a column; encode with ``d + 1`` and slice if you really need an odd width).
    base : float, > 1, keyword-only
        The wavelength scale (10000 in the original Transformer).
    dtype : torch.dtype, keyword-only
        Dtype of the result (default: torch's default dtype). The angles are always
        computed in float64 and rounded once at the end, so a float32 encoding is accurate
        to float32 rounding even for large ``pos``.

    Returns
    -------
    torch.Tensor of shape ``(T, d)``; every row has Euclidean norm ``sqrt(d / 2)``.

    Raises
    ------
    ValueError
        If ``T`` is not an integer >= 1, ``d`` is not an even integer >= 2, or ``base`` is
        not a finite number > 1; the message names the offending argument.
    """
    T = _check_int("T", T, 1)
    d = _check_int("d", d, 2)
    if d % 2:
        raise ValueError(f"d must be even (the encoding is made of (sin, cos) column pairs), got d={d}")
    if isinstance(base, bool) or not isinstance(base, numbers.Real) or not (1 < float(base) < float("inf")):
        raise ValueError(f"base must be a finite number > 1, got {base!r}")
    if dtype is None:
        dtype = torch.get_default_dtype()

    pos = torch.arange(T, dtype=torch.float64).unsqueeze(1)                     # (T, 1)
    omega = float(base) ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)    # (d/2,)
    angles = pos * omega                                                        # (T, d/2)
    pe = torch.empty(T, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles)
    return pe.to(dtype)


def _check_base(base) -> float:
    if isinstance(base, bool) or not isinstance(base, numbers.Real) or not (1 < float(base) < float("inf")):
        raise ValueError(f"base must be a finite number > 1, got {base!r}")
    return float(base)


def apply_rope(x: torch.Tensor, positions=None, base: float = 10000.0) -> torch.Tensor:
    """Rotary position embedding (RoPE, Su et al.): rotate pairs of features by position-dependent angles.

    ``x`` has shape ``(..., T, d)`` (for attention: queries or keys ``(B, h, T, d_k)``) with ``d``
    even. The features are grouped into ``d / 2`` **interleaved** pairs ``(2i, 2i + 1)``, as in the
    RoFormer paper (not the "split halves" ``(i, i + d/2)`` layout some code bases use; the two
    layouts differ only by a fixed permutation of the features). Pair ``i`` at position ``pos``
    is rotated through the angle ``pos * theta_i`` with ``theta_i = base ** (-2i / d)``::

        y[..., 2i]     = x[..., 2i] * cos(pos theta_i) - x[..., 2i + 1] * sin(pos theta_i)
        y[..., 2i + 1] = x[..., 2i] * sin(pos theta_i) + x[..., 2i + 1] * cos(pos theta_i)

    Read as complex numbers ``z_i = x[2i] + 1j * x[2i+1]``, this is ``z_i * exp(1j * pos * theta_i)``.
    Consequences (both tested): every vector keeps its norm, and for a query ``q`` rotated at
    position ``m`` and a key ``k`` rotated at position ``n`` the score
    ``apply_rope(q, m) · apply_rope(k, n)`` depends on ``m`` and ``n`` only through ``m - n``.

    Parameters
    ----------
    x : torch.Tensor ``(..., T, d)``, floating point, ``d`` even
        The vectors to rotate; row ``t`` (dimension -2) sits at position ``positions[t]``.
    positions : None or tensor/sequence of numbers broadcastable to ``(..., T)``
        Position of each row; default ``arange(T)``. Positions may be any real numbers
        (an offset such as ``arange(T) + 100``, or fractional, interpolated positions).
    base : float, > 1
        Sets the slowest frequency, as in the sinusoidal encoding (10000 in RoFormer).

    Returns
    -------
    torch.Tensor of the same shape, dtype and device as ``x``. The angles are computed in
    float64 and the cosines and sines rounded once to ``x``'s dtype.

    Raises
    ------
    ValueError
        If ``x`` is not a floating-point tensor with at least 2 dimensions, its last dimension
        ``d`` is odd, ``positions`` does not end in ``T`` entries or does not broadcast, or
        ``base`` is not a finite number > 1.
    """
    if not isinstance(x, torch.Tensor) or x.dim() < 2 or not x.is_floating_point():
        got = f"{x.dtype} tensor of shape {tuple(x.shape)}" if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"x must be a floating-point tensor of shape (..., T, d), got {got}")
    T, d = x.shape[-2], x.shape[-1]
    if d % 2:
        raise ValueError(f"d (the last dimension of x) must be even: RoPE rotates feature pairs, got d={d}")
    base = _check_base(base)
    if positions is None:
        pos = torch.arange(T, dtype=torch.float64, device=x.device)
    else:
        pos = torch.as_tensor(positions, device=x.device)
        if pos.dtype == torch.bool or pos.is_complex():
            raise ValueError(f"positions must be real numbers, got dtype {pos.dtype}")
        pos = pos.to(torch.float64)
        if pos.dim() == 0 or pos.shape[-1] != T:
            raise ValueError(f"positions must have shape (..., T) with T={T} (x has shape {tuple(x.shape)}), "
                             f"got shape {tuple(pos.shape)}")
        try:
            torch.broadcast_shapes(pos.shape, x.shape[:-1])
        except RuntimeError:
            raise ValueError(f"positions of shape {tuple(pos.shape)} does not broadcast against x's (..., T) = "
                             f"{tuple(x.shape[:-1])}") from None
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64, device=x.device) / d)  # (d/2,)
    angles = pos.unsqueeze(-1) * theta                                                  # (..., T, d/2)
    cos, sin = torch.cos(angles).to(x.dtype), torch.sin(angles).to(x.dtype)
    x_even, x_odd = x[..., 0::2], x[..., 1::2]
    rotated = torch.stack([x_even * cos - x_odd * sin, x_even * sin + x_odd * cos], dim=-1)  # (..., T, d/2, 2)
    return rotated.flatten(-2)


def alibi_bias(n_heads: int, T: int, *, dtype: torch.dtype | None = None, device=None) -> torch.Tensor:
    """ALiBi (Press et al.): per-head linear distance penalties added to attention scores -> ``(n_heads, T, T)``.

    Head ``h`` (``h = 1 .. n_heads``, stored at index ``h - 1``) has slope
    ``m_h = 2 ** (-8 h / n_heads)``, a geometric sequence; for 8 heads 1/2, 1/4, ..., 1/256
    (for powers of two this is the paper's choice; the paper interpolates differently for other
    head counts, this function always uses the formula above). Entry ``[h - 1, i, j]`` is::

        -m_h * (i - j)   for keys j <= i   (0 on the diagonal, more negative further back)
        0                for keys j >  i   (the future)

    Future entries are left at 0 on purpose: hiding them is the causal mask's job
    (``helpers.attention.causal_mask``), applied on top of the bias. The bias is added to the
    scaled scores ``q kᵀ / sqrt(d_k)`` before the softmax; it broadcasts against ``(B, n_heads, T, T)``.

    Raises
    ------
    ValueError
        If ``n_heads`` or ``T`` is not an integer >= 1 (the message names the argument).
    """
    n_heads = _check_int("n_heads", n_heads, 1)
    T = _check_int("T", T, 1)
    h = torch.arange(1, n_heads + 1, dtype=torch.float64, device=device)
    slopes = 2.0 ** (-8.0 * h / n_heads)                                   # (n_heads,)
    i = torch.arange(T, device=device)
    distance = (i[:, None] - i[None, :]).clamp_min(0).to(torch.float64)   # (T, T): i - j below the diagonal
    bias = -slopes[:, None, None] * distance + 0.0                       # + 0.0 turns -0.0 into 0.0
    return bias.to(dtype if dtype is not None else torch.get_default_dtype())
