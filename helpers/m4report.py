"""Reading cache entry ``m4`` (written by ``helpers.m4benchmark``) the way §14.63 and §14.64 report it.

- ``load``             the cache entry, checked against the code and settings that made it
- ``per_series``       per-series test MASE and sMAPE of every method; a neural family's are means over its seeds
- ``test_table``       the test window's table: mean MASE, sMAPE, OWA of every method, and each neural family's
                       spread over seeds
- ``seed_table``       one row per neural family and seed
- ``data_size_table``  the frozen configurations trained on 10 %, 30 % and 100 % of the series

Nothing here trains or changes a forecast, so this module is not part of the cache's code hash.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import m4benchmark as bench
from .forecasting import owa

__all__ = ["load", "per_series", "test_table", "seed_table", "data_size_table", "TEST"]

#: The index of the official test window among ``bench.ORIGINS``.
TEST = list(bench.ORIGINS).index("test")


def load():
    """Cache entry ``m4`` (``helpers.cache.CacheEntry``); refuses a stale or corrupt one."""
    from .cache import load_cache

    return load_cache(bench.CACHE_NAME, code=bench.cache_code(), config=bench.cache_config())


def _test_forecasts(cached) -> dict:
    """{method: test forecasts (S, H)} for classical methods, {family: (seeds, S, H)} for neural ones."""
    out = {k.split(".", 1)[1]: v.double().numpy()[TEST] for k, v in cached.tensors.items()
           if k.startswith("forecast.") and k.split(".", 1)[1] not in bench.FAMILIES}
    out.update({f: cached.tensors[f"seeds.{f}"].double().numpy() for f in bench.FAMILIES})
    return out


def _means(frame: pd.DataFrame, naive2: pd.DataFrame) -> dict:
    m, s = frame["MASE"].mean(), frame["sMAPE"].mean()
    return {"MASE": m, "sMAPE": s, "OWA": owa(s, m, naive2["sMAPE"].mean(), naive2["MASE"].mean()),
            "MASE_median": frame["MASE"].median()}


def seed_table(cached, histories, test) -> pd.DataFrame:
    """Test MASE, sMAPE and OWA of every neural family's every seed: index (family, seed)."""
    fc = _test_forecasts(cached)
    naive2 = bench.scores(fc["Naive2"], histories, test)
    rows = {(f, k): _means(bench.scores(fc[f][k], histories, test), naive2)
            for f in bench.FAMILIES for k in range(len(fc[f]))}
    return pd.DataFrame(rows).T.rename_axis(["family", "seed"])


def per_series(cached, histories, test) -> dict:
    """{"MASE": frame, "sMAPE": frame}: series x method on the test window; neural = mean over seeds."""
    fc = _test_forecasts(cached)
    out = {"MASE": {}, "sMAPE": {}}
    for name, f in fc.items():
        runs = [bench.scores(r, histories, test) for r in (f if f.ndim == 3 else [f])]
        for metric in out:
            out[metric][name] = np.mean([r[metric].to_numpy() for r in runs], axis=0)
    return {metric: pd.DataFrame(cols) for metric, cols in out.items()}


def test_table(cached, histories, test) -> pd.DataFrame:
    """The test window, one row per method, sorted by OWA.

    Classical methods: mean MASE, mean sMAPE, OWA, median MASE. Neural families: the same figures
    averaged over seeds, with the lowest and highest seed's OWA. ``seconds``: classical methods for
    all four origins; neural families, training one test model (mean over seeds).
    """
    fc = _test_forecasts(cached)
    naive2 = bench.scores(fc["Naive2"], histories, test)
    rows = {m: _means(bench.scores(f, histories, test), naive2) for m, f in fc.items() if f.ndim == 2}
    seeds = seed_table(cached, histories, test)
    for f in bench.FAMILIES:
        rows[f] = {**seeds.loc[f].mean().to_dict(), "OWA lowest seed": seeds.loc[f, "OWA"].min(),
                   "OWA highest seed": seeds.loc[f, "OWA"].max()}
    table = pd.DataFrame(rows).T
    table["seconds"] = pd.Series(cached.results["seconds"])
    table["kind"] = ["neural" if m in bench.FAMILIES else "classical" for m in table.index]
    return table.sort_values("OWA")


def data_size_table(cached, histories, test) -> pd.DataFrame:
    """Test MASE, sMAPE, OWA of each frozen configuration trained (seed 0) on a share of the series.

    Every model forecasts all series, most of which a model on a small share never saw. Share 1.0 is
    the seed-0 test run: for N-BEATS a single member (the ensemble's last), for the others the model.
    """
    fc = _test_forecasts(cached)
    naive2 = bench.scores(fc["Naive2"], histories, test)
    full = {"N-BEATS member": cached.tensors["members.test"].double().numpy()[0, -1],
            "GRU": fc["GRU"][0], "Transformer": fc["Transformer"][0]}
    rows = {}
    for name in cached.manifest["config"]["run"]["data_share_models"]:
        for share in [*cached.manifest["config"]["run"]["data_shares"], 1.0]:
            f = full[name] if share == 1.0 else cached.tensors[f"share.{name}.{share}"].double().numpy()
            rows[(name, share)] = _means(bench.scores(f, histories, test), naive2)
    table = pd.DataFrame(rows).T.rename_axis(["model", "share of series"])
    table["series trained on"] = [round(s * len(histories)) for _, s in table.index]
    return table
