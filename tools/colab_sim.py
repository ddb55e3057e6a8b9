"""Run the Colab edition as a Colab reader would, here: every notebook from its first cell to its last.

    python -m tools.colab_sim              # all twenty under Colab's Python 3.13 (needs root); one line each
    python -m tools.colab_sim --only 14_57
    python -m tools.colab_sim --python host  # under this machine's Python instead (no root needed)

What stands in for Colab:

- **Python**: Colab's 3.13, from Debian trixie (``debootstrap``, Debian's packages): a root file
  system in ``_build/colab-sim/trixie``, entered with ``chroot`` in a private mount namespace
  (``unshare``), so that nothing mounted for a run outlives it. It needs root, as CI has.
  ``--python host`` uses this machine's interpreter instead (3.11 here), for a developer without root.
- **Python packages**: a virtual environment holding only what Colab preinstalls that the book
  touches, pinned as ``tests/colab/preinstalled.txt`` reports them (Colab's pip freeze). torch is
  Colab's 2.11.0 from PyPI under 3.13 (the CUDA build, since PyPI has no CPU-only one for Linux; it
  runs on the CPU here), and this machine's local ``torch==2.13.0`` CPU wheel with ``--python host``.
  The environment is cached in ``_build/colab-sim/`` while its inputs are unchanged; each notebook
  gets a fresh, empty environment layered on top of it (a ``.pth`` file), so what the first cell
  installs lands in the fresh layer and the cached one stays clean.
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

if __name__ == "__main__" and not __package__:  # `python tools/colab_sim.py`: tools/ is a package
    raise SystemExit("run it as a module, from the repository root: python -m tools.colab_sim ...")

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from tools.notebooks import ROOT

PREINSTALLED = ROOT / "tests" / "colab" / "preinstalled.txt"
SIM = ROOT / "_build" / "colab-sim"
#: torch by runtime: Colab's own version under 3.13 (PyPI's build of it); the local CPU wheel on the host
TORCH = {"3.13": "torch==2.11.0", "host": "torch==2.13.0"}
#: Debian trixie's Python is Colab's minor version; the root file system is made from Debian's packages
ROOTFS = SIM / "trixie"
DEBOOTSTRAP = ["debootstrap", "--variant=minbase", "--include=python3,python3-venv,python3-pip,git,ca-certificates",
               "trixie"]
DEBIAN_MIRROR = "http://deb.debian.org/debian"
#: Colab packages the book does not touch, left out of the stand-in.
NOT_NEEDED = {"transformers"}
GOOGLE_COLAB = '"""Stand-in for Colab\'s google.colab package (tools/colab_sim.py)."""\n'
KERNEL = "colab-sim"


def pins(runtime: str = "3.13") -> list[str]:
    """Colab's pins of the packages the book touches, with the runtime's torch (``TORCH``)."""
    out = [TORCH[runtime]]
    for line in PREINSTALLED.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and line.split("==")[0].lower() not in NOT_NEEDED and not line.lower().startswith("torch=="):
            out.append(line)
    return sorted(set(out), key=str.lower)


def _site_packages(venv: Path) -> Path:
    return Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())


def base_env(log=print) -> Path:
    """The cached Colab stand-in environment on this machine's Python (``--python host``)."""
    wanted = pins("host")
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


# ------------------------------------------------------------------ Colab's Python 3.13: a trixie chroot

def in_rootfs(command: list[str], env: dict[str, str] | None = None, popen: bool = False, **kwargs):
    """Run ``command`` inside the trixie root file system, with /proc and /dev mounted in a private
    mount namespace that ends with the command (so no mount is left behind, whatever happens).
    Returns ``subprocess.run``'s result, or with ``popen=True`` the running ``Popen``."""
    r = str(ROOTFS)
    script = (f"mount -t proc proc {r}/proc && mount --rbind /dev {r}/dev && mount -t sysfs sysfs {r}/sys "
              f'&& exec chroot {r} "$@"')
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "HOME": "/root", **(env or {})}
    argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "in-rootfs", *command]
    return subprocess.Popen(argv, env=env, **kwargs) if popen else subprocess.run(argv, env=env, **kwargs)


def chroot_available() -> str:
    """Why Colab's Python cannot be simulated here ("" when it can): it needs root and Debian's tools."""
    if os.geteuid() != 0:
        return "simulating Colab's Python 3.13 needs root (debootstrap, chroot); use --python host"
    missing = [t for t in ("unshare", "chroot") if shutil.which(t) is None]
    return f"missing {', '.join(missing)} (Debian: util-linux, coreutils)" if missing else ""


def rootfs(log=print) -> Path:
    """Debian trixie's root file system with Python 3.13, made once by ``debootstrap`` (about a minute)."""
    marker = ROOTFS / ".complete"
    if marker.is_file():
        return ROOTFS
    if shutil.which("debootstrap") is None:
        if shutil.which("apt-get") is None:
            raise RuntimeError("debootstrap is missing and there is no apt-get to install it (Debian: apt-get install debootstrap)")
        log("colab-sim: installing debootstrap from Debian's packages")
        subprocess.run(["apt-get", "update", "-qq"], check=True, capture_output=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "debootstrap"], check=True, capture_output=True,
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    mounted = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()
               if line.split()[1].startswith(str(ROOTFS.resolve()))]
    if mounted:  # never delete through a mount (a /dev bound into the tree would take the host's with it)
        raise RuntimeError(f"{ROOTFS} has mounts in it ({', '.join(mounted)}); unmount them before it is rebuilt")
    shutil.rmtree(ROOTFS, ignore_errors=True)
    ROOTFS.parent.mkdir(parents=True, exist_ok=True)
    log(f"colab-sim: making Debian trixie's root file system in {ROOTFS.relative_to(ROOT)} (debootstrap)")
    done = subprocess.run([*DEBOOTSTRAP, str(ROOTFS), DEBIAN_MIRROR], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"debootstrap failed ({done.returncode}):\n{(done.stdout + done.stderr)[-3000:]}")
    # the host's name resolution and certificate bundle, so that pip inside reaches the package index as here
    for name in ("etc/resolv.conf", "etc/ssl/certs/ca-certificates.crt"):
        if (Path("/") / name).is_file():
            shutil.copyfile(Path("/") / name, ROOTFS / name)
    marker.write_text(in_rootfs(["python3", "--version"], capture_output=True, text=True, check=True).stdout)
    return ROOTFS


def _pip_env() -> dict[str, str]:
    """This machine's pip settings that hold inside the root file system too (its certificate bundle is copied in)."""
    return {k: v for k, v in os.environ.items()
            if k.startswith("PIP_") and k not in ("PIP_FIND_LINKS", "PIP_CONSTRAINT", "PIP_EXTRA_INDEX_URL")}


def chroot_base_env(log=print) -> str:
    """The cached Colab stand-in environment inside the root file system; returns its path there."""
    root = rootfs(log)
    wanted = pins("3.13")
    key = hashlib.sha256(json.dumps([wanted, (root / ".complete").read_text(), GOOGLE_COLAB]).encode()).hexdigest()[:12]
    inner = f"/colab/base-{key}"
    venv = root / inner.lstrip("/")
    if (venv / ".complete").is_file():
        return inner
    for stale in (root / "colab").glob("base-*"):
        shutil.rmtree(stale, ignore_errors=True)
    log(f"colab-sim: creating the Colab stand-in environment {inner} in {ROOTFS.relative_to(ROOT)} ({len(wanted)} pins)")
    pip_env = _pip_env()
    in_rootfs(["python3", "-m", "venv", inner], check=True)
    done = in_rootfs([f"{inner}/bin/python", "-m", "pip", "install", "-q", "--disable-pip-version-check",
                      "--no-warn-script-location", *wanted], env=pip_env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"pip in the root file system failed:\n{(done.stdout + done.stderr)[-3000:]}")
    site = in_rootfs([f"{inner}/bin/python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                     capture_output=True, text=True, check=True).stdout.strip()
    colab_pkg = root / site.lstrip("/") / "google" / "colab"
    colab_pkg.mkdir(parents=True, exist_ok=True)
    (colab_pkg / "__init__.py").write_text(GOOGLE_COLAB)
    (venv / ".complete").write_text("\n".join(wanted) + "\n")
    return inner


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
    from tools import colab

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


def edition_problems(nb: dict, own_page: str) -> list[str]:
    """What makes a converted notebook noisy for a Colab reader; ``own_page`` is its page's site URL.

    Only the first cell is a "Set-up" cell; no code cell is one the site shows without running (a plotly
    twin would draw its figure a second time); every ``#anchor`` link lands on an anchor of the notebook,
    and no link leaves the notebook for its own page on the site.
    """
    bad = []
    anchors = set()
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            anchors |= set(re.findall(r'<a id="([^"]+)" name="\1"></a>', "".join(cell["source"])))
    for i, cell in enumerate(nb["cells"]):
        src = "".join(cell["source"])
        if cell["cell_type"] == "code":
            title = re.match(r"# @title (.*)", src)
            if i > 0 and title and title.group(1).lower().startswith("set-up"):
                bad.append(f"cell {i}: a second cell titled {title.group(1)!r}")
            if "skip-execution" in cell["metadata"].get("tags", []) or "(shown, not executed)" in src:
                bad.append(f"cell {i}: a code cell the site does not run")
            continue
        for target in re.findall(r"\]\(#([^)\s]+)\)", src):
            if target not in anchors:
                bad.append(f"cell {i}: link to #{target}, which no anchor of the notebook carries")
        if own_page in src:
            bad.append(f"cell {i}: a link to this notebook's own page on the site ({own_page})")
    return bad


def run_notebook(path: str, python: str, home: str, jupyter_path: str, workdir: str, timeout: int = 900) -> Result:
    """Execute one Colab notebook with nbclient in the stand-in; a second set-up run must do nothing."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    start = time.perf_counter()
    nb = nbformat.read(path, as_version=4)
    name = Path(path).name
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
    lines = first_out.strip().splitlines()  # pip's progress, then the set-up's own last line
    return Result(name, time.perf_counter() - start, "", lines[-1] if lines else "")


def key_check(snippet: str, log=print) -> str:
    """Under Colab's Python: ``python -m helpers.cache check`` on a copy of this working tree, then the
    key (``sha256`` of ``helpers.cache.normalised_source``) of ``snippet``; returns what they printed."""
    inner_base = chroot_base_env(log)
    where = ROOTFS / "sim"
    where.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="keys-", dir=where))
    try:
        repo, _ = snapshot_repo(tmp)
        (tmp / "snippet.py").write_text(snippet)
        py, inner = f"{inner_base}/bin/python", f"/sim/{tmp.name}"
        digest = ("import hashlib, pathlib; from helpers import cache; print('snippet key', hashlib.sha256("
                  f"cache.normalised_source(pathlib.Path('{inner}/snippet.py').read_text()).encode()).hexdigest())")
        done = in_rootfs(["sh", "-c", f'cd {inner}/origin && {py} -m helpers.cache check && {py} -c "{digest}"'],
                         capture_output=True, text=True)
        return done.stdout + done.stderr
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _jobs_here(jobs: list[dict], base: Path, n: int, log) -> list[Result]:
    """Run the notebook jobs, ``n`` at a time, each in a fresh layer over the environment ``base``."""
    results = []
    with ProcessPoolExecutor(max_workers=n) as pool:
        futures = []
        for job in jobs:  # one Colab session each: its own /content and its own fresh layer
            python = layer_env(base, Path(job["work"]))
            futures.append(pool.submit(run_notebook, job["notebook"], str(python), job["home"],
                                       str(Path(job["work"]) / "jupyter"), job["work"]))
        for future in as_completed(futures):
            r = future.result()
            results.append(r)
            log(r)
    return results


def simulate(only: str | None = None, jobs: int = 2, log=print, keep: bool = False,
             runtime: str = "3.13") -> list[Result]:
    """Convert and run the Colab edition in the stand-in; returns one Result per notebook.

    ``runtime`` "3.13": Colab's Python in the trixie root file system; "host": this machine's Python.
    """
    from tools import colab

    if runtime == "3.13":
        why = chroot_available()
        if why:
            raise RuntimeError(why)
        inner_base = chroot_base_env(log)
        where, inner = ROOTFS / "sim", "/sim"
    else:
        base = base_env(log)
        where, inner = SIM, str(SIM)
    where.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="run-", dir=where))
    seen = lambda p: f"{inner}/{Path(p).relative_to(where).as_posix()}"   # a path as the runner sees it
    try:
        repo, commit = snapshot_repo(tmp)
        home = tmp / "home"
        home.mkdir()
        ctx = colab.context_from_build(ROOT, ref=commit)
        subprocess.run(["git", "config", "--file", str(home / ".gitconfig"),
                        f"url.file://{seen(repo)}.insteadOf", ctx.repo_url], check=True)
        editions = tmp / "editions"
        written = [p for p in colab.write_editions(ROOT, ctx=ctx, out=editions)
                   if p.parent.parent.name == "colab" and (only is None or only in p.name)]
        log(f"colab-sim: {len(written)} notebooks under Python {runtime}, commit {commit[:12]} of the working tree, "
            f"{jobs} at a time")
        results, todo = [], []
        for p in written:
            nb = json.loads(p.read_text())
            raw, noisy = leftover_myst(nb), edition_problems(nb, ctx.page(f"chapters/{p.stem}"))
            if raw or noisy:
                results.append(Result(p.name, 0.0, "; ".join((["raw MyST markup left: " + "; ".join(raw)] if raw else [])
                                                              + noisy)))
            else:
                todo.append({"notebook": seen(p), "home": seen(home), "work": seen(tmp / "work" / p.stem)})
        report = lambda r: log(f"{'ok    ' if not r.error else 'FAILED'} {r.notebook:<50} {r.seconds:6.1f} s  "
                               f"{r.error or r.setup_line}")
        for r in results:
            report(r)
        if runtime == "host":
            results += _jobs_here(todo, base, jobs, report)
        else:
            (tmp / "jobs.json").write_text(json.dumps(todo))
            runner = in_rootfs(["sh", "-c", 'cd "$0" && exec "$@"', seen(repo), f"{inner_base}/bin/python", "-m",
                                "tools.colab_sim", "--run-jobs", seen(tmp / "jobs.json"), "--jobs", str(jobs)],
                               env=_pip_env(), popen=True, stdout=subprocess.PIPE, text=True)
            for line in runner.stdout:   # one JSON line per notebook, as each finishes
                if line.startswith("{"):
                    r = Result(**json.loads(line))
                    results.append(r)
                    report(r)
            runner.wait()
            missing = {Path(j["notebook"]).name for j in todo} - {r.notebook for r in results}
            results += [Result(name, 0.0, f"the runner in the root file system exited {runner.returncode} "
                                          f"before reporting it") for name in sorted(missing)]
        return sorted(results, key=lambda r: r.notebook)
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="run only notebooks whose name contains this")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--python", choices=("3.13", "host"), default="3.13",
                        help="3.13: Colab's Python, in a Debian trixie chroot (root); host: this machine's")
    parser.add_argument("--keep", action="store_true", help="keep the run's folder under _build/colab-sim")
    parser.add_argument("--run-jobs", help=argparse.SUPPRESS)  # inside the root file system: run these notebooks
    args = parser.parse_args(argv)
    if args.run_jobs:
        from dataclasses import asdict
        _jobs_here(json.loads(Path(args.run_jobs).read_text()), Path(sys.prefix), args.jobs,   # the chroot's base
                   lambda r: print(json.dumps(asdict(r)), flush=True))
        return 0
    start = time.perf_counter()
    results = simulate(args.only, args.jobs, keep=args.keep, runtime=args.python)
    ok = sum(not r.error for r in results)
    print(f"colab-sim: {ok}/{len(results)} notebooks ran clean under Python {args.python} in "
          f"{time.perf_counter() - start:.0f} s")
    return 0 if ok == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
