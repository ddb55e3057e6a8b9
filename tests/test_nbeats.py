"""helpers.nbeats: the window sampler against brute-force slicing, the losses against
helpers.forecasting's metrics, the stack's residual wiring, and clear errors on bad input."""

import numpy as np
import pytest
import torch

from helpers import nbeats
from helpers.forecasting import mase, smape


def _toy_series(n_series=5, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(400)
    return [50 + 10 * k + 20 * np.sin(2 * np.pi * t[: 300 + 20 * k] / 24) + 2 * rng.random(300 + 20 * k)
            for k in range(n_series)]


def test_sampler_windows_are_the_series_own_slices():
    series = _toy_series()
    L, H, window = 48, 24, 100
    sampler = nbeats.WindowSampler(series, L, H, window, season=24)
    x, y, scale = sampler(64, np.random.default_rng(1))
    assert x.shape == (64, L) and y.shape == (64, H) and scale.shape == (64,)
    for xi, yi, si in zip(x.numpy(), y.numpy(), scale.numpy()):
        # find the (series, origin) this window came from by brute force
        matches = [(k, t) for k, s in enumerate(series) for t in range(max(L, len(s) - H - window), len(s) - H + 1)
                   if np.allclose(s[t - L:t], xi) and np.allclose(s[t:t + H], yi)]
        assert len(matches) == 1, "each window is one slice from the last `history_window` origins"
        k, _ = matches[0]
        assert si == pytest.approx(np.mean(np.abs(series[k][24:] - series[k][:-24])), rel=1e-5)


def test_level_scaling_divides_by_the_window_mean():
    torch.manual_seed(0)
    net = nbeats.NBeats(lookback=24, horizon=6, width=8, layers=1, blocks=1)
    x = torch.rand(3, 24) + 5
    level = x.mean(dim=1, keepdim=True)
    torch.testing.assert_close(nbeats.forecast_from_window(net, x, "level", 24), level * net(x / level))


def test_seasonal_scaling_corrects_the_seasonal_naive_forecast():
    net = nbeats.NBeats(lookback=48, horizon=30, width=8, layers=1, blocks=1)
    for p in net.parameters():  # a network that outputs zero: the forecast is seasonal naive
        torch.nn.init.zeros_(p)
    x = torch.rand(2, 48) + 1
    out = nbeats.forecast_from_window(net, x, "seasonal", 12)
    expected = torch.cat([x[:, -12:]] * 3, dim=1)[:, :30]
    torch.testing.assert_close(out, expected)
    with pytest.raises(ValueError, match="scaling must be one of"):
        nbeats.forecast_from_window(net, x, "log", 12)


def test_losses_match_the_m4_metrics():
    rng = np.random.default_rng(2)
    hist = rng.random(100) + 1
    actual, pred = rng.random(24) + 1, rng.random(24) + 1
    scale = np.mean(np.abs(hist[24:] - hist[:-24]))
    p, a = torch.tensor(pred)[None], torch.tensor(actual)[None]
    assert 100 * nbeats.smape_loss(p, a, None).item() == pytest.approx(smape(actual, pred), rel=1e-9)
    assert nbeats.mase_loss(p, a, torch.tensor([scale])).item() == pytest.approx(mase(actual, pred, hist, 24), rel=1e-9)


def _linear(x, layer):
    return x @ layer.weight.T + layer.bias


def test_stack_sums_block_forecasts_over_backcast_residuals():
    """Oracle: the doubly residual stack written out with plain matrix products from the
    parameters (not by calling the blocks): block k reads x - sum of earlier backcasts, and the
    forecast is the sum of the blocks' forecasts."""
    torch.manual_seed(0)
    net = nbeats.NBeats(lookback=12, horizon=4, width=8, layers=2, blocks=3)
    x = torch.randn(5, 12)
    residual, total = x, torch.zeros(5, 4)
    with torch.no_grad():
        for block in net.blocks:
            linears = [m for m in block.body if isinstance(m, torch.nn.Linear)]
            assert len(linears) == 2, "layers=2 fully connected layers per block"
            h = residual
            for layer in linears:
                h = torch.relu(_linear(h, layer))
            residual = residual - _linear(h, block.backcast)
            total = total + _linear(h, block.forecast)
        torch.testing.assert_close(net(x), total)


@pytest.mark.parametrize("scaling", nbeats.SCALINGS)
def test_predict_is_scale_equivariant_and_uses_the_last_lookback_values(scaling):
    torch.manual_seed(0)
    cfg = nbeats.NBeatsConfig(lookback=24, horizon=6, width=16, layers=2, blocks=2, scaling=scaling, season=12)
    net = nbeats.NBeats(24, 6, 16, 2, 2).eval()
    series = _toy_series(3)
    base = nbeats.predict(net, series, cfg)
    assert base.shape == (3, 6)
    np.testing.assert_allclose(nbeats.predict(net, [1000 * y for y in series], cfg), 1000 * base, rtol=1e-5)
    # changing values older than the lookback changes nothing
    edited = [np.concatenate([y[:-24] * 7, y[-24:]]) for y in series]
    np.testing.assert_allclose(nbeats.predict(net, edited, cfg), base, rtol=1e-6)


def test_training_learns_a_seasonal_pattern():
    series = _toy_series(4)
    cfg = nbeats.NBeatsConfig(lookback=48, horizon=24, width=32, layers=2, blocks=2, steps=300, batch=64,
                              lr=3e-3, history_window=200, loss="mase")
    model, info = nbeats.train_forecaster(series, cfg)
    hist = [y[:-24] for y in series]
    pred = nbeats.predict(model, hist, cfg)
    # far better than the naive forecast on this strongly seasonal toy data
    err_model = np.mean([mase(y[-24:], p, h, 24) for y, p, h in zip(series, pred, hist)])
    err_naive = np.mean([mase(y[-24:], np.full(24, h[-1]), h, 24) for y, h in zip(series, hist)])
    assert err_model < 0.5 * err_naive
    assert info["steps"] == 300 and info["final_loss"] < 1


def test_training_is_reproducible_and_depends_on_seed_and_steps():
    import dataclasses

    series = _toy_series(2)
    cfg = nbeats.NBeatsConfig(lookback=24, horizon=12, width=8, layers=1, blocks=1, steps=5, batch=8)

    def params(c):
        model, _ = nbeats.train_forecaster(series, c)
        return torch.cat([p.detach().flatten() for p in model.parameters()])

    first = params(cfg)
    assert torch.equal(first, params(cfg)), "same config, same seed: identical weights"
    assert not torch.equal(first, params(dataclasses.replace(cfg, seed=cfg.seed + 1))), "the seed matters"
    assert not torch.equal(first, params(dataclasses.replace(cfg, steps=6))), "every step changes the weights"


def test_ensemble_configs_cover_every_pair_with_distinct_seeds():
    cfgs = nbeats.ensemble_configs(["level", "seasonal"], ["smape", "mase"], steps=3)
    assert [(c.scaling, c.loss) for c in cfgs] == [("level", "smape"), ("level", "mase"),
                                                   ("seasonal", "smape"), ("seasonal", "mase")]
    assert len({c.seed for c in cfgs}) == 4 and all(c.steps == 3 for c in cfgs)


@pytest.mark.parametrize("bad, message", [
    (dict(series=[np.ones(10)]), "series\\[0\\] has shape"),
    (dict(series=np.ones((3, 200))), "list of 1-D arrays"),
    (dict(series=[np.r_[np.ones(199), -1.0]]), "positive"),
    (dict(loss="mse"), "config.loss"),
    (dict(scaling="log"), "config.scaling"),
])
def test_bad_input_is_named(bad, message):
    series = bad.pop("series", [np.ones(200) + np.arange(200) % 3])
    cfg = nbeats.NBeatsConfig(lookback=24, horizon=12, width=4, layers=1, blocks=1, steps=1, batch=2, **bad)
    with pytest.raises(ValueError, match=message):
        nbeats.train_forecaster(series, cfg)


def test_model_checks_its_input_shape():
    net = nbeats.NBeats(lookback=10, horizon=2, width=4, layers=1, blocks=1)
    with pytest.raises(ValueError, match="shape \\(B, 10\\)"):
        net(torch.zeros(3, 11))
    with pytest.raises(ValueError, match="width must be >= 1"):
        nbeats.NBeats(lookback=10, horizon=2, width=0)


@pytest.mark.parametrize("target, scale, message", [
    ((4, 24), (4,), r"pred and target must have the same shape \(B, H\), got pred \(4, 48\) and target \(4, 24\)"),
    ((4, 1), (4,), r"got pred \(4, 48\) and target \(4, 1\)"),          # broadcast silently before
    ((4, 48), (3,), r"scale must have shape \(B,\) = \(4,\), one scale per series, got \(3,\)"),
    ((4, 48), (4, 1), r"scale must have shape \(B,\) = \(4,\), one scale per series, got \(4, 1\)"),   # silent before
])
def test_mase_loss_names_mismatched_shapes(target, scale, message):
    with pytest.raises(ValueError, match=message):
        nbeats.mase_loss(torch.zeros(4, 48), torch.zeros(target), torch.ones(scale))


def test_smape_loss_names_mismatched_shapes_instead_of_broadcasting():
    """(4, 48) against (4, 1) broadcast silently to a wrong loss; (4, 24) raised torch's broadcast error."""
    for target in [(4, 1), (4, 24)]:
        with pytest.raises(ValueError, match=rf"pred and target must have the same shape \(B, H\), got pred \(4, 48\) "
                                             rf"and target \({target[0]}, {target[1]}\)"):
            nbeats.smape_loss(torch.zeros(4, 48), torch.ones(*target), None)
    assert nbeats.smape_loss(torch.ones(1, 1), torch.ones(1, 1), None).item() == 0.0


def test_mase_loss_accepts_the_smallest_shapes():
    assert nbeats.mase_loss(torch.zeros(1, 1), torch.ones(1, 1), torch.tensor([2.0])).item() == 0.5


@pytest.mark.parametrize("kwargs, message", [
    (dict(season=0), r"season must be >= 1, got 0"),
    (dict(season=-2), r"season must be >= 1, got -2"),
    (dict(season=400), r"season must be shorter than every series \(the MASE scale compares values season apart\), "
                       r"got season=400; the shortest series has 300 values"),
    (dict(lookback=0), r"lookback must be >= 1, got 0"),
    (dict(history_window=-5), r"history_window must be >= 0, got -5"),
])
def test_window_sampler_refuses_bad_sizes(kwargs, message):
    """Before: season 0 a numpy broadcasting error, 400 a NaN scale (a warning), -2 a wrong scale; lookback 0
    silently empty inputs; history_window -5 an IndexError at the first batch."""
    series = [np.random.default_rng(k).random(300) + 1 for k in range(3)]
    args = dict(lookback=24, horizon=4, history_window=48, season=24) | kwargs
    with pytest.raises(ValueError, match=message):
        nbeats.WindowSampler(series, **args)


def test_window_sampler_refuses_an_empty_batch_and_accepts_the_edges():
    series = [np.random.default_rng(k).random(300) + 1 for k in range(3)]
    sampler = nbeats.WindowSampler(series, 24, 4, 0, season=299)
    with pytest.raises(ValueError, match=r"batch must be >= 1, got 0"):
        sampler(0, np.random.default_rng(0))
    x, y, scale = sampler(1, np.random.default_rng(0))
    assert x.shape == (1, 24) and y.shape == (1, 4) and torch.isfinite(scale).all()


@pytest.mark.parametrize("kwargs, message", [
    (dict(batch=0), r"config\.batch must be >= 1, got 0"),
    (dict(lr=0.0), r"config\.lr must be a finite number > 0, got 0\.0"),
    (dict(season=30, scaling="seasonal"), r"config\.season must be from 1 to config\.lookback=24 with "
                                          r"scaling='seasonal'.*got 30"),
])
def test_train_forecaster_refuses_bad_settings(kwargs, message):
    """Before: batch 0 and lr 0 silently trained nothing, season 30 > lookback 24 repeated the wrong period."""
    series = [np.random.default_rng(k).random(300) + 1 for k in range(3)]
    cfg = nbeats.NBeatsConfig(**dict(lookback=24, horizon=4, width=8, layers=1, blocks=1, steps=2, batch=4) | kwargs)
    with pytest.raises(ValueError, match=message):
        nbeats.train_forecaster(series, cfg)


def test_train_forecaster_accepts_a_season_as_long_as_the_lookback():
    series = [np.random.default_rng(k).random(300) + 1 for k in range(3)]
    cfg = nbeats.NBeatsConfig(lookback=24, horizon=4, width=8, layers=1, blocks=1, steps=1, batch=1, season=24,
                              scaling="seasonal", lr=1e-9)
    model, info = nbeats.train_forecaster(series, cfg)
    assert info["steps"] == 1 and np.isfinite(info["final_loss"])


@pytest.mark.parametrize("season", [0, 25])
def test_predict_names_a_season_outside_the_lookback(season):
    cfg = nbeats.NBeatsConfig(lookback=24, horizon=6, width=16, layers=2, blocks=2, scaling="seasonal", season=12)
    net = nbeats.build_model(cfg)
    bad = nbeats.NBeatsConfig(**{**nbeats.config_dict(cfg), "season": season})
    with pytest.raises(ValueError, match="config.season must be from 1 to the model's lookback 24"):
        nbeats.predict(net, [np.arange(48, dtype=float) + 1], bad)
