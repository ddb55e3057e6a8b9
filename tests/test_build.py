"""The build: failures name the notebook and cell; injected parameters are hidden; inputs hashed."""

import json

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from conftest import load_executed, source_notebooks
from tools import book as build


def test_a_failing_notebook_names_itself_the_cell_and_the_error(tmp_path, monkeypatch):
    chapters = tmp_path / "chapters"
    chapters.mkdir()
    monkeypatch.setattr(build, "ROOT", tmp_path)
    nb = new_notebook(cells=[
        new_code_cell("HEAVY_EVAL = False", metadata={"tags": ["parameters"]}),
        new_markdown_cell("Some prose."),
        new_code_cell("x = 1"),
        new_code_cell("ratio = 1 / 0  # the broken claim"),
    ])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    src = chapters / "broken.ipynb"
    nbformat.write(nb, str(src))
    with pytest.raises(build.NotebookFailed) as err:
        build.execute_notebook(src, tmp_path / "out" / "broken.ipynb", {"HEAVY_EVAL": False})
    message = str(err.value)
    assert "chapters/broken.ipynb" in message
    assert "cell 3 `ratio = 1 / 0" in message
    assert "ZeroDivisionError" in message


def test_input_hash_tracks_parameters_source_and_shared_inputs(tmp_path, monkeypatch):
    """Each input the docstring names changes the hash; a __pycache__ file does not."""
    monkeypatch.setattr(build, "ROOT", tmp_path)
    for folder in build.SHARED_INPUTS:
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "x.txt").write_text("one")
    nb = tmp_path / "nb.ipynb"
    nb.write_text('{"cells": []}')
    params = {"HEAVY_EVAL": False}
    first = build.input_hash(nb, params)
    assert build.input_hash(nb, dict(params)) == first
    (tmp_path / "helpers" / "__pycache__").mkdir()
    (tmp_path / "helpers" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert build.input_hash(nb, params) == first, "bytecode is not an input"
    assert build.input_hash(nb, {"HEAVY_EVAL": True}) != first
    nb.write_text('{"cells": [1]}')
    assert build.input_hash(nb, params) != first, "the notebook's source is an input"
    nb.write_text('{"cells": []}')
    for folder in build.SHARED_INPUTS:
        (tmp_path / folder / "x.txt").write_text("two")
        assert build.input_hash(nb, params) != first, f"{folder}/ is an input"
        (tmp_path / folder / "x.txt").write_text("one")
    assert build.input_hash(nb, params) == first


@pytest.mark.parametrize("nb_path", source_notebooks(), ids=lambda p: p.stem)
def test_executed_copy_hides_injected_parameters_and_records_its_run(nb_path):
    nb = load_executed(nb_path.stem)
    injected = [c for c in nb["cells"] if "injected-parameters" in c["metadata"].get("tags", [])]
    assert len(injected) == 1 and "remove-cell" in injected[0]["metadata"]["tags"]
    assert "HEAVY_EVAL = False" in "".join(injected[0]["source"])
    meta = nb["metadata"]["book"]
    assert meta["parameters"] == {"HEAVY_EVAL": False} and meta["exec_seconds"] > 0
    assert meta["input_hash"] == build.input_hash(nb_path, {"HEAVY_EVAL": False}), \
        "executed copy is out of date: rebuild with `make book`"
    errors = [o for c in nb["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
