"""Conventions every section notebook follows (CONTRIBUTING.md), checked on the sources."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT, load_executed, source_notebooks

NOTEBOOKS = source_notebooks()
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
REPO_URL = CONFIG["repository"]["url"].rstrip("/")


def cells(path):
    return json.loads(path.read_text())["cells"]


def text(cell):
    return "".join(cell["source"])


def tags(cell):
    return cell.get("metadata", {}).get("tags", [])


def toc_files():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [ch["file"] for part in toc["parts"] for ch in part["chapters"]]


@pytest.fixture(params=NOTEBOOKS, ids=lambda p: p.stem)
def nb_path(request):
    return request.param


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebook in chapters/"


def test_sources_are_committed_without_outputs(nb_path):
    for cell in cells(nb_path):
        if cell["cell_type"] == "code":
            assert not cell["outputs"] and cell["execution_count"] is None, \
                f"{nb_path.name} has outputs: strip them (executed copies live in _build/)"


def test_toc_lists_every_notebook_and_only_existing_files():
    listed = toc_files()
    for path in NOTEBOOKS:
        assert f"chapters/{path.stem}" in listed, f"{path.name} is missing from _toc.yml"
    for entry in listed:
        assert any((ROOT / f"{entry}{ext}").is_file() for ext in (".ipynb", ".md")), f"_toc.yml lists missing {entry}"


def test_toc_parts_are_the_parts_of_the_book():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    allowed = ["I. Recurrence", "II. Attention and Transformers", "III. Language modelling and generation",
               "IV. Neural forecasting", "Back matter"]
    captions = [part["caption"] for part in toc["parts"]]
    assert captions == [c for c in allowed if c in captions]


def test_first_cell_is_the_colab_placeholder_and_names_no_repository(nb_path):
    """The Colab set-up is written into the Colab edition (tools/colab.py), not typed into 20 notebooks."""
    first = cells(nb_path)[0]
    assert first["cell_type"] == "code" and "remove-cell" in tags(first)
    src = text(first)
    assert 'if "google.colab" in sys.modules:' in src and "raise RuntimeError" in src
    assert "http" not in src and "BOOK_REPO" not in src


def test_colab_cell_does_nothing_outside_colab(nb_path, tmp_path):
    probe = text(cells(nb_path)[0]) + "\nimport os, sys\nprint(os.getcwd()); print(len(sys.path))"
    baseline = "import os, sys\nprint(os.getcwd()); print(len(sys.path))"
    run = lambda code: subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                                      text=True, check=True, env={**os.environ, "PYTHONPATH": ""}).stdout
    assert run(probe) == run(baseline)


def test_the_repository_and_site_urls_are_written_in_config_only():
    """One place: no notebook, helper, tool, extension or workflow spells the repository or site URL."""
    site = CONFIG["html"]["baseurl"].rstrip("/")
    places = [*NOTEBOOKS, *(ROOT / "helpers").glob("*.py"), *(ROOT / "tools").glob("*.py"), *(ROOT / "_ext").rglob("*.py"),
              *(ROOT / ".github").rglob("*.yml"), ROOT / "Makefile", ROOT / "pyproject.toml"]
    for path in places:
        body = path.read_text()
        for url in (REPO_URL, site, REPO_URL.removeprefix("https://github.com/")):
            assert url not in body, f"{path.relative_to(ROOT)} spells {url}: read it from _config.yml"


def test_launch_button_of_every_page_opens_its_colab_edition():
    from helpers.book import colab_url

    for path in NOTEBOOKS:
        page = (ROOT / "_build" / "html" / "chapters" / f"{path.stem}.html").read_text()
        colab = re.findall(r'href="(https://colab\.research\.google\.com/[^"]+)"', page)
        assert colab == [colab_url(path.stem)], f"{path.stem}: launch button {colab}"


def test_changing_the_repository_in_config_changes_every_place(tmp_path, monkeypatch):
    """Another repository and site in _config.yml: the theme, the Colab cells and links, helpers.book follow."""
    import copy

    from tools import book, colab

    other = copy.deepcopy(CONFIG)
    other["repository"]["url"] = "https://github.com/someone-else/fork-of-the-book"
    other["html"]["baseurl"] = "https://someone-else.example.org/book/"
    other["edition"] = {"colab_branch": "colab-2027"}
    theme = book.staged_config(other)["sphinx"]["config"]["html_theme_options"]
    assert theme["repository_url"] == "https://github.com/someone-else/fork-of-the-book"
    assert theme["repository_branch"] == "colab-2027" and "edition" not in book.staged_config(other)
    repo, site, branch = colab.urls(other)
    ctx = colab.Context(repo_url=repo, site_url=site, ref="v9", colab_branch=branch,
                        titles={"chapters/14_46_recurrent_networks": "14.46 RNNs"})
    source = json.loads(NOTEBOOKS[0].read_text())
    nb = colab.convert_notebook({**source, "cells": source["cells"][:1]}, ctx, f"chapters/{NOTEBOOKS[0].stem}")
    assert 'BOOK_REPO = "https://github.com/someone-else/fork-of-the-book"' in nb.cells[0].source
    assert 'BOOK_REF = "v9"' in nb.cells[0].source
    link = colab.convert_markdown("{doc}`14_46_recurrent_networks`", colab._Doc(ctx, "chapters/x", "test"))
    assert link == "[14.46 RNNs](https://someone-else.example.org/book/chapters/14_46_recurrent_networks.html)"
    import helpers.book as hb

    monkeypatch.setattr(hb, "book_config", lambda: other)
    assert hb.repository_url() == "https://github.com/someone-else/fork-of-the-book"
    assert hb.site_url() == "https://someone-else.example.org/book"
    assert hb.colab_url("14_45_x") == ("https://colab.research.google.com/github/someone-else/fork-of-the-book/"
                                       "blob/colab-2027/chapters/14_45_x.ipynb")


def test_opening_and_parameters(nb_path):
    cs = cells(nb_path)
    title = text(cs[1])
    number = nb_path.stem[:5].replace("_", ".")
    assert re.match(rf"# {re.escape(number)} \S", title), f"title must start '# {number} ...'"
    for needed in ("What you will be able to do", "Prerequisites", "Estimated time"):
        assert needed in title
    params = [c for c in cs if "parameters" in tags(c)]
    assert len(params) == 1
    namespace = {}
    exec(text(params[0]), namespace)
    assert namespace["HEAVY_EVAL"] is False and isinstance(namespace["SEED"], int)


def test_exercises_with_hidden_solutions_and_takeaways(nb_path):
    md = "\n".join(text(c) for c in cells(nb_path) if c["cell_type"] == "markdown")
    exercises = md.split("## Exercises", 1)
    assert len(exercises) == 2, "no '## Exercises' heading"
    items = re.findall(r"^\d+\. \*\*\((.+?)\.\)\*\*", exercises[1], flags=re.M)
    assert 3 <= len(items) <= 6, f"{len(items)} exercises; the convention is 3-6"
    kinds = " ".join(items).lower()
    assert "code" in kinds and "derive" in kinds, "need at least one coding and one derivation exercise"
    assert md.count(":class: dropdown") >= len(items), "every exercise needs a hidden (dropdown) solution"
    assert "## Key takeaways" in md


def test_every_plotnine_figure_is_followed_by_its_plotly_equivalent(nb_path):
    cs = cells(nb_path)
    for i, cell in enumerate(cs):
        if cell["cell_type"] == "code" and "p9.ggplot(" in text(cell) and "skip-execution" not in tags(cell):
            following = cs[i + 1]
            assert "skip-execution" in tags(following), f"cell {i}: plotnine figure without a plotly equivalent"
            assert "plotly" in text(following)
            compile(text(following), f"{nb_path.name}[{i + 1}]", "exec")


def test_every_glue_reference_in_the_prose_is_glued(nb_path):
    nb = load_executed(nb_path.stem)
    from conftest import glued_values

    glued = glued_values(nb)
    prose = "\n".join(text(c) for c in nb["cells"] if c["cell_type"] == "markdown")
    roles = re.findall(r"\{glue:text\}`([^`]*)`", prose)
    malformed = [r for r in roles if not re.fullmatch(r"[A-Za-z_]\w*(:[^{}`]*)?", r)]
    assert not malformed, f"malformed glue roles (expected {{glue:text}}`name:fmt`): {malformed}"
    referenced = {r.split(":")[0] for r in roles}
    assert referenced, "a section with no glued number"
    assert referenced <= set(glued), f"referenced but never glued: {sorted(referenced - set(glued))}"


def test_three_d_figure_budget_of_the_part():
    evaluated_3d = 0
    for path in NOTEBOOKS:
        for cell in cells(path):
            if cell["cell_type"] == "code" and "skip-execution" not in tags(cell):
                evaluated_3d += text(cell).count("fig.show()") if re.search(r"Scatter3d|Surface\(|Mesh3d|\"scene\"", text(cell)) else 0
    assert 1 <= evaluated_3d <= 6, f"{evaluated_3d} evaluated 3-D figures; the Part's budget is six"
