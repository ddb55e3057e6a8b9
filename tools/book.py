"""Build the book: execute every notebook with papermill, then render the site with Jupyter Book.

    python -m tools.book                 # execute (HEAVY_EVAL=False) + render to _build/html
    python -m tools.book --heavy         # retrain the heavy sections and rewrite cache/
    python -m tools.book --force         # re-execute even notebooks whose inputs are unchanged
    python -m tools.book --only 14_45    # execute only matching notebooks (the site still renders all)
    python -m tools.book --no-render     # execute only
    python -m tools.book --solutions hidden   # a site without the exercise solutions (a term in progress)

Executed copies go to ``_build/executed/chapters/`` beside a copy of the book's other
sources; Jupyter Book renders that folder (``execute_notebooks: "off"``, warnings are
errors). A notebook is re-executed only when its inputs changed: its source, the
helpers package, the data, the cache, or the parameters.
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:
    # `python tools/book.py`, the command that helpers/ and the cache manifests quote (neither changes
    # for this: helpers/ is hashed into the cache keys): run it as the module it is, from the root
    import os
    import sys

    os.chdir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    os.execv(sys.executable, [sys.executable, "-m", "tools.book", *sys.argv[1:]])

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from tools import version
from tools.notebooks import ROOT, as_text, read, source_notebooks

CHAPTERS = ROOT / "chapters"
BUILD = ROOT / "_build"
STAGE = BUILD / "executed"
#: What the book's source holds besides the notebooks; copied next to the executed copies.
BOOK_FILES = ["_toc.yml", "intro.md", "references.md", "references.bib"]  # + _config.yml, see staged_config
BOOK_DIRS = ["_ext", "_assets"]
#: Inputs whose change invalidates every executed notebook.
SHARED_INPUTS = ["helpers", "data", "cache"]


_NUMBER_WORDS = {1: "One", 2: "Two", 3: "Three", 4: "Four", 5: "Five", 6: "Six"}


class NotebookFailed(RuntimeError):
    """A notebook raised while executing; the message names the notebook and the cell."""


@dataclass
class Executed:
    notebook: str
    seconds: float
    skipped: bool


def input_hash(notebook: Path, parameters: dict) -> str:
    """Hash of everything a notebook's outputs depend on (source, helpers, data, cache, params)."""
    digest = hashlib.sha256(notebook.read_bytes())
    for folder in SHARED_INPUTS:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(path.relative_to(ROOT).as_posix().encode())
                digest.update(hashlib.sha256(path.read_bytes()).digest())
    digest.update(json.dumps(parameters, sort_keys=True).encode())
    return digest.hexdigest()


def _failed_cell(src: Path, dst: Path) -> str:
    """'cell N `first line`' of the cell that raised, N counted in the *source* notebook."""
    executed = read(dst)["cells"] if dst.exists() else []
    failed = next((c for c in executed if any(o.get("output_type") == "error" for o in c.get("outputs", []))), None)
    if failed is None:
        return "an unknown cell"
    source = as_text(failed["source"])
    index = next((i for i, c in enumerate(read(src)["cells"]) if as_text(c["source"]) == source), "?")
    first = next((line for line in source.splitlines() if line.strip()), "")
    return f"cell {index} `{first[:80]}`"


def _kernel_manager_class():
    """The kernel manager the build uses: IPC sockets, and no interrupt at shutdown.

    - IPC transport (Unix sockets in Jupyter's runtime folder) instead of TCP on localhost:
      no port for two kernels to race for, and no "Kernel is running over TCP without
      encryption" warning from every kernel (the kernel is reachable only through a file).
      Windows has no IPC transport, so there the default TCP stays.
    - jupyter_client's shutdown first sends the kernel SIGINT, then the shutdown request. A
      kernel still finishing its last message handler (likely on a loaded machine) logs
      ``ERROR | KeyboardInterrupt caught in kernel`` for it, a traceback-like line after a
      successful run. The build shuts kernels down only after the last cell has replied, so
      it skips that interrupt; interrupts at any other time are unchanged.
    """
    import tempfile
    import uuid

    from jupyter_client.manager import AsyncKernelManager
    from traitlets import CaselessStrEnum, default

    class BookKernelManager(AsyncKernelManager):
        transport = CaselessStrEnum(["tcp", "ipc"], default_value="ipc" if os.name == "posix" else "tcp",
                                    config=True)

        @default("ip")
        def _ip_default(self):  # jupyter_client's default for IPC, "kernel-ipc" in the cwd, is shared
            if self.transport == "ipc":
                return os.path.join(tempfile.gettempdir(), f"book-kernel-{uuid.uuid4().hex[:12]}-ipc")
            return "127.0.0.1"

        async def _async_interrupt_kernel(self) -> None:
            if self.shutting_down:
                return
            await super()._async_interrupt_kernel()

    return BookKernelManager


def describe_html_figure(cell) -> None:
    """Give an HTML figure (plotly) its alt text: myst-nb applies ``mystnb.image.alt`` to ``<img>``
    only, so the alt text is put in front of the figure as visually hidden text for screen readers."""
    import html

    alt = cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt")
    if cell.get("cell_type") != "code" or not alt:
        return
    for out in cell.get("outputs", []):
        body = out.get("data", {}).get("text/html")
        if body is None:
            continue
        text = "".join(body) if isinstance(body, list) else body
        if "plotly-graph-div" in text and 'class="visually-hidden book-alt"' not in text:
            out["data"]["text/html"] = f'<p class="visually-hidden book-alt">{html.escape(alt)}</p>\n' + text


def execute_notebook(src: Path, dst: Path, parameters: dict, threads: int = 1) -> float:
    """Execute ``src`` with papermill into ``dst``; returns the wall time in seconds.

    The kernel runs in ``src``'s folder with BOOK_BUILD=1. On failure raises
    ``NotebookFailed`` naming the notebook, the cell (index and first line) and the
    error; the partly executed copy stays at ``dst`` for inspection.
    """
    import nbformat
    import papermill as pm

    kernel_env = {"BOOK_BUILD": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    kernel_env.update({v: str(threads) for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")})
    saved = {k: os.environ.get(k) for k in kernel_env}
    os.environ.update(kernel_env)  # the kernel inherits this process's environment
    dst.parent.mkdir(parents=True, exist_ok=True)
    # hash the inputs before running: a source edited while the kernel runs must not be
    # recorded as the one that produced these outputs
    inputs = input_hash(src, parameters)
    start = time.perf_counter()
    try:
        pm.execute_notebook(
            str(src), str(dst), parameters=parameters, cwd=str(src.parent),
            kernel_name="python3", progress_bar=False, log_output=False,
            kernel_manager_class=_kernel_manager_class(),
        )
    except pm.PapermillExecutionError as err:
        raise NotebookFailed(
            f"{src.relative_to(ROOT)}: {_failed_cell(src, dst)} (execution count {err.exec_count}) "
            f"raised {err.ename}: {err.evalue}"
        ) from None
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    seconds = time.perf_counter() - start
    nb = nbformat.read(str(dst), as_version=4)
    for cell in nb.cells:  # hide papermill's injected parameters in the site
        tags = cell.metadata.setdefault("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            tags.append("remove-cell")
        describe_html_figure(cell)
    nb.metadata["book"] = {
        "input_hash": inputs,
        "exec_seconds": round(seconds, 2),
        "parameters": parameters,
    }
    nbformat.write(nb, str(dst))
    return seconds


def _execute_one(src: str, parameters: dict, threads: int, force: bool) -> Executed:
    src_path = Path(src)
    dst = STAGE / "chapters" / src_path.name
    if not force and dst.exists():
        meta = read(dst).get("metadata", {}).get("book", {})
        if meta.get("input_hash") == input_hash(src_path, parameters):
            return Executed(src_path.name, meta.get("exec_seconds", 0.0), skipped=True)
    try:
        seconds = execute_notebook(src_path, dst, parameters, threads)
    except NotebookFailed:
        raise
    except Exception as err:  # the kernel itself failed (e.g. two kernels raced for a port): retry once
        print(f"        retry {src_path.stem}: kernel failure ({type(err).__name__}: {err})", flush=True)
        seconds = execute_notebook(src_path, dst, parameters, threads)
    return Executed(src_path.name, seconds, False)


def execute_all(heavy: bool, force: bool, only: str | None, jobs: int) -> list[Executed]:
    """Execute the book's notebooks, ``jobs`` at a time; raises ``NotebookFailed`` listing failures."""
    notebooks = [p for p in source_notebooks(ROOT) if only is None or only in p.name]
    if not notebooks:
        raise SystemExit(f"no notebook in {CHAPTERS} matches {only!r}")
    parameters = {"HEAVY_EVAL": heavy}
    threads = max(1, (os.cpu_count() or 1) // max(1, min(jobs, len(notebooks))))
    done, failures = [], []
    width = len(str(len(notebooks)))
    print(f"executing {len(notebooks)} notebooks, {jobs} at a time, {threads} thread(s) each"
          f"{' (HEAVY_EVAL=True)' if heavy else ''}", flush=True)
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(_execute_one, str(p), parameters, threads, force): p for p in notebooks}
        for count, future in enumerate(as_completed(futures), start=1):
            prefix = f"[{count:>{width}}/{len(notebooks)}]"
            try:
                result = future.result()
            except NotebookFailed as err:
                failures.append(str(err))
                print(f"{prefix} FAILED  {err}", flush=True)
                continue
            done.append(result)
            state = "cached " if result.skipped else "ran    "
            print(f"{prefix} {state} {Path(result.notebook).stem:<48} {result.seconds:6.1f} s", flush=True)
    if failures:
        raise NotebookFailed(f"{len(failures)} of {len(notebooks)} notebooks failed:\n  " + "\n  ".join(failures))
    return sorted(done, key=lambda r: r.notebook)


def stage_sources() -> None:
    """Copy the book's non-notebook sources next to the executed notebooks (mtimes kept)."""
    STAGE.mkdir(parents=True, exist_ok=True)
    for name in BOOK_FILES:
        shutil.copy2(ROOT / name, STAGE / name)
    write_staged_config(STAGE / "_config.yml")
    for name in BOOK_DIRS:
        shutil.copytree(ROOT / name, STAGE / name, dirs_exist_ok=True, copy_function=shutil.copy2)
    # drop executed copies whose source notebook no longer exists
    sources = {p.name for p in source_notebooks(ROOT)}
    for stale in (STAGE / "chapters").glob("*.ipynb"):
        if stale.name not in sources:
            stale.unlink()


def heavy_sections(root: Path = ROOT) -> list[dict]:
    """The heavy sections, read from the one place that knows them: the cache.

    Each ``cache/<name>/manifest.json`` records the command that retrains it (``tools/book.py
    --only 14_NN --heavy``) and what that retrain cost (``wall_time_s``). Returns, in section order,
    ``{"section": "14.48", "stem": "14_48_...", "cache": "bottleneck", "minutes": 20, "cpus": 2}`` per entry.
    The landing page's list is made from this (``heavy_sections`` in ``myst_substitutions``) and
    ``tests/test_docs.py`` holds the README's table to it.
    """
    import re

    found = []
    for manifest in sorted((root / "cache").glob("*/manifest.json")):
        meta = json.loads(manifest.read_text(encoding="utf-8"))
        m = re.search(r"--only (\d+_\d+)\b", meta.get("regenerate", ""))
        if not m:
            raise ValueError(f"{manifest.relative_to(root)}: its regenerate command names no section (--only 14_NN)")
        stems = [p.stem for p in source_notebooks(root) if p.stem.startswith(f"{m.group(1)}_")]
        if len(stems) != 1:
            raise ValueError(f"{manifest.relative_to(root)}: --only {m.group(1)} matches {len(stems)} notebooks")
        found.append({"section": m.group(1).replace("_", "."), "stem": stems[0], "cache": manifest.parent.name,
                      "minutes": round(meta["wall_time_s"] / 60), "cpus": meta["hardware"]["cpu_count"]})
    return sorted(found, key=lambda h: h["section"])


def heavy_sections_markdown(root: Path = ROOT) -> str:
    """The landing page's clause naming every heavy section, its cache and what its retrain took."""
    heavy = heavy_sections(root)
    same_cpus = len({h["cpus"] for h in heavy}) == 1
    items = [f"{{doc}}`§{h['section']} <chapters/{h['stem']}>` (`cache/{h['cache']}`, about {h['minutes']} min"
             + ("" if same_cpus else f" on {h['cpus']} CPU cores") + ")" for h in heavy]
    listed = ", ".join(items[:-1]) + f" and {items[-1]}" if len(items) > 1 else "".join(items)
    where = f" on {heavy[0]['cpus']} CPU cores" if same_cpus and heavy else ""
    return f"{listed}; the times are what retraining took{where}"


def staged_config(config: dict, solutions: str = "shown") -> dict:
    """The ``_config.yml`` Jupyter Book renders, from the book's own one.

    The repository URL and the Colab edition's branch are defined once (``repository.url``,
    ``edition.colab_branch``); this puts them where sphinx-book-theme reads them, so the
    launch button of every page opens ``<colab>/github/<org>/<repo>/blob/<branch>/chapters/<nb>.ipynb``,
    the Colab edition. The ``edition`` block is ours, not Jupyter Book's, and is removed.

    Jupyter Book turns ``html.use_repository_button`` (and the issue and edit switches) into theme
    options only when ``sphinx.config`` sets no ``html_theme_options`` of its own; ours does, and
    replaces the whole dict, so they are copied here. The edit button opens the source notebook on
    ``repository.branch`` (``book_source_branch``, read by ``_ext/book_header.py``), not on the
    Colab branch the launch buttons need.

    ``solutions="hidden"`` (a term in progress): the launch buttons open the student edition
    (``edition.student_branch``), and the download menu offers neither the Colab notebook nor the
    PDF, which both carry the solutions.
    """
    import copy

    staged = copy.deepcopy(config)
    edition = staged.pop("edition", None) or {}
    sphinx_config = staged.setdefault("sphinx", {}).setdefault("config", {})
    theme = sphinx_config.setdefault("html_theme_options", {})
    theme["repository_url"] = staged["repository"]["url"].rstrip("/")
    if solutions not in ("shown", "hidden"):
        raise ValueError(f"solutions must be 'shown' or 'hidden', got {solutions!r}")
    hidden = solutions == "hidden"
    theme["repository_branch"] = _editions().edition_branches({"edition": edition})["student" if hidden else "colab"]
    theme["path_to_docs"] = ""
    for button in ("use_repository_button", "use_issues_button", "use_edit_page_button"):
        if button in (staged.get("html") or {}):
            theme[button] = bool(staged["html"][button])
    sphinx_config["book_source_branch"] = staged["repository"].get("branch", "main")
    from tools.pdf import PDF  # the download menus offer it when `make pdf` has built it (_ext/book_header.py)

    sphinx_config["book_pdf"] = "" if hidden else str(PDF)
    sphinx_config["book_solutions"] = solutions
    sphinx_config["html_copy_source"] = False  # the raw MyST sources are not handed out (book_header.py)
    # intro.md names the heavy sections through a substitution made from the cache (heavy_sections)
    subs = sphinx_config.setdefault("myst_substitutions", {})
    heavy = heavy_sections()
    subs.update(heavy_sections=heavy_sections_markdown(), heavy_count=_NUMBER_WORDS.get(len(heavy), str(len(heavy))))
    theme["launch_buttons"] = {"colab_url": staged.get("launch_buttons", {}).get("colab_url",
                                                                                "https://colab.research.google.com")}
    return staged


def write_staged_config(path: Path, solutions: str = "shown") -> None:
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    text = "# Written by tools/book.py from the book's _config.yml; edit that one.\n" + yaml.safe_dump(
        staged_config(config, solutions), sort_keys=False, allow_unicode=True)
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def stage_without_solutions() -> Path:
    """A copy of ``_build/executed`` whose notebooks lack the exercise solutions; returns its folder.

    A copy, so that the executed notebooks (and their input hashes) stay whole for the next build.
    """
    import nbformat

    strip_solutions = _editions().strip_solutions

    hidden = BUILD / "executed-nosolutions"
    shutil.rmtree(hidden, ignore_errors=True)
    shutil.copytree(STAGE, hidden, copy_function=shutil.copy2)
    for path in sorted((hidden / "chapters").glob("*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        nbformat.write(strip_solutions(nb), str(path))
    write_staged_config(hidden / "_config.yml", solutions="hidden")
    return hidden


def write_editions() -> None:
    """The Colab and student editions (``_build/colab``, ``_build/student``), from this build; each
    page's download menu offers its two notebooks, copied into the site's ``_editions/``."""
    editions = _editions()
    written = editions.write_editions(ROOT)
    print(f"editions: {len(written) // len(editions.EDITIONS)} notebooks each in "
          + ", ".join(f"_build/{e}/chapters" for e in editions.EDITIONS), flush=True)
    site = BUILD / "html" / "_editions"
    for edition in editions.EDITIONS:
        shutil.rmtree(site / edition, ignore_errors=True)
        shutil.copytree(BUILD / edition / "chapters", site / edition, copy_function=shutil.copy2)


def _editions():
    from tools import colab

    return colab


def render(stage: Path = STAGE) -> float:
    """Render ``stage`` (default ``_build/executed``) to ``_build/html`` with Jupyter Book; warnings are errors.

    Sphinx's progress goes to ``_build/render.log``; on failure its warnings and errors are
    printed. Returns the wall time in seconds.
    """
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb), "build", str(stage), "--path-output", str(ROOT), "-W", "-n", "--keep-going", "--all"]
    log = BUILD / "render.log"
    # the raw MyST sources an older build copied there (html_copy_source is off now: staged_config)
    shutil.rmtree(BUILD / "html" / "_sources", ignore_errors=True)
    print("rendering the site with Jupyter Book ...", flush=True)
    start = time.perf_counter()
    env = {**os.environ, version.ENV_VAR: version.book_version(ROOT)}
    with log.open("w") as out:
        result = subprocess.run(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env)
    if result.returncode != 0:
        lines = log.read_text(errors="replace").splitlines()
        problems = [line for line in lines if "WARNING" in line or "ERROR" in line or "Error" in line]
        print("\n".join(problems[-40:] or lines[-40:]), file=sys.stderr)
        raise SystemExit(f"Jupyter Book failed (exit {result.returncode}); the full log is {log}")
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--heavy", action="store_true", help="HEAVY_EVAL=True: retrain and rewrite cache/")
    parser.add_argument("--force", action="store_true", help="re-execute unchanged notebooks too")
    parser.add_argument("--only", help="execute only notebooks whose file name contains this")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="notebooks run at once")
    parser.add_argument("--no-render", action="store_true", help="execute only; do not render the site")
    parser.add_argument("--solutions", choices=("shown", "hidden"), default="shown",
                        help="hidden: render the site without the exercise solutions (make book SOLUTIONS=hidden)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    start = time.perf_counter()
    try:
        executed = execute_all(args.heavy, args.force, args.only, args.jobs)
    except NotebookFailed as err:
        print(f"\n{err}", file=sys.stderr)
        return 1
    executed_s = time.perf_counter() - start
    stage_sources()
    if not args.no_render:
        seconds = render(stage_without_solutions() if args.solutions == "hidden" else STAGE)
        print(f"rendered the site in {seconds:.1f} s", flush=True)
        write_editions()
    total = time.perf_counter() - start
    ran = sum(not r.skipped for r in executed)
    print(f"\nexecuted {ran} of {len(executed)} notebooks in {executed_s:.1f} s; "
          f"build total {total:.1f} s; site: {BUILD / 'html' / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
