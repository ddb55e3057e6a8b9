"""helpers.seqforecast: the GRU and patch-Transformer forecasters, and their place in nbeats' training loop."""

import numpy as np
import pytest
import torch

from helpers import nbeats
from helpers.forecasting import mase
from helpers.seqforecast import GRUForecaster, PatchTransformer
from test_nbeats import _toy_series


def test_gru_reads_every_hour_and_emits_the_horizon():
    torch.manual_seed(0)
    net = GRUForecaster(lookback=12, horizon=5, width=8)
    x = torch.randn(3, 12, requires_grad=True)
    out = net(x)
    assert out.shape == (3, 5)
    out.sum().backward()
    assert (x.grad.abs() > 0).all(), "the last state depends on every hour of the window, the first included"
    # the same computation by hand: torch's GRU over the hours, the head on the last state
    states, _ = net.rnn(x.detach().unsqueeze(-1))
    torch.testing.assert_close(net(x.detach()), net.head(states[:, -1]))


def test_patch_transformer_tokens_are_patches_and_attention_is_bidirectional():
    torch.manual_seed(0)
    net = PatchTransformer(lookback=24, horizon=6, width=16, layers=2, heads=4, patch=6)
    assert net.position.shape == (4, 16), "24 hours in patches of 6: four tokens"
    x = torch.randn(2, 24, requires_grad=True)
    out = net(x)
    assert out.shape == (2, 6)
    out[:, 0].sum().backward()
    assert (x.grad.abs().reshape(2, 4, 6).sum(-1) > 0).all(), "every patch reaches the output"
    # the position embedding makes the order of the patches matter
    swapped = x.detach().reshape(2, 4, 6)[:, [1, 0, 2, 3]].reshape(2, 24)
    assert not torch.allclose(net(swapped), net(x.detach()))


@pytest.mark.parametrize("model", ["gru", "transformer"])
def test_training_loop_learns_a_seasonal_pattern(model):
    series = _toy_series(4)
    extra = dict(width=16, layers=1) if model == "gru" else dict(width=16, layers=1, heads=2, patch=12)
    cfg = nbeats.NBeatsConfig(model=model, lookback=48, horizon=24, steps=300, batch=64, lr=1e-2,
                              history_window=200, loss="mase", scaling="level", **extra)
    hist = [y[:-24] for y in series]

    def error(net):
        pred = nbeats.predict(net.eval(), hist, cfg)
        return np.mean([mase(y[-24:], p, h, 24) for y, p, h in zip(series, pred, hist)])

    torch.manual_seed(cfg.seed)
    untrained = error(nbeats.build_model(cfg))
    net, info = nbeats.train_forecaster(series, cfg)
    assert isinstance(net, GRUForecaster if model == "gru" else PatchTransformer)
    err_naive = np.mean([mase(y[-24:], np.full(24, h[-1]), h, 24) for y, h in zip(series, hist)])
    assert error(net) < 0.5 * untrained, "training cuts the error of the initial network by more than half"
    assert error(net) < err_naive, "and beats the naive forecast on strongly seasonal toy data"


@pytest.mark.parametrize("build, message", [
    (lambda: PatchTransformer(lookback=20, horizon=4, patch=6), "multiple of patch"),
    (lambda: PatchTransformer(lookback=24, horizon=4, width=10, heads=4), "divisible by heads"),
    (lambda: GRUForecaster(lookback=24, horizon=0), "horizon must be >= 1"),
    (lambda: GRUForecaster(lookback=24, horizon=4)(torch.zeros(2, 23)), "shape \\(B, 24\\)"),
    (lambda: nbeats.build_model(nbeats.NBeatsConfig(model="lstm")), "config.model must be one of"),
])
def test_bad_input_is_named(build, message):
    with pytest.raises(ValueError, match=message):
        build()
