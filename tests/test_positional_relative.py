"""helpers.positional: RoPE and ALiBi against explicit oracles (complex rotation, brute-force loops, the paper's slopes)."""

import math

import pytest
import torch

from helpers.positional import alibi_bias, apply_rope


def complex_rope(x, positions, base=10000.0):
    """Oracle: view pairs (2i, 2i+1) as complex numbers and multiply by exp(1j * pos * theta_i)."""
    x = x.to(torch.float64)
    d = x.shape[-1]
    z = torch.view_as_complex(x.reshape(*x.shape[:-1], d // 2, 2).contiguous())   # (..., T, d/2)
    theta = torch.tensor([base ** (-2 * i / d) for i in range(d // 2)], dtype=torch.float64)
    pos = torch.as_tensor(positions, dtype=torch.float64)
    rot = torch.exp(1j * (pos[..., None] * theta).to(torch.complex128))
    return torch.view_as_real(z * rot).reshape(x.shape)


@pytest.mark.parametrize("shape", [(5, 2), (7, 8), (2, 3, 11, 16), (1, 40, 64)])
def test_rope_matches_complex_rotation(shape):
    torch.manual_seed(0)
    x = torch.randn(*shape, dtype=torch.float64)
    T = shape[-2]
    out = apply_rope(x)
    assert out.shape == x.shape and out.dtype == torch.float64
    assert torch.allclose(out, complex_rope(x, torch.arange(T)), atol=1e-12)


def test_rope_brute_force_loop_and_interleaved_pairs():
    torch.manual_seed(1)
    T, d = 6, 4
    x = torch.randn(T, d, dtype=torch.float64)
    out = apply_rope(x, base=100.0)
    for t in range(T):
        for i in range(d // 2):
            a = t * 100.0 ** (-2 * i / d)
            c, s = math.cos(a), math.sin(a)
            assert out[t, 2 * i].item() == pytest.approx(x[t, 2 * i].item() * c - x[t, 2 * i + 1].item() * s, abs=1e-12)
            assert out[t, 2 * i + 1].item() == pytest.approx(x[t, 2 * i].item() * s + x[t, 2 * i + 1].item() * c, abs=1e-12)


def test_rope_position_zero_is_identity_and_first_pair_turns_one_radian_per_step():
    x = torch.zeros(3, 6, dtype=torch.float64)
    x[:, 0] = 1.0  # unit vector in the first pair
    out = apply_rope(x)
    assert torch.equal(out[0], x[0])
    assert torch.allclose(out[:, 0], torch.cos(torch.arange(3.0, dtype=torch.float64)), atol=1e-15)
    assert torch.allclose(out[:, 1], torch.sin(torch.arange(3.0, dtype=torch.float64)), atol=1e-15)


def test_rope_preserves_norms():
    torch.manual_seed(2)
    x = torch.randn(4, 100, 32)
    out = apply_rope(x, positions=torch.arange(100) * 37 + 5)
    assert torch.allclose(out.norm(dim=-1), x.norm(dim=-1), rtol=1e-5, atol=1e-5)


def test_rope_score_depends_only_on_the_offset():
    torch.manual_seed(3)
    d = 64
    q, k = torch.randn(d), torch.randn(d)
    for offset in (-50, -3, 0, 1, 7, 200):
        scores = []
        for n in (0, 1, 10, 123, 1000, 4000):
            m = n + offset
            qm = apply_rope(q[None], positions=[m])[0]
            kn = apply_rope(k[None], positions=[n])[0]
            scores.append((qm @ kn).item())
        ref = scores[0]
        assert max(abs(s - ref) for s in scores) < 1e-5 * max(1.0, abs(ref))


def test_rope_relative_property_matrix_form_float64():
    """Q(m) K(n)^T at positions shifted by the same s is unchanged, to rounding."""
    torch.manual_seed(4)
    q, k = torch.randn(2, 20, 16, dtype=torch.float64), torch.randn(2, 20, 16, dtype=torch.float64)
    pos = torch.arange(20)
    s0 = apply_rope(q, pos) @ apply_rope(k, pos).transpose(-2, -1)
    for shift in (1, 17, 999):
        s1 = apply_rope(q, pos + shift) @ apply_rope(k, pos + shift).transpose(-2, -1)
        assert (s1 - s0).abs().max().item() < 1e-10


def test_rope_positions_argument():
    torch.manual_seed(5)
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    assert torch.allclose(apply_rope(x, positions=torch.arange(5)), apply_rope(x), atol=0)
    assert torch.allclose(apply_rope(x, positions=[0, 1, 2, 3, 4]), apply_rope(x), atol=0)
    pos = torch.tensor([3.0, 0.5, 10.0, 2.0, 7.0])
    assert torch.allclose(apply_rope(x, positions=pos), complex_rope(x, pos), atol=1e-12)
    # per-batch positions (..., T)
    pos_b = torch.stack([torch.arange(5), torch.arange(5) + 100])
    out = apply_rope(x, positions=pos_b)
    assert torch.allclose(out[1], complex_rope(x[1], pos_b[1]), atol=1e-12)
    # rotating by m then by n equals rotating by m + n
    assert torch.allclose(apply_rope(apply_rope(x, positions=pos), positions=pos), apply_rope(x, positions=2 * pos), atol=1e-12)
    # negative positions undo
    assert torch.allclose(apply_rope(apply_rope(x, positions=pos), positions=-pos), x, atol=1e-12)


def test_rope_base_and_dtype():
    torch.manual_seed(6)
    x = torch.randn(9, 6, dtype=torch.float64)
    assert torch.allclose(apply_rope(x, base=50.0), complex_rope(x, torch.arange(9), base=50.0), atol=1e-12)
    x32 = x.float()
    out32 = apply_rope(x32)
    assert out32.dtype == torch.float32
    assert torch.allclose(out32.double(), apply_rope(x), atol=1e-6)


def test_rope_gradients_flow():
    x = torch.randn(3, 4, requires_grad=True)
    apply_rope(x).pow(2).sum().backward()
    # rotation preserves the squared norm, so d/dx sum(y^2) = 2x
    assert torch.allclose(x.grad, 2 * x.detach(), atol=1e-5)


@pytest.mark.parametrize("d", [1, 3, 7, 65])
def test_rope_odd_d_raises_naming_d(d):
    with pytest.raises(ValueError, match=rf"d .*even.*d={d}"):
        apply_rope(torch.randn(4, d))


@pytest.mark.parametrize("x,kwargs,pattern", [
    (torch.randn(4), {}, "^x must"),
    (torch.arange(8).reshape(2, 4), {}, "^x must"),
    ([[1.0, 2.0]], {}, "^x must"),
    (torch.randn(5, 4), dict(positions=torch.arange(4)), "^positions must"),
    (torch.randn(5, 4), dict(positions=3), "^positions must"),
    (torch.randn(2, 5, 4), dict(positions=torch.zeros(3, 5)), "^positions of shape"),
    (torch.randn(5, 4), dict(positions=torch.ones(5, dtype=torch.bool)), "^positions must"),
    (torch.randn(5, 4), dict(base=1.0), "^base must"),
    (torch.randn(5, 4), dict(base=float("nan")), "^base must"),
])
def test_rope_bad_arguments(x, kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        apply_rope(x, **kwargs)


def brute_force_alibi(n_heads, T):
    out = [[[0.0] * T for _ in range(T)] for _ in range(n_heads)]
    for h in range(1, n_heads + 1):
        m = 2.0 ** (-8.0 * h / n_heads)
        for i in range(T):
            for j in range(T):
                if j <= i:
                    out[h - 1][i][j] = -m * (i - j)
    return torch.tensor(out, dtype=torch.float64)


@pytest.mark.parametrize("n_heads,T", [(1, 1), (1, 5), (4, 9), (8, 16), (3, 7), (12, 20)])
def test_alibi_matches_brute_force(n_heads, T):
    bias = alibi_bias(n_heads, T, dtype=torch.float64)
    assert bias.shape == (n_heads, T, T) and bias.dtype == torch.float64
    assert torch.allclose(bias, brute_force_alibi(n_heads, T), atol=1e-15)


def test_alibi_paper_slopes_for_8_heads():
    bias = alibi_bias(8, 4, dtype=torch.float64)
    slopes = -bias[:, 1, 0]  # distance 1
    assert slopes.tolist() == [1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32, 1 / 64, 1 / 128, 1 / 256]
    assert torch.allclose(-bias[:, 3, 0], 3 * slopes)


def test_alibi_structure():
    bias = alibi_bias(4, 10)
    assert bias.dtype == torch.get_default_dtype()
    assert torch.all(torch.diagonal(bias, dim1=-2, dim2=-1) == 0)
    assert torch.all(bias.triu(1) == 0) and not torch.signbit(bias.triu(1)).any(), "future left at +0"
    below = torch.ones(10, 10, dtype=torch.bool).tril(-1)
    assert torch.all(bias[:, below] < 0)
    # Toeplitz: each head's entry depends only on i - j
    for k in range(1, 10):
        diag = torch.diagonal(bias, offset=-k, dim1=-2, dim2=-1)
        assert torch.all(diag == diag[:, :1])


def test_alibi_softmax_with_causal_mask_and_shift_invariance():
    from helpers.attention import causal_mask

    T = 6
    bias = alibi_bias(2, T, dtype=torch.float64)
    scores = torch.zeros(2, T, T, dtype=torch.float64) + bias
    w = torch.softmax(scores.masked_fill(causal_mask(T), float("-inf")), dim=-1)
    # with equal content scores, query i's weights on keys j <= i are proportional to exp(-m (i - j))
    m = 2.0 ** (-8.0 / 2)
    row = torch.exp(-m * torch.arange(T - 1, -1, -1, dtype=torch.float64))
    assert torch.allclose(w[0, -1], row / row.sum(), atol=1e-12)
    # the bias seen by the last query of a window of length T over the last T keys
    # is the same in a longer sequence: ALiBi only sees distances
    long = alibi_bias(2, 3 * T, dtype=torch.float64)
    assert torch.equal(long[:, -1, -T:], bias[:, -1, :])


@pytest.mark.parametrize("kwargs,name", [
    (dict(n_heads=0, T=4), "n_heads"), (dict(n_heads=2.0, T=4), "n_heads"), (dict(n_heads=True, T=4), "n_heads"),
    (dict(n_heads=2, T=0), "T"), (dict(n_heads=2, T=-1), "T"), (dict(n_heads=2, T="5"), "T"),
])
def test_alibi_bad_arguments(kwargs, name):
    with pytest.raises(ValueError, match=rf"^{name} must"):
        alibi_bias(**kwargs)
