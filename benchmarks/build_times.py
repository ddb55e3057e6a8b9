"""Measure the book's build: each notebook's execution time and the whole build's wall time.

    .venv/bin/python -m benchmarks.build_times            # both cores, like `make book`
    .venv/bin/python -m benchmarks.build_times --jobs 1   # one notebook at a time

Forces a full re-execution (HEAVY_EVAL=False) and render, then prints one line per notebook
and the totals. Targets: each notebook < 60 s, the whole book < 5 min on a 2-core machine.
Figures are printed, never asserted: tests do not fail on wall time.
"""

import argparse
import os
import platform
import subprocess
import sys
import time

from tools.notebooks import ROOT, executed_notebooks, read


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "tools.book", "--force", "--jobs", str(args.jobs)],
                   cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    total = time.perf_counter() - start
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; jobs={args.jobs}")
    for path in executed_notebooks():
        seconds = read(path)["metadata"]["book"]["exec_seconds"]
        flag = "" if seconds < 60 else "   <- over the 60 s target"
        print(f"{path.stem:<50} {seconds:7.1f} s{flag}")
    print(f"{'whole build (execute + render)':<50} {total:7.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
