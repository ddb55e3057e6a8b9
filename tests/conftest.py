"""Shared fixtures: the repository's paths, executed notebooks and their glued values."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import notebooks
from tools.notebooks import as_text, glued_values  # noqa: F401 (glued_values: tests import it from here)

# the checkout these tests belong to, which need not be the one `tools` comes from: the guard check
# (tools/claims_check.py) runs another checkout's tests (--root), and a toy book's copy of this file
ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "chapters"
EXECUTED = ROOT / notebooks.EXECUTED
SITE = ROOT / "_build" / "html"


def source_notebooks() -> list[Path]:
    return notebooks.source_notebooks(ROOT)


def load_executed(stem: str) -> dict:
    """The executed copy of ``chapters/<stem>.ipynb`` (built by `make book`)."""
    path = notebooks.executed_path(stem, ROOT)
    if not path.is_file():
        pytest.fail(f"{path} does not exist: build the book first (`make book`; `make test` does it)")
    return notebooks.read(path)


def executed_parameters(stem: str) -> dict:
    """The parameters an executed notebook ran with: its ``parameters`` cell, then what papermill injected."""
    space: dict = {}
    for cell in load_executed(stem)["cells"]:
        tags = cell.get("metadata", {}).get("tags", [])
        if "parameters" in tags or "injected-parameters" in tags:
            exec(as_text(cell["source"]), space)
    return {k: v for k, v in space.items() if k.isupper()}


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
