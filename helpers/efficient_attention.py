"""Making attention affordable, and measuring what it costs (§14.55, §14.56).

Measuring cost
- ``count_flops(fn)``            floating-point operations of the matrix products ``fn`` runs (deterministic)
- ``peak_memory_bytes(fn)``      peak bytes of tensor memory allocated while ``fn`` runs
- ``count_kernel_calls(fn)``     how many times each tensor operation was called (e.g. ``mm``), a measure of
                                 sequential depth
- ``time_call(fn)``              wall time of repeated calls (their minimum or median)

Cheaper attention
- ``attention_mask(q_pos, k_pos, window)``   the causal (optionally sliding-window) mask for given positions
- ``sliding_window_mask(T, window)``         the ``(T, T)`` causal sliding-window mask
- ``sliding_window_attention(q, k, v, window)``  causal sliding-window attention in O(T w d), never forming
                                                 the ``(T, T)`` score matrix

Decoding with a KV cache
- ``KVCache``                    the keys and values of the tokens seen so far, per layer; the book's GPT
                                 (:mod:`helpers.gpt`) reads and extends it

Mask convention: boolean, ``True`` = *blocked*, as in :mod:`helpers.attention`.
"""

from __future__ import annotations

import contextlib
import math
import os
import statistics
import sys
import time
import warnings
from collections import Counter
from typing import Callable

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

from .checks import check_int as _check_int

__all__ = [
    "count_flops", "peak_memory_bytes", "count_kernel_calls", "time_call",
    "attention_mask", "sliding_window_mask", "sliding_window_attention",
    "KVCache",
]

def _check_window(window) -> int | None:
    return None if window is None else _check_int("window", window, 1)


# ---------------------------------------------------------------------------------------- measuring cost

@contextlib.contextmanager
def _unfused_rnns():
    """Switch off oneDNN's fused CPU kernels (used by ``nn.LSTM``), which hide their products from
    Python-level counters, so that recurrent layers run, and are counted, step by step."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a TF32 notice about Intel GPUs, irrelevant here
        with torch.backends.mkldnn.flags(enabled=False):
            yield


def count_flops(fn: Callable[[], object]) -> int:
    """Floating-point operations of the matrix products (``mm``, ``addmm``, ``bmm``, convolutions,
    fused attention) that ``fn()`` executes, counted by ``torch.utils.flop_counter.FlopCounterMode``.

    One multiply-add counts as 2 operations: an ``(m, k) @ (k, n)`` product is ``2 m k n``.
    Element-wise work (softmax, tanh, masking) is not counted. The count is exact and
    deterministic: it depends on the shapes, not on the machine. Kernels the counter has no
    formula for count as 0 — among them PyTorch's fused CPU attention kernel, which
    ``F.scaled_dot_product_attention`` uses for 4-D inputs; count the naive formula instead.
    oneDNN's fused RNN
    kernels are switched off while counting (they hide their products from the counter);
    the arithmetic is the same.
    """
    if not callable(fn):
        raise ValueError(f"fn must be a callable taking no arguments, got {type(fn).__name__}")
    counter = FlopCounterMode(display=False)
    with _unfused_rnns(), counter:
        fn()
    return int(counter.get_total_flops())


@contextlib.contextmanager
def _stderr_silenced():
    """Silence file descriptor 2 (the profiler's C++ library prints start/stop lines there)."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no real file descriptor 2 (some embedded interpreters)
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def peak_memory_bytes(fn: Callable[[], object], device: torch.device | str = "cpu") -> int:
    """Peak bytes of tensor memory that ``fn()`` holds at once, over what was allocated before it ran.

    On the CPU, ``torch.profiler`` records every allocation and free of the CPU allocator
    (including the scratch buffers inside fused kernels); the peak of their running sum is
    returned. On CUDA, the caching allocator's own peak statistic is used. Tensors that
    exist before the call (inputs, weights) are not counted; the output is (it is alive at
    the end of the call). Deterministic for a given sequence of operations.
    """
    if not callable(fn):
        raise ValueError(f"fn must be a callable taking no arguments, got {type(fn).__name__}")
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        base = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        out = fn()
        torch.cuda.synchronize(device)
        peak = torch.cuda.max_memory_allocated(device) - base
        del out
        return int(peak)
    if device.type != "cpu":
        raise ValueError(f"device must be 'cpu' or a CUDA device, got {device}")
    from torch.profiler import ProfilerActivity, profile

    with _stderr_silenced():
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            out = fn()
    del out
    events = [e for e in prof.profiler.kineto_results.events()
              if e.name() == "[memory]" and e.device_type() == torch.autograd.DeviceType.CPU]
    events.sort(key=lambda e: e.start_ns())
    live = peak = 0
    for e in events:
        live += e.nbytes()
        peak = max(peak, live)
    return int(peak)


class _CallCounter(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.calls: Counter = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))


def count_kernel_calls(fn: Callable[[], object]) -> Counter:
    """How many times ``fn()`` calls each tensor operation -> ``Counter`` keyed by name (``"mm"``, ``"bmm"``...).

    Composite operations are counted as the primitive operations they run. A recurrence
    calls its matrix product once per time step, so the count of ``mm``/``addmm`` calls
    measures the *sequential depth* of a layer: how many dependent steps must run one
    after the other.
    """
    if not callable(fn):
        raise ValueError(f"fn must be a callable taking no arguments, got {type(fn).__name__}")
    counter = _CallCounter()
    with _unfused_rnns(), counter:
        fn()
    return counter.calls


def time_call(fn: Callable[[], object], repeats: int = 3, warmup: int = 1, statistic: str = "min") -> float:
    """Wall time in seconds of ``fn()``: the minimum (or median) of ``repeats`` timed calls after
    ``warmup`` untimed ones.

    Wall time depends on the machine and on whatever else it is doing. Interference from
    other work only ever *adds* time, so the minimum of a few repeats (``statistic="min"``,
    the choice of Python's ``timeit``) is the most stable estimate on a shared machine;
    ``"median"`` describes a typical run instead. CUDA work is synchronised.
    """
    if not callable(fn):
        raise ValueError(f"fn must be a callable taking no arguments, got {type(fn).__name__}")
    repeats = _check_int("repeats", repeats, 1)
    warmup = _check_int("warmup", warmup, 0)
    if statistic not in ("min", "median"):
        raise ValueError(f"statistic must be 'min' or 'median', got {statistic!r}")
    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return float(min(times) if statistic == "min" else statistics.median(times))




# --------------------------------------------------------------------------------------- masks and windows

def attention_mask(q_positions: torch.Tensor, k_positions: torch.Tensor, window: int | None = None) -> torch.Tensor:
    """Causal mask for queries at ``q_positions`` ``(Tq,)`` and keys at ``k_positions`` ``(Tk,)`` -> ``(Tq, Tk)``.

    ``True`` (blocked) where the key lies in the query's future, and, with a ``window`` w,
    also where it lies w or more steps in the past: query i sees keys i-w+1, ..., i.
    """
    for name, p in (("q_positions", q_positions), ("k_positions", k_positions)):
        if not isinstance(p, torch.Tensor) or p.dim() != 1:
            raise ValueError(f"{name} must be a 1-D tensor of positions, got "
                             f"{tuple(p.shape) if isinstance(p, torch.Tensor) else type(p).__name__}")
    window = _check_window(window)
    offset = q_positions[:, None] - k_positions[None, :]  # how far back the key is
    blocked = offset < 0
    if window is not None:
        blocked = blocked | (offset >= window)
    return blocked


def sliding_window_mask(T: int, window: int, device: torch.device | str | None = None) -> torch.Tensor:
    """The ``(T, T)`` causal sliding-window mask: query i sees keys i-window+1, ..., i (True = blocked).

    With ``window >= T`` it is the ordinary causal mask.
    """
    T = _check_int("T", T, 1)
    window = _check_int("window", window, 1)
    pos = torch.arange(T, device=device)
    return attention_mask(pos, pos, window)


def sliding_window_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, window: int) -> torch.Tensor:
    """Causal sliding-window self-attention computed block by block, in O(T w d) time and O(T w) memory.

    Query i attends to keys max(0, i-w+1), ..., i. The sequence is cut into blocks of w
    positions; the queries of block j can only see keys in blocks j-1 and j, so each block
    computes a ``(w, 2w)`` score matrix instead of a row of the ``(T, T)`` one. The result
    equals ``scaled_dot_product_attention(q, k, v, sliding_window_mask(T, w))``.

    Args:
        q, k: ``(..., T, d_k)`` queries and keys of the same sequence.
        v: ``(..., T, d_v)`` values.
        window: w >= 1; ``window >= T`` gives full causal attention.

    Returns:
        ``(..., T, d_v)``.
    """
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.dim() < 2:
            raise ValueError(f"{name} must be a tensor of shape (..., T, d), got "
                             f"{tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__}")
    if not (q.dtype.is_floating_point and q.dtype == k.dtype == v.dtype):
        raise ValueError(f"q, k and v must be floating-point tensors of one dtype, got q {q.dtype}, k {k.dtype}, "
                         f"v {v.dtype}")
    if q.shape[-2] < 1:
        raise ValueError(f"q, k and v must hold at least one position T >= 1, got q of shape {tuple(q.shape)}")
    if q.shape[:-1] != k.shape[:-1] or q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same shape (..., T, d_k) (self-attention): q {tuple(q.shape)}, "
                         f"k {tuple(k.shape)}")
    if v.shape[:-1] != k.shape[:-1]:
        raise ValueError(f"v must have shape (..., T, d_v) with the same leading dimensions and T as k: "
                         f"k {tuple(k.shape)}, v {tuple(v.shape)}")
    window = _check_int("window", window, 1)
    T, d_k = q.shape[-2], q.shape[-1]
    w = min(window, T)
    n = math.ceil(T / w)
    pad = n * w - T
    lead = q.shape[:-2]
    qb = F.pad(q, (0, 0, 0, pad)).reshape(*lead, n, w, d_k)                      # (..., n, w, d_k)
    kb = F.pad(k, (0, 0, w, pad)).reshape(*lead, n + 1, w, d_k)                  # one block of padding in front
    vb = F.pad(v, (0, 0, w, pad)).reshape(*lead, n + 1, w, v.shape[-1])
    kk = torch.cat([kb[..., :-1, :, :], kb[..., 1:, :, :]], dim=-2)              # (..., n, 2w, d_k): blocks j-1, j
    vv = torch.cat([vb[..., :-1, :, :], vb[..., 1:, :, :]], dim=-2)
    scores = qb @ kk.transpose(-2, -1) / math.sqrt(d_k)                          # (..., n, w, 2w)
    a = torch.arange(w, device=q.device)[:, None]   # query's place in its block
    c = torch.arange(2 * w, device=q.device)[None, :]  # key's place in the two blocks
    blocked = (c <= a) | (c > a + w)                 # key (j-1)w + c is visible iff a < c <= a + w
    blocked = blocked.expand(n, w, 2 * w).clone()
    blocked[0, :, :w] = True                         # the padding block in front of block 0
    scores = scores.masked_fill(blocked, float("-inf"))
    out = torch.softmax(scores, dim=-1) @ vv                                      # (..., n, w, d_v)
    return out.reshape(*lead, n * w, v.shape[-1])[..., :T, :]


# ------------------------------------------------------------------------------------------------- KV cache

class KVCache:
    """The keys and values a decoder has computed so far, one ``(B, h, t, d_k)`` pair per layer.

    Each decoding step computes keys and values for the *new* token only and appends them;
    attention then reads the whole cache. With a ``window`` w the cache keeps only the last w
    positions, so its memory stops growing. ``position`` counts the tokens consumed so far.
    """

    def __init__(self, n_layers: int, window: int | None = None):
        self.n_layers = _check_int("n_layers", n_layers, 1)
        self.window = _check_window(window)
        self.keys: list[torch.Tensor | None] = [None] * self.n_layers
        self.values: list[torch.Tensor | None] = [None] * self.n_layers
        self.position = 0

    def extend(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append the new keys/values ``(B, h, t_new, d_k)`` of ``layer`` -> all keys and values to attend to."""
        if not 0 <= layer < self.n_layers:
            raise ValueError(f"layer must be in 0..{self.n_layers - 1}, got {layer}")
        if self.keys[layer] is not None:
            k = torch.cat([self.keys[layer], k], dim=-2)
            v = torch.cat([self.values[layer], v], dim=-2)
        return k, v

    def store(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> None:
        """Keep ``k``, ``v`` (the result of ``extend``) for the next step, trimmed to the window."""
        if self.window is not None:
            k, v = k[..., -self.window:, :], v[..., -self.window:, :]
        self.keys[layer], self.values[layer] = k, v

    def __len__(self) -> int:
        """Number of positions held (the same in every layer)."""
        return 0 if self.keys[0] is None else self.keys[0].shape[-2]

    def nbytes(self) -> int:
        """Bytes held by all cached keys and values."""
        return sum(t.numel() * t.element_size() for t in (*self.keys, *self.values) if t is not None)
