"""§14.63's benchmark: classical and neural forecasters on M4 Hourly, scored as M4 scores them.

Every method forecasts 48 hours from four origins: three inside the training data
(``n-144``, ``n-96``, ``n-48``, where ``n`` is a series' training length) and the official
test window (origin ``n``). The classical methods come from statsforecast and are refitted
at every origin; the neural ensemble (``helpers.nbeats``) is trained twice: once on data
up to ``n-144`` for the three validation origins, once on all training data for the test.

``heavy_run`` computes everything; ``train_and_cache`` stores it as cache entry ``m4``.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pandas as pd
import torch

from . import nbeats
from .data import M4_HOURLY_HORIZON as H, M4_HOURLY_SEASONALITY as M, load_m4_hourly
from .forecasting import mase, naive2, owa, smape

#: Forecast origins, as hours before the end of the training data (0 = the official test window).
ORIGINS = {"n-144": 144, "n-96": 96, "n-48": 48, "test": 0}

#: M4's published Hourly results (Makridakis et al. 2020), for context only.
M4_PUBLISHED = {
    "M4's best Hourly entries": {"MASE": 0.801, "OWA": 0.410},
    "ES-RNN (Smyl), M4's overall winner": {"MASE": 0.893, "OWA": 0.440},
    "Seasonal Naive": {"MASE": 1.193, "OWA": None},
    "Naive2": {"MASE": 2.395, "OWA": 1.000},
}

#: What the heavy run computes; part of the cache's code hash.
HEAVY_RUN = {
    "classical": ["Naive", "SeasonalNaive", "Naive2", "Theta", "AutoETS", "AutoARIMA"],
    # AutoARIMA's exact search takes hours here: use statsforecast's approximation, a restricted
    # order search, and the last 4 weeks of each history.
    "arima": {"approximation": True, "max_p": 2, "max_q": 2, "max_P": 1, "max_Q": 1, "max_order": 4,
              "input_size": 672},
    # four members: two input scalings x two training losses, combined by the median
    "ensemble": {"scalings": ["level", "seasonal"], "losses": ["smape", "mase"],
                 "common": {"lookback": 168, "steps": 3000, "width": 256}},
    "n_jobs": 2,
}

CACHE_NAME = "m4"


def load_series() -> tuple[list[str], list[np.ndarray], np.ndarray]:
    """M4 Hourly as arrays: (ids sorted, training histories, test targets ``(414, 48)``)."""
    train, test = load_m4_hourly("train"), load_m4_hourly("test")
    ids = sorted(train["unique_id"].unique(), key=lambda s: int(s[1:]))
    hist = {u: g.sort_values("ds")["y"].to_numpy(np.float64) for u, g in train.groupby("unique_id")}
    future = {u: g.sort_values("ds")["y"].to_numpy(np.float64) for u, g in test.groupby("unique_id")}
    return ids, [hist[u] for u in ids], np.stack([future[u] for u in ids])


def split_at(histories: list[np.ndarray], test: np.ndarray, back: int) -> tuple[list[np.ndarray], np.ndarray]:
    """(histories up to origin ``n - back``, the 48 values after it ``(S, H)``); back=0 is the test."""
    if back == 0:
        return histories, test
    return [y[: len(y) - back] for y in histories], np.stack([y[len(y) - back: len(y) - back + H] for y in histories])


def scores(forecasts: np.ndarray, histories: list[np.ndarray], actuals: np.ndarray) -> pd.DataFrame:
    """Per-series MASE (lag 24) and sMAPE of forecasts ``(S, H)``; a frame with one row per series."""
    if forecasts.shape != actuals.shape:
        raise ValueError(f"forecasts {forecasts.shape} and actuals {actuals.shape} must have the same shape")
    return pd.DataFrame({
        "MASE": [mase(a, f, h, M) for a, f, h in zip(actuals, forecasts, histories)],
        "sMAPE": [smape(a, f) for a, f in zip(actuals, forecasts)],
    })


def summary(per_series: pd.DataFrame) -> pd.DataFrame:
    """Mean and median MASE and sMAPE per method and origin, and M4's OWA against Naive2's means.

    ``per_series`` has columns method, origin, MASE, sMAPE; Naive2 must be among the methods.
    """
    if "Naive2" not in set(per_series["method"]):
        raise ValueError("per_series must include the Naive2 method: OWA is relative to it")
    agg = per_series.groupby(["origin", "method"]).agg(
        MASE=("MASE", "mean"), sMAPE=("sMAPE", "mean"),
        MASE_median=("MASE", "median"), sMAPE_median=("sMAPE", "median")).reset_index()
    base = agg[agg["method"] == "Naive2"].set_index("origin")
    agg["OWA"] = [owa(r.sMAPE, r.MASE, base.loc[r.origin, "sMAPE"], base.loc[r.origin, "MASE"])
                  for r in agg.itertuples()]
    return agg


def _long_frame(ids, histories, test=None) -> pd.DataFrame:
    frames = []
    for u, y in zip(ids, histories):
        full = y if test is None else np.concatenate([y, test[ids.index(u)]])
        frames.append(pd.DataFrame({"unique_id": u, "ds": np.arange(1, len(full) + 1), "y": full}))
    return pd.concat(frames, ignore_index=True)


def _statsforecast_model(name: str, config: dict):
    from statsforecast.models import AutoARIMA, AutoETS, Naive, SeasonalNaive, Theta

    arima = {k: v for k, v in config["arima"].items() if k != "input_size"}
    return {"Naive": lambda: Naive(), "SeasonalNaive": lambda: SeasonalNaive(season_length=M),
            "Theta": lambda: Theta(season_length=M), "AutoETS": lambda: AutoETS(season_length=M),
            "AutoARIMA": lambda: AutoARIMA(season_length=M, **arima)}[name]()


def classical_forecasts(ids, histories, test, config: dict = HEAVY_RUN, log=print) -> tuple[dict, dict]:
    """Every classical method at every origin: ({method: (origins, S, H)}, {method: seconds})."""
    from statsforecast import StatsForecast

    backs = list(ORIGINS.values())
    frame = _long_frame(ids, histories, test)
    forecasts, seconds = {}, {}
    for name in config["classical"]:
        start = time.perf_counter()
        if name == "Naive2":  # M4's own benchmark, written in helpers.forecasting
            out = np.stack([np.stack([naive2(h, H, M) for h in split_at(histories, test, b)[0]]) for b in backs])
        else:
            sf = StatsForecast(models=[_statsforecast_model(name, config)], freq=1, n_jobs=config["n_jobs"])
            input_size = config["arima"]["input_size"] if name == "AutoARIMA" else None
            with warnings.catch_warnings(), open(os.devnull, "w") as sink, redirect_stdout(sink), redirect_stderr(sink):
                warnings.simplefilter("ignore")
                cv = sf.cross_validation(h=H, df=frame, n_windows=len(backs), step_size=H, input_size=input_size)
            # series differ in length, so their cutoffs differ too: order by series, then time
            cv["row"] = cv["unique_id"].map({u: i for i, u in enumerate(ids)})
            cv = cv.sort_values(["row", "cutoff", "ds"])
            out = cv[name].to_numpy(np.float64).reshape(len(ids), len(backs), H).transpose(1, 0, 2)
        seconds[name] = time.perf_counter() - start
        forecasts[name] = out
        log(f"{name:14s} {seconds[name]:7.1f} s")
    return forecasts, seconds


def ensemble_members(config: dict = HEAVY_RUN) -> list:
    """The ensemble's member configs (``helpers.nbeats.NBeatsConfig``), in the cache's order."""
    spec = config["ensemble"]
    return nbeats.ensemble_configs(spec["scalings"], spec["losses"], **spec["common"])


def models_from_tensors(tensors: dict, config: dict = HEAVY_RUN) -> list:
    """Rebuild the test ensemble's members (eval mode, float32) from cached half-precision weights."""
    models = []
    for k, cfg in enumerate(ensemble_members(config)):
        model = nbeats.NBeats(cfg.lookback, cfg.horizon, cfg.width, cfg.layers, cfg.blocks)
        prefix = f"model{k}."
        model.load_state_dict({n[len(prefix):]: t.float() for n, t in tensors.items() if n.startswith(prefix)})
        models.append(model.eval())
    return models


def neural_forecasts(histories, test, config: dict = HEAVY_RUN, log=print):
    """The N-BEATS ensemble at every origin: (forecasts (origins, S, H), member forecasts, models, info).

    One ensemble is trained on histories cut at ``n-144`` and forecasts the three validation
    origins; a second, trained on all training data, forecasts the test window. The
    ensemble forecast is the median over members.
    """
    configs = ensemble_members(config)
    backs = list(ORIGINS.values())
    first = max(backs)
    per_member = np.zeros((len(configs), len(backs), len(histories), H))
    info = {"validation": [], "test": []}
    test_models = []
    for stage, cut in (("validation", first), ("test", 0)):
        train_hist = split_at(histories, test, cut)[0]
        for k, cfg in enumerate(configs):
            model, member_info = nbeats.train_nbeats(train_hist, cfg, log=log)
            info[stage].append(member_info)
            log(f"{stage} member {cfg.scaling}/{cfg.loss}: {member_info['seconds']:.0f} s")
            for o, b in enumerate(backs):
                if (stage == "test") == (b == 0):
                    per_member[k, o] = nbeats.predict(model, split_at(histories, test, b)[0], cfg)
            if stage == "test":
                test_models.append(model)
    return np.median(per_member, axis=0), per_member, test_models, info


def evaluate(forecasts: dict, histories, test) -> pd.DataFrame:
    """Per-series scores of every method at every origin: columns method, origin, series, MASE, sMAPE."""
    rows = []
    for name, out in forecasts.items():
        for o, (origin, back) in enumerate(ORIGINS.items()):
            hist, actual = split_at(histories, test, back)
            frame = scores(out[o], hist, actual)
            frame.insert(0, "series", np.arange(len(hist)))
            frame.insert(0, "origin", origin)
            frame.insert(0, "method", name)
            rows.append(frame)
    return pd.concat(rows, ignore_index=True)


def heavy_run(config: dict = HEAVY_RUN, log=print) -> tuple[dict, dict, dict]:
    """Run the whole benchmark; returns (tensors, results, metrics) for the cache."""
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    ids, histories, test = load_series()
    forecasts, seconds = classical_forecasts(ids, histories, test, config, log=log)
    start = time.perf_counter()
    ens, per_member, models, info = neural_forecasts(histories, test, config, log=log)
    seconds["N-BEATS ensemble"] = time.perf_counter() - start
    forecasts["N-BEATS ensemble"] = ens
    table = summary(evaluate(forecasts, histories, test))
    tensors = {f"forecast.{k}": torch.tensor(v, dtype=torch.float32) for k, v in forecasts.items()}
    tensors["members"] = torch.tensor(per_member, dtype=torch.float32)
    for k, model in enumerate(models):
        tensors.update({f"model{k}.{name}": p.to(torch.float16) for name, p in model.state_dict().items()})
    test_row = table[(table.origin == "test") & (table.method == "N-BEATS ensemble")].iloc[0]
    results = {"ids": ids, "seconds": seconds, "training": info, "summary": table.to_dict(orient="list")}
    metrics = {"test_mase": float(test_row.MASE), "test_smape": float(test_row.sMAPE), "test_owa": float(test_row.OWA),
               "neural_seconds": seconds["N-BEATS ensemble"]}
    return tensors, results, metrics


def cache_config(config: dict = HEAVY_RUN) -> dict:
    """The cached result's settings: the run, and the defaults of every ensemble member."""
    return {"run": config, "member_defaults": nbeats.config_dict(nbeats.NBeatsConfig())}


def cache_code() -> list:
    """The modules whose source the cache's code hash covers."""
    from . import data, forecasting
    return [sys.modules[__name__], nbeats, forecasting, data]


def train_and_cache(config: dict = HEAVY_RUN, log=print):
    """Run ``heavy_run`` and save cache entry ``m4`` with its manifest; returns the folder."""
    from . import cache

    start = time.perf_counter()
    tensors, results, metrics = heavy_run(config, log=log)
    return cache.save_cache(
        CACHE_NAME, code=cache_code(), config=cache_config(config), tensors=tensors, results=results,
        metrics=metrics, wall_time_s=time.perf_counter() - start,
        regenerate="make book HEAVY_EVAL=True  (or: papermill chapters/14_63_neural_versus_classical_forecasting.ipynb "
                   "out.ipynb -p HEAVY_EVAL True)",
    )
