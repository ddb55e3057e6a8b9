"""Turning a language model's logits into the next token: temperature, top-k, nucleus (top-p), greedy.

- ``filter_logits(logits, temperature, top_k, top_p)``  rescale, then set the excluded tokens to -inf (§14.60)
- ``sample_next(logits, temperature, top_k, top_p, generator)``  one draw per row; ``temperature=0`` is greedy

Both work on logits of shape ``(V,)`` or ``(..., V)``: every leading dimension (batch, position)
is an independent distribution over the vocabulary of size ``V``, the last dimension.

Order of operations (the usual one, e.g. in Hugging Face ``generate``): divide by the temperature,
keep the top-k, then keep the nucleus of the distribution that top-k left (renormalised).

Ties are kept together: a token whose logit equals that of the last token kept is kept too, so
the kept set never depends on how a sort happens to order equal values. With ties, top-k can
therefore keep more than k tokens, and top-p more than the smallest nucleus.
"""

from __future__ import annotations

import math
import numbers

import torch

__all__ = ["filter_logits", "sample_next", "TOP_P_TOLERANCE"]

#: A prefix of the sorted distribution whose mass is within this of ``top_p`` counts as reaching it,
#: so that rounding in the softmax (probabilities 0.5 and 0.3 summing to 0.79999997) never adds a token.
TOP_P_TOLERANCE = 1e-6


def _check_logits(logits: torch.Tensor) -> None:
    if not isinstance(logits, torch.Tensor):
        raise ValueError(f"logits must be a torch.Tensor of shape (..., V), got {type(logits).__name__}")
    if logits.dim() < 1 or logits.shape[-1] < 1:
        raise ValueError(f"logits must have shape (..., V) with V >= 1, got shape {tuple(logits.shape)}")
    if not logits.is_floating_point():
        raise ValueError(f"logits must be a floating-point tensor, got dtype {logits.dtype}")


def _is_real(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _check_options(temperature, top_k, top_p, allow_zero_temperature: bool) -> None:
    if not _is_real(temperature) or not math.isfinite(temperature) or temperature < 0 or (
        temperature == 0 and not allow_zero_temperature
    ):
        valid = "a finite number >= 0 (0 = greedy)" if allow_zero_temperature else "a finite number > 0"
        raise ValueError(f"temperature must be {valid}, got {temperature!r}")
    if top_k is not None and (not isinstance(top_k, numbers.Integral) or isinstance(top_k, bool) or top_k < 1):
        raise ValueError(f"top_k must be None or an integer >= 1, got {top_k!r}")
    if top_p is not None and (not _is_real(top_p) or not (0 < top_p <= 1)):
        raise ValueError(f"top_p must be None or a number in (0, 1], got {top_p!r}")


def filter_logits(
    logits: torch.Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
) -> torch.Tensor:
    """Logits divided by ``temperature``, with every token outside the top-k or the nucleus set to -inf.

    Args:
        logits: unnormalised log-probabilities ``(..., V)``, e.g. ``(V,)`` or ``(B, V)``; may already
            contain -inf for forbidden tokens (not a whole row of them).
        temperature: T > 0; the distribution becomes softmax(logits / T). T < 1 sharpens it,
            T > 1 flattens it.
        top_k: keep the k largest logits of each row (None: no limit; k >= V keeps all).
        top_p: keep the nucleus: the smallest set of most probable tokens whose total probability
            reaches ``top_p`` (computed after temperature and top-k; None or 1: no limit).

    Returns:
        A new tensor ``(..., V)`` of the input's dtype: the scaled logits, -inf where excluded.
        At least one token per row (the most probable) is always kept, and ties with the last
        kept token are kept (see the module docstring). ``softmax`` of the result is the
        filtered, renormalised distribution.

    Raises:
        ValueError: naming the argument, for temperature <= 0, top_k < 1, top_p outside (0, 1],
            or logits that are not a floating-point tensor of shape (..., V).
    """
    _check_logits(logits)
    _check_options(temperature, top_k, top_p, allow_zero_temperature=False)
    scaled = logits / temperature
    neg_inf = torch.tensor(float("-inf"), dtype=scaled.dtype, device=scaled.device)
    V = scaled.shape[-1]

    if top_k is not None and top_k < V:
        kth = torch.topk(scaled, top_k, dim=-1).values[..., -1:]  # (..., 1) the k-th largest
        scaled = torch.where(scaled >= kth, scaled, neg_inf)

    if top_p is not None and top_p < 1:
        sorted_logits = torch.sort(scaled, dim=-1, descending=True).values  # (..., V)
        probs = torch.softmax(sorted_logits.double(), dim=-1)  # float64: the decision is a comparison
        mass_before = torch.cumsum(probs, dim=-1) - probs  # mass of the strictly more probable tokens
        keep_sorted = mass_before < top_p - TOP_P_TOLERANCE  # still short of top_p: this token is needed
        n_keep = keep_sorted.sum(dim=-1, keepdim=True).clamp(min=1)  # (..., 1), at least the argmax
        boundary = sorted_logits.gather(-1, n_keep - 1)  # logit of the last token kept
        scaled = torch.where(scaled >= boundary, scaled, neg_inf)

    return scaled


def sample_next(
    logits: torch.Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Draw one token per row from the filtered distribution softmax(filter_logits(logits, ...)).

    Args:
        logits: ``(..., V)``, e.g. the last position's logits ``(B, V)`` of a language model.
        temperature: T >= 0. ``temperature=0`` means greedy decoding: the argmax of each row
            (the first one on ties), no randomness; top_k and top_p cannot change it.
        top_k, top_p: as in ``filter_logits``.
        generator: a ``torch.Generator`` on the logits' device; the same seeded generator
            gives the same draws. None uses torch's global generator.

    Returns:
        A LongTensor of token indices with the logits' leading shape: ``(B,)`` for ``(B, V)``,
        a 0-d tensor for ``(V,)``.

    Raises:
        ValueError: as ``filter_logits``, except that temperature 0 is allowed.
    """
    _check_logits(logits)
    _check_options(temperature, top_k, top_p, allow_zero_temperature=True)
    if temperature == 0:
        return logits.argmax(dim=-1)
    filtered = filter_logits(logits, temperature, top_k, top_p)
    probs = torch.softmax(filtered.float(), dim=-1).reshape(-1, logits.shape[-1])  # (N, V)
    draws = torch.multinomial(probs, num_samples=1, generator=generator)  # (N, 1)
    return draws.reshape(logits.shape[:-1])
