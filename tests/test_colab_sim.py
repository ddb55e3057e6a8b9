"""The Colab simulation: every Colab notebook, run from its first cell to its last in a Colab stand-in.

See tools/colab_sim.py for what stands in for Colab (its packages as Colab pins them, a
``google.colab`` module, GitHub redirected to a one-commit copy of this working tree). The
stand-in environment is cached in _build/colab-sim while its pins are unchanged; its first
creation downloads Colab's versions of the packages from PyPI (minutes).
"""

from __future__ import annotations

import os
import subprocess

import pytest

from conftest import ROOT, source_notebooks
from tools import colab_sim


@pytest.fixture(scope="session")
def simulation():
    lines = []
    results = colab_sim.simulate(jobs=int(os.environ.get("COLAB_SIM_JOBS", "2")), log=lines.append)
    print("\n".join(lines))
    return {r.notebook: r for r in results}


@pytest.mark.parametrize("path", source_notebooks(), ids=lambda p: p.stem)
def test_colab_notebook_runs_clean_from_first_cell_to_last(simulation, path):
    result = simulation[path.name]
    assert result.error == "", f"{path.name} in the Colab stand-in: {result.error}"
    assert result.setup_line.startswith("Set-up: fetched ") and "at " in result.setup_line


def test_the_first_cell_installs_only_what_colab_lacks_and_keeps_colabs_torch_numpy_pandas(simulation):
    pins = dict(p.split("==") for p in colab_sim.pins())
    m4 = simulation["14_63_neural_versus_classical_forecasting.ipynb"].setup_line
    assert "installed statsforecast==" in m4  # not preinstalled in Colab
    plain = simulation["14_45_sequence_modelling_problems.ipynb"].setup_line
    assert "installed" not in plain  # everything else §14.45 needs, Colab has
    for line in (m4, plain):
        assert f"numpy {pins['numpy']}" in line and f"pandas {pins['pandas']}" in line and "torch 2.13.0" in line


def test_the_stand_in_holds_colabs_pins_and_a_google_colab_module():
    base = colab_sim.base_env(log=lambda *_: None)
    probe = ("import importlib.metadata as m, google.colab, numpy, pandas, plotly; "
             "print(m.version('numpy'), m.version('pandas'), m.version('plotly'))")
    out = subprocess.run([str(base / "bin" / "python"), "-c", probe], capture_output=True, text=True, check=True).stdout
    pins = dict(p.split("==") for p in colab_sim.pins())
    assert out.split() == [pins["numpy"], pins["pandas"], pins["plotly"]]
    assert "statsforecast" not in (base / ".complete").read_text()  # Colab lacks it: the first cell must install it


def test_leftover_myst_finds_raw_markup():
    nb = {"cells": [{"cell_type": "markdown", "source": ["Loss {glue:text}`x:.2f`."]},
                    {"cell_type": "markdown", "source": [":::{note}\nHi\n:::"]},
                    {"cell_type": "markdown", "source": ["Plain $x$ and `{glue}` in code."]}]}
    found = colab_sim.leftover_myst(nb)
    assert len(found) == 2 and found[0].startswith("cell 0") and found[1].startswith("cell 1")


def test_the_pins_are_colabs_with_the_local_torch():
    pins = colab_sim.pins()
    assert "torch==2.13.0" in pins and not any(p.startswith("transformers") for p in pins)
    listed = [l for l in colab_sim.PREINSTALLED.read_text().splitlines() if l and not l.startswith("#")]
    assert set(listed) - {"transformers==5.15.0"} <= set(pins)
