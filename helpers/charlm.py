"""Character-level language models of tiny Shakespeare, and a training loop with a wall-clock budget (§14.59).

- ``CharGPT``        a small decoder-only Transformer (pre-norm, learned positions, tied embeddings),
                     using torch's fused causal attention for speed
- ``CharLSTM``       an LSTM language model of similar size
- ``load_corpus``    tiny Shakespeare as character codes, split 90/10 as nanoGPT does
- ``random_batch``   random (input, target) windows for training
- ``evaluate``       mean loss in nats per character over a *whole* split
- ``train_for``      train until a wall-clock budget is spent, with a time-based learning-rate schedule

Shapes: token indices ``(B, T)``, logits ``(B, T, V)``.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .data import load_tiny_shakespeare
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


@dataclass(frozen=True)
class GPTConfig:
    """Size of a ``CharGPT``."""

    vocab_size: int = 65
    context: int = 128
    n_layer: int = 4
    n_head: int = 4
    d_model: int = 128
    dropout: float = 0.0

    def __post_init__(self):
        for name in ("vocab_size", "context", "n_layer", "n_head", "d_model"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.d_model % self.n_head:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_head ({self.n_head})")


class _CausalSelfAttention(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.n_head, self.dropout = cfg.n_head, cfg.dropout
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model, bias=False)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model, bias=False)

    def forward(self, x):  # (B, T, d) -> (B, T, d)
        B, T, d = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, d // self.n_head).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0)
        return self.proj(y.transpose(1, 2).reshape(B, T, d))


class _Block(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        self.attn = _CausalSelfAttention(cfg)
        self.ffn = nn.Sequential(nn.Linear(cfg.d_model, 4 * cfg.d_model, bias=False), nn.GELU(),
                                 nn.Linear(4 * cfg.d_model, cfg.d_model, bias=False), nn.Dropout(cfg.dropout))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.ffn(self.ln2(x))


class CharGPT(nn.Module):
    """Decoder-only Transformer over characters: ``forward(idx (B, T)) -> logits (B, T, V)``."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = nn.Embedding(cfg.context, cfg.d_model)
        self.blocks = nn.ModuleList(_Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.head.weight = self.tok.weight  # tied input and output embeddings
        self.apply(self._init)
        for name, p in self.named_parameters():  # scaled init of the residual projections (GPT-2)
            if name.endswith(("proj.weight", "ffn.2.weight")):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * cfg.n_layer))

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)

    @property
    def context(self) -> int:
        return self.cfg.context

    def forward(self, idx):
        B, T = idx.shape
        if T > self.cfg.context:
            raise ValueError(f"sequence length {T} exceeds the model's context {self.cfg.context}")
        x = self.tok(idx) + self.pos(torch.arange(T, device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


@dataclass(frozen=True)
class LSTMConfig:
    """Size of a ``CharLSTM``."""

    vocab_size: int = 65
    context: int = 128
    n_layer: int = 2
    d_model: int = 256
    dropout: float = 0.0


class CharLSTM(nn.Module):
    """LSTM language model: ``forward(idx (B, T)) -> logits (B, T, V)`` (state starts at zero)."""

    def __init__(self, cfg: LSTMConfig):
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.lstm = nn.LSTM(cfg.d_model, cfg.d_model, cfg.n_layer, batch_first=True, dropout=cfg.dropout)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size)

    @property
    def context(self) -> int:
        return self.cfg.context

    def forward(self, idx):
        out, _ = self.lstm(self.tok(idx))
        return self.head(out)


def random_batch(data: torch.Tensor, batch: int, context: int, generator: torch.Generator):
    """``batch`` random windows of ``data``: inputs and next-character targets, each ``(batch, context)``."""
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
    model.eval()
    T = model.context
    n_pred = len(data) - 1
    starts = list(range(0, n_pred, T))
    total = 0.0
    for i in range(0, len(starts), batch):
        chunk = starts[i:i + batch]
        full = [s for s in chunk if s + T <= n_pred]
        if full:
            idx = torch.tensor(full)[:, None] + torch.arange(T)
            logits = model(data[idx])
            total += F.cross_entropy(logits.flatten(0, 1), data[idx + 1].flatten(), reduction="sum").item()
        for s in chunk:
            if s + T > n_pred:  # the final, shorter window
                x = data[s:n_pred][None]
                total += F.cross_entropy(model(x)[0], data[s + 1:n_pred + 1], reduction="sum").item()
    model.train()
    return total / n_pred


@dataclass
class TrainConfig:
    """Optimiser settings of ``train_for``; the learning rate follows the wall clock."""

    seconds: float = 60.0
    batch: int = 32
    lr: float = 3e-3
    min_lr_ratio: float = 0.1
    warmup_steps: int = 50
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    eval_every_s: float = 30.0
    seed: int = 0
    #: cosine decay over the time budget ("time") or over ``decay_steps`` steps ("steps",
    #: nanoGPT's schedule, which ignores the clock)
    schedule: str = "time"
    decay_steps: int | None = None

    def __post_init__(self):
        if self.schedule not in ("time", "steps"):
            raise ValueError(f"schedule must be 'time' or 'steps', got {self.schedule!r}")
        if self.schedule == "steps" and not self.decay_steps:
            raise ValueError("schedule='steps' needs decay_steps (the step count the cosine spans)")


def _lr_at(cfg: TrainConfig, step: int, elapsed: float) -> float:
    """Linear warm-up, then cosine decay to ``min_lr_ratio * lr`` over the budget (time or steps)."""
    warm = min(1.0, (step + 1) / cfg.warmup_steps)
    if cfg.schedule == "time":
        progress = min(1.0, elapsed / cfg.seconds)
    else:
        progress = min(1.0, step / cfg.decay_steps)
    cosine = cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))
    return cfg.lr * warm * cosine


def train_for(model: nn.Module, train_data: torch.Tensor, val_data: torch.Tensor, cfg: TrainConfig,
              on_eval=None) -> dict:
    """Train ``model`` for ``cfg.seconds`` of wall-clock time; returns the learning curves.

    Every ``cfg.eval_every_s`` seconds (and at the end) the whole validation split is evaluated;
    evaluation time is *not* charged to the budget. ``on_eval(record, model)`` is called after
    each evaluation (e.g. to draw a sample). Returns ``{"curve": [...], "steps", "train_seconds",
    "tokens_per_s"}`` where each curve record holds ``seconds``, ``step``, ``train_loss`` and
    ``val_loss``.
    """
    if cfg.seconds <= 0:
        raise ValueError(f"seconds must be positive, got {cfg.seconds}")
    gen = torch.Generator().manual_seed(cfg.seed)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr, betas=(0.9, 0.99))
    curve, step, trained, next_eval, recent = [], 0, 0.0, cfg.eval_every_s, []
    model.train()
    while True:
        start = time.perf_counter()
        for group in opt.param_groups:
            group["lr"] = _lr_at(cfg, step, trained)
        x, y = random_batch(train_data, cfg.batch, model.context, gen)
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        trained += time.perf_counter() - start
        step += 1
        recent.append(loss.item())
        done = trained >= cfg.seconds
        if trained >= next_eval or done:
            record = {"seconds": round(trained, 2), "step": step, "train_loss": sum(recent) / len(recent),
                      "val_loss": evaluate(model, val_data)}
            curve.append(record)
            recent = []
            next_eval += cfg.eval_every_s
            if on_eval is not None:
                on_eval(record, model)
        if done:
            break
    return {"curve": curve, "steps": step, "train_seconds": trained,
            "tokens_per_s": step * cfg.batch * model.context / trained, "config": asdict(cfg)}


#: Named settings: ``"book"`` is this book's (tuned for a 2-core CPU at a fixed wall-clock budget);
#: ``"nanogpt"`` is nanoGPT's documented shakespeare_char CPU recipe, for a side-by-side comparison.
RECIPES = {
    "book": {
        # nanoGPT's shape, but a 4x larger peak learning rate, batch 16, and a cosine decay
        # that follows the wall clock, so the schedule always completes within the budget
        "gpt": GPTConfig(context=64, n_layer=4, n_head=4, d_model=128),
        "lstm": LSTMConfig(context=64, n_layer=2, d_model=208),
        "train": dict(batch=16, lr=4e-3, min_lr_ratio=0.1, warmup_steps=50, schedule="time"),
    },
    "nanogpt": {
        "gpt": GPTConfig(context=64, n_layer=4, n_head=4, d_model=128),
        "lstm": LSTMConfig(context=64, n_layer=2, d_model=208),
        # lr 1e-3 decayed to 1e-4 over max_iters, warm-up 100, batch 12; their runs set
        # max_iters = 2,000 for 77 s and 15,000 for 520 s, i.e. about 26 iterations per second
        "train": dict(batch=12, lr=1e-3, min_lr_ratio=0.1, warmup_steps=100, schedule="steps"),
    },
}


def build_recipe(recipe: str, kind: str, vocab_size: int, seconds: float, seed: int = 0):
    """A fresh model and its ``TrainConfig`` for ``recipe`` ("book"/"nanogpt") and ``kind`` ("gpt"/"lstm")."""
    if recipe not in RECIPES:
        raise ValueError(f"recipe must be one of {sorted(RECIPES)}, got {recipe!r}")
    if kind not in ("gpt", "lstm"):
        raise ValueError(f"kind must be 'gpt' or 'lstm', got {kind!r}")
    spec = RECIPES[recipe]
    size = spec[kind]
    size = type(size)(**{**asdict(size), "vocab_size": vocab_size})
    torch.manual_seed(seed)
    model = CharGPT(size) if kind == "gpt" else CharLSTM(size)
    train = dict(spec["train"])
    if train["schedule"] == "steps":
        train["decay_steps"] = max(1, round(seconds * 2000 / 77))
    eval_every = max(10.0, seconds / 8)
    return model, TrainConfig(seconds=seconds, seed=seed, eval_every_s=eval_every, **train)


@torch.no_grad()
def generate(model: nn.Module, tok: CharTokenizer, prompt: str, n_chars: int, temperature: float = 1.0,
             top_k: int | None = None, top_p: float | None = None, generator: torch.Generator | None = None) -> str:
    """Continue ``prompt`` by ``n_chars`` characters, one draw at a time (``temperature=0``: greedy).

    The model sees at most its last ``model.context`` characters. Returns the continuation only.
    """
    from .sampling import sample_next

    if not prompt:
        raise ValueError("prompt must contain at least one character")
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    ids = torch.tensor([tok.encode(prompt)], device=device)
    out = []
    for _ in range(n_chars):
        logits = model(ids[:, -model.context:])[:, -1, :]
        nxt = sample_next(logits.float().cpu(), temperature=temperature, top_k=top_k, top_p=top_p, generator=generator)
        out.append(int(nxt))
        ids = torch.cat([ids, nxt.view(1, 1).to(device)], dim=1)
    model.train(was_training)
    return tok.decode(out)


#: What the heavy run of §14.59 trains; part of the cache's code hash.
HEAVY_RUN = {"recipe": "book", "gpt_seconds": 520.0, "lstm_seconds": 520.0, "seed": 1459,
             "sample_prompt": "ROMEO:", "sample_chars": 200, "sample_temperature": 0.8}


def heavy_run(config: dict = HEAVY_RUN, log=print) -> tuple[dict, dict, dict]:
    """Train the book's Transformer and LSTM for their budgets; returns (tensors, results, metrics).

    For the cache: tensors are both models' weights (prefixed ``gpt.`` / ``lstm.``); results hold
    the learning curves, samples drawn at every evaluation, tokens/s and parameter counts.
    """
    train, val, tok = load_corpus()
    tensors, results, metrics = {}, {"vocab": tok.chars}, {}
    for kind in ("gpt", "lstm"):
        seconds = config[f"{kind}_seconds"]
        model, cfg = build_recipe(config["recipe"], kind, tok.vocab_size, seconds, config["seed"])
        samples = []

        def on_eval(record, m):
            g = torch.Generator().manual_seed(config["seed"])
            samples.append({"seconds": record["seconds"], "val_loss": record["val_loss"],
                            "text": generate(m, tok, config["sample_prompt"], config["sample_chars"],
                                             config["sample_temperature"], generator=g)})
            log(f"{kind} {record['seconds']:7.1f} s  step {record['step']}  val {record['val_loss']:.4f}")

        out = train_for(model, train, val, cfg, on_eval=on_eval)
        tensors.update({f"{kind}.{k}": v for k, v in model.state_dict().items()})
        results[kind] = {"curve": out["curve"], "samples": samples, "steps": out["steps"],
                         "tokens_per_s": out["tokens_per_s"], "train_seconds": out["train_seconds"],
                         "parameters": sum(p.numel() for p in model.parameters())}
        metrics[f"{kind}_val_loss"] = out["curve"][-1]["val_loss"]
        metrics[f"{kind}_train_seconds"] = out["train_seconds"]
    metrics["val_loss"] = metrics["gpt_val_loss"]
    return tensors, results, metrics


def models_from_tensors(tensors: dict, vocab: list[str], recipe: str = "book"):
    """Rebuild the trained (gpt, lstm) models and the tokenizer from cached tensors."""
    tok = CharTokenizer(vocab)
    models = []
    for kind in ("gpt", "lstm"):
        model, _ = build_recipe(recipe, kind, tok.vocab_size, seconds=1.0)
        state = {k.split(".", 1)[1]: v for k, v in tensors.items() if k.startswith(kind + ".")}
        if kind == "gpt":
            state.setdefault("head.weight", state["tok.weight"])  # tied weights are stored once
        model.load_state_dict(state)
        models.append(model.eval())
    return models[0], models[1], tok


CACHE_NAME = "charlm"


def cache_config(config: dict = HEAVY_RUN) -> dict:
    """Everything that determines the cached result: the run and the recipe's settings."""
    spec = RECIPES[config["recipe"]]
    return {"run": dict(config), "gpt": asdict(spec["gpt"]), "lstm": asdict(spec["lstm"]), "train": dict(spec["train"])}


def train_and_cache(config: dict = HEAVY_RUN, log=print):
    """Run ``heavy_run`` and save it as cache entry ``charlm`` with its manifest; returns the folder."""
    import sys
    import time as _time

    from . import cache

    start = _time.perf_counter()
    tensors, results, metrics = heavy_run(config, log=log)
    return cache.save_cache(
        CACHE_NAME, code=[sys.modules[__name__]], config=cache_config(config), tensors=tensors,
        results=results, metrics=metrics, wall_time_s=_time.perf_counter() - start,
        regenerate="make book HEAVY_EVAL=True  (or: papermill chapters/14_59_character_language_model.ipynb "
                   "out.ipynb -p HEAVY_EVAL True)",
    )
