"""Print what each heavy retrain cost, as recorded in the cache manifests.

    .venv/bin/python -m benchmarks.heavy_runs

The heavy sections (§14.59, §14.63) time themselves when they regenerate their cache
(`python -m tools.book --only <section> --heavy`); the manifest keeps the wall time, the hardware and the
per-part timings. This script prints them; nothing here is asserted. To re-measure,
regenerate the cache on a quiet machine.
"""

import json
import sys

from helpers import cache


def main() -> int:
    for folder in sorted(p.parent for p in cache.CACHE_DIR.glob("*/manifest.json")):
        manifest = cache.read_manifest(folder.name)
        hw = manifest["hardware"]
        print(f"cache/{folder.name}: {manifest['wall_time_s'] / 60:.1f} min on {hw['cpu_count']} CPU cores "
              f"({hw['torch_threads']} torch threads, GPU: {hw['cuda']}), made {manifest['created']}")
        results = json.loads((folder / cache.RESULTS_FILE).read_text())
        if "seconds" in results:  # §14.63: classical methods for all four origins; a network, one test model
            for method, seconds in sorted(results["seconds"].items(), key=lambda kv: -kv[1]):
                print(f"    {method:18s} {seconds:8.1f} s")
            for run, seconds in results.get("training_seconds", {}).items():  # every test and data-share run
                runs = seconds if isinstance(seconds, list) else [seconds]
                print(f"    training {run:36s} " + ", ".join(f"{s:6.0f} s" for s in runs))
            for row in results.get("design_log", []):  # the validation candidates
                if row["family"] != "classical":
                    print(f"    validation {row['family']:16s} {row['design']:48s} {row['seconds']:6.0f} s")
        runs = results.get("tuning", []) + results.get("runs", []) if folder.name == "charlm" else []
        for run in runs:  # §14.59: every training run
            print(f"    {run['name']:22s} {run['steps']:6d} steps {run['train_seconds']:8.1f} s training")
    return 0


if __name__ == "__main__":
    sys.exit(main())
