"""The Colab simulation: every Colab notebook, run from its first cell to its last under Colab's Python 3.13.

See tools/colab_sim.py for what stands in for Colab: Debian trixie's Python 3.13 in a chroot, the
packages as Colab pins them (torch 2.11.0 among them), a ``google.colab`` module, GitHub redirected
to a one-commit copy of this working tree. The root file system and the environment are cached in
_build/colab-sim; making them the first time takes minutes (debootstrap, then pip from PyPI). The
chroot needs root: elsewhere these tests skip, except under CI, where they fail instead.
"""

from __future__ import annotations

import os

import pytest

from conftest import source_notebooks
from tools import colab_sim


@pytest.fixture(scope="session")
def chroot():
    why = colab_sim.chroot_available()
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the Colab simulation under Python 3.13: {why}")
        pytest.skip(why)
    return colab_sim.chroot_base_env(log=print)


@pytest.fixture(scope="session")
def simulation(chroot):
    lines = []
    results = colab_sim.simulate(jobs=int(os.environ.get("COLAB_SIM_JOBS", "2")), log=lines.append, runtime="3.13")
    print("\n".join(lines))
    return {r.notebook: r for r in results}


@pytest.mark.parametrize("path", source_notebooks(), ids=lambda p: p.stem)
@pytest.mark.full
def test_colab_notebook_runs_clean_from_first_cell_to_last(simulation, path):
    result = simulation[path.name]
    assert result.error == "", f"{path.name} in the Colab stand-in: {result.error}"
    assert result.setup_line.startswith("Set-up: fetched ") and "at " in result.setup_line


@pytest.mark.full
def test_the_first_cell_installs_only_what_colab_lacks_and_keeps_colabs_torch_numpy_pandas(simulation):
    pins = dict(p.split("==") for p in colab_sim.pins("3.13"))
    m4 = simulation["14_63_neural_versus_classical_forecasting.ipynb"].setup_line
    assert "installed statsforecast==" in m4  # not preinstalled in Colab
    plain = simulation["14_45_sequence_modelling_problems.ipynb"].setup_line
    assert "installed" not in plain  # everything else §14.45 needs, Colab has
    for line in (m4, plain):
        assert f"numpy {pins['numpy']}" in line and f"pandas {pins['pandas']}" in line
        assert f"torch {pins['torch']}" in line


@pytest.mark.full
def test_the_stand_in_is_colabs_python_with_colabs_pins_and_a_google_colab_module(chroot):
    probe = ("import sys, importlib.metadata as m, google.colab, numpy, pandas, plotly, torch; "
             "print(sys.version.split()[0], m.version('numpy'), m.version('pandas'), m.version('plotly'), "
             "torch.__version__.split('+')[0])")
    out = colab_sim.in_rootfs([f"{chroot}/bin/python", "-c", probe], capture_output=True, text=True, check=True).stdout
    pins = dict(p.split("==") for p in colab_sim.pins("3.13"))
    python, *versions = out.split()
    assert python.startswith("3.13.")  # Colab's minor version (Colab: 3.13.15; Debian trixie: 3.13.5)
    assert versions == [pins["numpy"], pins["pandas"], pins["plotly"], pins["torch"]]
    assert "statsforecast" not in (colab_sim.ROOTFS / chroot.lstrip("/") / ".complete").read_text()


@pytest.mark.full
def test_the_committed_caches_are_fresh_and_the_pinned_key_holds_under_python_3_13(chroot):
    """The same cache key under 3.13 as under 3.11: every committed entry checks fresh there, and the
    fixed snippet of tests/test_cache.py hashes to the value pinned there (computed under 3.11)."""
    import test_cache

    out = colab_sim.key_check(test_cache.SNIPPET, log=print)
    for name in test_cache.COMMITTED:
        assert f"cache/{name}: intact and fresh (python-ast-v2 key, Python 3.13." in out, out
    assert f"snippet key {test_cache.SNIPPET_KEY}" in out, out


def test_leftover_myst_finds_raw_markup():
    nb = {"cells": [{"cell_type": "markdown", "source": ["Loss {glue:text}`x:.2f`."]},
                    {"cell_type": "markdown", "source": [":::{note}\nHi\n:::"]},
                    {"cell_type": "markdown", "source": ["Plain $x$ and `{glue}` in code."]}]}
    found = colab_sim.leftover_myst(nb)
    assert len(found) == 2 and found[0].startswith("cell 0") and found[1].startswith("cell 1")


def test_edition_problems_finds_a_second_set_up_cell_a_twin_that_runs_and_links_that_leave_or_dangle():
    page = "https://org.github.io/book/chapters/14_99_test.html"
    cell = lambda kind, src, **meta: {"cell_type": kind, "source": [src], "metadata": meta}
    clean = {"cells": [cell("code", "# @title Set-up: fetch the book (run me first)\n"),
                       cell("markdown", '<a id="fig-a" name="fig-a"></a>**Fig. 1.** A.'),
                       cell("code", "# @title Numbers the text quotes (x)\nglue('x', 1)"),
                       cell("markdown", "See [Fig. 1](#fig-a) and [§14.46](https://org.github.io/book/chapters/14_46.html).")]}
    assert colab_sim.edition_problems(clean, page) == []
    noisy = {"cells": [*clean["cells"],
                       cell("code", "# @title Set-up (double-click to show)\nglue('y', 2)"),
                       cell("code", "# The same figure in plotly (shown, not executed)\nfig.show()"),
                       cell("markdown", "See [Fig. 2](#fig-b) and [Fig. 1](" + page + "#fig-a).")]}
    found = colab_sim.edition_problems(noisy, page)
    assert [f.split(":")[0] for f in found] == ["cell 4", "cell 5", "cell 6", "cell 6"]
    assert "second cell titled" in found[0] and "does not run" in found[1]
    assert "#fig-b" in found[2] and "own page" in found[3]


def test_the_pins_are_colabs_with_the_runtimes_torch():
    listed = [l for l in colab_sim.PREINSTALLED.read_text().splitlines() if l and not l.startswith("#")]
    for runtime, torch in (("3.13", "torch==2.11.0"), ("host", "torch==2.13.0")):
        pins = colab_sim.pins(runtime)
        assert torch in pins and not any(p.startswith("transformers") for p in pins)
        assert set(listed) - {"transformers==5.15.0"} <= set(pins)
        assert sum(p.startswith("torch==") for p in pins) == 1
