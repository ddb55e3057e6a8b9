"""§14.47's heavy experiment: how many Adam steps each recurrent cell needs to recall a symbol.

The task (:func:`recall_batch`): one of ``n_symbols`` symbols, then ``lag`` distractor steps drawn
from ``n_distractors`` other symbols, all one-hot; after the last step the network must name the
first symbol, so chance is ``1 / n_symbols``. The network (:class:`Recall`) is one recurrent cell of
width ``width`` and a linear read-out of its last output. :func:`train` runs Adam (gradient norm
clipped) on fresh batches and scores a fixed held-out set every ``every`` steps, stopping at the
first score at or above ``target``. :func:`sweep` runs every cell of ``cells`` at every lag, learning
rate and seed of the configuration and records the steps each run needed (``None``: not within
``budget``). It takes CPU minutes, so §14.47 loads it from ``cache/recall`` unless ``HEAVY_EVAL``
is true (:func:`train_and_cache`, :func:`load`). §14.47's own cells are the teaching copy of
:func:`recall_batch`, :class:`Recall` and :func:`train`; its test checks that both give the same
accuracies.
"""

from __future__ import annotations

import itertools
import sys
import time

import torch
from torch import nn
from torch.nn import functional as F

from . import gradients
from .checks import check_int, check_positive

#: The cache entry this module writes.
CACHE_NAME = "recall"

#: The experiment's settings (every value is the author's choice). ``cells`` maps a name to the
#: ``(kind, forget_bias)`` of :func:`helpers.gradients.make_recurrent` (``None``: torch's default).
CONFIG = {
    "n_symbols": 4, "n_distractors": 4, "width": 32, "batch": 32, "clip": 1.0, "every": 50, "n_test": 500,
    "target": 0.9, "budget": 1500,
    "cells": {"RNN": ["rnn", None], "GRU": ["gru", None], "LSTM (torch default)": ["lstm", None],
              "LSTM (forget bias 1)": ["lstm", 1.0], "LSTM (forget bias 3)": ["lstm", 3.0]},
    "lags": [10, 20, 40], "lrs": [0.003, 0.01, 0.03], "seeds": [1447, 1448, 1449],
}

REGENERATE = ".venv/bin/python tools/book.py --only 14_47 --heavy"


def recall_batch(n: int, lag: int, gen: torch.Generator, config: dict = CONFIG):
    """``n`` sequences: a symbol, then ``lag`` distractors -> one-hot ``x`` (n, lag + 1, V) and the answer (n,)."""
    check_int("n", n, 1)
    check_int("lag", lag, 1)
    k, d = config["n_symbols"], config["n_distractors"]
    first = torch.randint(0, k, (n, 1), generator=gen)
    rest = torch.randint(k, k + d, (n, lag), generator=gen)
    return F.one_hot(torch.cat([first, rest], dim=1), k + d).float(), first[:, 0]


class Recall(nn.Module):
    """A recurrent cell and a linear read-out of its last output: ``(B, T, V)`` one-hot -> logits ``(B, n_symbols)``."""

    def __init__(self, kind: str, seed: int, forget_bias: float | None = None, config: dict = CONFIG):
        super().__init__()
        vocab = config["n_symbols"] + config["n_distractors"]
        self.cell = gradients.make_recurrent(kind, vocab, config["width"], seed=seed, forget_bias=forget_bias)
        self.head = nn.Linear(config["width"], config["n_symbols"])

    def forward(self, x):                            # x (B, T, V)
        return self.head(self.cell(x)[0][:, -1])     # (B, n_symbols), read at the last step


def train(kind: str, seed: int, lag: int, lr: float, forget_bias: float | None = None, steps: int | None = None,
          target: float | None = None, config: dict = CONFIG):
    """Adam on the recall task -> (``[{"step", "accuracy"}]`` every ``every`` steps, the model).

    Trains for ``steps`` (default: the budget) and stops early at the first held-out accuracy at or
    above ``target`` (``None``: never).
    """
    check_positive("lr", lr)
    steps = check_int("steps", config["budget"] if steps is None else steps, 1)
    torch.manual_seed(seed)
    model, gen = Recall(kind, seed, forget_bias, config), torch.Generator().manual_seed(seed)
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)
    x_test, y_test = recall_batch(config["n_test"], lag, torch.Generator().manual_seed(seed + 10_000), config)
    curve = []
    for step in range(1, steps + 1):
        x, y = recall_batch(config["batch"], lag, gen, config)
        loss = F.cross_entropy(model(x), y)
        optimiser.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), config["clip"])
        optimiser.step()
        if step % config["every"] == 0:
            with torch.no_grad():
                curve.append({"step": step, "accuracy": (model(x_test).argmax(1) == y_test).double().mean().item()})
            if target is not None and curve[-1]["accuracy"] >= target:
                break
    return curve, model


def runs(config: dict = CONFIG) -> list[dict]:
    """Every run of the sweep: one per (cell, lag, learning rate, seed), in that order."""
    return [{"cell": c, "lag": lag, "lr": lr, "seed": s}
            for c, lag, lr, s in itertools.product(config["cells"], config["lags"], config["lrs"], config["seeds"])]


def _one(args):
    run, config = args
    torch.set_num_threads(1)
    kind, forget_bias = config["cells"][run["cell"]]
    start = time.perf_counter()
    curve, _ = train(kind, run["seed"], run["lag"], run["lr"], forget_bias, target=config["target"], config=config)
    reached = curve[-1]["accuracy"] >= config["target"]
    return {**run, "steps_to_target": curve[-1]["step"] if reached else None, "last_accuracy": curve[-1]["accuracy"],
            "seconds": time.perf_counter() - start}


def sweep(config: dict = CONFIG, jobs: int = 1) -> tuple[dict, float]:
    """Every run of :func:`runs` -> ``({"runs": [...]}, wall_time_s)``; each run records ``steps_to_target``
    (``None`` if the budget ran out first), ``last_accuracy`` and ``seconds``. Every run seeds itself, so
    the numbers do not depend on ``jobs`` (parallel processes, one thread each)."""
    start = time.perf_counter()
    todo = [(r, config) for r in runs(config)]
    if jobs > 1:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(jobs) as pool:
            done = pool.map(_one, todo, chunksize=1)
    else:
        done = [_one(t) for t in todo]
    return {"runs": done}, time.perf_counter() - start


def cache_code() -> list:
    """What produces the cache entry: this module and :mod:`helpers.gradients` (the cells)."""
    return [sys.modules[__name__], gradients]


def cache_config() -> dict:
    """The configuration recorded in (and checked against) the cache manifest."""
    return dict(CONFIG)


def train_and_cache(jobs: int = 2) -> None:
    """Run :func:`sweep` and write ``cache/recall`` (CPU minutes; the manifest records how long)."""
    from . import cache

    results, wall = sweep(CONFIG, jobs=jobs)
    cache.save_cache(CACHE_NAME, code=cache_code(), config=cache_config(), results=results, wall_time_s=wall,
                     metrics={"runs": len(results["runs"])}, regenerate=REGENERATE)


def load():
    """The cached sweep (checked against the current code and config) -> ``CachedResult``."""
    from . import cache

    return cache.load_cache(CACHE_NAME, code=cache_code(), config=cache_config())
