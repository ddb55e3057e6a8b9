"""Run the Colab edition as a Colab reader would, here: every notebook from its first cell to its last.

    python tools/colab_sim.py              # all twenty; prints one line per notebook and the total
    python tools/colab_sim.py --only 14_57

What stands in for Colab:

- **Python packages**: a virtual environment holding only what Colab preinstalls that the book
  touches, pinned as ``tests/colab/preinstalled.txt`` reports them (Colab's pip freeze), except
  torch, which is this machine's local ``torch==2.13.0`` CPU wheel. Python here is 3.11, Colab's
  is 3.13. The environment is cached in ``_build/colab-sim/base-<hash>`` while its inputs are
  unchanged; each run layers a fresh, empty environment on top of it (a ``.pth`` file), so
  what the first cell installs lands in the fresh layer and the cached one stays clean.
- **google.colab**: a stand-in package, imported at interpreter start as Colab's kernel does.
- **GitHub**: the repository URL from ``_config.yml`` is redirected (``url.<local>.insteadOf``, in
  a temporary HOME) to a local repository holding one commit: the current checkout's working
  tree. The notebooks are converted with that commit as the edition's ref, so the first cell
  fetches exactly the code under test.
- **/content**: each notebook gets its own folder (``BOOK_DIR``), as each Colab session its own VM.

A notebook fails on any cell error, on raw MyST markup left in a markdown cell, or when a second
run of its first cell does anything.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools import colab  # noqa: E402

PREINSTALLED = ROOT / "tests" / "colab" / "preinstalled.txt"
SIM = ROOT / "_build" / "colab-sim"
TORCH = "torch==2.13.0"  # the local CPU wheel; Colab's own is 2.11.0+cpu
#: Colab packages the book does not touch, left out of the stand-in.
NOT_NEEDED = {"transformers"}
GOOGLE_COLAB = '"""Stand-in for Colab\'s google.colab package (tools/colab_sim.py)."""\n'
KERNEL = "colab-sim"


def pins() -> list[str]:
    """Colab's pins of the packages the book touches, with torch replaced by the local wheel."""
    out = [TORCH]
    for line in PREINSTALLED.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and line.split("==")[0].lower() not in NOT_NEEDED and not line.lower().startswith("torch=="):
            out.append(line)
    return sorted(set(out), key=str.lower)


def _site_packages(venv: Path) -> Path:
    return Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())


def base_env(log=print) -> Path:
    """The cached Colab stand-in environment (created when its pins or Python changed)."""
    wanted = pins()
    key = hashlib.sha256(json.dumps([wanted, sys.version, GOOGLE_COLAB]).encode()).hexdigest()[:12]
    venv = SIM / f"base-{key}"
    if (venv / ".complete").is_file():
        return venv
    for stale in SIM.glob("base-*"):
        shutil.rmtree(stale, ignore_errors=True)
    log(f"colab-sim: creating the Colab stand-in environment {venv.relative_to(ROOT)} ({len(wanted)} pins)")
    python = sys._base_executable if hasattr(sys, "_base_executable") else sys.executable
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", *wanted],
                   check=True)
    colab_pkg = _site_packages(venv) / "google" / "colab"
    colab_pkg.mkdir(parents=True, exist_ok=True)
    (colab_pkg / "__init__.py").write_text(GOOGLE_COLAB)
    (venv / ".complete").write_text("\n".join(wanted) + "\n")
    return venv


def layer_env(base: Path, where: Path) -> Path:
    """A fresh, empty environment that sees ``base``'s packages; returns its python."""
    venv = where / "venv"
    python = sys._base_executable if hasattr(sys, "_base_executable") else sys.executable
    subprocess.run([python, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = _site_packages(venv)
    # the base's packages after the layer's own; then, as Colab's kernel does, import google.colab
    (site / "zz_colab_base.pth").write_text(f"{_site_packages(base)}\nimport google.colab\n")
    kernel_dir = where / "jupyter" / "kernels" / KERNEL
    kernel_dir.mkdir(parents=True)
    (kernel_dir / "kernel.json").write_text(json.dumps({
        "argv": [str(venv / "bin" / "python"), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Colab stand-in", "language": "python"}))
    return venv / "bin" / "python"


def snapshot_repo(where: Path) -> tuple[Path, str]:
    """A repository with one commit holding this checkout's working tree; returns (path, commit)."""
    repo = where / "origin"
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        src = ROOT / name
        if src.is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, repo / name)
    git = lambda *a: subprocess.run(["git", "-C", str(repo), "-c", "user.name=sim", "-c", "user.email=sim@localhost",
                                     *a], check=True, capture_output=True, text=True).stdout.strip()
    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "working tree under test")
    return repo, git("rev-parse", "HEAD")


@dataclass
class Result:
    notebook: str
    seconds: float
    error: str = ""
    setup_line: str = ""


def leftover_myst(nb: dict) -> list[str]:
    """Markdown cells of a converted notebook that still hold MyST markup (as myst-parser sees it)."""
    bad = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        src = "".join(cell["source"])
        found = {c for c in colab.constructs(src)
                 if c.startswith(("role:", "directive:")) or c in ("myst_target", "math_block_label",
                                                                    "myst_line_comment", "substitution_block",
                                                                    "substitution_inline", "amsmath", "dl_open")}
        if found or ":::" in src:
            bad.append(f"cell {i}: {sorted(found) or [':::']}")
    return bad


def run_notebook(path: str, python: str, home: str, jupyter_path: str, workdir: str, timeout: int = 900) -> Result:
    """Execute one Colab notebook with nbclient in the stand-in; a second set-up run must do nothing."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    start = time.perf_counter()
    nb = nbformat.read(path, as_version=4)
    name = Path(path).name
    raw = leftover_myst(nb)
    if raw:
        return Result(name, 0.0, "raw MyST markup left: " + "; ".join(raw))
    again = nbformat.v4.new_code_cell(nb.cells[0].source)
    again.id = "setup-again"
    nb.cells.append(again)
    content = Path(workdir) / "content"
    content.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON", "JUPYTER", "BOOK_BUILD"))}
    env.update(HOME=home, JUPYTER_PATH=jupyter_path, BOOK_DIR=str(content / "book"), GIT_CONFIG_NOSYSTEM="1",
               OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYDEVD_DISABLE_FILE_VALIDATION="1",
               PATH=f"{Path(python).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    client = NotebookClient(nb, kernel_name=KERNEL, timeout=timeout, resources={"metadata": {"path": str(content)}})
    os.environ["JUPYTER_PATH"] = jupyter_path  # the kernelspec lookup happens in this process
    try:
        client.execute(env=env, cwd=str(content))
    except CellExecutionError as err:
        first = str(err).strip().splitlines()
        index = next((i for i, c in enumerate(nb.cells) if any(o.get("output_type") == "error" for o in c.get("outputs", []))), "?")
        return Result(name, time.perf_counter() - start, f"cell {index}: " + (first[-1] if first else "error"))
    except Exception as err:  # kernel died, timeout
        return Result(name, time.perf_counter() - start, f"{type(err).__name__}: {err}")
    first_out = "".join(o.get("text", "") for o in nb.cells[0].outputs)
    second_out = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    if "nothing to do" not in second_out:
        return Result(name, time.perf_counter() - start, f"second run of the set-up cell printed {second_out!r}")
    return Result(name, time.perf_counter() - start, "", first_out.strip())


def simulate(only: str | None = None, jobs: int = 2, log=print, keep: bool = False) -> list[Result]:
    """Convert and run the Colab edition in the stand-in; returns one Result per notebook."""
    base = base_env(log)
    SIM.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="run-", dir=SIM))
    try:
        repo, commit = snapshot_repo(tmp)
        home = tmp / "home"
        home.mkdir()
        ctx = colab.context_from_build(ROOT, ref=commit)
        subprocess.run(["git", "config", "--file", str(home / ".gitconfig"), f"url.{repo.as_uri()}.insteadOf",
                        ctx.repo_url], check=True)
        editions = tmp / "editions"
        written = [p for p in colab.write_editions(ROOT, ctx=ctx, out=editions)
                   if p.parent.parent.name == "colab" and (only is None or only in p.name)]
        log(f"colab-sim: {len(written)} notebooks, commit {commit[:12]} of the working tree, {jobs} at a time")
        results = []
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = []
            for p in written:  # one Colab session each: its own /content and its own fresh layer
                work = tmp / "work" / p.stem
                python = layer_env(base, work)
                futures.append(pool.submit(run_notebook, str(p), str(python), str(home), str(work / "jupyter"),
                                           str(work)))
            for future in as_completed(futures):
                r = future.result()
                results.append(r)
                log(f"{'ok    ' if not r.error else 'FAILED'} {r.notebook:<50} {r.seconds:6.1f} s  {r.error or r.setup_line}")
        return sorted(results, key=lambda r: r.notebook)
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="run only notebooks whose name contains this")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--keep", action="store_true", help="keep the run's folder under _build/colab-sim")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    results = simulate(args.only, args.jobs, keep=args.keep)
    ok = sum(not r.error for r in results)
    print(f"colab-sim: {ok}/{len(results)} notebooks ran clean in {time.perf_counter() - start:.0f} s")
    return 0 if ok == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
