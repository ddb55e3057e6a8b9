"""How far gradients reach back through time in recurrent networks (§14.46, §14.47).

Two measurements recur in Part I:

- the norm of the gradient of a loss at the last step with respect to the hidden
  *state* ``lag`` steps earlier, for a hand-written recurrence
  ``h_t = phi(W_hh h_{t-1} + W_xh x_t)`` (§14.46.1), computed both by autograd and by
  the explicit product of Jacobians ``diag(phi'(z_k)) W_hh``;
- the magnitude of the gradient of the last output of a ``torch.nn.RNN``/``LSTM``/``GRU``
  with respect to the *input* ``lag`` steps earlier (§14.47), the "reach" of a cell.

It also holds the LSTM and GRU cell equations written out from their definitions (checked
against torch's kernels in ``tests/test_gradients.py``) and the parameter-count formulas.

Conventions: sequences are batch-first, ``x`` has shape ``(B, T, d_in)``; results indexed
"by lag" have lag 0 (the last step) in column 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import torch
from torch import nn

from .checks import check_int

#: Gate blocks per cell type (torch packs them in one weight matrix).
GATES = {"rnn": 1, "gru": 3, "lstm": 4}
_NONLINEARITIES = ("tanh", "linear")


# --------------------------------------------------------------------------- checks
def _check_kind(kind: str) -> str:
    if not isinstance(kind, str) or kind.lower() not in GATES:
        raise ValueError(f"kind must be one of {sorted(GATES)}, got {kind!r}")
    return kind.lower()


def _check_nonlinearity(nonlinearity: str) -> str:
    if nonlinearity not in _NONLINEARITIES:
        raise ValueError(f"nonlinearity must be one of {_NONLINEARITIES}, got {nonlinearity!r}")
    return nonlinearity


def _check_sequence(x: torch.Tensor, d_in: int | None = None, name: str = "x") -> torch.Tensor:
    if not isinstance(x, torch.Tensor) or x.ndim != 3:
        shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"{name} must be a tensor of shape (B, T, d_in), got {shape}")
    if x.shape[1] < 1:
        raise ValueError(f"{name} must have at least one time step, got shape {tuple(x.shape)}")
    if d_in is not None and x.shape[2] != d_in:
        raise ValueError(f"{name} has {x.shape[2]} input features, the weights expect {d_in}")
    return x


def _check_rnn_weights(W_hh: torch.Tensor, W_xh: torch.Tensor) -> tuple[int, int]:
    if not isinstance(W_hh, torch.Tensor) or W_hh.ndim != 2 or W_hh.shape[0] != W_hh.shape[1]:
        raise ValueError(f"W_hh must be a square (d, d) tensor, got {getattr(W_hh, 'shape', W_hh)}")
    if not isinstance(W_xh, torch.Tensor) or W_xh.ndim != 2 or W_xh.shape[0] != W_hh.shape[0]:
        raise ValueError(f"W_xh must have shape (d, d_in) with d = {W_hh.shape[0]}, got {getattr(W_xh, 'shape', W_xh)}")
    return W_hh.shape[0], W_xh.shape[1]


# --------------------------------------------------------------------------- §14.46
def spectral_radius(W: torch.Tensor) -> float:
    """Largest absolute eigenvalue of a square matrix ``W`` (d, d)."""
    if not isinstance(W, torch.Tensor) or W.ndim != 2 or W.shape[0] != W.shape[1]:
        raise ValueError(f"W must be a square (d, d) tensor, got {getattr(W, 'shape', W)}")
    return float(torch.linalg.eigvals(W.double()).abs().max())


def matrix_with_spectral_radius(d: int, rho: float, generator: torch.Generator | None = None,
                                orthogonal: bool = False) -> torch.Tensor:
    """A random (d, d) matrix rescaled so that its spectral radius is exactly ``rho``.

    Gaussian entries by default; with ``orthogonal=True`` a random orthogonal matrix times
    ``rho`` (then every singular value is ``rho`` too, so ``||W^k|| = rho^k`` exactly).
    """
    d = check_int("d", d, 1)
    if not (isinstance(rho, (int, float)) and math.isfinite(rho) and rho > 0):
        raise ValueError(f"rho must be a positive finite number, got {rho!r}")
    G = torch.randn(d, d, generator=generator, dtype=torch.float64)
    if orthogonal:
        Q, R = torch.linalg.qr(G)
        Q = Q * torch.sign(torch.diagonal(R))  # Haar-distributed
        return (rho * Q).float()
    return (G * (rho / spectral_radius(G))).float()


def rnn_states(W_hh: torch.Tensor, W_xh: torch.Tensor, x: torch.Tensor, h0: torch.Tensor | None = None,
               nonlinearity: str = "tanh") -> list[torch.Tensor]:
    """Run ``h_t = phi(h_{t-1} W_hh^T + x_t W_xh^T)`` and return the states ``[h_0, ..., h_T]``.

    ``W_hh`` (d, d), ``W_xh`` (d, d_in), ``x`` (B, T, d_in), ``h0`` (B, d) or None (zeros);
    ``phi`` is tanh or the identity (``nonlinearity="linear"``). Each state is (B, d) and
    retains its gradient, so after a backward pass ``h.grad`` holds dL/dh_t.
    """
    d, d_in = _check_rnn_weights(W_hh, W_xh)
    x = _check_sequence(x, d_in)
    phi = torch.tanh if _check_nonlinearity(nonlinearity) == "tanh" else (lambda z: z)
    if h0 is None:
        h0 = torch.zeros(x.shape[0], d, dtype=x.dtype)
    if h0.shape != (x.shape[0], d):
        raise ValueError(f"h0 must have shape (B, d) = {(x.shape[0], d)}, got {tuple(h0.shape)}")
    h = h0.clone().requires_grad_(True)
    states = [h]
    for t in range(x.shape[1]):
        h = phi(h @ W_hh.T + x[:, t] @ W_xh.T)
        if h.requires_grad:  # False inside torch.no_grad()
            h.retain_grad()
        states.append(h)
    return states


def state_gradient_by_lag(W_hh: torch.Tensor, W_xh: torch.Tensor, x: torch.Tensor,
                          h0: torch.Tensor | None = None, nonlinearity: str = "tanh") -> torch.Tensor:
    """Autograd: ``||dL/dh_{T-k}||_2`` for ``L = sum of h_T``, for every lag ``k = 0..T``.

    Shapes as in :func:`rnn_states`. Returns (B, T + 1); column ``k`` is lag ``k``.
    """
    states = rnn_states(W_hh, W_xh, x, h0, nonlinearity)
    states[-1].sum().backward()
    norms = torch.stack([h.grad.norm(dim=1) for h in states], dim=1)  # (B, T+1), column t = step t
    return norms.flip(1).detach()


def jacobian_product_gradient_by_lag(W_hh: torch.Tensor, W_xh: torch.Tensor, x: torch.Tensor,
                                     h0: torch.Tensor | None = None,
                                     nonlinearity: str = "tanh") -> torch.Tensor:
    """The same quantity as :func:`state_gradient_by_lag`, by the explicit Jacobian product.

    ``dL/dh_{t-1} = J_t^T dL/dh_t`` with ``J_t = dh_t/dh_{t-1} = diag(phi'(z_t)) W_hh``, starting
    from ``dL/dh_T = 1``. Returns (B, T + 1), column ``k`` is lag ``k``.
    """
    with torch.no_grad():
        states = [h.detach() for h in rnn_states(W_hh, W_xh, x, h0, nonlinearity)]
        g = torch.ones_like(states[-1])
        norms = [g.norm(dim=1)]
        for t in range(len(states) - 1, 0, -1):
            # phi'(z_t): 1 - tanh^2 = 1 - h_t^2, or 1 for the identity
            dphi = 1 - states[t] ** 2 if nonlinearity == "tanh" else torch.ones_like(states[t])
            J = dphi[:, :, None] * W_hh  # (B, d, d): diag(phi'(z_t)) W_hh per example
            g = torch.einsum("bij,bi->bj", J, g)  # J^T g
            norms.append(g.norm(dim=1))
    return torch.stack(norms, dim=1)


def gradient_norm_by_lag(rho: float, T: int = 60, d: int = 32, d_in: int = 4, batch: int = 1,
                         input_scale: float = 0.1, seed: int = 0, nonlinearity: str = "tanh",
                         orthogonal: bool = False) -> np.ndarray:
    """``||dL/dh_{T-k}||`` for a random RNN whose recurrent matrix has spectral radius ``rho``.

    Draws ``W_hh`` (d, d) with spectral radius ``rho``, ``W_xh`` (d, d_in) with N(0, input_scale^2)
    entries and ``x`` (batch, T, d_in) standard normal, all from ``seed``; the loss is the sum of
    the last state. Returns an array (T + 1,), index ``k`` = lag ``k``, averaged over the batch.
    """
    T, d, d_in, batch = (check_int(n, v, 1) for n, v in (("T", T), ("d", d), ("d_in", d_in), ("batch", batch)))
    gen = torch.Generator().manual_seed(seed)
    W_hh = matrix_with_spectral_radius(d, rho, gen, orthogonal=orthogonal)
    W_xh = torch.randn(d, d_in, generator=gen) * input_scale
    x = torch.randn(batch, T, d_in, generator=gen)
    return state_gradient_by_lag(W_hh, W_xh, x, nonlinearity=nonlinearity).mean(0).numpy()


# --------------------------------------------------------------------------- §14.47
def count_parameters(module: nn.Module) -> int:
    """Number of trainable parameters of ``module``."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def recurrent_parameter_formula(kind: str, d_in: int, d_h: int, num_layers: int = 1, bias: bool = True) -> int:
    """Parameters of ``torch.nn.{RNN,GRU,LSTM}(d_in, d_h, num_layers, bias)`` by formula.

    Each of the ``g`` gate blocks (1, 3, 4) of a layer has an input matrix (d_h, input width), a
    recurrent matrix (d_h, d_h) and, in torch, two bias vectors: ``g (d_h (in + d_h) + 2 d_h)``;
    layers after the first read the d_h-wide output of the layer below.
    """
    g = GATES[_check_kind(kind)]
    d_in, d_h, num_layers = (check_int(n, v, 1) for n, v in (("d_in", d_in), ("d_h", d_h), ("num_layers", num_layers)))
    total = 0
    for layer in range(num_layers):
        width = d_in if layer == 0 else d_h
        total += g * (d_h * (width + d_h) + (2 * d_h if bias else 0))
    return total


def make_recurrent(kind: str, d_in: int, d_h: int, seed: int = 0, forget_bias: float | None = None) -> nn.Module:
    """A freshly initialised, batch-first ``nn.RNN`` (tanh), ``nn.GRU`` or ``nn.LSTM``, seeded.

    ``forget_bias`` (LSTM only) sets the forget-gate bias with :func:`set_forget_bias`.
    """
    kind = _check_kind(kind)
    d_in, d_h = check_int("d_in", d_in, 1), check_int("d_h", d_h, 1)
    if forget_bias is not None and kind != "lstm":
        raise ValueError(f"forget_bias applies to kind='lstm' only, got kind={kind!r}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        module = {"rnn": nn.RNN, "gru": nn.GRU, "lstm": nn.LSTM}[kind](d_in, d_h, batch_first=True)
    if forget_bias is not None:
        set_forget_bias(module, forget_bias)
    return module


def set_forget_bias(lstm: nn.Module, value: float) -> nn.Module:
    """Set the forget-gate bias of every layer of an ``nn.LSTM``/``nn.LSTMCell`` to ``value``.

    torch packs the four gate blocks as (input, forget, candidate, output), so the forget block
    is rows ``d_h:2 d_h``. ``bias_ih`` gets ``value`` and ``bias_hh`` gets 0, so the total
    forget bias is exactly ``value``. Returns the module (modified in place).
    """
    if not isinstance(lstm, (nn.LSTM, nn.LSTMCell)):
        raise ValueError(f"lstm must be an nn.LSTM or nn.LSTMCell, got {type(lstm).__name__}")
    if not getattr(lstm, "bias", True):
        raise ValueError("lstm was built with bias=False: it has no forget-gate bias to set")
    H = lstm.hidden_size
    with torch.no_grad():
        for name, p in lstm.named_parameters():
            if name.startswith("bias_ih"):
                p[H:2 * H] = value
            elif name.startswith("bias_hh"):
                p[H:2 * H] = 0.0
    return lstm


def input_gradient_by_lag(module: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """How strongly the last output of a recurrent layer depends on each earlier input.

    ``module`` is a batch-first ``nn.RNN``/``nn.GRU``/``nn.LSTM``; ``x`` (B, T, d_in). The loss is
    the sum of the last step's output ``y_T`` (B, d_h) over units; the result (B, T) holds
    ``sum_j |dL/dx_{T-k, j}|``, column ``k`` = lag ``k`` (column 0: the last input).
    """
    if not isinstance(module, (nn.RNN, nn.GRU, nn.LSTM)):
        raise ValueError(f"module must be an nn.RNN, nn.GRU or nn.LSTM, got {type(module).__name__}")
    if not module.batch_first:
        raise ValueError("module must be built with batch_first=True, so that x is (B, T, d_in)")
    x = _check_sequence(x, module.input_size).detach().clone().requires_grad_(True)
    y, _ = module(x)
    y[:, -1].sum().backward()
    return x.grad.abs().sum(dim=2).flip(1).detach()


def reach_by_lag(kind: str, T: int, d_h: int = 32, d_in: int = 1, seeds: Iterable[int] = range(10),
                 forget_bias: float | None = None, average: str = "arithmetic",
                 path: str = "all") -> np.ndarray:
    """Input gradient by lag of freshly initialised cells, averaged over initialisations.

    For each seed: build the cell with :func:`make_recurrent`, draw ``x`` (1, T, d_in) standard
    normal from the same seed, measure :func:`input_gradient_by_lag` (``path="all"``) or, for an
    LSTM, :func:`lstm_cell_path_gradient_by_lag` (``path="cell"``: only the route along the cell
    state). Returns (T,), index ``k`` = lag ``k``: the ``average`` over seeds, ``"arithmetic"``
    or ``"geometric"`` (the mean of the logs, exponentiated: the right average for values that
    spread over orders of magnitude, where the arithmetic mean follows the largest one).
    """
    T = check_int("T", T, 1)
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds must name at least one initialisation")
    if average not in ("arithmetic", "geometric"):
        raise ValueError(f"average must be 'arithmetic' or 'geometric', got {average!r}")
    if path not in ("all", "cell"):
        raise ValueError(f"path must be 'all' or 'cell', got {path!r}")
    if path == "cell" and kind != "lstm":
        raise ValueError(f"path='cell' needs kind='lstm' (only the LSTM has a cell state), got {kind!r}")
    rows = []
    for s in seeds:
        module = make_recurrent(kind, d_in, d_h, seed=s, forget_bias=forget_bias)
        x = torch.randn(1, T, d_in, generator=torch.Generator().manual_seed(10_000 + s))
        measure = input_gradient_by_lag if path == "all" else lstm_cell_path_gradient_by_lag
        rows.append(measure(module, x)[0])
    stacked = torch.stack(rows)
    if average == "geometric":
        return stacked.double().log().mean(0).exp().numpy()
    return stacked.mean(0).numpy()


def lstm_cell_path_gradient_by_lag(module: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """:func:`input_gradient_by_lag` of an LSTM with every route through ``h_{t-1}`` cut.

    The layer is unrolled with :func:`lstm_step`, feeding ``h_{t-1}.detach()`` into the gates, so
    the gradient of the last output reaches an earlier input only along the cell state,
    ``c_t = f_t * c_{t-1} + i_t * g_t`` (the forward values are those of the intact layer).
    ``module``: batch-first single-layer ``nn.LSTM``; ``x`` (B, T, d_in) -> (B, T), column k = lag k.
    """
    if not isinstance(module, nn.LSTM) or not module.batch_first:
        raise ValueError("module must be a batch-first nn.LSTM")
    x = _check_sequence(x, module.input_size).detach().clone().requires_grad_(True)
    h = torch.zeros(x.shape[0], module.hidden_size)
    c = torch.zeros(x.shape[0], module.hidden_size)
    for t in range(x.shape[1]):
        h, c, _ = lstm_step(module, x[:, t], h.detach(), c)
    h.sum().backward()
    return x.grad.abs().sum(dim=2).flip(1).detach()


def _layer_weights(module: nn.Module, gates: int):
    """(W_ih, W_hh, b_ih, b_hh) of a single-layer nn.LSTM/GRU or of an nn.LSTMCell/GRUCell."""
    suffix = "_l0" if isinstance(module, (nn.LSTM, nn.GRU)) else ""
    if isinstance(module, (nn.LSTM, nn.GRU)) and (module.num_layers != 1 or module.bidirectional):
        raise ValueError("module must be a single-layer, unidirectional cell")
    W_ih, W_hh = getattr(module, "weight_ih" + suffix), getattr(module, "weight_hh" + suffix)
    H = module.hidden_size
    zero = torch.zeros(gates * H, dtype=W_ih.dtype)
    b_ih = getattr(module, "bias_ih" + suffix) if module.bias else zero
    b_hh = getattr(module, "bias_hh" + suffix) if module.bias else zero
    return W_ih, W_hh, b_ih, b_hh


def lstm_step(module: nn.Module, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor):
    """One LSTM step written out from the gate equations, with ``module``'s weights.

    ``module``: single-layer ``nn.LSTM`` or ``nn.LSTMCell``; ``x`` (B, d_in), ``h`` and ``c`` (B, d_h).
    Returns ``(h_t, c_t, gates)`` with ``gates`` a dict of the (B, d_h) tensors
    ``i, f, g, o`` (input, forget, candidate, output):
    ``c_t = f * c + i * g`` and ``h_t = o * tanh(c_t)``.
    """
    if not isinstance(module, (nn.LSTM, nn.LSTMCell)):
        raise ValueError(f"module must be an nn.LSTM or nn.LSTMCell, got {type(module).__name__}")
    W_ih, W_hh, b_ih, b_hh = _layer_weights(module, 4)
    z = x @ W_ih.T + b_ih + h @ W_hh.T + b_hh
    zi, zf, zg, zo = z.chunk(4, dim=-1)
    i, f, g, o = torch.sigmoid(zi), torch.sigmoid(zf), torch.tanh(zg), torch.sigmoid(zo)
    c_t = f * c + i * g
    h_t = o * torch.tanh(c_t)
    return h_t, c_t, {"i": i, "f": f, "g": g, "o": o}


def gru_step(module: nn.Module, x: torch.Tensor, h: torch.Tensor):
    """One GRU step from the equations, in torch's convention, with ``module``'s weights.

    ``module``: single-layer ``nn.GRU`` or ``nn.GRUCell``; ``x`` (B, d_in), ``h`` (B, d_h).
    torch's GRU: ``r = s(W_ir x + b_ir + W_hr h + b_hr)``, ``z = s(W_iz x + b_iz + W_hz h + b_hz)``,
    ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))`` and ``h_t = (1 - z) * n + z * h`` (so ``z``
    is the share of the *old* state kept). Returns ``(h_t, gates)`` with gates ``r, z, n``.
    """
    if not isinstance(module, (nn.GRU, nn.GRUCell)):
        raise ValueError(f"module must be an nn.GRU or nn.GRUCell, got {type(module).__name__}")
    W_ih, W_hh, b_ih, b_hh = _layer_weights(module, 3)
    xi_r, xi_z, xi_n = (x @ W_ih.T + b_ih).chunk(3, dim=-1)
    hh_r, hh_z, hh_n = (h @ W_hh.T + b_hh).chunk(3, dim=-1)
    r = torch.sigmoid(xi_r + hh_r)
    z = torch.sigmoid(xi_z + hh_z)
    n = torch.tanh(xi_n + r * hh_n)
    h_t = (1 - z) * n + z * h
    return h_t, {"r": r, "z": z, "n": n}
