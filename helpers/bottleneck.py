"""§14.48's heavy experiment: learning curves of the fixed-context encoder–decoder, to a plateau.

One fresh :class:`~helpers.seq2seq.Seq2Seq` per run, trained on fresh batches of the copy (or
reversal) task and scored on a fixed test set at every checkpoint. The runs (:func:`runs`):

- ``fixed``/``copy``: the fixed-context model (``c = h_T``) at every length of ``lengths``;
- ``fixed``/``reversal``: the same model on reversal at ``t_probe``;
- ``wide``/``copy``: twice the hidden width, on copying at ``t_probe``;
- ``dot``/``copy``: the same width with dot-product attention (§14.49) at every length, for the
  shorter ``attention_checkpoints``;

each for every seed of ``seeds``. The checkpoints double, so the gain over the last doubling of
the budget says whether a curve has stopped rising. It takes CPU minutes, so the notebook loads it
from ``cache/bottleneck`` unless ``HEAVY_EVAL`` is true (:func:`train_and_cache`, :func:`load`).
"""

from __future__ import annotations

import sys
import time

import torch

from . import seq2seq
from .seq2seq import TASKS, Seq2Seq, learning_curve, make_task

#: The cache entry this module writes.
CACHE_NAME = "bottleneck"

#: The experiment's settings (every value is the author's choice).
CONFIG = {
    "vocab_size": 8, "d_embed": 16, "d_hidden": 32, "d_hidden_wide": 64,
    "lengths": [4, 8, 16, 32], "t_probe": 16, "seeds": [0, 1, 2],
    "checkpoints": [125, 250, 500, 1000, 2000, 4000], "attention_checkpoints": [125, 250, 500, 1000],
    "batch_size": 64, "lr": 1e-2, "n_test": 1000, "base_seed": 1448,
}

REGENERATE = ".venv/bin/python tools/book.py --only 14_48 --heavy"


def runs(config: dict = CONFIG) -> list[dict]:
    """Every run of the experiment: dicts with ``model``, ``task``, ``length`` and ``seed``."""
    out = []
    for seed in config["seeds"]:
        out += [{"model": "fixed", "task": "copy", "length": T, "seed": seed} for T in config["lengths"]]
        out.append({"model": "fixed", "task": "reversal", "length": config["t_probe"], "seed": seed})
        out.append({"model": "wide", "task": "copy", "length": config["t_probe"], "seed": seed})
        out += [{"model": "dot", "task": "copy", "length": T, "seed": seed} for T in config["lengths"]]
    return out


def test_set(task: str, length: int, config: dict = CONFIG) -> tuple[torch.Tensor, torch.Tensor]:
    """The fixed test sequences of ``(task, length)``, shared by every model and seed -> (src, tgt), (N, T)."""
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    gen = torch.Generator().manual_seed(config["base_seed"] + 7919 * length + TASKS.index(task))
    return make_task(task, config["n_test"], length, config["vocab_size"], gen)


def build(run: dict, config: dict = CONFIG) -> Seq2Seq:
    """The untrained model of ``run``, seeded by the run (so a cached state dict fits it)."""
    torch.manual_seed(run_seed(run, config))
    width = config["d_hidden_wide"] if run["model"] == "wide" else config["d_hidden"]
    return Seq2Seq(config["vocab_size"], d_embed=config["d_embed"], d_hidden=width,
                   attention="dot" if run["model"] == "dot" else None)


def run_seed(run: dict, config: dict = CONFIG) -> int:
    """The seed of a run's initialisation and of its training batches."""
    offset = {"fixed": 0, "wide": 500, "dot": 750}[run["model"]] + (250 if run["task"] == "reversal" else 0)
    return config["base_seed"] + 1000 * run["seed"] + run["length"] + offset


def key(run: dict) -> str:
    """A run's name, e.g. ``"fixed_copy16_seed0"``: the prefix of its tensors in the cache."""
    return f"{run['model']}_{run['task']}{run['length']}_seed{run['seed']}"


def checkpoints(run: dict, config: dict = CONFIG) -> list[int]:
    """The step counts at which ``run`` is scored."""
    return config["attention_checkpoints"] if run["model"] == "dot" else config["checkpoints"]


def train_run(run: dict, config: dict = CONFIG, device: str | torch.device = "cpu") -> tuple[dict, dict]:
    """Train and score one run -> (its result: the run, its curve and ``seconds``; its weights)."""
    t0 = time.perf_counter()
    net = build(run, config).to(device)
    curve = learning_curve(net, run["task"], run["length"], checkpoints(run, config),
                           *test_set(run["task"], run["length"], config),
                           batch_size=config["batch_size"], lr=config["lr"], seed=run_seed(run, config))
    weights = {f"{key(run)}.{name}": value.detach().cpu() for name, value in net.state_dict().items()}
    return {**run, **curve, "seconds": time.perf_counter() - t0}, weights


def _train_seed(args: tuple[int, dict]) -> list[tuple[dict, dict]]:
    seed, config = args
    torch.set_num_threads(1)
    out = []
    for run in (r for r in runs(config) if r["seed"] == seed):
        out.append(train_run(run, config))
        print(f"  {key(run)}: accuracy {out[-1][0]['accuracy'][-1]:.3f} after {out[-1][0]['steps'][-1]} steps "
              f"({out[-1][0]['seconds']:.0f} s)", flush=True)
    return out


def experiment(config: dict = CONFIG, jobs: int = 1):
    """Train and score every run of :func:`runs` on the CPU -> ``(results, tensors, wall_time_s)``.

    ``results["runs"]`` lists each run with its curve (``steps``, ``accuracy`` per checkpoint,
    per-position ``positions`` at the last checkpoint and ``positions_at`` every checkpoint,
    ``loss_final``) and its ``seconds``; ``tensors`` holds every trained model's weights, keyed
    ``"<key(run)>.<parameter>"``. With ``jobs > 1`` the seeds train in parallel processes, one
    thread each; every run seeds itself, so the numbers do not depend on ``jobs``.
    """
    start = time.perf_counter()
    seeds = list(config["seeds"])
    if jobs > 1:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(min(jobs, len(seeds))) as pool:
            per_seed = pool.map(_train_seed, [(s, config) for s in seeds])
    else:
        per_seed = [_train_seed((s, config)) for s in seeds]
    order = {key(r): i for i, r in enumerate(runs(config))}
    done = sorted((pair for chunk in per_seed for pair in chunk), key=lambda pair: order[key(pair[0])])
    tensors = {k: v for _, weights in done for k, v in weights.items()}
    return {"runs": [result for result, _ in done]}, tensors, time.perf_counter() - start


def cache_code() -> list:
    """What produces the cache entry: this module and :mod:`helpers.seq2seq` (model, tasks, training)."""
    return [sys.modules[__name__], seq2seq]


def cache_config() -> dict:
    """The configuration recorded in (and checked against) the cache manifest."""
    return dict(CONFIG)


def train_and_cache(jobs: int = 3) -> None:
    """Run :func:`experiment` (``jobs`` seeds at a time) and write ``cache/bottleneck`` (CPU minutes;
    its manifest records how long it took)."""
    from . import cache

    results, tensors, wall = experiment(CONFIG, jobs=jobs)
    cache.save_cache(CACHE_NAME, code=cache_code(), config=cache_config(), tensors=tensors, results=results,
                     wall_time_s=wall, metrics={"runs": len(results["runs"])}, regenerate=REGENERATE)


def load():
    """The cached experiment (checked against the current code and config) -> ``CachedResult``."""
    from . import cache

    return cache.load_cache(CACHE_NAME, code=cache_code(), config=cache_config())


def trained_model(cached, run: dict, config: dict = CONFIG) -> Seq2Seq:
    """The trained model of ``run`` rebuilt from the cached weights (in eval mode)."""
    net = build(run, config)
    prefix = key(run) + "."
    net.load_state_dict({k[len(prefix):]: v for k, v in cached.tensors.items() if k.startswith(prefix)})
    return net.eval()
