"""Seeding reproduces draws; device choice never assumes a GPU."""

import random

import numpy as np
import pytest
import torch

from helpers.repro import pick_device, seed_everything


def _draws():
    return random.random(), np.random.rand(3), torch.randn(3)


def test_same_seed_same_draws_different_seed_different_draws():
    seed_everything(7)
    a = _draws()
    seed_everything(7)
    b = _draws()
    seed_everything(8)
    c = _draws()
    assert a[0] == b[0] and np.array_equal(a[1], b[1]) and torch.equal(a[2], b[2])
    assert not torch.equal(a[2], c[2])


def test_returned_generator_is_seeded():
    g1, g2 = seed_everything(3), seed_everything(3)
    assert torch.equal(torch.randn(4, generator=g1), torch.randn(4, generator=g2))


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True])
def test_bad_seed_is_rejected(bad):
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        seed_everything(bad)


@pytest.mark.parametrize("cuda, mps, expected", [
    (True, True, "cuda"), (True, False, "cuda"), (False, True, "mps"), (False, False, "cpu")])
def test_device_is_chosen_automatically(monkeypatch, cuda, mps, expected):
    """The preference order CUDA > MPS > CPU, on every combination (not just this machine's)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)
    assert pick_device().type == expected
    assert pick_device("cpu") == torch.device("cpu")


def test_unknown_or_unavailable_device_is_a_clear_error(monkeypatch):
    with pytest.raises(ValueError, match="prefer must be"):
        pick_device("tpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    for missing in ("cuda", "mps"):
        with pytest.raises(ValueError, match=f"'{missing}' is not available on this machine; available: \\['cpu'\\]"):
            pick_device(missing)
