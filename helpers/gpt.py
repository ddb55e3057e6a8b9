"""A GPT in one file: the decoder-only Transformer the book trains, samples and measures (§14.53–§14.64).

- ``GPTConfig``                 the model's size and its choices (positions, attention kernel, window)
- ``GPT``                       token (+ position) embedding -> ``n_layers`` blocks -> LayerNorm -> read-out;
                                ``forward(idx, targets=None, cache=None) -> (logits, loss)``,
                                ``generate(idx, max_new_tokens, ...)`` with the KV cache as a feature
- ``Block``                     §14.54's pre-norm ``DecoderOnlyBlock``, whose attention reads a KV cache and
                                can run naive, fused or banded, with learned, sinusoidal, rotary, ALiBi or no
                                positions
- ``causal_attention``          the attention core those options select
- ``model_code``                what a cache of trained GPTs keys on

Shapes follow nanoGPT: B batch, T (or t) positions, C = d_model channels, h heads of d_k = C / h,
V the vocabulary. The KV cache is :class:`helpers.efficient_attention.KVCache` (§14.56 builds it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import nn

from . import checks
from .attention import scaled_dot_product_attention
from .efficient_attention import KVCache, attention_mask, sliding_window_attention
from .positional import apply_rope, sinusoidal_encoding
from .sampling import sample_next
from .transformer import DecoderOnlyBlock

__all__ = ["GPTConfig", "GPT", "Block", "causal_attention", "alibi_slopes", "model_code",
           "POSITIONS", "KERNELS"]

POSITIONS = ("learned", "sinusoidal", "rope", "alibi", "none")
KERNELS = ("naive", "fused", "banded")


@dataclass(frozen=True)
class GPTConfig:
    """What a :class:`GPT` is made of. Only ``vocab_size`` has no default.

    Args:
        vocab_size: V, the number of token ids.
        block_size: the longest context: learned positions exist for 0..block_size-1, and
            ``generate`` never lets the model read more than this many tokens.
        n_layers, n_heads, d_model: depth, heads per layer, width C (divisible by ``n_heads``).
        dropout: dropout probability inside each block (0 = none).
        bias: biases in the Linear layers (attention, feed-forward, read-out). LayerNorms always keep
            their shift, as in GPT-2.
        tie_weights: the read-out matrix is the token embedding (GPT-2); no read-out bias then.
        gpt2_init: weights N(0, 0.02), residual projections N(0, 0.02 / sqrt(2 n_layers)) (GPT-2);
            False keeps §14.54's torch-style initialisation of the block.
        positions: "learned" (a table, GPT-2), "sinusoidal" (added, §14.52), "rope" (queries and keys
            rotated), "alibi" (a distance penalty on the scores) or "none" (§14.53).
        kernel: "naive" (the (T, T) matrix formed), "fused" (``F.scaled_dot_product_attention``) or
            "banded" (:func:`helpers.efficient_attention.sliding_window_attention`, needs a window) (§14.56).
        window: each query sees only the last ``window`` positions (None: all of them).
    """

    vocab_size: int
    block_size: int = 128
    n_layers: int = 4
    n_heads: int = 4
    d_model: int = 128
    dropout: float = 0.0
    bias: bool = False
    tie_weights: bool = True
    gpt2_init: bool = True
    positions: str = "learned"
    kernel: str = "fused"
    window: int | None = None

    def __post_init__(self):
        _check_config(self)


def _check_config(cfg: GPTConfig) -> None:
    for name in ("vocab_size", "block_size", "n_layers", "n_heads", "d_model"):
        checks.check_int(name, getattr(cfg, name), 1)
    if cfg.d_model % cfg.n_heads:
        raise ValueError(f"d_model ({cfg.d_model}) must be divisible by n_heads ({cfg.n_heads})")
    checks.check_prob("dropout", cfg.dropout)
    for name in ("bias", "tie_weights", "gpt2_init"):
        if not isinstance(getattr(cfg, name), bool):
            raise ValueError(f"{name} must be True or False, got {getattr(cfg, name)!r}")
    checks.check_choice("positions", cfg.positions, POSITIONS)
    _check_attention(cfg.kernel, cfg.window, cfg.positions)
    if cfg.positions == "rope" and (cfg.d_model // cfg.n_heads) % 2:
        raise ValueError(f"positions='rope' needs an even head width d_model/n_heads, got {cfg.d_model // cfg.n_heads}")


def _check_attention(kernel: str, window: int | None, positions: str) -> None:
    checks.check_choice("kernel", kernel, KERNELS)
    checks.check_optional_int("window", window, 1)
    if kernel == "banded" and window is None:
        raise ValueError("kernel='banded' needs a window (an integer >= 1); use 'naive' or 'fused' without one")
    if kernel == "banded" and positions == "alibi":
        raise ValueError("kernel='banded' cannot add ALiBi's biases; use kernel='naive' or 'fused' with a window")


def _check_forward(idx, targets, cache, cfg: GPTConfig, n_layers: int) -> None:
    checks.check_token_ids("idx", idx, cfg.vocab_size)
    if targets is not None and (not isinstance(targets, torch.Tensor) or targets.shape != idx.shape):
        raise ValueError(f"targets must have the shape of idx {tuple(idx.shape)}, got {checks.describe(targets)}")
    if cache is not None:
        if not isinstance(cache, KVCache) or cache.n_layers != n_layers:
            raise ValueError(f"cache must be the model's own KVCache (model.new_cache()), got {checks.describe(cache)}")
        if cfg.kernel == "banded":
            raise ValueError("kernel='banded' works on whole sequences; decode with kernel 'naive' or 'fused'")
    start = 0 if cache is None else cache.position
    if cfg.positions == "learned" and start + idx.shape[1] > cfg.block_size:
        raise ValueError(f"positions {start}..{start + idx.shape[1] - 1} exceed block_size={cfg.block_size} "
                         f"(learned positions exist only up to it); pass at most the last {cfg.block_size} tokens")


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """ALiBi's head slopes m_h = 2^(-8h/H), h = 1..H -> ``(H,)`` (as :func:`helpers.positional.alibi_bias`)."""
    checks.check_int("n_heads", n_heads, 1)
    return 2.0 ** (-8.0 * torch.arange(1, n_heads + 1, dtype=torch.float64) / n_heads)


# ------------------------------------------------------------------------------------- the attention core

def causal_attention(q, k, v, q_pos, k_pos, kernel: str = "fused", window: int | None = None,
                     slopes: torch.Tensor | None = None) -> torch.Tensor:
    """Causal attention of queries at positions ``q_pos`` to keys at ``k_pos``, computed by ``kernel``.

    Args:
        q: ``(B, h, t, d_k)``; k, v: ``(B, h, s, d_k)`` (s >= t: a KV cache adds the past).
        q_pos ``(t,)``, k_pos ``(s,)``: the positions of the queries and keys.
        kernel: "naive", "fused" or "banded" — the same function, three ways (§14.56).
        window: query i sees keys i-window+1..i only (None: all earlier keys).
        slopes: ALiBi's ``(h,)`` slopes; adds -m_h (i - j) to the score of query i and key j.

    Returns:
        ``(B, h, t, d_k)``.
    """
    if kernel == "banded":                       # whole sequences only: q_pos == k_pos
        return sliding_window_attention(q, k, v, window)
    if kernel == "fused" and slopes is None and window is None and q.shape[-2] == k.shape[-2]:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)   # no mask is built
    blocked = attention_mask(q_pos, k_pos, window)                        # (t, s), True = blocked
    if slopes is None:
        if kernel == "naive":
            return scaled_dot_product_attention(q, k, v, blocked)[0]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=~blocked)   # torch: True = may attend
    distance = (q_pos[:, None] - k_pos[None, :]).to(q.dtype)                   # (t, s)
    bias = (-slopes.to(q)[:, None, None] * distance).masked_fill(blocked, float("-inf"))  # (h, t, s)
    if kernel == "naive":
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]) + bias       # (B, h, t, s)
        return torch.softmax(scores, dim=-1) @ v
    return F.scaled_dot_product_attention(q, k, v, attn_mask=bias)


# ---------------------------------------------------------------------------------------------- the model

class Block(DecoderOnlyBlock):
    """§14.54's pre-norm decoder block (``norm1``, ``self_attn``, ``norm2``, ``ffn``), run by the GPT.

    ``forward(x, cache, layer, start)``: x ``(B, t, C)`` holds the positions start..start+t-1 ->
    ``(B, t, C)``. The attention projections are the block's ``self_attn.w_q/w_k/w_v/w_o``; only the
    core between them changes (kernel, window, positions, cache).
    """

    def __init__(self, cfg: GPTConfig):
        super().__init__(cfg.d_model, cfg.n_heads, 4 * cfg.d_model, "gelu", norm_first=True,
                         dropout=cfg.dropout, bias=cfg.bias)
        if not cfg.bias:  # GPT-2's LayerNorms keep their shift even where the Linear layers have no bias
            self.norm1, self.norm2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        self.kernel, self.window, self.positions = cfg.kernel, cfg.window, cfg.positions
        self.register_buffer("slopes", alibi_slopes(cfg.n_heads).float() if cfg.positions == "alibi" else None,
                             persistent=False)

    def attend(self, x: torch.Tensor, cache: KVCache | None, layer: int, start: int) -> torch.Tensor:
        mha = self.self_attn
        q, k, v = (mha.split_heads(w(x)) for w in (mha.w_q, mha.w_k, mha.w_v))  # each (B, h, t, d_k)
        q_pos = torch.arange(start, start + x.shape[1], device=x.device)       # (t,)
        if self.positions == "rope":
            q, k = apply_rope(q, q_pos), apply_rope(k, q_pos)                  # keys are cached rotated
        if cache is not None:
            k, v = cache.extend(layer, k, v)                                  # (B, h, s, d_k), s = past + t
        k_pos = torch.arange(start + x.shape[1] - k.shape[-2], start + x.shape[1], device=x.device)  # (s,)
        y = causal_attention(q, k, v, q_pos, k_pos, self.kernel, self.window, self.slopes)  # (B, h, t, d_k)
        if cache is not None:
            cache.store(layer, k, v)
        return mha.w_o(mha.merge_heads(y))                                    # (B, t, C)

    def forward(self, x: torch.Tensor, cache: KVCache | None = None, layer: int = 0, start: int = 0) -> torch.Tensor:
        x = x + self.dropout1(self.attend(self.norm1(x), cache, layer, start))  # (B, t, C)
        return x + self.dropout2(self.ffn(self.norm2(x)))


class GPT(nn.Module):
    """A decoder-only Transformer language model (GPT-2's layout, nanoGPT's shape).

    ``tok`` (V x C) [+ ``pos`` (block_size x C) if learned] -> ``blocks`` -> ``ln_f`` -> ``head`` (C -> V).
    """

    def __init__(self, config: GPTConfig):
        super().__init__()
        if not isinstance(config, GPTConfig):
            raise ValueError(f"config must be a GPTConfig, got {type(config).__name__}")
        self.config = cfg = config
        self.tok = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = nn.Embedding(cfg.block_size, cfg.d_model) if cfg.positions == "learned" else None
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=cfg.bias and not cfg.tie_weights)
        if cfg.tie_weights:
            self.head.weight = self.tok.weight   # one matrix reads tokens in and scores them out
        if cfg.gpt2_init:
            self._gpt2_init()

    @torch.no_grad()
    def _gpt2_init(self) -> None:
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
                if getattr(m, "bias", None) is not None:
                    nn.init.zeros_(m.bias)
        for block in self.blocks:  # the two projections that write into the residual stream
            for w in (block.self_attn.w_o.weight, block.ffn.linear2.weight):
                nn.init.normal_(w, std=0.02 / math.sqrt(2 * self.config.n_layers))

    @property
    def context(self) -> int:
        """The longest context, ``config.block_size`` (the name ``helpers.charlm.evaluate`` reads)."""
        return self.config.block_size

    def set_attention(self, kernel: str = "fused", window: int | None = None) -> "GPT":
        """Run every layer's attention with ``kernel`` and ``window`` (the weights stay); returns the model."""
        _check_attention(kernel, window, self.config.positions)
        self.config = replace(self.config, kernel=kernel, window=window)
        for block in self.blocks:
            block.kernel, block.window = kernel, window
        return self

    def new_cache(self) -> KVCache:
        """An empty KV cache for this model, windowed like its attention."""
        return KVCache(len(self.blocks), window=self.config.window)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None, cache: KVCache | None = None):
        """``idx`` ``(B, t)`` token ids -> ``(logits (B, t, V), loss)``.

        ``loss`` is the mean cross-entropy (nats) against ``targets`` ``(B, t)``, None without targets.
        With a ``cache``, ``idx`` holds only the new tokens, at positions ``cache.position, ...``, and
        the cache is extended.
        """
        _check_forward(idx, targets, cache, self.config, len(self.blocks))
        B, t = idx.shape
        start = 0 if cache is None else cache.position
        x = self.tok(idx)                                                     # (B, t, C)
        if self.config.positions in ("learned", "sinusoidal"):
            x = x + self._position_vectors(start, t, x)                       # (t, C), broadcast over B
        x = self.drop(x)
        for layer, block in enumerate(self.blocks):
            x = block(x, cache, layer, start)                                 # (B, t, C)
        if cache is not None:
            cache.position += t
        logits = self.head(self.ln_f(x))                                      # (B, t, V)
        loss = None if targets is None else F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        return logits, loss

    def _position_vectors(self, start: int, t: int, x: torch.Tensor) -> torch.Tensor:
        if self.pos is not None:
            return self.pos(torch.arange(start, start + t, device=x.device))
        return sinusoidal_encoding(start + t, self.config.d_model, dtype=x.dtype).to(x.device)[start:]

    @torch.no_grad()
    def generate(self, idx: torch.Tensor, max_new_tokens: int, temperature: float = 1.0, top_k: int | None = None,
                 top_p: float | None = None, generator: torch.Generator | None = None, use_cache: bool = True,
                 keep: int | None = None, return_logits: bool = False):
        """Continue each row of ``idx`` ``(B, t0)`` by ``max_new_tokens`` tokens, one draw at a time.

        Each step turns the last position's logits into a token with :func:`helpers.sampling.sample_next`
        (``temperature=0`` is greedy). With ``use_cache`` the prompt is read once and each step feeds only
        the newest token; without, each step re-reads the whole context. The model never reads more than
        ``block_size`` tokens: when its context is full, it continues from the last ``keep`` tokens
        (default ``block_size // 2``), read afresh — the same rule with and without the cache, so the two
        give the same tokens.

        Returns:
            tokens ``(B, t0 + max_new_tokens)`` (prompt included); with ``return_logits``, also the
            logits each step drew from, ``(B, max_new_tokens, V)``.
        """
        checks.check_token_ids("idx", idx, self.config.vocab_size)
        max_new_tokens = checks.check_int("max_new_tokens", max_new_tokens, 1)
        block = self.config.block_size
        keep = block // 2 if keep is None else checks.check_int("keep", keep, 1)
        if keep >= block:
            raise ValueError(f"keep must be < block_size={block}, got {keep}")
        was_training = self.training
        self.eval()
        n_ctx = min(idx.shape[1], block)   # how many of the last tokens the model reads
        cache = self.new_cache() if use_cache else None
        logits, _ = self(idx[:, -n_ctx:], cache=cache)
        step_logits = []
        for step in range(max_new_tokens):
            last = logits[:, -1]                                                   # (B, V)
            step_logits.append(last)
            nxt = sample_next(last, temperature=temperature, top_k=top_k, top_p=top_p, generator=generator)
            idx = torch.cat([idx, nxt[:, None]], dim=1)                            # (B, t + 1)
            if step == max_new_tokens - 1:
                break                                # the last token needs no forward pass after it
            if n_ctx == block:                       # context full: start again from the last `keep` tokens
                n_ctx = keep
                cache = self.new_cache() if use_cache else None
                logits, _ = self(idx[:, -n_ctx:], cache=cache)
            else:
                n_ctx += 1
                logits, _ = self(nxt[:, None], cache=cache) if use_cache else self(idx[:, -n_ctx:])
        self.train(was_training)
        return (idx, torch.stack(step_logits, dim=1)) if return_logits else idx


def model_code() -> list:
    """The functions and classes a GPT's results depend on: what a cache of trained GPTs keys on
    (:func:`helpers.cache.code_hash`), so editing the rest of this module leaves such a cache valid."""
    return [GPTConfig, _check_config, _check_attention, _check_forward, alibi_slopes, causal_attention, Block, GPT]
