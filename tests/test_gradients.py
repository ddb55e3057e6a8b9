"""helpers.gradients against oracles: closed forms, hand-computed Jacobians, torch's own kernels."""

import math

import numpy as np
import pytest
import torch
from torch import nn

from helpers.gradients import (
    count_parameters,
    gradient_norm_by_lag,
    gru_step,
    input_gradient_by_lag,
    jacobian_product_gradient_by_lag,
    lstm_cell_path_gradient_by_lag,
    lstm_step,
    make_recurrent,
    matrix_with_spectral_radius,
    reach_by_lag,
    recurrent_parameter_formula,
    rnn_states,
    set_forget_bias,
    spectral_radius,
    state_gradient_by_lag,
)


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


# ----------------------------------------------------------------------------- spectral radius
@pytest.mark.parametrize("rho", [0.5, 1.0, 1.3])
def test_matrix_has_the_requested_spectral_radius(rho):
    W = matrix_with_spectral_radius(12, rho, _gen(1))
    assert np.max(np.abs(np.linalg.eigvals(W.double().numpy()))) == pytest.approx(rho, rel=1e-5)
    assert spectral_radius(W) == pytest.approx(rho, rel=1e-5)


def test_orthogonal_option_has_all_singular_values_equal_to_rho():
    W = matrix_with_spectral_radius(9, 0.8, _gen(2), orthogonal=True)
    assert torch.allclose(torch.linalg.svdvals(W.double()), torch.full((9,), 0.8, dtype=torch.float64), atol=1e-6)


# ----------------------------------------------------------------------------- the recurrence
def test_rnn_states_match_torch_rnn_without_bias():
    torch.manual_seed(0)
    rnn = nn.RNN(3, 5, bias=False, batch_first=True)
    x = torch.randn(2, 7, 3)
    states = rnn_states(rnn.weight_hh_l0.detach(), rnn.weight_ih_l0.detach(), x)
    expected, _ = rnn(x)
    assert len(states) == 8
    assert torch.allclose(torch.stack(states[1:], dim=1), expected, atol=1e-6)


def test_linear_orthogonal_rnn_gradient_is_rho_to_the_lag():
    # closed form: dL/dh_{T-k} = (W^T)^k 1 and ||W^k v|| = rho^k ||v|| when W = rho * orthogonal
    rho, d, T = 0.9, 6, 30
    g = gradient_norm_by_lag(rho, T=T, d=d, nonlinearity="linear", orthogonal=True, seed=3)
    expected = math.sqrt(d) * rho ** np.arange(T + 1)
    assert np.allclose(g, expected, rtol=1e-4)


def test_scalar_tanh_rnn_gradient_by_hand():
    # d = 1: dh_T/dh_0 = prod_k w (1 - h_k^2), computed here step by step by hand
    w, u = 0.8, 0.5
    xs = [0.3, -1.0, 2.0]
    h, factors = 0.0, []
    for x in xs:
        h = math.tanh(w * h + u * x)
        factors.append(w * (1 - h * h))
    by_hand = [1.0, factors[2], factors[2] * factors[1], factors[2] * factors[1] * factors[0]]
    x = torch.tensor(xs, dtype=torch.float64).reshape(1, 3, 1)
    W_hh, W_xh = torch.tensor([[w]], dtype=torch.float64), torch.tensor([[u]], dtype=torch.float64)
    auto = state_gradient_by_lag(W_hh, W_xh, x)[0].numpy()
    explicit = jacobian_product_gradient_by_lag(W_hh, W_xh, x)[0].numpy()
    assert np.allclose(auto, np.abs(by_hand), rtol=1e-12)
    assert np.allclose(explicit, np.abs(by_hand), rtol=1e-12)


def test_autograd_and_jacobian_product_agree_with_a_brute_force_jacobian():
    d, d_in, T = 4, 2, 6
    gen = _gen(5)
    W_hh = matrix_with_spectral_radius(d, 1.1, gen).double()
    W_xh = torch.randn(d, d_in, generator=gen, dtype=torch.float64)
    x = torch.randn(3, T, d_in, generator=gen, dtype=torch.float64)
    h0 = 0.3 * torch.randn(3, d, generator=gen, dtype=torch.float64)
    auto = state_gradient_by_lag(W_hh, W_xh, x, h0)
    explicit = jacobian_product_gradient_by_lag(W_hh, W_xh, x, h0)
    assert auto.shape == explicit.shape == (3, T + 1)
    states = [s.detach() for s in rnn_states(W_hh, W_xh, x, h0)]
    for b in range(3):
        for t in range(T + 1):
            def last_state(h_t, b=b, t=t):
                h = h_t
                for s in range(t, T):
                    h = torch.tanh(W_hh @ h + W_xh @ x[b, s])
                return h
            J = torch.autograd.functional.jacobian(last_state, states[t][b])  # (d, d) = dh_T/dh_t
            brute = (J.T @ torch.ones(d, dtype=torch.float64)).norm()
            assert auto[b, T - t] == pytest.approx(float(brute), rel=1e-10)
            assert explicit[b, T - t] == pytest.approx(float(brute), rel=1e-10)


def test_tanh_gradient_decays_faster_for_smaller_radius():
    small = gradient_norm_by_lag(0.6, T=40, seed=1)
    large = gradient_norm_by_lag(1.0, T=40, seed=1)
    assert small[0] == pytest.approx(large[0]) == pytest.approx(math.sqrt(32))
    assert small[40] < 1e-3 * large[40]


# ----------------------------------------------------------------------------- cells and counts
@pytest.mark.parametrize("kind,cls", [("rnn", nn.RNN), ("gru", nn.GRU), ("lstm", nn.LSTM)])
@pytest.mark.parametrize("d_in,d_h,layers,bias", [(4, 16, 1, True), (64, 128, 1, True), (3, 7, 2, True), (5, 6, 3, False)])
def test_parameter_formula_matches_torch(kind, cls, d_in, d_h, layers, bias):
    module = cls(d_in, d_h, num_layers=layers, bias=bias)
    assert recurrent_parameter_formula(kind, d_in, d_h, layers, bias) == count_parameters(module)


def test_lstm_step_matches_torch_lstm_cell_and_lstm():
    torch.manual_seed(1)
    cell, layer = nn.LSTMCell(3, 5), nn.LSTM(3, 5, batch_first=True)
    x, h, c = torch.randn(4, 3), torch.randn(4, 5), torch.randn(4, 5)
    h1, c1, gates = lstm_step(cell, x, h, c)
    h_ref, c_ref = cell(x, (h, c))
    assert torch.allclose(h1, h_ref, atol=1e-6) and torch.allclose(c1, c_ref, atol=1e-6)
    assert set(gates) == {"i", "f", "g", "o"} and all(v.shape == (4, 5) for v in gates.values())
    h2, c2, _ = lstm_step(layer, x, h, c)
    out, (hn, cn) = layer(x[:, None], (h[None], c[None]))
    assert torch.allclose(h2, hn[0], atol=1e-6) and torch.allclose(c2, cn[0], atol=1e-6)


def test_gru_step_matches_torch_gru_cell_and_gru():
    torch.manual_seed(2)
    cell, layer = nn.GRUCell(3, 5), nn.GRU(3, 5, batch_first=True)
    x, h = torch.randn(4, 3), torch.randn(4, 5)
    h1, gates = gru_step(cell, x, h)
    assert torch.allclose(h1, cell(x, h), atol=1e-6)
    assert set(gates) == {"r", "z", "n"}
    h2, _ = gru_step(layer, x, h)
    assert torch.allclose(h2, layer(x[:, None], h[None])[1][0], atol=1e-6)


def test_set_forget_bias_sets_exactly_the_forget_block():
    torch.manual_seed(3)
    lstm = nn.LSTM(2, 4, num_layers=2, batch_first=True)
    before = {n: p.detach().clone() for n, p in lstm.named_parameters()}
    set_forget_bias(lstm, 1.5)
    for name, p in lstm.named_parameters():
        if name.startswith("bias_ih"):
            assert torch.all(p[4:8] == 1.5) and torch.equal(p[:4], before[name][:4]) and torch.equal(p[8:], before[name][8:])
        elif name.startswith("bias_hh"):
            assert torch.all(p[4:8] == 0) and torch.equal(p[:4], before[name][:4])
        else:
            assert torch.equal(p, before[name])
    # oracle: with zero weights the forget gate is exactly sigmoid(bias)
    cell = nn.LSTMCell(2, 4)
    with torch.no_grad():
        cell.weight_ih.zero_()
        cell.weight_hh.zero_()
    set_forget_bias(cell, 2.0)
    _, _, gates = lstm_step(cell, torch.randn(3, 2), torch.randn(3, 4), torch.randn(3, 4))
    assert torch.allclose(gates["f"], torch.sigmoid(torch.tensor(2.0)).expand(3, 4))


def test_input_gradient_by_lag_matches_a_brute_force_jacobian():
    for kind in ("rnn", "gru", "lstm"):
        module = make_recurrent(kind, 3, 4, seed=7).double()
        x = torch.randn(2, 6, 3, generator=_gen(8), dtype=torch.float64)
        got = input_gradient_by_lag(module, x)
        assert got.shape == (2, 6)
        J = torch.autograd.functional.jacobian(lambda inp: module(inp)[0][:, -1].sum(), x)  # (2, 6, 3)
        expected = J.abs().sum(dim=2).flip(1)
        assert torch.allclose(got, expected, atol=1e-12)
        assert torch.all(got[:, 0] > 0)


def test_make_recurrent_is_seeded_and_leaves_the_global_generator_alone():
    torch.manual_seed(0)
    a = torch.randn(1)
    torch.manual_seed(0)
    m1 = make_recurrent("lstm", 2, 3, seed=4)
    b = torch.randn(1)
    m2 = make_recurrent("lstm", 2, 3, seed=4)
    assert torch.equal(a, b)
    assert all(torch.equal(p, q) for p, q in zip(m1.parameters(), m2.parameters()))
    assert make_recurrent("gru", 2, 3).batch_first


def test_reach_by_lag_is_the_mean_over_seeds():
    avg = reach_by_lag("rnn", 5, d_h=4, d_in=2, seeds=[0, 1])
    rows = []
    for s in (0, 1):
        x = torch.randn(1, 5, 2, generator=_gen(10_000 + s))
        rows.append(input_gradient_by_lag(make_recurrent("rnn", 2, 4, seed=s), x)[0].numpy())
    assert np.allclose(avg, np.mean(rows, axis=0))


def test_forget_bias_extends_reach():
    short = reach_by_lag("lstm", 40, d_h=8, seeds=range(3), forget_bias=-1.0)
    long = reach_by_lag("lstm", 40, d_h=8, seeds=range(3), forget_bias=2.0)
    assert long[30] > 1e3 * short[30]


# ----------------------------------------------------------------------------- bad input
def test_bad_input_raises_value_errors_naming_the_argument():
    with pytest.raises(ValueError, match="rho"):
        matrix_with_spectral_radius(4, -1.0)
    with pytest.raises(ValueError, match="kind"):
        recurrent_parameter_formula("transformer", 3, 4)
    with pytest.raises(ValueError, match="d_h"):
        recurrent_parameter_formula("rnn", 3, 0)
    with pytest.raises(ValueError, match="nonlinearity"):
        gradient_norm_by_lag(0.9, nonlinearity="relu")
    with pytest.raises(ValueError, match="x must be"):
        state_gradient_by_lag(torch.eye(3), torch.ones(3, 2), torch.ones(4, 2))
    with pytest.raises(ValueError, match="W_xh"):
        rnn_states(torch.eye(3), torch.ones(2, 2), torch.ones(1, 4, 2))
    with pytest.raises(ValueError, match="batch_first"):
        input_gradient_by_lag(nn.RNN(2, 3), torch.ones(1, 4, 2))
    with pytest.raises(ValueError, match="input features"):
        input_gradient_by_lag(nn.RNN(2, 3, batch_first=True), torch.ones(1, 4, 5))
    with pytest.raises(ValueError, match="forget_bias"):
        make_recurrent("gru", 2, 3, forget_bias=1.0)
    with pytest.raises(ValueError, match="lstm"):
        set_forget_bias(nn.GRU(2, 3), 1.0)
    with pytest.raises(ValueError, match="seeds"):
        reach_by_lag("rnn", 5, seeds=[])
    with pytest.raises(ValueError, match="W must be"):
        spectral_radius(torch.ones(2, 3))


def test_reach_by_lag_geometric_mean_is_the_mean_of_the_logs():
    runs = []
    for s in [0, 1, 2]:
        runs.append(reach_by_lag("rnn", 12, d_h=4, d_in=2, seeds=[s]))
    geo = reach_by_lag("rnn", 12, d_h=4, d_in=2, seeds=[0, 1, 2], average="geometric")
    np.testing.assert_allclose(geo, np.exp(np.log(np.stack(runs)).mean(0)), rtol=1e-6)
    arith = reach_by_lag("rnn", 12, d_h=4, d_in=2, seeds=[0, 1, 2])
    assert (geo <= arith * (1 + 1e-9)).all(), "AM-GM: the geometric mean never exceeds the arithmetic one"
    with pytest.raises(ValueError, match="average must be"):
        reach_by_lag("rnn", 4, seeds=[0], average="median")


def test_cell_path_gradient_is_the_product_of_forget_gates_when_the_rest_is_frozen():
    # with h cut, dc_T/dc_(T-k) = prod f along the path; check the cell route against autograd on a
    # hand unroll that cuts h the same way, and that it never exceeds the full gradient's route count
    lstm = make_recurrent("lstm", 3, 5, seed=4, forget_bias=1.0)
    x = torch.randn(2, 9, 3, generator=torch.Generator().manual_seed(1))
    got = lstm_cell_path_gradient_by_lag(lstm, x)
    xs = x.clone().requires_grad_(True)
    h, c = torch.zeros(2, 5), torch.zeros(2, 5)
    W_ih, W_hh, b_ih, b_hh = lstm.weight_ih_l0, lstm.weight_hh_l0, lstm.bias_ih_l0, lstm.bias_hh_l0
    for t in range(9):
        zi, zf, zg, zo = (xs[:, t] @ W_ih.T + b_ih + h.detach() @ W_hh.T + b_hh).chunk(4, dim=-1)
        c = torch.sigmoid(zf) * c + torch.sigmoid(zi) * torch.tanh(zg)
        h = torch.sigmoid(zo) * torch.tanh(c)
    h.sum().backward()
    torch.testing.assert_close(got, xs.grad.abs().sum(2).flip(1))
    full = input_gradient_by_lag(lstm, x)
    assert not torch.allclose(got[:, 1:], full[:, 1:]), "cutting h changes the gradient at lags >= 1"
    torch.testing.assert_close(got[:, 0], full[:, 0], rtol=1e-5, atol=1e-7)  # lag 0: no recurrence involved
    with pytest.raises(ValueError, match="path='cell' needs kind='lstm'"):
        reach_by_lag("gru", 4, seeds=[0], path="cell")
