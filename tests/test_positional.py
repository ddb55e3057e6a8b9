"""helpers.positional: the sinusoidal encoding against a brute-force oracle and closed forms."""

import math

import pytest
import torch

from helpers.positional import sinusoidal_encoding


def brute_force(T, d, base=10000.0):
    """The defining formula, one entry at a time with Python's math module -> list of lists."""
    rows = []
    for pos in range(T):
        row = []
        for j in range(d):
            i = j // 2  # column pair index
            angle = pos / base ** (2 * i / d)
            row.append(math.sin(angle) if j % 2 == 0 else math.cos(angle))
        rows.append(row)
    return rows


@pytest.mark.parametrize("T,d", [(1, 2), (5, 2), (7, 4), (50, 16), (129, 64), (300, 6)])
def test_matches_the_brute_force_double_loop(T, d):
    pe = sinusoidal_encoding(T, d, dtype=torch.float64)
    assert pe.shape == (T, d) and pe.dtype == torch.float64
    oracle = torch.tensor(brute_force(T, d), dtype=torch.float64)
    assert torch.allclose(pe, oracle, rtol=0, atol=1e-12)


def test_float32_default_is_the_rounded_float64_encoding():
    pe32 = sinusoidal_encoding(1000, 32)
    assert pe32.dtype == torch.get_default_dtype() == torch.float32
    pe64 = sinusoidal_encoding(1000, 32, dtype=torch.float64)
    assert torch.equal(pe32, pe64.float())


def test_other_base_matches_brute_force():
    pe = sinusoidal_encoding(40, 8, base=100.0, dtype=torch.float64)
    assert torch.allclose(pe, torch.tensor(brute_force(40, 8, base=100.0), dtype=torch.float64), atol=1e-12)


def test_known_values():
    pe = sinusoidal_encoding(10, 8, dtype=torch.float64)
    # row 0: sin(0) = 0 in even columns, cos(0) = 1 in odd columns
    assert pe[0].tolist() == [0.0, 1.0] * 4
    # first pair has frequency 1: column 0 is sin(pos), column 1 is cos(pos)
    pos = torch.arange(10, dtype=torch.float64)
    assert torch.allclose(pe[:, 0], torch.sin(pos), atol=1e-15)
    assert torch.allclose(pe[:, 1], torch.cos(pos), atol=1e-15)
    # last pair (i = 3, d = 8) has frequency 10000 ** (-6 / 8) = 1e-3
    assert torch.allclose(pe[:, 6], torch.sin(pos * 1e-3), atol=1e-15)
    assert torch.allclose(pe[:, 7], torch.cos(pos * 1e-3), atol=1e-15)
    # d = 2 is a single pair: the point (sin pos, cos pos) on the unit circle
    assert torch.allclose(sinusoidal_encoding(4, 2, dtype=torch.float64),
                          torch.stack([torch.sin(pos[:4]), torch.cos(pos[:4])], dim=1), atol=1e-15)


def test_every_row_has_norm_sqrt_half_d():
    pe = sinusoidal_encoding(500, 64, dtype=torch.float64)
    assert torch.allclose(pe.norm(dim=1), torch.full((500,), math.sqrt(32.0), dtype=torch.float64), atol=1e-12)


def test_shift_by_k_is_a_block_diagonal_rotation_independent_of_pos():
    T, d = 200, 16
    pe = sinusoidal_encoding(T, d, dtype=torch.float64)
    omega = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    for k in (1, 3, 50):
        R = torch.zeros(d, d, dtype=torch.float64)
        c, s = torch.cos(k * omega), torch.sin(k * omega)
        for i in range(d // 2):  # (sin, cos) -> (sin cos_k + cos sin_k, cos cos_k - sin sin_k)
            R[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.stack([torch.stack([c[i], s[i]]),
                                                                 torch.stack([-s[i], c[i]])])
        shifted = pe[:-k] @ R.T
        assert torch.allclose(shifted, pe[k:], atol=1e-12)
        assert torch.allclose(R @ R.T, torch.eye(d, dtype=torch.float64), atol=1e-14)


def test_dot_product_depends_only_on_the_offset():
    T, d = 120, 32
    pe = sinusoidal_encoding(T, d, dtype=torch.float64)
    omega = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    gram = pe @ pe.T
    for k in range(-20, 21):
        diag = torch.diagonal(gram, offset=k)
        assert torch.allclose(diag, torch.cos(k * omega).sum().expand_as(diag), atol=1e-11)


def test_broadcasts_over_a_batch_of_embeddings():
    x = torch.randn(3, 9, 12)
    assert (x + sinusoidal_encoding(9, 12)).shape == (3, 9, 12)


@pytest.mark.parametrize("kwargs,name", [
    (dict(T=0, d=4), "T"), (dict(T=-3, d=4), "T"), (dict(T=2.0, d=4), "T"), (dict(T=True, d=4), "T"),
    (dict(T=5, d=0), "d"), (dict(T=5, d=1), "d"), (dict(T=5, d=7), "d"), (dict(T=5, d="8"), "d"),
    (dict(T=5, d=4, base=1.0), "base"), (dict(T=5, d=4, base=-10.0), "base"),
    (dict(T=5, d=4, base=float("inf")), "base"),
])
def test_bad_arguments_raise_value_error_naming_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=rf"^{name} must"):
        sinusoidal_encoding(**kwargs)


def test_odd_d_message_explains_why():
    with pytest.raises(ValueError, match="even"):
        sinusoidal_encoding(10, 5)


def test_numpy_integers_are_accepted():
    import numpy as np

    assert sinusoidal_encoding(np.int64(3), np.int32(4)).shape == (3, 4)
