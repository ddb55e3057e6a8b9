"""A global N-BEATS-style forecaster (Oreshkin et al. 2020), small enough for a laptop CPU.

One network is trained across *all* series: each training example is a window of
``lookback`` values and the ``horizon`` values that follow, rescaled by statistics of the
input window alone so that series of any level look alike. Two scalings are offered:

- ``"level"``: divide by the window's mean; the network outputs the scaled forecast.
- ``"seasonal"``: standardise the window (mean, standard deviation) and let the network
  output a *correction to the seasonal naive forecast* (the last ``season`` values
  repeated), in units of the window's standard deviation.

The network is a stack of fully connected blocks; each block reads what the previous
blocks could not explain (the *backcast residual*) and adds its share to the forecast. An
ensemble of such networks, differing in scaling and training loss, is combined by the
median, as N-BEATS combines its members.

Shapes: a batch of inputs is ``(B, L)`` (``L`` = lookback), forecasts are ``(B, H)``.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn

from .checks import check_int
from .checks import check_positive


@dataclass(frozen=True)
class NBeatsConfig:
    """Everything that defines one trained global forecaster: an N-BEATS member, or one of the
    Part's sequence models (``model="gru"`` or ``"transformer"``, from ``helpers.seqforecast``)."""

    model: str = "nbeats"  #: "nbeats", "gru" or "transformer" (see ``build_model``)
    lookback: int = 168  #: input window L (hours)
    horizon: int = 48  #: forecast length H
    loss: str = "smape"  #: training loss: "smape" or "mase"
    scaling: str = "level"  #: "level" or "seasonal" (see the module docstring)
    width: int = 256  #: units per hidden layer (GRU: state size; Transformer: token width)
    layers: int = 4  #: hidden layers per block (GRU: stacked GRUs; Transformer: encoder blocks)
    blocks: int = 4  #: blocks in the stack (N-BEATS only)
    heads: int = 4  #: attention heads (Transformer only)
    patch: int = 24  #: hours per token (Transformer only)
    steps: int = 2000  #: optimiser steps
    batch: int = 1024  #: windows per step
    lr: float = 1e-3  #: peak learning rate (one-cycle schedule)
    history_window: int = 480  #: forecast origins are drawn from the last this-many hours
    season: int = 24  #: seasonal lag of the MASE scale
    seed: int = 0


class NBeatsBlock(nn.Module):
    """A fully connected stack with two linear heads: backcast ``(B, L)`` and forecast ``(B, H)``."""

    def __init__(self, lookback: int, horizon: int, width: int, layers: int):
        super().__init__()
        dims = [lookback] + [width] * layers
        self.body = nn.Sequential(*[m for a, b in zip(dims, dims[1:]) for m in (nn.Linear(a, b), nn.ReLU())])
        self.backcast = nn.Linear(width, lookback)
        self.forecast = nn.Linear(width, horizon)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.body(x)
        return self.backcast(h), self.forecast(h)


class NBeats(nn.Module):
    """N-BEATS' generic architecture: blocks linked by backcast residuals, forecasts summed.

    ``forward(x)`` maps a scaled input window ``(B, L)`` to a scaled forecast ``(B, H)``.
    """

    def __init__(self, lookback: int, horizon: int, width: int = 256, layers: int = 4, blocks: int = 4):
        super().__init__()
        for name, value in (("lookback", lookback), ("horizon", horizon), ("width", width),
                            ("layers", layers), ("blocks", blocks)):
            check_int(name, value, minimum=1)
        self.lookback, self.horizon = lookback, horizon
        self.blocks = nn.ModuleList(NBeatsBlock(lookback, horizon, width, layers) for _ in range(blocks))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 2 or x.shape[1] != self.lookback:
            raise ValueError(f"x must have shape (B, {self.lookback}), got {tuple(x.shape)}")
        forecast = 0
        for block in self.blocks:
            backcast, part = block(x)
            x = x - backcast  # the next block sees only what this one could not explain
            forecast = forecast + part
        return forecast


def _check_series(series, need: int, what: str) -> list[np.ndarray]:
    if isinstance(series, np.ndarray) or not len(series):
        raise ValueError("series must be a non-empty list of 1-D arrays, one per series")
    out = []
    for i, y in enumerate(series):
        y = np.asarray(y, dtype=np.float64)
        if y.ndim != 1 or len(y) < need:
            raise ValueError(f"series[{i}] has shape {y.shape}; {what} needs at least {need} values")
        if not np.all(np.isfinite(y)) or np.any(y <= 0):
            raise ValueError(f"series[{i}] must be finite and positive (windows are scaled by their mean)")
        out.append(y)
    return out


class WindowSampler:
    """Draws random (input, target) windows across series.

    Series are right-aligned in one padded matrix so a batch is a single fancy-index.
    Forecast origins are drawn uniformly from each series' last ``history_window`` hours.
    A call returns raw windows ``x (B, L)``, ``y (B, H)`` and ``scale (B,)``, each
    series' in-sample seasonal-naive MAE (the MASE denominator).
    """

    def __init__(self, series, lookback: int, horizon: int, history_window: int, season: int):
        check_int("lookback", lookback, 1)
        check_int("horizon", horizon, 1)
        check_int("history_window", history_window, 0)
        check_int("season", season, 1)
        self.series = _check_series(series, lookback + horizon + 1, f"lookback {lookback} + horizon {horizon}")
        self.lookback, self.horizon, self.history_window = lookback, horizon, history_window
        self.lengths = np.array([len(y) for y in self.series])
        self.width = int(self.lengths.max())
        self.padded = np.zeros((len(self.series), self.width), dtype=np.float32)
        for i, y in enumerate(self.series):
            self.padded[i, self.width - len(y):] = y
        if season >= min(len(y) for y in self.series):
            raise ValueError(f"season must be shorter than every series (the MASE scale compares values season "
                             f"apart), got season={season}; the shortest series has "
                             f"{min(len(y) for y in self.series)} values")
        self.mase_scale = np.array([np.mean(np.abs(y[season:] - y[:-season])) for y in self.series], np.float32)

    def __call__(self, batch: int, rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        check_int("batch", batch, 1)
        L, H = self.lookback, self.horizon
        rows = rng.integers(0, len(self.series), batch)
        n = self.lengths[rows]
        first = np.maximum(L, n - H - self.history_window)  # earliest forecast origin allowed
        origin = first + (rng.random(batch) * (n - H + 1 - first)).astype(np.int64)
        cols = (self.width - n + origin - L)[:, None] + np.arange(L + H)[None, :]
        windows = torch.from_numpy(self.padded[rows[:, None], cols])
        return windows[:, :L], windows[:, L:], torch.from_numpy(self.mase_scale[rows])


SCALINGS = ("level", "seasonal")


def forecast_from_window(model: nn.Module, x: torch.Tensor, scaling: str, season: int) -> torch.Tensor:
    """Scale raw input windows ``(B, L)``, run the model, and return forecasts in raw units ``(B, H)``."""
    level = x.mean(dim=1, keepdim=True)
    if scaling == "level":
        return level * model(x / level)
    if scaling == "seasonal":
        spread = x.std(dim=1, unbiased=False, keepdim=True).clamp_min(1e-3 * level.abs())
        repeats = -(-model.horizon // season)
        seasonal_naive = x[:, -season:].repeat(1, repeats)[:, : model.horizon]
        return seasonal_naive + spread * model((x - level) / spread)
    raise ValueError(f"scaling must be one of {SCALINGS}, got {scaling!r}")


def smape_loss(pred: torch.Tensor, target: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """M4's sMAPE as a fraction (not percent), averaged over ``(B, H)``; ``scale`` is unused."""
    if pred.shape != target.shape:
        raise ValueError(f"pred and target must have the same shape (B, H), got pred {tuple(pred.shape)} and "
                         f"target {tuple(target.shape)}")
    return (2 * (pred - target).abs() / (pred.abs() + target.abs()).clamp_min(1e-8)).mean()


def mase_loss(pred: torch.Tensor, target: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """MASE averaged over ``(B, H)``: absolute errors divided by each series' scale ``(B,)``."""
    if pred.shape != target.shape or pred.ndim != 2:
        raise ValueError(f"pred and target must have the same shape (B, H), got pred {tuple(pred.shape)} and "
                         f"target {tuple(target.shape)}")
    if scale.shape != pred.shape[:1]:
        raise ValueError(f"scale must have shape (B,) = {tuple(pred.shape[:1])}, one scale per series, got "
                         f"{tuple(scale.shape)}")
    return ((pred - target).abs() / scale[:, None]).mean()


LOSSES = {"smape": smape_loss, "mase": mase_loss}


MODELS = ("nbeats", "gru", "transformer")


def build_model(config: NBeatsConfig) -> nn.Module:
    """A freshly initialised network of ``config.model``'s kind: ``forward`` maps ``(B, L)`` to ``(B, H)``."""
    from .seqforecast import GRUForecaster, PatchTransformer

    if config.model == "nbeats":
        return NBeats(config.lookback, config.horizon, config.width, config.layers, config.blocks)
    if config.model == "gru":
        return GRUForecaster(config.lookback, config.horizon, config.width, config.layers)
    if config.model == "transformer":
        return PatchTransformer(config.lookback, config.horizon, config.width, config.layers, config.heads,
                                config.patch)
    raise ValueError(f"config.model must be one of {MODELS}, got {config.model!r}")


def train_forecaster(series, config: NBeatsConfig, log=None) -> tuple[nn.Module, dict]:
    """Train one network (``build_model(config)``) on windows drawn from ``series`` (a list of 1-D arrays).

    Returns the model (in eval mode) and ``{"seconds", "steps", "final_loss"}``; ``log`` is
    called with a line every quarter of the run if given.
    """
    if config.loss not in LOSSES:
        raise ValueError(f"config.loss must be one of {sorted(LOSSES)}, got {config.loss!r}")
    if config.scaling not in SCALINGS:
        raise ValueError(f"config.scaling must be one of {SCALINGS}, got {config.scaling!r}")
    check_int("config.steps", config.steps, minimum=1)
    check_int("config.batch", config.batch, minimum=1)
    check_positive("config.lr", config.lr)
    if config.scaling == "seasonal" and not 1 <= config.season <= config.lookback:
        raise ValueError(f"config.season must be from 1 to config.lookback={config.lookback} with scaling='seasonal' "
                         f"(the seasonal naive forecast repeats the window's last season values), got {config.season!r}")
    sampler = WindowSampler(series, config.lookback, config.horizon, config.history_window, config.season)
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    model = build_model(config)
    opt = torch.optim.Adam(model.parameters(), lr=config.lr)
    schedule = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=config.lr, total_steps=config.steps, pct_start=0.1)
    loss_fn, start, recent = LOSSES[config.loss], time.perf_counter(), []
    for step in range(config.steps):
        x, y, scale = sampler(config.batch, rng)
        level = x.mean(dim=1, keepdim=True)  # compare in level units: values of order one
        pred = forecast_from_window(model, x, config.scaling, config.season) / level
        loss = loss_fn(pred, y / level, scale / level[:, 0])
        opt.zero_grad()
        loss.backward()
        opt.step()
        schedule.step()
        recent = (recent + [loss.item()])[-50:]
        if log and (step + 1) % max(1, config.steps // 4) == 0:
            log(f"  {config.model} L={config.lookback} {config.loss}: step {step + 1}/{config.steps}  loss {np.mean(recent):.4f}")
    info = {"seconds": time.perf_counter() - start, "steps": config.steps, "final_loss": float(np.mean(recent))}
    return model.eval(), info


@torch.no_grad()
def predict(model: nn.Module, series, config: NBeatsConfig) -> np.ndarray:
    """Forecast the ``horizon`` values after the end of each series; returns ``(S, H)``."""
    series = _check_series(series, model.lookback, f"lookback {model.lookback}")
    if config.scaling == "seasonal" and not 1 <= config.season <= model.lookback:
        raise ValueError(f"config.season must be from 1 to the model's lookback {model.lookback} with scaling='seasonal' "
                         f"(the seasonal naive forecast repeats the window's last season values), got {config.season!r}")
    x = torch.from_numpy(np.stack([y[-model.lookback:] for y in series]).astype(np.float32))
    return forecast_from_window(model, x, config.scaling, config.season).double().numpy()


def ensemble_configs(scalings, losses, **common) -> list[NBeatsConfig]:
    """One config per (scaling, loss) pair, each with its own seed."""
    return [NBeatsConfig(scaling=sc, loss=loss, seed=1000 * i + j, **common)
            for i, sc in enumerate(scalings) for j, loss in enumerate(losses)]


def config_dict(config: NBeatsConfig) -> dict:
    return asdict(config)
