"""Reproducibility: one seed for every random number generator, and the device to run on."""

from __future__ import annotations

import os
import random

import numpy as np
import torch


def seed_everything(seed: int) -> torch.Generator:
    """Seed Python, NumPy and torch (CPU and CUDA) with ``seed``.

    Returns a ``torch.Generator`` seeded with the same value, for code that wants its
    own stream of random numbers (e.g. sampling) independent of the global one.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    seed = int(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)  # also seeds every CUDA device
    os.environ["PYTHONHASHSEED"] = str(seed)  # inherited by subprocesses
    return torch.Generator().manual_seed(seed)


def pick_device(prefer: str | None = None) -> torch.device:
    """The device to compute on: CUDA if present, else Apple's MPS, else the CPU.

    ``prefer`` ("cpu", "cuda", "mps") forces a choice; asking for one that is not
    available raises ``ValueError`` naming what is.
    """
    available = ["cpu"]
    if torch.backends.mps.is_available():
        available.insert(0, "mps")
    if torch.cuda.is_available():
        available.insert(0, "cuda")
    if prefer is None:
        return torch.device(available[0])
    if prefer not in ("cpu", "cuda", "mps"):
        raise ValueError(f"prefer must be 'cpu', 'cuda', 'mps' or None, got {prefer!r}")
    if prefer not in available:
        raise ValueError(
            f"device {prefer!r} is not available on this machine; available: {available}. "
            "Pass prefer=None to choose automatically."
        )
    return torch.device(prefer)
