"""Reading a trained :class:`~helpers.seq2seq.Seq2Seq` beyond teacher forcing (§14.48–§14.49).

- :func:`greedy_decode`: free-running generation, each step fed the model's own previous output,
  the way a trained encoder–decoder is used; :func:`decoding_accuracy` scores it (token accuracy
  and whole-sequence accuracy) next to the teacher-forced scores.
- :func:`head_inputs`: the two halves of the output layer's input, ``[s_t; c]``, taken apart, so
  that one half can be replaced (for instance the context by its mean over the test set) while the
  other is kept.

These live outside :mod:`helpers.seq2seq` because that module keys the cached experiment of §14.48
(``cache/bottleneck``): analysing the cached weights must not change what produced them.
"""

from __future__ import annotations

import torch

from .checks import check_int, describe
from .seq2seq import BOS, Seq2Seq


def _check_model(model) -> None:
    if not isinstance(model, Seq2Seq):
        raise ValueError(f"model must be a Seq2Seq, got {describe(model)}")


def _check_tokens(name: str, x, vocab_size: int) -> None:
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.dtype != torch.long:
        raise ValueError(f"{name} must be a LongTensor of shape (B, T), got {describe(x)}")
    if x.numel() and (x.min() < 0 or x.max() > vocab_size):
        raise ValueError(f"{name} tokens must lie in 0..{vocab_size}, got {int(x.min())}..{int(x.max())}")


@torch.no_grad()
def greedy_decode(model: Seq2Seq, src: torch.Tensor, steps: int | None = None) -> torch.Tensor:
    """Free-running decoding: start from ``BOS``, feed back the most probable token at every step.

    src: (B, T_in) LongTensor; ``steps`` output tokens (default ``T_in``). Returns (B, steps) on the
    CPU. Step t computes exactly what :meth:`Seq2Seq.forward` computes at position t when the
    earlier targets are the model's own outputs instead of the true ones (the output layer may
    pick any of its ``V + 1`` classes, as in the teacher-forced score).
    """
    _check_model(model)
    _check_tokens("src", src, model.vocab_size)
    steps = src.shape[1] if steps is None else check_int("steps", steps, 1)
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    enc_states, h_last = model.encoder(model.embed(src.to(device)))  # (B, T_in, d), (1, B, d)
    state, token, out = h_last, torch.full((src.shape[0], 1), BOS, device=device), []
    for _ in range(steps):
        s, state = model.decoder(model.embed(token), state)  # (B, 1, d)
        if model.attention is None:
            context = h_last.transpose(0, 1)
        else:
            context, _ = model.attention(s, enc_states)
        token = model.head(torch.cat([s, context], dim=-1)).argmax(-1)  # (B, 1)
        out.append(token)
    model.train(was_training)
    return torch.cat(out, dim=1).cpu()


@torch.no_grad()
def decoding_accuracy(model: Seq2Seq, src: torch.Tensor, tgt: torch.Tensor) -> dict[str, float]:
    """Teacher-forced and greedy scores of ``model`` on ``(src, tgt)``, both (N, T_out).

    Returns ``forced_tokens`` and ``forced_sequences`` (the fraction of positions, and of whole
    sequences, whose most probable token is right given the true earlier targets) and
    ``greedy_tokens`` and ``greedy_sequences`` (the same for :func:`greedy_decode`'s output).
    """
    _check_model(model)
    _check_tokens("tgt", tgt, model.vocab_size)
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    logits, _ = model(src.to(device), tgt.to(device))
    model.train(was_training)
    forced = logits.argmax(-1).cpu() == tgt
    greedy = greedy_decode(model, src, tgt.shape[1]) == tgt
    return {"forced_tokens": forced.float().mean().item(), "forced_sequences": forced.all(1).float().mean().item(),
            "greedy_tokens": greedy.float().mean().item(), "greedy_sequences": greedy.all(1).float().mean().item()}


@torch.no_grad()
def head_inputs(model: Seq2Seq, src: torch.Tensor, tgt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The two halves of the output layer's input under teacher forcing -> (s, context), each (B, T_out, d_hidden).

    ``model.head(torch.cat([s, context], -1))`` gives back :meth:`Seq2Seq.forward`'s logits.
    """
    _check_model(model)
    _check_tokens("src", src, model.vocab_size)
    _check_tokens("tgt", tgt, model.vocab_size)
    device = next(model.parameters()).device
    src, tgt = src.to(device), tgt.to(device)
    enc_states, h_last = model.encoder(model.embed(src))
    dec_in = torch.cat([torch.full_like(tgt[:, :1], BOS), tgt[:, :-1]], dim=1)
    s, _ = model.decoder(model.embed(dec_in), h_last)
    if model.attention is None:
        context = h_last.transpose(0, 1).expand_as(s)
    else:
        context, _ = model.attention(s, enc_states)
    return s, context

