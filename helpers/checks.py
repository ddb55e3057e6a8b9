"""Argument checks shared by the helpers modules, so every bad argument gets the same clear message."""

from __future__ import annotations

import numbers


def check_int(name: str, value, minimum: int) -> int:
    """``value`` as an int if it is an integer >= ``minimum``; otherwise a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def describe(t) -> str:
    """How an argument looks in an error message: a tensor's shape and dtype, else its type's name."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency of the book
        torch = None
    if torch is not None and isinstance(t, torch.Tensor):
        return f"shape {tuple(t.shape)} ({t.dtype})"
    return type(t).__name__


def check_choice(name: str, value, choices) -> str:
    """``value`` if it is one of ``choices``; otherwise a ValueError naming ``name`` and listing them."""
    if value not in tuple(choices):
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")
    return value


def check_prob(name: str, value, *, allow_one: bool = False) -> float:
    """``value`` as a float in [0, 1) (or [0, 1] with ``allow_one``); otherwise a ValueError naming ``name``."""
    upper_ok = (lambda v: v <= 1.0) if allow_one else (lambda v: v < 1.0)
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (0.0 <= value and upper_ok(value)):
        interval = "[0, 1]" if allow_one else "[0, 1)"
        raise ValueError(f"{name} must be a number in {interval}, got {value!r}")
    return float(value)


def check_positive(name: str, value) -> float:
    """``value`` as a float if it is a finite number > 0; otherwise a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value < float("inf"):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def check_optional_int(name: str, value, minimum: int) -> int | None:
    """None, or ``value`` checked by :func:`check_int`."""
    return None if value is None else check_int(name, value, minimum)


def check_token_ids(name: str, idx, vocab_size: int | None = None):
    """``idx`` if it is a ``(B, t)`` tensor of token ids (torch.long, t >= 1, each in 0..vocab_size-1)."""
    import torch

    if not isinstance(idx, torch.Tensor) or idx.dim() != 2 or idx.dtype != torch.long or idx.shape[1] < 1:
        raise ValueError(f"{name} must be a (B, t) tensor of token ids (torch.long, t >= 1), got {describe(idx)}")
    if vocab_size is not None and idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= vocab_size):
        raise ValueError(f"{name} holds ids outside 0..{vocab_size - 1} (vocab_size={vocab_size}): "
                         f"min {int(idx.min())}, max {int(idx.max())}")
    return idx
