"""Shared fixtures: the repository's paths, executed notebooks and their glued values."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for `tools`

CHAPTERS = ROOT / "chapters"
EXECUTED = ROOT / "_build" / "executed" / "chapters"
SITE = ROOT / "_build" / "html"


def source_notebooks() -> list[Path]:
    return sorted(p for p in CHAPTERS.glob("*.ipynb") if not p.name.startswith("_"))


def load_executed(stem: str) -> dict:
    """The executed copy of ``chapters/<stem>.ipynb`` (built by `make book`)."""
    path = EXECUTED / f"{stem}.ipynb"
    if not path.is_file():
        pytest.fail(f"{path} does not exist: build the book first (`make book`; `make test` does it)")
    return json.loads(path.read_text())


def executed_parameters(stem: str) -> dict:
    """The parameters an executed notebook ran with: its ``parameters`` cell, then what papermill injected."""
    space: dict = {}
    for cell in load_executed(stem)["cells"]:
        tags = cell.get("metadata", {}).get("tags", [])
        if "parameters" in tags or "injected-parameters" in tags:
            exec("".join(cell["source"]), space)
    return {k: v for k, v in space.items() if k.isupper()}


def glued_values(nb: dict) -> dict[str, object]:
    """Every value bound with ``glue`` in an executed notebook, read back as Python objects."""
    values = {}
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            meta = out.get("metadata", {}).get("scrapbook")
            if not meta:
                continue
            text = out["data"][meta["mime_prefix"] + "text/plain"]
            values[meta["name"]] = ast.literal_eval(text)
    return values


@pytest.fixture(scope="session")
def glued():
    """glued(stem) -> dict of the glued values of that section's executed notebook."""
    cache: dict[str, dict] = {}

    def get(stem: str) -> dict:
        if stem not in cache:
            cache[stem] = glued_values(load_executed(stem))
        return cache[stem]

    return get


@pytest.fixture(scope="module")
def g(glued, request):
    """The glued values of the section whose notebook stem the test module names in ``STEM``."""
    return glued(request.module.STEM)
