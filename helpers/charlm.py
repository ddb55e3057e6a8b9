"""Character-level language models of tiny Shakespeare, their training loop and §14.59's fair comparison.

- ``load_corpus``      tiny Shakespeare as character codes, split 90/10 as nanoGPT does
- ``tuning_split``     the training split cut again: a part to fit on and a tuning slice (never the validation split)
- ``CharLSTM``         the recurrent contender (the Transformer is :class:`helpers.gpt.GPT`)
- ``build_model``      a fresh GPT or LSTM of a recipe's size
- ``random_batch``     random (input, target) windows for training
- ``evaluate``         mean loss in nats per character over a *whole* split
- ``lr_at``            warm-up, then a cosine to a floor over a run's steps
- ``train``            AdamW for a fixed number of steps, scoring whole splits along the way
- ``budget_steps``     a wall-clock budget as steps, from a throughput measured alone on a quiet machine
- ``heavy_run``        the protocol of §14.59: tune per model on the tuning slice, then seeds at each budget

A budget "520 s on two cores" is turned into a number of steps once, from each model's throughput
measured alone (``benchmarks/charlm.py --measure``; the figures are recorded in ``THROUGHPUT``). Runs
then train for steps, not seconds, so their results do not depend on what else the machine is doing,
and two runs of the same configuration give the same numbers.

Shapes: token indices ``(B, T)``, logits ``(B, T, V)``. Both models' ``forward(idx, targets=None)``
returns ``(logits, loss)``, and both have ``generate(idx, max_new_tokens, ...)``.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from . import checks
from .data import load_tiny_shakespeare
from .gpt import GPT, GPTConfig
from .sampling import sample_next
from .tokenization import CharTokenizer, train_val_split


def load_corpus(frac: float = 0.9) -> tuple[torch.Tensor, torch.Tensor, CharTokenizer]:
    """Tiny Shakespeare as character codes: (train ``(N_train,)``, validation ``(N_val,)``, tokenizer).

    The first 90% is training text and the last 10% validation, as nanoGPT splits it; the
    vocabulary is fitted on the training text (it covers every validation character).
    """
    train_text, val_text = train_val_split(load_tiny_shakespeare(), frac)
    tok = CharTokenizer.fit(train_text)
    as_tensor = lambda t: torch.tensor(tok.encode(t), dtype=torch.long)
    return as_tensor(train_text), as_tensor(val_text), tok


def tuning_split(train: torch.Tensor, n_tune: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``train`` cut into (the part tuning runs fit on, the last ``n_tune`` characters they are scored on)."""
    n_tune = checks.check_int("n_tune", n_tune, 2)
    if n_tune >= len(train) // 2:
        raise ValueError(f"n_tune must be under half of the training split ({len(train) // 2}), got {n_tune}")
    return train[:-n_tune], train[-n_tune:]


# ----------------------------------------------------------------------------------------- the models
@dataclass(frozen=True)
class LSTMConfig:
    """Size of a ``CharLSTM``: ``context`` is the window it trains on (its state starts at zero)."""

    vocab_size: int = 65
    context: int = 64
    n_layer: int = 2
    d_model: int = 208

    def __post_init__(self):
        for name in ("vocab_size", "context", "n_layer", "d_model"):
            checks.check_int(name, getattr(self, name), 1)


class CharLSTM(nn.Module):
    """Embedding -> ``n_layer`` LSTM layers -> linear read-out (char-rnn's model)."""

    def __init__(self, cfg: LSTMConfig):
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.lstm = nn.LSTM(cfg.d_model, cfg.d_model, cfg.n_layer, batch_first=True)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size)

    @property
    def context(self) -> int:
        return self.cfg.context

    def forward(self, idx, targets=None, state=None):
        """``idx`` ``(B, T)`` -> ``(logits (B, T, V), loss)``; with ``state``, also the new state."""
        out, new_state = self.lstm(self.tok(idx), state)           # (B, T, C)
        logits = self.head(out)                                    # (B, T, V)
        loss = None if targets is None else F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        return (logits, loss) if state is None else (logits, loss, new_state)

    @torch.no_grad()
    def generate(self, idx, max_new_tokens: int, temperature: float = 1.0, top_k: int | None = None,
                 top_p: float | None = None, generator: torch.Generator | None = None):
        """Continue each row of ``idx`` ``(B, t0)``, carrying the LSTM state -> ``(B, t0 + max_new_tokens)``."""
        checks.check_token_ids("idx", idx, self.cfg.vocab_size)
        checks.check_int("max_new_tokens", max_new_tokens, 1)
        was_training = self.training
        self.eval()
        state = (torch.zeros(self.cfg.n_layer, idx.shape[0], self.cfg.d_model, device=idx.device),) * 2
        logits, _, state = self(idx, state=state)
        for step in range(max_new_tokens):
            nxt = sample_next(logits[:, -1], temperature=temperature, top_k=top_k, top_p=top_p, generator=generator)
            idx = torch.cat([idx, nxt[:, None]], dim=1)
            if step < max_new_tokens - 1:
                logits, _, state = self(nxt[:, None], state=state)
        self.train(was_training)
        return idx


#: The models of §14.59: nanoGPT's baby-GPT shape shrunk to nanoGPT's CPU settings, and an LSTM of
#: similar size. Both read windows of 64 characters.
MODELS = {
    "gpt": dict(block_size=64, n_layers=4, n_heads=4, d_model=128),
    "lstm": dict(context=64, n_layer=2, d_model=208),
}


def build_model(kind: str, vocab_size: int, seed: int) -> nn.Module:
    """A fresh ``kind`` ("gpt": :class:`helpers.gpt.GPT`, "lstm": ``CharLSTM``) of ``MODELS``' size, seeded."""
    checks.check_choice("kind", kind, tuple(MODELS))
    torch.manual_seed(seed)
    if kind == "gpt":
        return GPT(GPTConfig(vocab_size=vocab_size, **MODELS["gpt"]))
    return CharLSTM(LSTMConfig(vocab_size=vocab_size, **MODELS["lstm"]))


# ------------------------------------------------------------------------------------ data and scoring
def random_batch(data: torch.Tensor, batch: int, context: int, generator: torch.Generator):
    """``batch`` random windows of ``data``: inputs and next-character targets, each ``(batch, context)``."""
    checks.check_int("batch", batch, 1)
    checks.check_int("context", context, 1)
    if len(data) <= context:
        raise ValueError(f"data of length {len(data)} is too short for context {context}")
    starts = torch.randint(len(data) - context, (batch,), generator=generator)
    offsets = torch.arange(context)
    x = data[starts[:, None] + offsets]
    return x, data[starts[:, None] + offsets + 1]


@torch.no_grad()
def evaluate(model: nn.Module, data: torch.Tensor, batch: int = 64) -> float:
    """Mean cross-entropy in nats per character over *every* prediction in ``data``.

    The split is cut into consecutive windows of the model's context (the last one shorter);
    within a window each character is predicted from the characters before it in that window.
    """
    checks.check_int("batch", batch, 1)
    if len(data) < 2:
        raise ValueError(f"data must hold at least 2 characters (one to predict from, one to predict), "
                         f"got {len(data)}")
    was_training = model.training
    model.eval()
    T, n_pred = model.context, len(data) - 1
    n_full = n_pred // T
    windows = data[:n_full * T + 1]
    x, y = windows[:-1].view(n_full, T), windows[1:].view(n_full, T)
    total = 0.0
    for i in range(0, n_full, batch):
        logits = model(x[i:i + batch])[0]                                         # (b, T, V)
        total += F.cross_entropy(logits.flatten(0, 1), y[i:i + batch].flatten(), reduction="sum").item()
    if n_full * T < n_pred:                                                       # the final, shorter window
        logits = model(data[n_full * T:n_pred][None])[0][0]
        total += F.cross_entropy(logits, data[n_full * T + 1:], reduction="sum").item()
    model.train(was_training)
    return total / n_pred


# ------------------------------------------------------------------------------------------- training
@dataclass(frozen=True)
class TrainConfig:
    """One training run: ``steps`` AdamW updates on random windows, scored ``n_evals`` times."""

    steps: int
    batch: int = 16
    lr: float = 4e-3
    min_lr_ratio: float = 0.1
    warmup_steps: int = 50
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    betas: tuple[float, float] = (0.9, 0.99)
    n_evals: int = 8
    seed: int = 0

    def __post_init__(self):
        for name, minimum in (("steps", 1), ("batch", 1), ("warmup_steps", 1), ("n_evals", 1)):
            checks.check_int(name, getattr(self, name), minimum)
        checks.check_positive("lr", self.lr)
        checks.check_prob("min_lr_ratio", self.min_lr_ratio, allow_one=True)
        checks.check_positive("grad_clip", self.grad_clip)
        if isinstance(self.weight_decay, bool) or not isinstance(self.weight_decay, (int, float)) \
                or not 0 <= self.weight_decay < float("inf"):
            raise ValueError(f"weight_decay must be a finite number >= 0, got {self.weight_decay!r}")


def lr_at(cfg: TrainConfig, step: int) -> float:
    """Linear warm-up over ``warmup_steps``, then a cosine from ``lr`` to ``min_lr_ratio * lr`` at the last step."""
    warm = min(1.0, (step + 1) / cfg.warmup_steps)
    progress = min(1.0, step / max(1, cfg.steps - 1))
    return cfg.lr * warm * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def eval_steps(cfg: TrainConfig) -> list[int]:
    """The step counts after which a run is scored: ``n_evals`` evenly spaced, the last one ``steps``."""
    return sorted({max(1, round(cfg.steps * k / cfg.n_evals)) for k in range(1, cfg.n_evals + 1)})


def train(model: nn.Module, data: torch.Tensor, cfg: TrainConfig, scored: dict[str, torch.Tensor],
          on_eval=None, log=None) -> dict:
    """Train ``model`` on random windows of ``data`` for ``cfg.steps`` steps; returns its learning curve.

    After each step of :func:`eval_steps`, every split in ``scored`` (e.g. ``{"train": ..., "val": ...}``)
    is scored whole with :func:`evaluate` — the same way for each — and ``on_eval(record, model)`` is
    called. Returns ``{"curve": [...], "steps", "train_seconds", "config"}``; each curve record holds
    ``step``, ``chars`` (characters seen), ``seconds`` (training time so far, scoring excluded) and
    ``<split>_loss`` for every scored split.
    """
    gen = torch.Generator().manual_seed(cfg.seed)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr, betas=cfg.betas)
    device = next(model.parameters()).device
    todo, curve, seconds = eval_steps(cfg), [], 0.0
    model.train()
    for step in range(cfg.steps):
        start = time.perf_counter()
        for group in opt.param_groups:
            group["lr"] = lr_at(cfg, step)
        x, y = (t.to(device) for t in random_batch(data, cfg.batch, model.context, gen))
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        seconds += time.perf_counter() - start
        if step + 1 == todo[0]:
            todo.pop(0)
            record = {"step": step + 1, "chars": (step + 1) * cfg.batch * model.context, "seconds": round(seconds, 2)}
            record.update({f"{name}_loss": evaluate(model, split.to(device)) for name, split in scored.items()})
            curve.append(record)
            if log is not None:
                log(f"  step {step + 1:6d}/{cfg.steps}  " + "  ".join(f"{k} {v:.4f}" for k, v in record.items()
                                                                     if k.endswith("_loss")))
            if on_eval is not None:
                on_eval(record, model)
    return {"curve": curve, "steps": cfg.steps, "train_seconds": seconds, "config": asdict(cfg)}


# ----------------------------------------------------------------------------- budgets and throughput
#: Training steps per second of each model alone on this book's 2-core machine (2 torch threads, nothing
#: else running), by batch size; measured by ``benchmarks/charlm.py --measure`` (fastest of 3 timings).
THROUGHPUT = {
    "measured": "2026-12-01, 2 cores (x86_64), torch 2.13.0, 2 threads; fastest of three 10-s timings",
    "threads": 2,
    "steps_per_s": {"gpt": {"12": 14.69, "16": 10.48, "32": 6.26}, "lstm": {"16": 17.41, "32": 8.84}},
}


def budget_steps(kind: str, batch: int, seconds: float, throughput: dict = THROUGHPUT) -> int:
    """The steps ``kind`` at ``batch`` trains in ``seconds`` (> 0) at its measured throughput."""
    checks.check_choice("kind", kind, tuple(throughput["steps_per_s"]))
    checks.check_int("batch", batch, 1)
    checks.check_positive("seconds", seconds)
    rates = throughput["steps_per_s"].get(kind, {})
    if str(batch) not in rates:
        raise ValueError(f"no throughput measured for {kind} at batch {batch} (have {sorted(rates)}); "
                         f"run benchmarks/charlm.py --measure and record it in THROUGHPUT")
    return max(1, round(seconds * rates[str(batch)]))


def measure_steps_per_s(kind: str, batch: int, seconds: float = 15.0, warmup: int = 10) -> float:
    """Training steps per second of a fresh ``kind`` at ``batch`` with the current torch threads."""
    train_data, _, tok = load_corpus()
    model = build_model(kind, tok.vocab_size, seed=0)
    cfg = TrainConfig(steps=10 ** 9, batch=batch)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=cfg.betas)
    gen = torch.Generator().manual_seed(0)
    n, start = -warmup, None
    while start is None or time.perf_counter() - start < seconds:
        if n == 0:
            start = time.perf_counter()
        x, y = random_batch(train_data, batch, model.context, gen)
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        n += 1
    return n / (time.perf_counter() - start)


# ------------------------------------------------------------------------------ the protocol (§14.59)
#: What §14.59's heavy run does; all of it is in the cache's key.
HEAVY_RUN = {
    "budgets_s": [77.0, 520.0],     # the two wall-clock budgets, as steps at THROUGHPUT
    "seeds": [0, 1, 2],             # seeds of the headline comparison at each budget
    "base_seed": 1459,
    "n_tune": 111_540,              # the tuning slice: the last characters of the training split
    "tune_budget_s": 77.0,          # every tuning run trains for this budget
    # the learning rate at the first batch size (a best value at an edge of the grid is followed by one
    # more, twice or half as large, up to ``extend`` times), then the other batch sizes at the best rate
    "search": {"lr": [2e-3, 4e-3, 8e-3], "extend": 2, "batch": [16, 32]},
    "train": {"min_lr_ratio": 0.1, "warmup_steps": 50, "weight_decay": 0.1, "grad_clip": 1.0},
    # nanoGPT's shakespeare_char CPU recipe (README: batch 12, lr 1e-3 decayed to 1e-4, warm-up 100),
    # run through this code on the GPT at each budget, untuned
    "nanogpt": {"batch": 12, "lr": 1e-3, "min_lr_ratio": 0.1, "warmup_steps": 100},
    "curve_points": 8,              # runs at the longest budget are scored this often; the others at their end
    "jobs": 2,                      # runs in parallel, one torch thread each (results do not depend on it)
    "sample": {"prompt": "ROMEO:", "chars": 200, "temperature": 0.8},
}


def run_seed(config: dict, seed: int) -> int:
    """The seed of a run's initialisation and of its batches."""
    return config["base_seed"] + 1000 * seed


def run_config(config: dict, kind: str, batch: int, lr: float, seconds: float, seed: int,
               throughput: dict = THROUGHPUT, **overrides) -> TrainConfig:
    """The ``TrainConfig`` of one run of the protocol (``seconds`` as steps at ``throughput``)."""
    settings = {**config["train"], "batch": batch, "lr": lr, **overrides}
    return TrainConfig(steps=budget_steps(kind, batch, seconds, throughput), seed=run_seed(config, seed), **settings)


def _train_job(job: dict) -> dict:
    """Train one job of :func:`heavy_run` in this process (one torch thread) -> its result and weights."""
    torch.set_num_threads(1)
    train_data, val, tok = load_corpus()
    if job["split"] == "tune":
        fit, tune = tuning_split(train_data, job["n_tune"])
        scored = {"tune": tune}
    else:
        fit, scored = train_data, {"train": train_data[-len(val):], "val": val}
    model = build_model(job["kind"], tok.vocab_size, job["cfg"].seed)
    samples = []

    def on_eval(record, m):
        if job.get("sample"):
            s = job["sample"]
            g = torch.Generator().manual_seed(job["cfg"].seed)
            samples.append({"step": record["step"], "val_loss": record["val_loss"],
                            "text": generate(m, tok, s["prompt"], s["chars"], s["temperature"], generator=g)})

    out = train(model, fit, job["cfg"], scored, on_eval=on_eval)
    last = out["curve"][-1]
    print(f"  {job['name']}: {out['steps']} steps in {out['train_seconds']:.0f} s, "
          + "  ".join(f"{k} {v:.4f}" for k, v in last.items() if k.endswith("_loss")), flush=True)
    weights = {f"{job['name']}.{k}": v.detach().cpu().clone() for k, v in model.state_dict().items()
               if not (job["kind"] == "gpt" and k == "head.weight")} if job.get("keep") else {}
    return {"result": {"name": job["name"], "kind": job["kind"], "samples": samples,
                       "parameters": sum(p.numel() for p in model.parameters()), **out}, "weights": weights}


def _run_jobs(jobs: list[dict], n_jobs: int) -> list[dict]:
    order = sorted(range(len(jobs)), key=lambda i: -jobs[i]["cfg"].steps)   # longest first
    if n_jobs > 1:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(n_jobs) as pool:
            done = pool.map(_train_job, [jobs[i] for i in order], chunksize=1)
    else:
        done = [_train_job(jobs[i]) for i in order]
    return [d for _, d in sorted(zip(order, done))]


def heavy_run(config: dict = HEAVY_RUN, throughput: dict = THROUGHPUT, log=print) -> tuple[dict, dict, dict]:
    """§14.59's protocol -> (tensors, results, metrics) for the cache.

    1. Tuning, per model, on :func:`tuning_split`'s slice (the validation split is not read): the
       learning rates of ``search["lr"]`` at the first batch size (extended past an edge of the grid
       while the best rate lies on it, at most ``search["extend"]`` times), then the other batch sizes
       at the best rate, each for ``tune_budget_s``.
    2. The chosen setting of each model at every budget and seed, scored on the whole validation
       split and on a training slice of the same length; nanoGPT's recipe on the GPT at every budget.
    Only the first seed's models at the longest budget keep their weights (§14.56, §14.60, §14.64 use them).
    """
    _, val, tok = load_corpus()
    search, first_batch = config["search"], config["search"]["batch"][0]
    tune = lambda kind, batch, lr: {"name": f"tune_{kind}_b{batch}_lr{lr:g}", "kind": kind, "split": "tune",
                                    "n_tune": config["n_tune"],
                                    "cfg": run_config(config, kind, batch, lr, config["tune_budget_s"], 0, throughput,
                                                      n_evals=1)}
    log("tuning: learning rates")
    stage1 = _run_jobs([tune(k, first_batch, lr) for k in MODELS for lr in search["lr"]], config["jobs"])
    best_of = lambda k, rs: min((r for r in rs if r["result"]["kind"] == k),
                                key=lambda r: r["result"]["curve"][-1]["tune_loss"])["result"]["config"]["lr"]
    for _ in range(search["extend"]):   # a best rate at an edge of the grid: try one step beyond it
        tried = {k: sorted(r["result"]["config"]["lr"] for r in stage1 if r["result"]["kind"] == k) for k in MODELS}
        beyond = {k: (tried[k][-1] * 2 if best_of(k, stage1) == tried[k][-1] else
                      tried[k][0] / 2 if best_of(k, stage1) == tried[k][0] else None) for k in MODELS}
        extra = [tune(k, first_batch, lr) for k, lr in beyond.items() if lr is not None]
        if not extra:
            break
        log(f"tuning: best at an edge of the grid, trying {beyond}")
        stage1 += _run_jobs(extra, config["jobs"])
    best_lr = {k: best_of(k, stage1) for k in MODELS}
    log(f"tuning: batch sizes at the best learning rates {best_lr}")
    stage2 = _run_jobs([tune(k, b, best_lr[k]) for k in MODELS for b in search["batch"][1:]], config["jobs"])
    tuning = [r["result"] for r in stage1 + stage2]
    chosen = {}
    for k in MODELS:
        best = min((r for r in tuning if r["kind"] == k), key=lambda r: r["curve"][-1]["tune_loss"])
        chosen[k] = {"batch": best["config"]["batch"], "lr": best["config"]["lr"]}
    log(f"chosen: {chosen}")
    longest, jobs = max(config["budgets_s"]), []
    for seconds in config["budgets_s"]:
        points = config["curve_points"] if seconds == longest else 1
        for k in MODELS:
            for seed in config["seeds"]:
                keep = seconds == longest and seed == config["seeds"][0]
                jobs.append({"name": f"{k}_{seconds:g}s_seed{seed}", "kind": k, "split": "val", "keep": keep,
                             "sample": config["sample"] if keep else None,
                             "cfg": run_config(config, k, chosen[k]["batch"], chosen[k]["lr"], seconds, seed,
                                               throughput, n_evals=points)})
        nano = config["nanogpt"]
        jobs.append({"name": f"nanogpt_{seconds:g}s_seed{config['seeds'][0]}", "kind": "gpt", "split": "val",
                     "cfg": run_config(config, "gpt", nano["batch"], nano["lr"], seconds, config["seeds"][0],
                                       throughput, min_lr_ratio=nano["min_lr_ratio"],
                                       warmup_steps=nano["warmup_steps"], n_evals=points)})
    log(f"final runs: {len(jobs)}")
    finals = _run_jobs(jobs, config["jobs"])
    tensors = {k: v for r in finals for k, v in r["weights"].items()}
    results = {"vocab": tok.chars, "tuning": tuning, "chosen": chosen, "runs": [r["result"] for r in finals],
               "throughput": throughput}
    metrics = {r["result"]["name"]: r["result"]["curve"][-1]["val_loss"] for r in finals}
    return tensors, results, metrics


# ---------------------------------------------------------------------------------- the cached models
CACHE_NAME = "charlm"
REGENERATE = ".venv/bin/python tools/book.py --only 14_59 --heavy"


def cache_code() -> list:
    """What produces cache/charlm: this module, the GPT's code and the modules it is built from."""
    from . import efficient_attention, gpt, positional, transformer

    return [sys.modules[__name__], *gpt.model_code(), transformer, positional, efficient_attention]


def cache_config(config: dict = HEAVY_RUN, throughput: dict = THROUGHPUT) -> dict:
    """Everything that determines the cached result: the protocol, the models' sizes and the throughput."""
    return {"run": config, "models": MODELS, "throughput": throughput}


def train_and_cache(config: dict = HEAVY_RUN, log=print):
    """Run :func:`heavy_run` and save it as cache entry ``charlm``; returns the folder."""
    from . import cache

    start = time.perf_counter()
    tensors, results, metrics = heavy_run(config, log=log)
    return cache.save_cache(CACHE_NAME, code=cache_code(), config=cache_config(config), tensors=tensors,
                            results=results, metrics=metrics, wall_time_s=time.perf_counter() - start,
                            regenerate=REGENERATE)


def load():
    """cache/charlm, checked against the current code and config -> ``CachedResult``."""
    from . import cache

    return cache.load_cache(CACHE_NAME, code=cache_code(), config=cache_config())


def trained_models(cached, config: dict = HEAVY_RUN) -> tuple[GPT, CharLSTM, CharTokenizer]:
    """The cached (GPT, LSTM) of the first seed at the longest budget, in eval mode, and the tokenizer."""
    tok = CharTokenizer(cached.results["vocab"])
    name = lambda k: f"{k}_{max(config['budgets_s']):g}s_seed{config['seeds'][0]}"
    models = []
    for kind in MODELS:
        prefix = name(kind) + "."
        state = {k[len(prefix):]: v for k, v in cached.tensors.items() if k.startswith(prefix)}
        if not state:
            raise ValueError(f"cache/{CACHE_NAME} holds no weights for {name(kind)}; regenerate: {REGENERATE}")
        model = build_model(kind, tok.vocab_size, seed=0)
        if kind == "gpt":
            state["head.weight"] = state["tok.weight"]   # tied: stored once
        model.load_state_dict(state, strict=True)
        models.append(model.eval())
    return models[0], models[1], tok


def generate(model: nn.Module, tok: CharTokenizer, prompt: str, n_chars: int, temperature: float = 1.0,
             top_k: int | None = None, top_p: float | None = None, generator: torch.Generator | None = None) -> str:
    """Continue ``prompt`` by ``n_chars`` characters with the model's own ``generate``; returns the continuation."""
    if not prompt:
        raise ValueError("prompt must contain at least one character")
    device = next(model.parameters()).device
    ids = torch.tensor([tok.encode(prompt)], device=device)
    out = model.generate(ids[:, -model.context:], n_chars, temperature=temperature, top_k=top_k, top_p=top_p,
                         generator=generator)
    return tok.decode(out[0, -n_chars:].tolist())


# -------------------------------------------------------------------------------- the cache, as tables
#: How §14.59's tables name the three contenders.
DISPLAY = {"gpt": "Transformer", "lstm": "LSTM", "nanogpt": "nanoGPT recipe"}


def runs_table(cached):
    """One row per final run of the cache: its group ("<model> <budget>s"), settings and final scores."""
    import pandas as pd

    rows = []
    for r in cached.results["runs"]:
        model, budget, seed = r["name"].split("_")
        last = r["curve"][-1]
        rows.append({"name": r["name"], "group": f"{model} {budget}", "model": model, "budget_s": float(budget[:-1]),
                     "seed": int(seed.removeprefix("seed")), "batch": r["config"]["batch"], "lr": r["config"]["lr"],
                     "steps": r["steps"], "chars": last["chars"], "seconds": r["train_seconds"],
                     "train_loss": last["train_loss"], "val_loss": last["val_loss"], "parameters": r["parameters"],
                     "samples": r["samples"]})
    return pd.DataFrame(rows)


def summary_table(runs):
    """``runs_table`` per group: the setting, then the validation loss's mean, min and max over seeds."""
    g = runs.groupby("group", sort=False)
    out = g.agg(model=("model", "first"), budget_s=("budget_s", "first"), seeds=("seed", "count"),
                batch=("batch", "first"), lr=("lr", "first"), steps=("steps", "first"),
                chars_M=("chars", lambda c: c.mean() / 1e6), train=("train_loss", "mean"),
                mean=("val_loss", "mean"), min=("val_loss", "min"), max=("val_loss", "max"))
    out["model"] = out["model"].map(DISPLAY)
    return out.sort_values(["budget_s", "mean"])


def tuning_table(cached):
    """One row per tuning run: model, batch, learning rate, steps, loss on the tuning slice, chosen or not."""
    import pandas as pd

    chosen = cached.results["chosen"]
    return pd.DataFrame([{"kind": r["kind"], "model": DISPLAY[r["kind"]], "batch": r["config"]["batch"],
                          "lr": r["config"]["lr"], "steps": r["steps"], "tuning loss": r["curve"][-1]["tune_loss"],
                          "chosen": chosen[r["kind"]] == {"batch": r["config"]["batch"], "lr": r["config"]["lr"]}}
                         for r in cached.results["tuning"]])


def curves_table(cached, budget: float):
    """The learning curves of every run at ``budget`` seconds, long: model, seed, split, step, x axes, nats."""
    import pandas as pd

    rows = []
    for r in cached.results["runs"]:
        model, b, seed = r["name"].split("_")
        if float(b[:-1]) != budget:
            continue
        for rec in r["curve"]:
            for split, column in (("train", "train_loss"), ("validation", "val_loss")):
                rows.append({"model": DISPLAY[model], "seed": int(seed.removeprefix("seed")), "split": split,
                             "step": rec["step"], "characters seen (M)": rec["chars"] / 1e6,
                             "training seconds": rec["seconds"], "nats": rec[column]})
    return pd.DataFrame(rows)


def kept_run(kind: str, config: dict = HEAVY_RUN) -> str:
    """The name of the run whose weights the cache keeps for ``kind``: the first seed at the longest budget."""
    checks.check_choice("kind", kind, tuple(MODELS))
    return f"{kind}_{max(config['budgets_s']):g}s_seed{config['seeds'][0]}"
