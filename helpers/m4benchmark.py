"""§14.63's benchmark: classical and neural forecasters on M4 Hourly, scored as M4 scores them.

The protocol, fixed before any test score of this run is computed:

- **Validation origins** ``VALIDATION``: three 48-hour windows one week apart, ending 384, 216 and
  48 hours before the end of each series' training data. Every design choice is made on them:
  which configuration of each neural family is kept, and which classical method is "the best".
- **Neural models** are trained twice. For validation, on each series' data up to the earliest
  validation origin, so that no validation forecast comes from a model that saw its target. For
  the test, on all training data, with the frozen configuration and ``seeds`` seeds.
- **The test window** (origin ``n``, M4's hidden 48 hours) is scored once, after the freeze.
- The classical methods (statsforecast) are refitted at every origin.

``heavy_run`` computes everything; ``train_and_cache`` stores it as cache entry ``m4`` with its design log.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import replace
from multiprocessing import get_context

import numpy as np
import pandas as pd
import torch

from . import nbeats
from .checks import check_int
from .data import M4_HOURLY_HORIZON as H, M4_HOURLY_SEASONALITY as M, load_m4_hourly
from .forecasting import mase, naive2, owa, smape

#: Validation origins, as hours before the end of the training data; the design is chosen on them.
VALIDATION = {"n-384": 384, "n-216": 216, "n-48": 48}
#: Every forecast origin: the validation ones and the official test window (0 hours back).
ORIGINS = {**VALIDATION, "test": 0}

#: M4's published Hourly results (Makridakis et al. 2020; the M4 team's "Evaluation and Ranks"
#: sheet), for context only. M4 publishes no Hourly point-forecast rows for its ETS and ARIMA.
M4_PUBLISHED = pd.DataFrame(
    {"sMAPE": [43.003, 13.912, 18.383, 18.094, 18.138, 8.913, 9.328],
     "MASE": [11.608, 1.193, 2.395, 2.385, 2.455, 0.801, 0.893],
     "OWA": [3.593, 0.627, 1.000, 0.990, 1.006, 0.410, 0.440]},
    index=["Naive", "SeasonalNaive", "Naive2", "SES", "Theta", "best Hourly entry (Doornik, Hendry & Castle)",
           "ES-RNN (Smyl), M4's overall winner"])

#: The neural families and their ensemble rule: N-BEATS is the median of its members.
ENSEMBLE = "N-BEATS ensemble"
FAMILIES = (ENSEMBLE, "GRU", "Transformer")

#: What the heavy run computes; part of the cache's code hash.
HEAVY_RUN = {
    "classical": ["Naive", "SeasonalNaive", "Naive2", "Theta", "AutoETS", "AutoARIMA"],
    # AutoARIMA's exact search takes hours here: use statsforecast's approximation, a restricted
    # order search, and the last 4 weeks of each history.
    "arima": {"approximation": True, "max_p": 2, "max_q": 2, "max_P": 1, "max_Q": 1, "max_order": 4,
              "input_size": 672},
    # four members: two input scalings x two training losses, combined by the median
    "ensemble": {"scalings": ["level", "seasonal"], "losses": ["smape", "mase"],
                 "common": {"lookback": 168, "steps": 2000, "width": 256}},
    # the Part's sequence models: each candidate is trained for validation; the one with the lowest
    # mean validation OWA is frozen and trained for the test with every seed
    "candidates": {
        "GRU": [{"model": "gru", "width": 64, "layers": 1, "batch": 256, "steps": 1000, "lr": 2e-3,
                 "scaling": "seasonal", "loss": "mase"},
                {"model": "gru", "width": 64, "layers": 1, "batch": 256, "steps": 1000, "lr": 2e-3,
                 "scaling": "seasonal", "loss": "smape"},
                {"model": "gru", "width": 64, "layers": 1, "batch": 256, "steps": 1000, "lr": 2e-3,
                 "scaling": "level", "loss": "smape"}],
        "Transformer": [{"model": "transformer", "width": 64, "layers": 2, "heads": 4, "patch": 24, "batch": 512,
                         "steps": 1500, "lr": 2e-3, "scaling": "seasonal", "loss": "mase"},
                        {"model": "transformer", "width": 64, "layers": 2, "heads": 4, "patch": 24, "batch": 512,
                         "steps": 1500, "lr": 2e-3, "scaling": "seasonal", "loss": "smape"},
                        {"model": "transformer", "width": 64, "layers": 2, "heads": 4, "patch": 24, "batch": 512,
                         "steps": 1500, "lr": 2e-3, "scaling": "level", "loss": "smape"}],
    },
    "seeds": 3,  # independently seeded test runs of every neural family (N-BEATS: whole ensembles)
    # the data-size row of §14.64: frozen configs trained on a share of the series (seed 0), scored on all
    "data_shares": [0.1, 0.3],
    "data_share_models": ["N-BEATS member", "GRU", "Transformer"],
    "n_jobs": 2,  # statsforecast's processes
    "jobs": 2,  # networks trained at once, one thread each
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
    """(histories up to origin ``n - back``, the 48 values after it ``(S, H)``); back=0 is the test.

    ``back`` is 0 or lies in ``H .. n_min - 1`` (``n_min`` the shortest history): ``H`` values must follow the
    origin and at least one precede it.
    """
    check_int("back", back, 0)
    if not len(histories):
        raise ValueError(f"histories must hold at least one series (a list of 1-D arrays), got an empty "
                         f"{type(histories).__name__}")
    if len(test) != len(histories):
        raise ValueError(f"test must hold one row of {H} values per series: {len(histories)} histories, "
                         f"test has shape {np.shape(test)}")
    if back != 0 and min(len(y) for y in histories) <= H:
        raise ValueError(f"every history must be longer than {H} values to move the origin back (back={back}); "
                         f"the shortest has {min(len(y) for y in histories)}")
    if back != 0 and not H <= back < min(len(y) for y in histories):
        raise ValueError(f"back must be 0 (the test window) or from {H} to {min(len(y) for y in histories) - 1}, "
                         f"got {back}: the origin must lie at least {H} hours before the end of the shortest "
                         f"history, so that {H} actual values follow it, and leave at least one value before "
                         f"it (the validation origins are {list(VALIDATION.values())})")
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


def _long_frame(ids, histories, tail: int | None = None) -> pd.DataFrame:
    """statsforecast's long format (unique_id, ds, y) of the histories, each cut to its last ``tail`` values."""
    frames = []
    for u, y in zip(ids, histories):
        ds = np.arange(1, len(y) + 1)
        keep = slice(None) if tail is None else slice(-tail, None)
        frames.append(pd.DataFrame({"unique_id": u, "ds": ds[keep], "y": y[keep]}))
    return pd.concat(frames, ignore_index=True)


def _statsforecast_model(name: str, config: dict):
    from statsforecast.models import AutoARIMA, AutoETS, Naive, SeasonalNaive, Theta

    arima = {k: v for k, v in config["arima"].items() if k != "input_size"}
    return {"Naive": lambda: Naive(), "SeasonalNaive": lambda: SeasonalNaive(season_length=M),
            "Theta": lambda: Theta(season_length=M), "AutoETS": lambda: AutoETS(season_length=M),
            "AutoARIMA": lambda: AutoARIMA(season_length=M, **arima)}[name]()


def classical_forecasts(ids, histories, test, config: dict = HEAVY_RUN, log=print) -> tuple[dict, dict]:
    """Every classical method refitted at every origin: ({method: (origins, S, H)}, {method: seconds})."""
    from statsforecast import StatsForecast

    forecasts, seconds = {}, {}
    for name in config["classical"]:
        start = time.perf_counter()
        out = []
        for back in ORIGINS.values():
            hist = split_at(histories, test, back)[0]
            if name == "Naive2":  # M4's own benchmark, written in helpers.forecasting
                out.append(np.stack([naive2(h, H, M) for h in hist]))
                continue
            sf = StatsForecast(models=[_statsforecast_model(name, config)], freq=1, n_jobs=config["n_jobs"])
            tail = config["arima"]["input_size"] if name == "AutoARIMA" else None
            with warnings.catch_warnings(), open(os.devnull, "w") as sink, redirect_stdout(sink), redirect_stderr(sink):
                warnings.simplefilter("ignore")
                fc = sf.forecast(df=_long_frame(ids, hist, tail), h=H)
            fc = fc.reset_index() if "unique_id" not in fc.columns else fc
            fc["row"] = fc["unique_id"].map({u: i for i, u in enumerate(ids)})
            out.append(fc.sort_values(["row", "ds"])[name].to_numpy(np.float64).reshape(len(ids), H))
        seconds[name] = time.perf_counter() - start
        forecasts[name] = np.stack(out)
        log(f"{name:14s} {seconds[name]:7.1f} s")
    return forecasts, seconds


def ensemble_members(config: dict = HEAVY_RUN) -> list:
    """The N-BEATS ensemble's member configs (``helpers.nbeats.NBeatsConfig``), seed 0, in the cache's order."""
    spec = config["ensemble"]
    return nbeats.ensemble_configs(spec["scalings"], spec["losses"], **spec["common"])


def candidates(family: str, config: dict = HEAVY_RUN) -> list:
    """The configs tried for ``family`` on the validation origins: for N-BEATS one (the ensemble), as a list
    of member configs; for the GRU and the Transformer one ``NBeatsConfig`` per candidate."""
    if family == ENSEMBLE:
        return [ensemble_members(config)]
    if family not in config["candidates"]:
        raise ValueError(f"family must be one of {[ENSEMBLE, *config['candidates']]}, got {family!r}")
    return [nbeats.NBeatsConfig(**c) for c in config["candidates"][family]]


def describe(cfg) -> str:
    """A short name for a candidate in the design log, e.g. ``"seasonal / mase, width 64"``."""
    if isinstance(cfg, list):
        return f"median of {len(cfg)} members, {cfg[0].steps:,} steps each"
    return f"{cfg.scaling} / {cfg.loss}, width {cfg.width}, {cfg.steps:,} steps of {cfg.batch}"


def seeded(cfg, k: int):
    """Seed ``k`` of a config (``k = 0`` is the config itself); for an ensemble, of every member."""
    if isinstance(cfg, list):
        return [seeded(c, k) for c in cfg]
    return replace(cfg, seed=cfg.seed + 100 * k)


_SERIES = None


def _series():
    global _SERIES
    if _SERIES is None:
        _SERIES = load_series()
    return _SERIES


def _train_job(job: dict) -> dict:
    """One network: train on histories cut ``job["cut"]`` hours back (only series ``job["rows"]`` if given),
    then forecast from every origin in ``job["backs"]``. Runs in a worker process with one thread."""
    torch.set_num_threads(1)
    _, histories, test = _series()
    train_hist = split_at(histories, test, job["cut"])[0]
    if job["rows"] is not None:
        train_hist = [train_hist[i] for i in job["rows"]]
    cfg = nbeats.NBeatsConfig(**job["config"])
    model, info = nbeats.train_forecaster(train_hist, cfg)
    out = np.stack([nbeats.predict(model, split_at(histories, test, b)[0], cfg) for b in job["backs"]])
    weights = {k: v.to(torch.float16) for k, v in model.state_dict().items()} if job["keep"] else None
    return {"key": job["key"], "forecasts": out, "info": info, "weights": weights}


def _run_jobs(jobs: list, workers: int, log=print) -> dict:
    """Run training jobs in ``workers`` spawned processes (longest first); returns {key: result}."""
    jobs = sorted(jobs, key=lambda j: -j["config"]["steps"] * j["config"].get("batch", 1024))
    done, start = {}, time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
        for result in pool.map(_train_job, jobs):
            done[result["key"]] = result
            log(f"  {result['key']:44s} {result['info']['seconds']:6.0f} s  "
                f"({len(done)}/{len(jobs)}, {time.perf_counter() - start:5.0f} s so far)")
    return done


def _job(key, cfg, cut, backs, rows=None, keep=False) -> dict:
    return {"key": key, "config": nbeats.config_dict(cfg), "cut": cut, "backs": backs, "rows": rows, "keep": keep}


def _jobs_for(family: str, index: int, cfg, stage: str, cut: int, backs: list, rows=None, keep=False) -> list:
    members = cfg if isinstance(cfg, list) else [cfg]
    return [_job(f"{stage}|{family}|{index}|{m}", c, cut, backs, rows, keep) for m, c in enumerate(members)]


def _combine(done: dict, prefix: str) -> tuple[np.ndarray, np.ndarray, float]:
    """(median over members (O, S, H), members (K, O, S, H), summed training seconds) of one model's jobs."""
    keys = sorted((k for k in done if k.startswith(prefix + "|")), key=lambda k: int(k.rsplit("|", 1)[1]))
    members = np.stack([done[k]["forecasts"] for k in keys])
    return np.median(members, axis=0), members, float(sum(done[k]["info"]["seconds"] for k in keys))


def origin_table(forecasts: np.ndarray, naive2_forecasts: np.ndarray, histories, test, origins: dict) -> pd.DataFrame:
    """Mean MASE, mean sMAPE and OWA (against Naive2's means at the same origin) of forecasts
    ``(len(origins), S, H)`` at each origin; one row per origin."""
    rows = []
    for o, (name, back) in enumerate(origins.items()):
        hist, actual = split_at(histories, test, back)
        ours, base = scores(forecasts[o], hist, actual).mean(), scores(naive2_forecasts[o], hist, actual).mean()
        rows.append({"origin": name, "MASE": ours["MASE"], "sMAPE": ours["sMAPE"],
                     "OWA": owa(ours["sMAPE"], ours["MASE"], base["sMAPE"], base["MASE"])})
    return pd.DataFrame(rows).set_index("origin")


def neural_forecasts(histories, test, naive2_validation: np.ndarray, config: dict = HEAVY_RUN, log=print) -> dict:
    """Every neural stage of the protocol: validation candidates, the freeze, seeded test runs, data shares.

    Returns {"validation": {(family, k): (3, S, H)}, "log": design-log rows, "chosen": {family: k},
    "test": {family: (seeds, S, H)}, "members": {stage: array}, "shares": {(model, share): (S, H)},
    "weights": {family: [state dicts of seed 0]}, "seconds": {...}}.
    """
    backs = list(VALIDATION.values())
    cut = max(backs)
    families = [ENSEMBLE, *config["candidates"]]
    out = {"validation": {}, "log": [], "chosen": {}, "test": {}, "members": {}, "shares": {}, "weights": {},
           "seconds": {}}
    # 1. validation: every candidate, trained on data up to the earliest validation origin
    jobs = [j for f in families for k, cfg in enumerate(candidates(f, config))
            for j in _jobs_for(f, k, cfg, "validation", cut, backs)]
    log(f"validation: {len(jobs)} networks")
    done = _run_jobs(jobs, config["jobs"], log)
    for f in families:
        for k, cfg in enumerate(candidates(f, config)):
            fc, members, seconds = _combine(done, f"validation|{f}|{k}")
            out["validation"][(f, k)] = fc
            if f == ENSEMBLE:
                out["members"]["validation"] = members
            t = origin_table(fc, naive2_validation, histories, test, VALIDATION).mean()
            out["log"].append({"family": f, "candidate": k, "design": describe(cfg), "MASE": t["MASE"],
                               "sMAPE": t["sMAPE"], "OWA": t["OWA"], "seconds": seconds})
    # 2. the freeze: each family keeps its candidate with the lowest mean validation OWA
    for f in families:
        rows = [r for r in out["log"] if r["family"] == f]
        out["chosen"][f] = min(rows, key=lambda r: r["OWA"])["candidate"]
    for r in out["log"]:
        r["chosen"] = r["candidate"] == out["chosen"][r["family"]]
    frozen = {f: candidates(f, config)[out["chosen"][f]] for f in families}
    log("frozen: " + "; ".join(f"{f}: {describe(c)}" for f, c in frozen.items()))
    # 3. the test: every family's frozen config with every seed, trained on all training data;
    #    and the data-size runs, trained on a share of the series
    jobs = [j for f in families for k in range(config["seeds"])
            for j in _jobs_for(f, k, seeded(frozen[f], k), "test", 0, [0], keep=k == 0)]
    single = {"N-BEATS member": frozen[ENSEMBLE][-1], **{f: frozen[f] for f in config["candidates"]}}
    order = np.random.default_rng(0).permutation(len(histories))
    for share in config["data_shares"]:
        rows = sorted(order[: round(share * len(histories))].tolist())
        for name in config["data_share_models"]:
            jobs += _jobs_for(name, 0, single[name], f"share{share}", 0, [0], rows=rows)
    log(f"test and data shares: {len(jobs)} networks")
    done = _run_jobs(jobs, config["jobs"], log)
    for f in families:
        runs = [_combine(done, f"test|{f}|{k}") for k in range(config["seeds"])]
        out["test"][f] = np.stack([fc[0] for fc, _, _ in runs])
        out["seconds"][f] = [s for _, _, s in runs]
        if f == ENSEMBLE:
            out["members"]["test"] = np.stack([m[:, 0] for _, m, _ in runs])
        keys = sorted(k for k in done if k.startswith(f"test|{f}|0|"))
        out["weights"][f] = [done[k]["weights"] for k in keys]
    for share in config["data_shares"]:
        for name in config["data_share_models"]:
            fc, _, seconds = _combine(done, f"share{share}|{name}|0")
            out["shares"][(name, share)] = fc[0]
            out["seconds"][f"{name} on {share:.0%} of the series"] = seconds
    return out


def models_from_tensors(tensors: dict, family: str = ENSEMBLE, config: dict = HEAVY_RUN, chosen: int = 0) -> list:
    """Rebuild seed 0 of ``family``'s test model(s) (eval mode, float32) from cached half-precision weights;
    ``chosen`` is the family's frozen candidate (``results["chosen"][family]``)."""
    cfg = candidates(family, config)[chosen]
    models = []
    for m, c in enumerate(cfg if isinstance(cfg, list) else [cfg]):
        model = nbeats.build_model(c)
        prefix = f"model.{family}.{m}."
        model.load_state_dict({n[len(prefix):]: t.float() for n, t in tensors.items() if n.startswith(prefix)})
        models.append(model.eval())
    return models

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
    """Run the whole protocol; returns (tensors, results, metrics) for the cache.

    ``forecast.<method>`` holds every method's forecasts at every origin ``(4, S, H)``; for a neural
    family the validation origins come from its frozen candidate's validation run and the test from
    seed 0; ``seeds.<family>`` holds every seed's test forecasts ``(seeds, S, H)``.
    """
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    ids, histories, test = load_series()
    start = time.perf_counter()
    forecasts, seconds = classical_forecasts(ids, histories, test, config, log=log)
    v = len(VALIDATION)
    # the classical "best" is chosen where a choice may be made: mean validation OWA
    classical_log = []
    for name in config["classical"]:
        t = origin_table(forecasts[name][:v], forecasts["Naive2"][:v], histories, test, VALIDATION).mean()
        classical_log.append({"family": "classical", "candidate": 0, "design": name, "MASE": t["MASE"],
                              "sMAPE": t["sMAPE"], "OWA": t["OWA"], "seconds": seconds[name]})
    best = min(classical_log, key=lambda r: r["OWA"])["design"]
    for r in classical_log:
        r["chosen"] = r["design"] == best
    log(f"classical: {time.perf_counter() - start:.0f} s; best on validation: {best}")
    neural = neural_forecasts(histories, test, forecasts["Naive2"][:v], config, log=log)
    tensors = {}
    for f, runs in neural["test"].items():
        forecasts[f] = np.concatenate([neural["validation"][(f, neural["chosen"][f])], runs[:1]])
        tensors[f"seeds.{f}"] = torch.tensor(runs, dtype=torch.float32)
        seconds[f] = float(np.mean(neural["seconds"][f]))
    table = summary(evaluate(forecasts, histories, test))
    tensors.update({f"forecast.{k}": torch.tensor(v, dtype=torch.float32) for k, v in forecasts.items()})
    tensors.update({f"validation.{f}.{k}": torch.tensor(fc, dtype=torch.float32)
                    for (f, k), fc in neural["validation"].items()})
    tensors.update({f"members.{stage}": torch.tensor(m, dtype=torch.float32) for stage, m in neural["members"].items()})
    tensors.update({f"share.{name}.{share}": torch.tensor(fc, dtype=torch.float32)
                    for (name, share), fc in neural["shares"].items()})
    for f, states in neural["weights"].items():
        for m, state in enumerate(states):
            tensors.update({f"model.{f}.{m}.{n}": p for n, p in state.items()})
    results = {"ids": ids, "seconds": seconds, "training_seconds": neural["seconds"],
               "design_log": classical_log + neural["log"], "chosen": neural["chosen"], "best_classical": best,
               "summary": table.to_dict(orient="list")}
    test_rows = table[table.origin == "test"].set_index("method")
    metrics = {f"test_owa.{f}": float(test_rows.loc[f, "OWA"]) for f in FAMILIES}
    metrics.update({"test_mase": float(test_rows.loc[ENSEMBLE, "MASE"]),
                    "test_smape": float(test_rows.loc[ENSEMBLE, "sMAPE"]),
                    "neural_seconds": float(sum(sum(v) if isinstance(v, list) else v
                                                for v in neural["seconds"].values()))})
    return tensors, results, metrics

def cache_config(config: dict = HEAVY_RUN) -> dict:
    """The cached result's settings: the run, and the defaults of every ensemble member."""
    return {"run": config, "member_defaults": nbeats.config_dict(nbeats.NBeatsConfig())}


def cache_code() -> list:
    """The modules whose source the cache's code hash covers."""
    from . import attention, data, forecasting, seqforecast, transformer
    return [sys.modules[__name__], nbeats, seqforecast, transformer, attention, forecasting, data]


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
