"""§14.59's character-level language models: throughput alone, and the cached comparison's figures.

    .venv/bin/python -m benchmarks.charlm --measure      # steps/s of each model alone (quiet machine!)
    .venv/bin/python -m benchmarks.charlm                # the figures of cache/charlm, run by run

``--measure`` times training steps of each model at each batch size of the protocol, with 2 torch
threads and nothing else running, three times, and prints the fastest: other tenants of a shared
machine only ever slow a timing down, so the fastest of three is the best estimate of the machine
alone. These are the figures to record in
``helpers.charlm.THROUGHPUT``, which turns §14.59's wall-clock budgets into step counts.

Without ``--measure`` it prints, from cache/charlm (regenerate: ``python -m tools.book --only 14_59 --heavy``),
the tuning runs, and every final run: model, budget, seed, steps, characters seen, validation loss on
the whole split (nats per character), and per model and budget the mean and range over seeds.
"""

import argparse
import statistics
import sys

import torch

from helpers import charlm


def measure(threads: int, seconds: float, repeats: int) -> None:
    torch.set_num_threads(threads)
    config = charlm.HEAVY_RUN
    batches = {"gpt": sorted({*config["search"]["batch"], config["nanogpt"]["batch"]}),
               "lstm": sorted(config["search"]["batch"])}
    rates = {}
    for kind, sizes in batches.items():
        for batch in sizes:
            runs = [charlm.measure_steps_per_s(kind, batch, seconds=seconds) for _ in range(repeats)]
            rates.setdefault(kind, {})[str(batch)] = round(max(runs), 2)
            print(f"{kind:4s} batch {batch:3d}: " + ", ".join(f"{r:.2f}" for r in runs)
                  + f" steps/s -> fastest {max(runs):.2f}", flush=True)
    print(f"steps_per_s = {rates}  ({threads} threads)")


def report() -> None:
    cached = charlm.load()
    res = cached.results
    print(f"cache/charlm, made {cached.manifest['created']} in {cached.manifest['wall_time_s'] / 60:.1f} min")
    print("tuning (loss on the tuning slice carved from the training split):")
    for r in res["tuning"]:
        print(f"  {r['name']:28s} {r['steps']:6d} steps  tune {r['curve'][-1]['tune_loss']:.4f}")
    print(f"chosen: {res['chosen']}")
    print("final runs (validation loss, whole split):")
    groups = {}
    for r in res["runs"]:
        last = r["curve"][-1]
        print(f"  {r['name']:22s} {r['steps']:6d} steps  {last['chars'] / 1e6:6.2f} M chars  "
              f"train {last['train_loss']:.4f}  val {last['val_loss']:.4f}")
        groups.setdefault(r["name"].rsplit("_seed", 1)[0], []).append(last["val_loss"])
    for name, losses in groups.items():
        print(f"val_loss {name:14s} mean {statistics.mean(losses):.4f}  range {min(losses):.4f}-{max(losses):.4f}"
              f"  ({len(losses)} seed{'s' if len(losses) > 1 else ''})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--measure", action="store_true", help="time each model's training steps alone")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=10.0, help="length of one timing")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.measure:
        measure(args.threads, args.seconds, args.repeats)
    else:
        report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
