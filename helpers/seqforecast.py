"""The Part's own sequence models as global forecasters: a GRU and a small Transformer.

Both read a scaled input window ``x (B, L)`` and emit all ``H`` forecast hours at once
(*direct* multi-horizon forecasting), so they drop into the same training loop, window
sampler, scalings and losses as N-BEATS (``helpers.nbeats``):

- ``GRUForecaster`` reads the window one hour at a time (``(B, L, 1)``); its last hidden state
  goes through a linear head to the ``H`` outputs.
- ``PatchTransformer`` cuts the window into ``L / patch`` non-overlapping patches (a day each by
  default), embeds each patch as a token, adds a learned position embedding, runs pre-norm
  ``helpers.transformer.EncoderBlock`` s over the tokens and maps the flattened tokens to ``H``
  outputs. Patching is what makes attention affordable here: 7 tokens instead of 168.

Shapes: ``forward(x)`` maps ``(B, L)`` to ``(B, H)``.
"""

from __future__ import annotations

import torch
from torch import nn

from .checks import check_int
from .transformer import EncoderBlock

__all__ = ["GRUForecaster", "PatchTransformer"]


def _check_window(x: torch.Tensor, lookback: int) -> None:
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.shape[1] != lookback:
        shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"x must have shape (B, {lookback}), got {shape}")


class GRUForecaster(nn.Module):
    """A GRU over the hours of the window, then a linear map from its last state to the H forecasts."""

    def __init__(self, lookback: int, horizon: int, width: int = 64, layers: int = 1):
        super().__init__()
        for name, value in (("lookback", lookback), ("horizon", horizon), ("width", width), ("layers", layers)):
            check_int(name, value, minimum=1)
        self.lookback, self.horizon = lookback, horizon
        self.rnn = nn.GRU(1, width, layers, batch_first=True)
        self.head = nn.Linear(width, horizon)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_window(x, self.lookback)
        states, _ = self.rnn(x.unsqueeze(-1))  # (B, L, width): one state per hour
        return self.head(states[:, -1])  # (B, H) from the state after the last hour


class PatchTransformer(nn.Module):
    """Patches of the window as tokens, a few encoder blocks, and a linear head on all tokens."""

    def __init__(self, lookback: int, horizon: int, width: int = 64, layers: int = 2, heads: int = 4,
                 patch: int = 24):
        super().__init__()
        for name, value in (("lookback", lookback), ("horizon", horizon), ("width", width), ("layers", layers),
                            ("heads", heads), ("patch", patch)):
            check_int(name, value, minimum=1)
        if lookback % patch:
            raise ValueError(f"lookback ({lookback}) must be a multiple of patch ({patch})")
        if width % heads:
            raise ValueError(f"width ({width}) must be divisible by heads ({heads})")
        self.lookback, self.horizon, self.patch = lookback, horizon, patch
        tokens = lookback // patch
        self.embed = nn.Linear(patch, width)
        self.position = nn.Parameter(torch.zeros(tokens, width))
        nn.init.normal_(self.position, std=0.02)
        self.blocks = nn.ModuleList(EncoderBlock(width, heads, norm_first=True) for _ in range(layers))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(tokens * width, horizon)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_window(x, self.lookback)
        B = x.shape[0]
        tokens = self.embed(x.view(B, -1, self.patch)) + self.position  # (B, T, C), T = L / patch
        for block in self.blocks:
            tokens = block(tokens)  # (B, T, C): every patch attends to every other
        return self.head(self.norm(tokens).reshape(B, -1))  # (B, H)
