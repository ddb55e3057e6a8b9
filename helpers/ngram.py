"""Interpolated Kneser–Ney character n-grams: the strong classical baseline of §14.58, §14.59 and §14.64.

A Kneser–Ney model of order ``n`` predicts a character from the ``n - 1`` before it. Each order
``m`` subtracts a discount ``D_m`` from every count it has seen and hands the freed mass to the
order below, in proportion to that order's own prediction (Kneser & Ney 1995; the interpolated form
of Chen & Goodman 1999):

    p_m(w | h) = (max(c_m(h w) - D_m, 0) + D_m * N_m(h) * p_{m-1}(w | h')) / c_m(h),

with ``h'`` the context ``h`` without its first character, ``c_m(h) = sum_w c_m(h w)``, and
``N_m(h)`` the number of distinct characters seen after ``h``. A context never seen
(``c_m(h) = 0``) passes ``p_{m-1}`` on unchanged; below order 1 stands the uniform ``1 / V``. The
highest order counts occurrences; every lower order counts *continuations*, the number of distinct
characters seen before ``h w``, because it is consulted exactly when the longer context is rare.
``D_m = n1 / (n1 + 2 n2)``, from the numbers of ``m``-grams counted once and twice (0.5 where
no m-gram was counted once, as in a tiny text). A token with fewer than ``n - 1`` tokens before it
(at the start of a text or of a scoring window) is predicted by the Kneser–Ney model of the order
its history allows, whose own highest order counts occurrences.

Counts are tables of base-``V`` integer keys, sorted and searched with NumPy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from helpers import checks

#: The order §14.58 chooses on held-out training text for tiny Shakespeare (its test re-runs the choice);
#: §14.59 and §14.64 fit their baseline at this order.
KN_ORDER = 6


@dataclass(frozen=True)
class _Level:
    """One order's counts: (context, next) keys and their counts, each context's total and types, D."""

    keys: np.ndarray
    counts: np.ndarray
    contexts: np.ndarray
    totals: np.ndarray
    types: np.ndarray
    discount: float


def _lookup(keys: np.ndarray, values: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """values[i] where keys[i] == query (keys sorted), 0 where a query is absent."""
    i = np.minimum(np.searchsorted(keys, queries), len(keys) - 1)
    return np.where(keys[i] == queries, values[i], 0)


def _level(keys: np.ndarray, counts: np.ndarray, vocab_size: int) -> _Level:
    n1, n2 = int((counts == 1).sum()), int((counts == 2).sum())
    contexts = keys // vocab_size                     # keys are sorted, so each context is one run
    starts = np.flatnonzero(np.r_[True, contexts[1:] != contexts[:-1]])
    return _Level(keys, counts, contexts[starts], np.add.reduceat(counts, starts),
                  np.diff(np.r_[starts, len(keys)]), n1 / (n1 + 2 * n2) if n1 else 0.5)


def _gram_keys(x: np.ndarray, m: int, vocab_size: int) -> np.ndarray:
    """The base-V key of every m-gram of x, (len(x) - m + 1,)."""
    n = len(x) - m + 1
    key = np.zeros(n, dtype=np.int64)
    for j in range(m):
        key = key * vocab_size + x[j:j + n]
    return key


class KneserNey:
    """An interpolated Kneser–Ney model of order ``order`` fitted to the token ids ``ids``.

    ``ids``: 1-D integer array of ids in ``0..vocab_size - 1``. Score text with :meth:`nll`.
    """

    def __init__(self, ids, vocab_size: int, order: int):
        self.vocab_size = checks.check_int("vocab_size", vocab_size, 2)
        self.order = checks.check_int("order", order, 1)
        x = _check_ids("ids", ids, self.vocab_size)
        if len(x) <= self.order:
            raise ValueError(f"ids has {len(x)} tokens; an order-{order} model needs more than {order}")
        if self.vocab_size ** (self.order + 1) >= 2 ** 63:
            raise ValueError(f"vocab_size ** (order + 1) = {vocab_size}**{order + 1} overflows the int64 keys; "
                             f"lower the order")
        V = self.vocab_size
        self.occurrences: list[_Level] = []           # per order m: how often each h w occurred
        self.continuations: list[_Level] = []         # per order m < n: how many distinct tokens preceded h w
        for m in range(1, self.order + 1):
            self.occurrences.append(_level(*np.unique(_gram_keys(x, m, V), return_counts=True), V))
            if m < self.order:
                keys, counts = np.unique(np.unique(_gram_keys(x, m + 1, V)) % V ** m, return_counts=True)
                self.continuations.append(_level(keys, counts, V))

    def nll(self, ids, window: int | None = None) -> np.ndarray:
        """-ln p of every token of ``ids`` after the first, in nats -> (len(ids) - 1,).

        Token ``t`` is predicted from the up to ``order - 1`` tokens before it in ``ids``. With
        ``window=T`` only from those inside its window: ``ids`` is cut into consecutive windows of
        ``T`` predictions, as :func:`helpers.charlm.evaluate` scores a network with context ``T``.
        """
        V = self.vocab_size
        x = _check_ids("ids", ids, V)
        if len(x) < 2:
            raise ValueError(f"ids must hold at least 2 tokens to predict one, got {len(x)}")
        checks.check_optional_int("window", window, 1)
        pos = np.arange(1, len(x))
        history = pos if window is None else (pos - 1) % window + 1       # tokens visible before pos
        use = np.minimum(history, self.order - 1) + 1                     # the order that predicts pos
        lower = np.full(len(pos), 1.0 / V)                               # p_{m-1}, the back-off chain
        p = np.empty(len(pos))
        context = np.zeros(len(pos), dtype=np.int64)                      # the m - 1 tokens before pos
        for m in range(1, self.order + 1):
            if m > 1:
                context = x[np.maximum(pos - (m - 1), 0)] * V ** (m - 2) + context
            top = use == m                                                # positions whose model has order m
            p[top] = _mix(self.occurrences[m - 1], context[top], x[pos][top], lower[top], V)
            if m < self.order:
                lower = _mix(self.continuations[m - 1], context, x[pos], lower, V)
        return -np.log(p)


def _mix(lv: _Level, context: np.ndarray, nxt: np.ndarray, lower: np.ndarray, vocab_size: int) -> np.ndarray:
    """One order of interpolated Kneser–Ney: the discounted counts of ``lv`` plus the freed mass times
    ``lower``, the next order down; a context ``lv`` never saw passes ``lower`` on unchanged."""
    total = _lookup(lv.contexts, lv.totals, context)
    seen = _lookup(lv.keys, lv.counts, context * vocab_size + nxt)
    types = _lookup(lv.contexts, lv.types, context)
    mixed = (np.maximum(seen - lv.discount, 0) + lv.discount * types * lower) / np.maximum(total, 1)
    return np.where(total > 0, mixed, lower)


def _check_ids(name: str, ids, vocab_size: int) -> np.ndarray:
    x = np.asarray(ids)
    if x.ndim != 1 or not np.issubdtype(x.dtype, np.integer):
        raise ValueError(f"{name} must be a 1-D array of integer token ids, got {x.ndim}-D {x.dtype}")
    if len(x) and (x.min() < 0 or x.max() >= vocab_size):
        raise ValueError(f"{name} holds ids outside 0..{vocab_size - 1} (vocab_size={vocab_size}): "
                         f"min {x.min()}, max {x.max()}")
    return x.astype(np.int64)
