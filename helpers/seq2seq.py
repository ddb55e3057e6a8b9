"""Small GRU encoder–decoders, with and without attention, and the toy tasks they learn (§14.48–§14.49).

Token 0 is the start-of-sequence token ``BOS``; data tokens are ``1..vocab_size``.
Shapes follow the book's convention: ``B`` batch, ``T`` (or ``T_in``/``T_out``) time, ``d`` width.

- Tasks: :func:`copy_task` (target = source) and :func:`reversal_task` (target = source reversed).
- Attention from the definitions: :func:`additive_scores` (Bahdanau), :func:`dot_scores` (Luong),
  :func:`attend` (softmax, then the weighted average), wrapped in :class:`Attention`.
- :class:`Seq2Seq`: a GRU encoder and a GRU decoder whose output layer sees ``[s_t; c]`` with a
  fixed context ``c = h_T`` (``attention=None``) or ``[s_t; c_t]`` with a step-specific context
  ``c_t`` (``attention="additive"`` or ``"dot"``).
- :func:`train_seq2seq` (a short teacher-forced training loop on fresh batches) and
  :func:`position_accuracy` (teacher-forced accuracy at every output position).
- :func:`learning_curve` (accuracy at chosen step counts of one training run; §14.48's cached
  experiment, :mod:`helpers.bottleneck`, is built on it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
from torch import nn
from torch.nn import functional as F

#: The start-of-sequence token; data tokens are 1..vocab_size.
BOS = 0
#: The attention kinds :class:`Seq2Seq` and :class:`Attention` accept.
ATTENTION_KINDS = ("additive", "dot")
#: The tasks :func:`make_task` knows.
TASKS = ("copy", "reversal")


def _check_positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


def random_tokens(n: int, length: int, vocab_size: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """``n`` sequences of ``length`` tokens drawn uniformly from ``1..vocab_size`` -> LongTensor (n, length)."""
    _check_positive_int("n", n)
    _check_positive_int("length", length)
    _check_positive_int("vocab_size", vocab_size)
    return torch.randint(1, vocab_size + 1, (n, length), generator=generator)


def copy_task(n: int, length: int, vocab_size: int, generator: torch.Generator | None = None):
    """The copy task: returns ``(src, tgt)``, both LongTensors (n, length), with ``tgt == src``."""
    src = random_tokens(n, length, vocab_size, generator)
    return src, src.clone()


def reversal_task(n: int, length: int, vocab_size: int, generator: torch.Generator | None = None):
    """The reversal task: returns ``(src, tgt)`` (n, length) with ``tgt[:, t] == src[:, length - 1 - t]``."""
    src = random_tokens(n, length, vocab_size, generator)
    return src, src.flip(1)


def make_task(task: str, n: int, length: int, vocab_size: int, generator: torch.Generator | None = None):
    """``copy_task`` or ``reversal_task`` by name (``task`` in :data:`TASKS`)."""
    if task == "copy":
        return copy_task(n, length, vocab_size, generator)
    if task == "reversal":
        return reversal_task(n, length, vocab_size, generator)
    raise ValueError(f"task must be one of {TASKS}, got {task!r}")


# --------------------------------------------------------------------------- attention


def _as_3d(queries: torch.Tensor) -> tuple[torch.Tensor, bool]:
    """(B, d) -> (B, 1, d), remembering to squeeze back; (B, T_q, d) unchanged."""
    if queries.dim() == 2:
        return queries.unsqueeze(1), True
    if queries.dim() == 3:
        return queries, False
    raise ValueError(f"queries must have shape (B, d) or (B, T_q, d), got {tuple(queries.shape)}")


def _check_keys(keys: torch.Tensor, queries: torch.Tensor) -> None:
    if keys.dim() != 3:
        raise ValueError(f"keys must have shape (B, T_k, d_k), got {tuple(keys.shape)}")
    if keys.shape[0] != queries.shape[0]:
        raise ValueError(f"queries and keys must share the batch size, got {queries.shape[0]} and {keys.shape[0]}")


def additive_scores(queries: torch.Tensor, keys: torch.Tensor, W_q: torch.Tensor, W_k: torch.Tensor,
                    v: torch.Tensor) -> torch.Tensor:
    """Additive (Bahdanau) alignment scores ``e[b, i, j] = v^T tanh(W_q q_i + W_k k_j)``.

    queries: (B, T_q, d_q) or (B, d_q); keys: (B, T_k, d_k); W_q: (d_a, d_q); W_k: (d_a, d_k); v: (d_a,).
    Returns scores (B, T_q, T_k), or (B, T_k) for 2-D queries.
    """
    q, squeeze = _as_3d(queries)
    _check_keys(keys, q)
    if W_q.dim() != 2 or W_q.shape[1] != q.shape[-1]:
        raise ValueError(f"W_q must have shape (d_a, d_q={q.shape[-1]}), got {tuple(W_q.shape)}")
    if W_k.dim() != 2 or W_k.shape[1] != keys.shape[-1] or W_k.shape[0] != W_q.shape[0]:
        raise ValueError(f"W_k must have shape (d_a={W_q.shape[0]}, d_k={keys.shape[-1]}), got {tuple(W_k.shape)}")
    if v.dim() != 1 or v.shape[0] != W_q.shape[0]:
        raise ValueError(f"v must have shape (d_a={W_q.shape[0]},), got {tuple(v.shape)}")
    hidden = torch.tanh((q @ W_q.T).unsqueeze(2) + (keys @ W_k.T).unsqueeze(1))  # (B, T_q, T_k, d_a)
    scores = hidden @ v  # (B, T_q, T_k)
    return scores.squeeze(1) if squeeze else scores


def dot_scores(queries: torch.Tensor, keys: torch.Tensor, scale: bool = False) -> torch.Tensor:
    """Dot-product (Luong) alignment scores ``e[b, i, j] = q_i^T k_j`` (divided by sqrt(d) if ``scale``).

    queries: (B, T_q, d) or (B, d); keys: (B, T_k, d). Returns (B, T_q, T_k), or (B, T_k) for 2-D queries.
    No parameters: one batched matrix product over all pairs.
    """
    q, squeeze = _as_3d(queries)
    _check_keys(keys, q)
    if keys.shape[-1] != q.shape[-1]:
        raise ValueError(f"dot-product scores need queries and keys of one width, got {q.shape[-1]} and {keys.shape[-1]}")
    scores = q @ keys.transpose(1, 2)
    if scale:
        scores = scores / math.sqrt(q.shape[-1])
    return scores.squeeze(1) if squeeze else scores


def attend(scores: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Softmax the scores over the keys, then average the values with those weights.

    scores: (B, T_q, T_k) or (B, T_k); values: (B, T_k, d_v).
    Returns ``(context, weights)``: (B, T_q, d_v) and (B, T_q, T_k), or (B, d_v) and (B, T_k).
    Each row of ``weights`` is non-negative and sums to 1.
    """
    if values.dim() != 3:
        raise ValueError(f"values must have shape (B, T_k, d_v), got {tuple(values.shape)}")
    s, squeeze = _as_3d(scores)
    if s.shape[0] != values.shape[0] or s.shape[-1] != values.shape[1]:
        raise ValueError(f"scores {tuple(scores.shape)} do not match values {tuple(values.shape)} "
                         "(need the same batch size and T_k)")
    weights = torch.softmax(s, dim=-1)
    context = weights @ values
    if squeeze:
        return context.squeeze(1), weights.squeeze(1)
    return context, weights


class Attention(nn.Module):
    """Score queries against keys, softmax, average the keys (which double as values).

    kind="additive": ``v^T tanh(W_q q + W_k k)`` with ``d_attn`` hidden units (Bahdanau et al., 2015).
    kind="dot": ``q^T k`` (Luong et al., 2015), no parameters; needs ``d_query == d_key``.
    forward(queries (B, T_q, d_query), keys (B, T_k, d_key)) -> (context (B, T_q, d_key), weights (B, T_q, T_k)).
    """

    def __init__(self, kind: str, d_query: int, d_key: int, d_attn: int | None = None):
        super().__init__()
        if kind not in ATTENTION_KINDS:
            raise ValueError(f"kind must be one of {ATTENTION_KINDS}, got {kind!r}")
        _check_positive_int("d_query", d_query)
        _check_positive_int("d_key", d_key)
        self.kind = kind
        if kind == "dot":
            if d_query != d_key:
                raise ValueError(f"dot-product attention needs d_query == d_key, got {d_query} and {d_key}")
        else:
            d_attn = _check_positive_int("d_attn", d_attn if d_attn is not None else d_key)
            self.W_q = nn.Parameter(torch.randn(d_attn, d_query) / math.sqrt(d_query))
            self.W_k = nn.Parameter(torch.randn(d_attn, d_key) / math.sqrt(d_key))
            self.v = nn.Parameter(torch.randn(d_attn) / math.sqrt(d_attn))

    def scores(self, queries: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """Alignment scores (B, T_q, T_k)."""
        if self.kind == "dot":
            return dot_scores(queries, keys)
        return additive_scores(queries, keys, self.W_q, self.W_k, self.v)

    def forward(self, queries: torch.Tensor, keys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return attend(self.scores(queries, keys), keys)


# --------------------------------------------------------------------------- the model


class Seq2Seq(nn.Module):
    """GRU encoder–decoder; the output layer reads ``[s_t; context]``.

    The encoder reads the source into states ``h_1..h_T`` (B, T_in, d_hidden); the decoder starts
    from ``h_T`` and reads the target shifted right by one (``BOS`` first: teacher forcing), giving
    ``s_1..s_T_out``. With ``attention=None`` the context is the fixed vector ``c = h_T`` at every
    step — the bottleneck. With ``attention="additive"`` or ``"dot"`` it is ``c_t``, an attention
    average of ``h_1..h_T`` queried by ``s_t`` (Luong et al.'s arrangement: attention after the
    decoder step). With ``"dot"`` both models have exactly the same parameters.
    """

    def __init__(self, vocab_size: int, d_embed: int = 16, d_hidden: int = 32, attention: str | None = None):
        super().__init__()
        _check_positive_int("vocab_size", vocab_size)
        _check_positive_int("d_embed", d_embed)
        _check_positive_int("d_hidden", d_hidden)
        if attention is not None and attention not in ATTENTION_KINDS:
            raise ValueError(f"attention must be None or one of {ATTENTION_KINDS}, got {attention!r}")
        self.vocab_size = vocab_size
        self.attention_kind = attention
        self.embed = nn.Embedding(vocab_size + 1, d_embed)
        self.encoder = nn.GRU(d_embed, d_hidden, batch_first=True)
        self.decoder = nn.GRU(d_embed, d_hidden, batch_first=True)
        self.attention = None if attention is None else Attention(attention, d_hidden, d_hidden)
        self.head = nn.Linear(2 * d_hidden, vocab_size + 1)

    def _check_tokens(self, name: str, x: torch.Tensor) -> None:
        if x.dim() != 2 or x.dtype != torch.long:
            raise ValueError(f"{name} must be a LongTensor of shape (B, T), got {x.dtype} {tuple(x.shape)}")
        if x.numel() and (x.min() < 0 or x.max() > self.vocab_size):
            raise ValueError(f"{name} tokens must lie in 0..{self.vocab_size}, got {int(x.min())}..{int(x.max())}")

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Teacher-forced pass. src: (B, T_in), tgt: (B, T_out) LongTensors.

        Returns logits (B, T_out, vocab_size + 1) for every target position, and the attention
        weights (B, T_out, T_in) (None without attention).
        """
        self._check_tokens("src", src)
        self._check_tokens("tgt", tgt)
        if src.shape[0] != tgt.shape[0]:
            raise ValueError(f"src and tgt must share the batch size, got {src.shape[0]} and {tgt.shape[0]}")
        enc_states, h_last = self.encoder(self.embed(src))  # (B, T_in, d), (1, B, d)
        dec_in = torch.cat([torch.full_like(tgt[:, :1], BOS), tgt[:, :-1]], dim=1)
        dec_states, _ = self.decoder(self.embed(dec_in), h_last)  # (B, T_out, d)
        if self.attention is None:
            context, weights = h_last.transpose(0, 1).expand_as(dec_states), None
        else:
            context, weights = self.attention(dec_states, enc_states)
        return self.head(torch.cat([dec_states, context], dim=-1)), weights


def train_seq2seq(model: Seq2Seq, task: str, length: int, steps: int = 300, batch_size: int = 64,
                  lr: float = 1e-2, seed: int = 0, clip: float = 1.0,
                  callback: Callable[[int, Seq2Seq], None] | None = None) -> list[float]:
    """Train ``model`` on fresh batches of ``task`` with Adam and teacher forcing.

    Each step draws ``batch_size`` new sequences of ``length`` tokens (so there is nothing to
    memorise), minimises the mean cross-entropy over all target positions, and clips the
    gradient norm at ``clip``. ``callback(step, model)``, if given, runs after every update
    (``step`` counts from 1). Returns the training loss of every step (a list of ``steps`` floats).
    """
    if not isinstance(model, Seq2Seq):
        raise ValueError(f"model must be a Seq2Seq, got {type(model).__name__}")
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    _check_positive_int("length", length)
    _check_positive_int("steps", steps)
    _check_positive_int("batch_size", batch_size)
    if not lr > 0:
        raise ValueError(f"lr must be positive, got {lr!r}")
    generator = torch.Generator().manual_seed(seed)
    device = next(model.parameters()).device
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    losses = []
    for _ in range(steps):
        src, tgt = make_task(task, batch_size, length, model.vocab_size, generator)
        src, tgt = src.to(device), tgt.to(device)
        logits, _ = model(src, tgt)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1))
        optimiser.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimiser.step()
        losses.append(loss.item())
        if callback is not None:
            callback(len(losses), model)
    return losses


@torch.no_grad()
def position_accuracy(model: Seq2Seq, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
    """Teacher-forced accuracy at every output position -> tensor (T_out,) of fractions in [0, 1].

    Position t counts as right when the most probable token, given the source and the true
    previous target tokens, equals ``tgt[:, t]``. Its mean over positions is the token accuracy.
    """
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    logits, _ = model(src.to(device), tgt.to(device))
    model.train(was_training)
    return (logits.argmax(-1) == tgt.to(device)).float().mean(0).cpu()


@torch.no_grad()
def attention_weights(model: Seq2Seq, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
    """Attention weights of a model with attention -> (B, T_out, T_in); raises for a model without."""
    if model.attention is None:
        raise ValueError("model has no attention (it was built with attention=None)")
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    _, weights = model(src.to(device), tgt.to(device))
    model.train(was_training)
    return weights.cpu()


# --------------------------------------------------------------------------- learning curves


def learning_curve(model: Seq2Seq, task: str, length: int, checkpoints: Sequence[int],
                   test_src: torch.Tensor, test_tgt: torch.Tensor, *, batch_size: int = 64,
                   lr: float = 1e-2, seed: int = 0) -> dict:
    """Train ``model`` for ``max(checkpoints)`` steps (one Adam run) and score it on the way.

    At every step count in ``checkpoints`` the test accuracy (mean of :func:`position_accuracy`
    on ``test_src``/``test_tgt``, (N, length)) is recorded. Returns a dict with ``steps`` (the
    sorted checkpoints), ``accuracy`` (one float per checkpoint), ``positions`` (the per-position
    accuracy at the last checkpoint, ``length`` floats), ``positions_at`` (the same at every
    checkpoint) and ``loss_final`` (the mean training
    loss of the last 50 steps).
    """
    steps = sorted(set(int(c) for c in checkpoints))
    if not steps or steps[0] < 1:
        raise ValueError(f"checkpoints must be positive step counts, got {list(checkpoints)!r}")
    if test_src.shape != test_tgt.shape or test_src.shape[1] != length:
        raise ValueError(f"test_src and test_tgt must both have shape (N, length={length}), "
                         f"got {tuple(test_src.shape)} and {tuple(test_tgt.shape)}")
    wanted, accuracy, positions = set(steps), [], []

    def score(step: int, net: Seq2Seq) -> None:
        if step in wanted:
            acc = position_accuracy(net, test_src, test_tgt)
            accuracy.append(acc.mean().item())
            positions.append(acc.tolist())

    losses = train_seq2seq(model, task, length, steps=steps[-1], batch_size=batch_size, lr=lr,
                           seed=seed, callback=score)
    return {"steps": steps, "accuracy": accuracy, "positions": positions[-1], "positions_at": positions,
            "loss_final": float(sum(losses[-50:]) / len(losses[-50:]))}
