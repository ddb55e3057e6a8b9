"""The guard check: is every number the prose shows pinned down by a claims test?

    python -m tools.claims_check                         # whole book, this checkout
    python -m tools.claims_check --section 14_50         # one section (repeatable)
    python -m tools.claims_check --root /work/wt/s45 --section 14_45   # another checkout
    python -m tools.claims_check --json guard.json       # every value, its perturbations, the tests
    python -m tools.claims_check --require 1.0           # exit 1 if the book's score is below 100 %
    python -m tools.claims_check --shrink-pending        # tighten tests/claims_guard_pending.txt (never loosens)

What it does, for every executed notebook ``<root>/_build/executed/chapters/14_NN_*.ipynb``:

1. **Shown values.** Every glue name a markdown cell shows, in any glue form the book may use:
   the roles ``{glue}`` ``{glue:}`` ``{glue:any}`` ``{glue:text}`` (with or without a format,
   ``name:.2f``) ``{glue:md}`` ``{glue:math}`` and the directives of the same names, also inside
   admonitions and other directives. The markdown is parsed with myst-parser's markdown-it,
   not with regular expressions. A shown value counts if it is a number (``int``/``float``; not
   ``bool``). ``str`` values are skipped (shapes such as ``"(2, 4, 7)"``, method names: they are
   not numbers, and a test should pin them by equality), and so are values glued with
   ``glue(name, value, setting=True)`` (author-chosen settings; see CONTRIBUTING.md).
2. **Perturbations** of each shown value ``v``:
   - ``float``: ``v × 0.5`` and ``v × 1.5``; a *tolerance-like* value, ``0 < |v| < 1e-4``
     (a difference, an error, "agrees to 1e-7"), is multiplied by ``1e4`` instead, and an exact
     ``0.0`` becomes ``1e-4`` (the smallest value the tolerance rule no longer calls tolerance-like);
   - ``int``: ``round(v × 0.5)`` and ``round(v × 1.5)``; where the rounded value equals ``v``
     (``v = 0``) it is ``v − 1`` and ``v + 1`` instead.
3. **Rerun** the section's claims tests ``<root>/tests/test_ch14_NN.py`` in-process, once per
   perturbation, with only that one value changed in what the fixtures ``glued`` and ``g`` hand
   out. Nothing is re-executed. One pytest session runs the selected sections: every test runs
   once unperturbed while the check records which glued names it reads (in its body, or in a
   fixture it uses); then each reader of a shown name is called again per perturbation (a test
   that reads it through one of its fixtures is set up afresh, fixtures and all).
4. A value is **guarded** when every one of its perturbations makes at least one test fail
   that passed unperturbed. A test that fails or errors *unperturbed* is reported separately and
   never counts as a guard; a test that errors in set-up under a perturbation counts, since only
   the perturbation changed.

Tests must read glued values through the ``glued`` / ``g`` fixtures of tests/conftest.py (or a
module fixture built from them); a value read any other way is invisible to the check. A glued
value read from another section's notebook (``glued("14_57_...")``) is perturbed there, not here.

The report lists each unguarded value (section, name, value, the perturbation no test noticed)
and a per-section score guarded/shown; ``--json`` writes everything.
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:  # `python tools/claims_check.py`: tools/ is a package
    raise SystemExit("run it as a module, from the repository root: python -m tools.claims_check ...")

import argparse
import contextlib
import io
import json
import math
import os
import shlex
import sys
import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tools.notebooks import EXECUTED, RAW_DIRECTIVES, ROOT, executed_notebooks, glued, markdown_cells, read, walk_markdown
from tools.verdicts import split_sentences

#: glue roles and directives, by name, that put a glued value into the page
GLUE_FORMS = {"glue", "glue:", "glue:any", "glue:text", "glue:md", "glue:math", "glue:figure"}
TOLERANCE_LIKE = 1e-4


def glue_reference(form: str, target: str) -> tuple[str | None, str]:
    """``(document, name)`` of a glue role/directive target: ``name``, ``name:.2f`` (glue:text),
    ``path/to/other.ipynb::name``."""
    target = target.strip()
    document = None
    if "::" in target:
        document, _, target = target.partition("::")
        document = Path(document).stem
    if form == "glue:text":
        target = target.split(":", 1)[0]
    return document, target.strip()


def shown_glue_names(text: str) -> list[tuple[str | None, str, str]]:
    """``(document or None, name, form)`` for every glue role or directive in a markdown text."""
    found = []
    for piece in walk_markdown(text):
        if piece.kind == "inline":
            for child in piece.token.children or []:
                if child.type == "myst_role" and child.meta.get("name") in GLUE_FORMS:
                    form = child.meta["name"]
                    found.append((*glue_reference(form, child.content), form))
        elif piece.kind == "directive":
            if piece.name in GLUE_FORMS:
                found.append((*glue_reference(piece.name, piece.argument), piece.name))
            if piece.argument and piece.name not in GLUE_FORMS | RAW_DIRECTIVES:
                # a directive's title (admonition) is MyST inline text, and may hold roles
                found.extend(shown_glue_names(piece.argument))
    return found


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def perturbations(value: int | float) -> list[tuple[str, int | float]]:
    """The (label, perturbed value) pairs a shown number must not survive (see the module doc)."""
    if isinstance(value, int):
        out = []
        for label, factor, step in (("x0.5", 0.5, -1), ("x1.5", 1.5, +1)):
            new = round(value * factor)
            if new == value:
                label, new = f"{step:+d}", value + step
            out.append((label, new))
        return out
    if not math.isfinite(value):
        return []
    if value == 0.0:
        return [("0->1e-4", TOLERANCE_LIKE)]
    if abs(value) < TOLERANCE_LIKE:
        return [("x1e4", value * 1e4)]
    return [("x0.5", value * 0.5), ("x1.5", value * 1.5)]


@dataclass
class Shown:
    section: str
    stem: str
    name: str
    value: Any
    cells: list[int]
    perturbations: list[tuple[str, Any]]
    readers: list[str] = field(default_factory=list)       # tests that read it unperturbed
    caught: dict[str, list[str]] = field(default_factory=dict)   # label -> tests that failed
    guarded: bool = False
    reason: str = ""


def section_of(stem: str) -> str:
    return stem[:5]


def claim_sentences_text(text: str) -> str:
    """The verdict sentences of one markdown cell (those marked ``<!-- claim: id -->``, tools/verdicts.py),
    joined: the text whose numbers a claim's test must pin down."""
    return "\n".join(sentence for piece in walk_markdown(text) if piece.kind == "inline"
                     for sentence, ids in split_sentences(piece.token.content) if ids)


def shown_values(executed: Path, claims_only: bool = False) -> tuple[list[Shown], dict]:
    """The numeric, non-setting glued values that the notebook's markdown shows (with ``claims_only``:
    that its verdict sentences show), and a tally of what was skipped (``str``, ``bool``, settings,
    names shown but never glued)."""
    nb = read(executed)
    stem = executed.stem
    outputs = glued(nb)
    where: dict[str, list[int]] = defaultdict(list)
    foreign = []
    for index, text in markdown_cells(nb):
        if claims_only:
            text = claim_sentences_text(text)
        for document, name, _form in shown_glue_names(text):
            if document and document != stem:
                foreign.append(f"{document}::{name}")
                continue
            if index not in where[name]:
                where[name].append(index)
    skipped = {"setting": [], "str": [], "bool": [], "not glued": [], "not finite": [], "other doc": foreign}
    shown = []
    for name, cells in where.items():
        if name not in outputs:
            skipped["not glued"].append(name)
            continue
        out = outputs[name]
        if isinstance(out.value, bool):
            skipped["bool"].append(name)
        elif not is_number(out.value):
            skipped["str"].append(name)
        elif out.setting:
            skipped["setting"].append(name)
        elif not perturbations(out.value):
            skipped["not finite"].append(name)
        else:
            shown.append(Shown(section_of(stem), stem, name, out.value, cells, perturbations(out.value)))
    return shown, skipped


# ------------------------------------------------------------------------ the pytest plugin


class _State:
    """What the glued views read and hand out: the perturbation in force and who is reading."""

    def __init__(self):
        self.perturb: tuple[str, str, Any] | None = None  # (stem, name, value)
        self.reads: set | None = None                     # collects (stem, name) during a call
        self.fixture_stack: list[str] = []
        self.fixture_reads: dict[str, set] = defaultdict(set)

    def read(self, stem, name):
        if self.fixture_stack and self.fixture_stack[-1] not in ("g", "glued"):
            for fixture in self.fixture_stack:
                self.fixture_reads[fixture].add((stem, name))
        elif self.reads is not None:
            self.reads.add((stem, name))


class GluedView(Mapping):
    """A read-only view of one notebook's glued values that records reads and applies the
    perturbation in force. Tests see it wherever they saw the dict."""

    def __init__(self, stem: str, base: Mapping, state: _State):
        self._stem, self._base, self._state = stem, base, state

    def __getitem__(self, name):
        value = self._base[name]
        self._state.read(self._stem, name)
        p = self._state.perturb
        if p is not None and p[0] == self._stem and p[1] == name:
            return p[2]
        return value

    def __contains__(self, name):
        return name in self._base

    def __iter__(self):
        return iter(self._base)

    def __len__(self):
        return len(self._base)

    def copy(self) -> dict:
        """A plain dict of the values as handed out now (every key counts as read)."""
        return dict(self)

    def __repr__(self):
        return f"GluedView({self._stem!r}, {len(self._base)} values)"


def _stem_of_module(module) -> str | None:
    return getattr(module, "STEM", None) if module is not None else None


class GuardPlugin:
    """Runs the selected claims tests unperturbed, records reads, then reruns readers per perturbation."""

    def __init__(self, targets: dict[tuple[str, str], Shown]):
        self.state = _State()
        self.targets = targets                    # (stem, name) -> Shown
        self.baseline: dict[str, str] = {}        # nodeid -> passed/failed/error/skipped
        self.baseline_detail: dict[str, str] = {}
        self.call_reads: dict[str, set] = {}      # nodeid -> {(stem, name)}
        self.collect_errors: dict[str, str] = {}
        self.items = []
        self.plain = False                        # stage 2: let pytest call the test itself

    # -- fixtures: wrap what `glued` and `g` hand out
    def _wrap(self, argname, result, request):
        state = self.state
        if isinstance(result, GluedView):
            return result
        if argname == "glued" and callable(result):
            views: dict[str, GluedView] = {}

            def glued_view(stem, _orig=result):
                base = _orig(stem)
                if isinstance(base, GluedView):
                    return base
                if stem not in views or views[stem]._base is not base:
                    views[stem] = GluedView(stem, base, state)
                return views[stem]

            glued_view.__wrapped__ = result
            return glued_view
        if argname == "g" and isinstance(result, Mapping):
            stem = _stem_of_module(getattr(request, "module", None))
            if stem:
                return GluedView(stem, result, state)
        return result

    # -- collection problems are the section's errors, not guards
    def pytest_collectreport(self, report):
        if report.failed:
            self.collect_errors[report.nodeid] = str(report.longrepr)[-2000:]

    def _call(self, pyfuncitem):
        testargs = {arg: pyfuncitem.funcargs[arg] for arg in pyfuncitem._fixtureinfo.argnames}
        return pyfuncitem.obj(**testargs)

    def _fails(self, pyfuncitem) -> str | None:
        """Call the test body; the exception's type name if it failed, None if it passed/skipped."""
        import _pytest.outcomes as outcomes

        try:
            self._call(pyfuncitem)
        except outcomes.Skipped:
            return None
        except (Exception, outcomes.Failed) as exc:  # noqa: BLE001 - any failure is a failure
            return type(exc).__name__
        return None

    def _perturbable(self, item, reads):
        stem = _stem_of_module(getattr(item, "module", None))
        return sorted(k for k in reads if k in self.targets and k[0] == stem)

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        if self.plain:
            return None
        state = self.state
        state.reads = reads = set()
        try:
            self._call(pyfuncitem)  # the unperturbed run: exceptions go to pytest as usual
        finally:
            state.reads = None
            self.call_reads[pyfuncitem.nodeid] = reads
        for key in self._perturbable(pyfuncitem, reads):
            shown = self.targets[key]
            shown.readers.append(pyfuncitem.nodeid)
            for label, value in shown.perturbations:
                state.perturb = (*key, value)
                try:
                    failed = self._fails(pyfuncitem)
                finally:
                    state.perturb = None
                if failed:
                    shown.caught.setdefault(label, []).append(f"{pyfuncitem.nodeid} ({failed})")
        return True

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session):
        from _pytest.runner import runtestprotocol

        items = self.items = list(session.items)
        for i, item in enumerate(items):
            nextitem = items[i + 1] if i + 1 < len(items) else None
            reports = runtestprotocol(item, nextitem=nextitem, log=False)
            self.baseline[item.nodeid], self.baseline_detail[item.nodeid] = _outcome(reports)
        # a test whose unperturbed run failed guards nothing: undo what its calls recorded
        for shown in self.targets.values():
            for nodeid in list(shown.readers):
                if self.baseline.get(nodeid) != "passed":
                    shown.readers.remove(nodeid)
                    for label in list(shown.caught):
                        shown.caught[label] = [t for t in shown.caught[label] if not t.startswith(nodeid + " ")]
                        if not shown.caught[label]:
                            del shown.caught[label]
        # names read while a fixture was set up: rerun its users from a fresh set-up
        self.plain = True
        try:
            for fixture, keys in self.state.fixture_reads.items():
                users = [it for it in items if fixture in getattr(it, "fixturenames", ())
                         and self.baseline.get(it.nodeid) == "passed"]
                for item in users:
                    for key in self._perturbable(item, keys):
                        shown = self.targets[key]
                        if item.nodeid not in shown.readers:
                            shown.readers.append(item.nodeid)
                        for label, value in shown.perturbations:
                            if any(t.startswith(item.nodeid + " ") for t in shown.caught.get(label, [])):
                                continue
                            self.state.perturb = (*key, value)
                            try:
                                reports = runtestprotocol(item, nextitem=None, log=False)
                            finally:
                                self.state.perturb = None
                            status, detail = _outcome(reports)
                            if status != "passed" and status != "skipped":
                                shown.caught.setdefault(label, []).append(f"{item.nodeid} ({status} via fixture {fixture})")
        finally:
            self.plain = False
        return True


def _outcome(reports) -> tuple[str, str]:
    for rep in reports:
        if rep.failed:
            kind = "failed" if rep.when == "call" else "error"
            return kind, f"{rep.when}: " + str(rep.longrepr)[-1500:]
    if any(rep.skipped for rep in reports):
        return "skipped", ""
    return "passed", ""


def _install_fixture_wrapper(plugin: GuardPlugin):
    """The fixture hook wrapper, bound to the plugin."""

    class _Hooks:
        @pytest.hookimpl(wrapper=True)
        def pytest_fixture_setup(self, fixturedef, request):
            plugin.state.fixture_stack.append(fixturedef.argname)
            try:
                result = yield
            finally:
                plugin.state.fixture_stack.pop()
            wrapped = plugin._wrap(fixturedef.argname, result, request)
            if wrapped is not result and fixturedef.cached_result is not None:
                fixturedef.cached_result = (wrapped, *fixturedef.cached_result[1:])
            return wrapped

    return _Hooks()


# ------------------------------------------------------------------------ the check


@dataclass
class SectionResult:
    section: str
    stem: str
    shown: int
    guarded: int
    tests: int = 0
    test_file: str = ""
    skipped: dict = field(default_factory=dict)
    baseline_failures: dict = field(default_factory=dict)
    collect_errors: dict = field(default_factory=dict)

    @property
    def score(self) -> float:
        return self.guarded / self.shown if self.shown else 1.0


@dataclass
class Report:
    root: str
    sections: list[SectionResult]
    values: list[Shown]
    seconds: float

    @property
    def shown(self):
        return sum(s.shown for s in self.sections)

    @property
    def guarded(self):
        return sum(s.guarded for s in self.sections)

    @property
    def score(self):
        return self.guarded / self.shown if self.shown else 1.0

    def unguarded(self) -> list[Shown]:
        return [v for v in self.values if not v.guarded]

    def to_json(self) -> dict:
        return {
            "root": self.root, "seconds": round(self.seconds, 2),
            "shown": self.shown, "guarded": self.guarded, "score": self.score,
            "sections": [{**asdict(s), "score": s.score} for s in self.sections],
            "values": [asdict(v) for v in self.values],
        }


def run_check(root: Path | str = ROOT, sections: list[str] | None = None,
              quiet: bool = True, claims_only: bool = False) -> Report:
    """Run the guard check on a checkout whose book is built; returns a Report.

    ``sections``: section ids such as ``"14_50"`` (default: every executed notebook).
    ``claims_only``: perturb only the numbers that verdict sentences show (``<!-- claim: id -->``,
    tools/verdicts.py): a number the prose only shows needs no band, the glue makes it the computed value.
    """
    start = time.perf_counter()
    root = Path(root).resolve()
    executed_dir = root / EXECUTED
    if not executed_dir.is_dir():
        raise FileNotFoundError(f"{executed_dir} does not exist: build the book first (`make book`)")
    executed = executed_notebooks(root)
    if sections:
        wanted = {s.replace(".", "_").removeprefix("§") for s in sections}
        unknown = wanted - {section_of(p.stem) for p in executed}
        if unknown:
            raise ValueError(f"--section {sorted(unknown)}: no executed notebook for it in {executed_dir}")
        executed = [p for p in executed if section_of(p.stem) in wanted]

    results: list[SectionResult] = []
    targets: dict[tuple[str, str], Shown] = {}
    test_files = []
    for path in executed:
        shown, skipped = shown_values(path, claims_only)
        test_file = root / "tests" / f"test_ch{section_of(path.stem)}.py"
        results.append(SectionResult(section_of(path.stem), path.stem, len(shown), 0,
                                     test_file=str(test_file.relative_to(root)), skipped=skipped))
        for s in shown:
            targets[(s.stem, s.name)] = s
        if test_file.is_file():
            test_files.append(str(test_file))

    plugin = GuardPlugin(targets)
    if test_files:
        # -c devnull skips the checkout's pyproject.toml, so its `pythonpath` is given here: the tests
        # import that checkout's helpers (and, through its conftest, tools), before any installed copy
        args = [*test_files, "--rootdir", str(root), "-c", os.devnull, "-o", f"pythonpath={shlex.quote(str(root))}",
                "-p", "no:cacheprovider", "-p", "no:terminal", "-W", "ignore::DeprecationWarning"]
        sink = io.StringIO()
        redirect = (contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink)) if quiet else ()
        saved_path, saved_conftest = list(sys.path), sys.modules.get("conftest")
        before = set(sys.modules)
        try:
            with contextlib.ExitStack() as stack:
                for r in redirect:
                    stack.enter_context(r)
                code = pytest.main(args, plugins=[plugin, _install_fixture_wrapper(plugin)])
        finally:
            # leave the caller's imports as they were (this may run inside another pytest session):
            # forget the test modules and conftest this session imported from <root>/tests, and take
            # <root>/tests off sys.path again (pytest's default import mode puts it there, for good)
            tests_dir = str(root / "tests")
            for name in set(sys.modules) - before:
                if str(getattr(sys.modules[name], "__file__", "") or "").startswith(tests_dir):
                    del sys.modules[name]
            if saved_conftest is not None:
                sys.modules["conftest"] = saved_conftest
            sys.path[:] = saved_path
        if code in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.INTERRUPTED):
            raise RuntimeError(f"pytest could not run the claims tests (exit {code!r}):\n{sink.getvalue()[-3000:]}")

    by_section = {r.section: r for r in results}
    for shown in targets.values():
        labels = [label for label, _ in shown.perturbations]
        shown.guarded = all(shown.caught.get(label) for label in labels)
        if shown.guarded:
            continue
        survived = [f"{label} ({_fmt(v)})" for label, v in shown.perturbations if not shown.caught.get(label)]
        if not shown.readers:
            read_by_failing = [n for n, reads in plugin.call_reads.items()
                               if (shown.stem, shown.name) in reads and plugin.baseline.get(n) != "passed"]
            if read_by_failing:
                shown.reason = f"read only by tests failing unperturbed: {', '.join(_short(n) for n in read_by_failing)}"
            else:
                shown.reason = "no test reads it"
        else:
            shown.reason = f"survives {', '.join(survived)}; read by {', '.join(_short(n) for n in shown.readers)}"
    for r in results:
        r.guarded = sum(1 for s in targets.values() if s.section == r.section and s.guarded)
        mine = [it for it in plugin.items if Path(str(it.path)).name == Path(r.test_file).name]
        r.tests = len(mine)
        r.baseline_failures = {it.nodeid: plugin.baseline_detail[it.nodeid] for it in mine
                               if plugin.baseline.get(it.nodeid) in ("failed", "error")}
        r.collect_errors = {k: v for k, v in plugin.collect_errors.items() if Path(r.test_file).name in k}
        if not (root / r.test_file).is_file():
            r.collect_errors[r.test_file] = "no such test file"
    values = sorted(targets.values(), key=lambda s: (s.section, s.cells[0], s.name))
    return Report(str(root), results, values, time.perf_counter() - start)


def _fmt(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _short(nodeid: str) -> str:
    return nodeid.split("::", 1)[-1]


def format_report(report: Report, show_unguarded: bool = True) -> str:
    lines = []
    if show_unguarded and report.unguarded():
        lines.append("Unguarded shown values (section  name = value  [markdown cells]  why):")
        for v in report.unguarded():
            lines.append(f"  {v.section}  {v.name} = {_fmt(v.value)}  {v.cells}  {v.reason}")
        lines.append("")
    lines.append(f"{'section':8} {'shown':>5} {'guarded':>7} {'score':>6}  tests  notes")
    for r in report.sections:
        notes = []
        if r.baseline_failures:
            notes.append(f"{len(r.baseline_failures)} test(s) fail unperturbed: "
                         + ", ".join(_short(n) for n in r.baseline_failures))
        if r.collect_errors:
            notes.append("collection error: " + ", ".join(r.collect_errors))
        skipped = {k: len(v) for k, v in r.skipped.items() if v}
        if skipped:
            notes.append("not counted: " + ", ".join(f"{n} {k}" for k, n in skipped.items()))
        lines.append(f"{r.section:8} {r.shown:5d} {r.guarded:7d} {r.score:6.1%}  {r.tests:5d}  {'; '.join(notes)}")
    lines.append(f"{'total':8} {report.shown:5d} {report.guarded:7d} {report.score:6.1%}"
                 f"  ({report.shown - report.guarded} unguarded; {report.seconds:.1f} s)")
    return "\n".join(lines)


PENDING = Path("tests") / "claims_guard_pending.txt"


def shrink_pending(root: Path, report: Report) -> list[str]:
    """Rewrite <root>/tests/claims_guard_pending.txt so that it only tightens: a section now at
    100 % is deleted, a section with fewer unguarded values gets today's guarded/shown, nothing
    is ever added or loosened. Returns what changed."""
    import re

    path = root / PENDING
    current = {r.section: r for r in report.sections}
    out, changes = [], []
    for line in path.read_text().splitlines():
        m = re.fullmatch(r"(14_\d\d)\s+(\d+)/(\d+)\s*", line)
        r = current.get(m[1]) if m else None
        if m is None or r is None:
            out.append(line)
            continue
        listed_unguarded = int(m[3]) - int(m[2])
        unguarded = r.shown - r.guarded
        if unguarded == 0:
            changes.append(f"{m[1]}: deleted (100 %)")
        elif unguarded < listed_unguarded:
            out.append(f"{m[1]}  {r.guarded}/{r.shown}")
            changes.append(f"{m[1]}: {m[2]}/{m[3]} -> {r.guarded}/{r.shown}")
        else:
            out.append(line)
    path.write_text("\n".join(out) + "\n")
    return changes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=ROOT,
                        help="checkout to check (its tests/ and _build/); default: this one")
    parser.add_argument("--section", action="append", help="section id such as 14_50 (repeatable)")
    parser.add_argument("--json", type=Path, help="write the full result to this file")
    parser.add_argument("--require", type=float, help="exit 1 if the overall score is below this fraction")
    parser.add_argument("--verbose", action="store_true", help="show pytest's own output")
    parser.add_argument("--claims-only", action="store_true",
                        help="perturb only the numbers of verdict sentences (<!-- claim: id -->), as the test does")
    parser.add_argument("--shrink-pending", action="store_true",
                        help="tighten tests/claims_guard_pending.txt to today's scores (never loosens it)")
    args = parser.parse_args(argv)
    if args.require is not None and not 0 <= args.require <= 1:
        parser.error(f"--require must be a fraction between 0 and 1, got {args.require}")
    root = args.root.resolve()
    if not (root / "tests" / "conftest.py").is_file():
        parser.error(f"--root {root}: no tests/conftest.py there; pass the root of a checkout of the book")
    sys.dont_write_bytecode = True  # leave no __pycache__ in another checkout
    try:
        report = run_check(root, args.section, quiet=not args.verbose, claims_only=args.claims_only)
    except (FileNotFoundError, ValueError) as exc:
        parser.error(str(exc))
    print(format_report(report))
    if args.shrink_pending:
        if args.section:
            parser.error("--shrink-pending needs the whole book (no --section)")
        for change in shrink_pending(root, report) or ["claims_guard_pending.txt: nothing to tighten"]:
            print(change)
    if args.json:
        args.json.write_text(json.dumps(report.to_json(), indent=1, default=str))
    if args.require is not None and report.score < args.require:
        print(f"score {report.score:.1%} is below --require {args.require:.1%}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
