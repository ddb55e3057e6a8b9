"""Retrain one short run of every heavy cache with the current code and compare it with the cached result.

    .venv/bin/python -m helpers.reproduce           # every entry, two runs at a time; one line per run
    .venv/bin/python -m helpers.reproduce --write   # and record the figures in cache/reproduction.json

A cache proves that its numbers came from the code shown only if that code can still produce them.
Each entry names one run that is cheap to repeat (seed 0 at its shortest budget): §14.48's attention
model on the shortest copy task, §14.53's RoPE model, §14.59's Transformer and LSTM at the 77-s budget,
§14.63's Transformer test model, §14.47's forget-bias-3 LSTM at lag 40. Each is retrained here, one torch thread per process, exactly as the
heavy run trained it, and its headline number is compared with the cached one.

The verdict for each run: *identical* (every number the cache holds for the run equal, bit for bit) or
the difference, against the *seed range* of the same quantity, the spread (max − min) over the entry's
seeds of the same run. A rerun passes when it is within that range: a larger difference would be as
large as changing the seed, and the cached comparison would no longer be what the code computes.
Floating-point kernels differ between processors, and training amplifies a last-bit difference, so a
rerun on another machine need not be identical; two runs on one machine are (``tests/test_reproduction.py``).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from dataclasses import asdict, dataclass

import numpy as np
import torch

from .book import repo_path

RECORD = repo_path("cache", "reproduction.json")


@dataclass(frozen=True)
class Rerun:
    """One retrained run against its cached result."""

    entry: str         # the cache entry, e.g. "charlm"
    run: str           # the run, as the entry names it
    quantity: str      # what is compared, e.g. "validation loss (nats/char)"
    cached: float
    rerun: float
    seed_range: float  # max - min of the quantity over the entry's seeds of this run
    identical: bool    # every number the cache holds for the run equal, bit for bit
    seconds: float     # the rerun's wall time

    @property
    def difference(self) -> float:
        return self.rerun - self.cached

    @property
    def within_seed_range(self) -> bool:
        return abs(self.difference) <= self.seed_range

    def line(self) -> str:
        verdict = "identical" if self.identical else (
            f"differs by {self.difference:+.2e} ({abs(self.difference) / self.seed_range:.0%} of the seed range)")
        return (f"{self.entry:11s} {self.run:22s} {self.quantity:32s} cached {self.cached:.6f}  rerun "
                f"{self.rerun:.6f}  seed range {self.seed_range:.2e}  {verdict}  ({self.seconds:.0f} s)")


# ------------------------------------------------------------------------------------------- one per entry

def _bottleneck() -> Rerun:
    from . import bottleneck

    cached = bottleneck.load()
    run = {"model": "dot", "task": "copy", "length": 4, "seed": 0}
    same = [r for r in cached.results["runs"] if {k: r[k] for k in ("model", "task", "length")}
            == {k: run[k] for k in ("model", "task", "length")}]
    old = next(r for r in same if r["seed"] == 0)
    start = time.perf_counter()
    new, weights = bottleneck.train_run(run)
    identical = (new["accuracy"] == old["accuracy"] and new["loss_final"] == old["loss_final"]
                 and all(torch.equal(v, cached.tensors[k]) for k, v in weights.items()))
    losses = [r["loss_final"] for r in same]
    return Rerun("bottleneck", bottleneck.key(run), "test loss at the last checkpoint", old["loss_final"],
                 new["loss_final"], max(losses) - min(losses), identical, time.perf_counter() - start)


def _position_lm() -> Rerun:
    from . import position_lm

    cached = position_lm.load()
    mean = lambda curve: float(np.mean(curve))
    start = time.perf_counter()
    new = position_lm.one_run("rope", 0)
    old = cached.results["per_position"]["rope/0"]
    identical = new["per_position"] == old and all(
        torch.equal(v, cached.tensors[f"rope/0.{k}"]) for k, v in new["state"].items())
    seeds = [mean(cached.results["per_position"][f"rope/{s}"]) for s in position_lm.HEAVY_RUN["seeds"]]
    return Rerun("position_lm", "rope/0", "loss over positions 0-127", mean(old), mean(new["per_position"]),
                 max(seeds) - min(seeds), identical, time.perf_counter() - start)


def _charlm(kind: str) -> Rerun:
    from . import charlm

    cached = charlm.load()
    short = min(charlm.HEAVY_RUN["budgets_s"])
    same = [r for r in cached.results["runs"] if r["name"].startswith(f"{kind}_{short:g}s_seed")]
    old = next(r for r in same if r["name"] == f"{kind}_{short:g}s_seed{charlm.HEAVY_RUN['seeds'][0]}")
    config = {**old["config"], "betas": tuple(old["config"]["betas"])}
    start = time.perf_counter()
    new = charlm._train_job({"name": old["name"], "kind": kind, "split": "val",
                             "cfg": charlm.TrainConfig(**config)})["result"]
    strip = lambda curve: [{k: v for k, v in point.items() if k != "seconds"} for point in curve]
    losses = [r["curve"][-1]["val_loss"] for r in same]
    return Rerun("charlm", old["name"], "validation loss (nats/char)", old["curve"][-1]["val_loss"],
                 new["curve"][-1]["val_loss"], max(losses) - min(losses), strip(new["curve"]) == strip(old["curve"]),
                 time.perf_counter() - start)


def _m4() -> Rerun:
    from . import m4benchmark as bench, m4report

    cached = m4report.load()
    family = "Transformer"
    frozen = bench.candidates(family)[cached.results["chosen"][family]]
    start = time.perf_counter()
    job = bench._jobs_for(family, 0, bench.seeded(frozen, 0), "test", 0, [0])[0]
    new = torch.tensor(bench._train_job(job)["forecasts"][0], dtype=torch.float32)    # (S, H)
    _, histories, test = bench.load_series()
    naive2 = bench.scores(cached.tensors["forecast.Naive2"].double().numpy()[m4report.TEST], histories, test)
    owa = lambda fc: m4report._means(bench.scores(fc, histories, test), naive2)["OWA"]
    seeds = cached.tensors[f"seeds.{family}"]                                          # (seeds, S, H)
    per_seed = [owa(s.double().numpy()) for s in seeds]
    return Rerun("m4", f"{family} test, seed 0", "test OWA", per_seed[0], owa(new.double().numpy()),
                 max(per_seed) - min(per_seed), bool(torch.equal(new, seeds[0])), time.perf_counter() - start)


def _recall() -> Rerun:
    from . import recall

    cached = recall.load()
    run = {"cell": "LSTM (forget bias 3)", "lag": 40, "lr": 0.01}
    same = [r for r in cached.results["runs"] if all(r[k] == v for k, v in run.items())]
    old = same[0]
    start = time.perf_counter()
    new = recall._one(({**run, "seed": old["seed"]}, recall.CONFIG))
    steps = [r["steps_to_target"] for r in same]
    return Rerun("recall", f"{run['cell']}, lag 40", "steps to the target accuracy", float(old["steps_to_target"]),
                 float(new["steps_to_target"]), float(max(steps) - min(steps)),
                 new["steps_to_target"] == old["steps_to_target"] and new["last_accuracy"] == old["last_accuracy"],
                 time.perf_counter() - start)


#: entry -> the reruns that check it (each a function of no arguments, run in its own process)
RERUNS = {"bottleneck": [_bottleneck], "position_lm": [_position_lm],
          "charlm": [lambda: _charlm("gpt"), lambda: _charlm("lstm")], "m4": [_m4], "recall": [_recall]}


def _one(which: tuple[str, int]) -> Rerun:
    torch.set_num_threads(1)
    entry, i = which
    return RERUNS[entry][i]()


def rerun_all(jobs: int = 2, entries: list[str] | None = None, log=print) -> list[Rerun]:
    """Every rerun of ``entries`` (default: all), ``jobs`` spawned processes at a time, longest first."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    unknown = set(entries or ()) - set(RERUNS)
    if unknown:
        raise ValueError(f"entries must name cache entries with reruns, {sorted(RERUNS)}; got {sorted(unknown)}")
    todo = [(e, i) for e, reruns in RERUNS.items() if entries is None or e in entries for i in range(len(reruns))]
    todo.sort(key=lambda w: {"m4": 0, "charlm": 1}.get(w[0], 2))
    out = []
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        for r in pool.map(_one, todo):
            log(r.line())
            out.append(r)
    return out


def write_record(reruns: list[Rerun]) -> None:
    """Record the figures, with where and when they were measured, for the book to show (``cache/reproduction.json``)."""
    from .cache import environment

    env = environment()
    env["hardware"]["torch_threads"] = 1   # each rerun's process, as in the heavy runs
    RECORD.write_text(json.dumps({"measured": time.strftime("%Y-%m-%d"), **env,
                                  "reruns": [asdict(r) for r in reruns]}, indent=1) + "\n")


def read_record() -> dict:
    """``cache/reproduction.json``: {"measured", "versions", "hardware", "reruns": [Rerun fields]}."""
    return json.loads(RECORD.read_text())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.reproduce", description=__doc__.split("\n\n")[0])
    parser.add_argument("entries", nargs="*", help=f"entries to check (default: all of {sorted(RERUNS)})")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--write", action="store_true", help="record the figures in cache/reproduction.json")
    args = parser.parse_args(argv)
    if set(args.entries) - set(RERUNS):
        parser.error(f"unknown entries {sorted(set(args.entries) - set(RERUNS))}; choose from {sorted(RERUNS)}")
    print(f"reruns on {platform.processor() or platform.machine()}, torch {torch.__version__}, one thread each")
    reruns = rerun_all(args.jobs, args.entries or None)
    if args.write:
        write_record(reruns)
    return 0 if all(r.within_seed_range for r in reruns) else 1


if __name__ == "__main__":
    sys.exit(main())
