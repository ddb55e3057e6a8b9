"""Position schemes compared on small GPTs that use context: train short, test long (§14.53).

- ``HEAVY_RUN``          the experiment's settings: schemes, seeds, model size, steps
- ``model_config``       the ``helpers.gpt.GPTConfig`` of one scheme (the schemes differ in nothing else)
- ``eval_windows``       the fixed held-out windows every model is scored on
- ``train_steps``        a fixed number of AdamW steps on random training windows (warm-up, cosine decay)
- ``loss_by_position``   cross-entropy at every position of the evaluation windows ``(T_eval,)``
- ``one_run``            one scheme, one seed: trained and scored
- ``heavy_run``          every scheme x every seed (two processes) -> (tensors, results, metrics) for the cache
- ``train_and_cache`` /  write / read cache entry ``position_lm``
  ``load``
- ``model_from_tensors`` a cached model (the RoPE and sinusoidal ones are stored) back as a ``GPT``

Shapes: token ids ``(B, T)``, per-position losses ``(T,)``.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import asdict

import torch
import torch.nn.functional as F

from .charlm import load_corpus, random_batch
from .gpt import GPT, GPTConfig

#: The run the cache holds. Five schemes, three seeds each, on one pre-norm GPT shape.
HEAVY_RUN = {
    "schemes": ["none", "sinusoidal", "learned", "rope", "alibi"],
    "seeds": [0, 1, 2],
    "model": {"n_layers": 2, "n_heads": 4, "d_model": 64},
    "T_train": 32,
    "T_eval": 128,
    "steps": 800,
    "batch": 32,
    "lr": 6e-3,
    "warmup_steps": 50,
    "min_lr_ratio": 0.1,
    "weight_decay": 0.1,
    "eval_windows": 256,
    "eval_seed": 1453,
    "stored_weights": ["sinusoidal", "rope"],
    "n_jobs": 2,
}

CACHE_NAME = "position_lm"
REGENERATE = ".venv/bin/python tools/book.py --only 14_53 --heavy"


def model_config(scheme: str, vocab_size: int, config: dict = HEAVY_RUN) -> GPTConfig:
    """The GPT of ``scheme``: ``block_size`` is the training length (the learned table has that many rows).

    torch-style initialisation, untied read-out: token embeddings start N(0, 1), on the scale of the
    sinusoidal encoding (entries in [-1, 1]). Under GPT-2's N(0, 0.02) the added sinusoids would be
    about 30 times larger than the token vectors and drown them (measured while the section was
    written: the sinusoidal model then stays about 0.1 nats below the bigram baseline).
    """
    return GPTConfig(vocab_size=vocab_size, block_size=config["T_train"], positions=scheme,
                     gpt2_init=False, tie_weights=False, **config["model"])


def eval_windows(val: torch.Tensor, config: dict = HEAVY_RUN) -> tuple[torch.Tensor, torch.Tensor]:
    """The same ``eval_windows`` held-out windows for every model: inputs and targets, each ``(n, T_eval)``."""
    gen = torch.Generator().manual_seed(config["eval_seed"])
    return random_batch(val, config["eval_windows"], config["T_eval"], gen)


def lr_at(step: int, config: dict = HEAVY_RUN) -> float:
    """Linear warm-up, then cosine decay to ``min_lr_ratio * lr`` at the last step."""
    if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step <= config["steps"]:
        raise ValueError(f"step must be an integer from 0 to config['steps']={config['steps']}, got {step!r}")
    warm = min(1.0, (step + 1) / config["warmup_steps"])
    cosine = 0.5 * (1 + math.cos(math.pi * step / config["steps"]))
    return config["lr"] * warm * (config["min_lr_ratio"] + (1 - config["min_lr_ratio"]) * cosine)


def train_steps(model: GPT, train: torch.Tensor, seed: int, config: dict = HEAVY_RUN) -> list[float]:
    """``config["steps"]`` AdamW steps on random ``T_train`` windows -> the training loss of every step.

    The windows depend on ``seed`` only, so every scheme trained with one seed sees the same batches.
    """
    gen = torch.Generator().manual_seed(10_000 + seed)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": config["weight_decay"]},
                             {"params": rest, "weight_decay": 0.0}], lr=config["lr"], betas=(0.9, 0.99))
    losses = []
    model.train()
    for step in range(config["steps"]):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, config)
        x, y = random_batch(train, config["batch"], config["T_train"], gen)   # (B, T_train) each
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    return losses


@torch.no_grad()
def loss_by_position(model: GPT, x: torch.Tensor, y: torch.Tensor, batch: int = 64) -> torch.Tensor:
    """Cross-entropy (nats) at every position of the windows ``x``, ``y`` ``(n, T)``, averaged over them -> ``(T,)``."""
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be a positive integer (windows per forward pass), got {batch!r}")
    if len(x.shape) != 2 or x.shape != y.shape or len(x) == 0:
        raise ValueError(f"x and y must be non-empty windows of one shape (n, T), got {tuple(x.shape)} and {tuple(y.shape)}")
    model.eval()
    total = torch.zeros(x.shape[1])
    for i in range(0, len(x), batch):
        logits, _ = model(x[i:i + batch])                                    # (b, T, V)
        total += F.cross_entropy(logits.transpose(1, 2), y[i:i + batch], reduction="none").sum(0)
    return total / len(x)


def one_run(scheme: str, seed: int, config: dict = HEAVY_RUN) -> dict:
    """Train ``scheme`` with ``seed`` and score it on the evaluation windows (one thread; a worker of ``heavy_run``).

    A learned table has no row past ``T_train``: its windows are scored on the trained positions only
    (NaN beyond). Returns the per-position losses, the training curve (means of 50 steps), the seconds
    the training took and, for the schemes in ``stored_weights``, the weights.
    """
    torch.set_num_threads(1)
    train, val, tok = load_corpus()
    x_eval, y_eval = eval_windows(val, config)
    T_train, T_eval = config["T_train"], config["T_eval"]
    torch.manual_seed(seed)
    model = GPT(model_config(scheme, tok.vocab_size, config))
    start = time.perf_counter()
    losses = train_steps(model, train, seed, config)
    seconds = time.perf_counter() - start
    if scheme == "learned":
        curve = torch.cat([loss_by_position(model, x_eval[:, :T_train], y_eval[:, :T_train]),
                           torch.full((T_eval - T_train,), float("nan"))])
    else:
        curve = loss_by_position(model, x_eval, y_eval)
    return {"per_position": curve.tolist(), "seconds": seconds,
            "train_curve": [sum(losses[i:i + 50]) / len(losses[i:i + 50]) for i in range(0, len(losses), 50)],
            "state": model.state_dict() if scheme in config["stored_weights"] else None}


def heavy_run(config: dict = HEAVY_RUN, log=print) -> tuple[dict, dict, dict]:
    """Train every scheme with every seed (``n_jobs`` processes); returns (tensors, results, metrics) for the cache.

    Every run is seeded by itself, so the result does not depend on how the runs are spread over processes.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    _, _, tok = load_corpus()
    keys = [(scheme, seed) for scheme in config["schemes"] for seed in config["seeds"]]
    tensors, per_position, train_curves, seconds = {}, {}, {}, {}
    with ProcessPoolExecutor(config["n_jobs"], mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {key: pool.submit(one_run, *key, config) for key in keys}
        for (scheme, seed), future in futures.items():
            out, run = future.result(), f"{scheme}/{seed}"
            per_position[run], train_curves[run], seconds[run] = out["per_position"], out["train_curve"], out["seconds"]
            if out["state"] is not None:
                tensors.update({f"{run}.{k}": v for k, v in out["state"].items()})
            curve, T_train = out["per_position"], config["T_train"]
            log(f"{scheme:>10} seed {seed}: {out['seconds']:.0f} s, loss 0..{T_train - 1} = "
                f"{sum(curve[:T_train]) / T_train:.3f}, {T_train}.. = {sum(curve[T_train:]) / (len(curve) - T_train):.3f}")
    results = {"vocab": list(tok.chars), "per_position": per_position,
               "train_curves": train_curves, "train_seconds": seconds,
               "param_counts": {s: sum(p.numel() for p in GPT(model_config(s, tok.vocab_size, config)).parameters())
                                for s in config["schemes"]}}
    metrics = {"seconds_per_run": sum(seconds.values()) / len(seconds)}
    return tensors, results, metrics


def cache_config(config: dict = HEAVY_RUN) -> dict:
    """Everything that determines the cached result: the run and one scheme's full model config."""
    return {"run": config, "gpt": asdict(model_config("rope", 65, config))}


def cache_code() -> list:
    """What the cache's code key covers: this module, the GPT's code (not the rest of ``helpers.gpt``), the
    modules it is built from, and the two functions of ``helpers.charlm`` that read and batch the corpus."""
    from . import charlm, efficient_attention, gpt, positional, transformer
    return [sys.modules[__name__], *gpt.model_code(), transformer, positional, efficient_attention,
            charlm.load_corpus, charlm.random_batch]


def train_and_cache(config: dict = HEAVY_RUN, log=print):
    """Run ``heavy_run`` and save it as cache entry ``position_lm`` with its manifest; returns the folder."""
    from . import cache

    start = time.perf_counter()
    tensors, results, metrics = heavy_run(config, log=log)
    return cache.save_cache(CACHE_NAME, code=cache_code(), config=cache_config(config), tensors=tensors,
                            results=results, metrics=metrics, wall_time_s=time.perf_counter() - start,
                            regenerate=REGENERATE)


def load(config: dict = HEAVY_RUN):
    """Cache entry ``position_lm``, checked against the current code and config (``helpers.cache.load_cache``)."""
    from . import cache

    return cache.load_cache(CACHE_NAME, code=cache_code(), config=cache_config(config))


def model_from_tensors(tensors: dict, scheme: str, seed: int, vocab_size: int, config: dict = HEAVY_RUN) -> GPT:
    """The cached ``scheme`` model trained with ``seed``, in eval mode."""
    prefix = f"{scheme}/{seed}."
    state = {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}
    if not state:
        raise ValueError(f"the cache holds no weights for {scheme!r} seed {seed}; "
                         f"stored: {config['stored_weights']} x {config['seeds']}")
    model = GPT(model_config(scheme, vocab_size, config))
    model.load_state_dict(state)
    return model.eval()
