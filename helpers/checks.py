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
