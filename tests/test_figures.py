"""Every figure of the book has a number, a caption and real alt text, and the prose cites it by number.

The captions live in the notebooks' cell metadata, where myst-nb reads them:
``"mystnb": {"figure": {"caption": ..., "name": "fig-..."}, "image": {"alt": ...}}``.
"""

from __future__ import annotations

import re

import nbformat
import pytest

from conftest import load_executed, source_notebooks

NOTEBOOKS = source_notebooks()
MIN_ALT = 80          # characters: enough to say what the figure shows and what to take from it
MIN_CAPTION = 30
NAME = re.compile(r"fig-[a-z0-9]+(-[a-z0-9]+)*")
FILE_LIKE = re.compile(r"\.(png|svg|jpe?g|gif)\b|_images/|^<Figure|^Figure size", re.I)


def cells(path):
    return nbformat.read(path, as_version=4).cells


def tags(cell):
    return cell.metadata.get("tags", [])


def makes_a_figure(cell) -> bool:
    """A code cell that draws: a plotnine plot, a shown plotly figure or a helpers.diagrams diagram."""
    if cell.cell_type != "code" or {"skip-execution", "remove-cell"} & set(tags(cell)):
        return False
    src = cell.source
    return "p9.ggplot(" in src or src.rstrip().endswith("fig.show()") or "helpers.diagrams" in src


def figure_meta(cell):
    meta = cell.metadata.get("mystnb", {})
    return meta.get("figure", {}), meta.get("image", {})


def problems_of(cell) -> list[str]:
    figure, image = figure_meta(cell)
    caption, name, alt = figure.get("caption", ""), figure.get("name", ""), image.get("alt", "")
    found = []
    if len(caption.strip()) < MIN_CAPTION:
        found.append(f"caption missing or shorter than {MIN_CAPTION} characters: {caption!r}")
    if not NAME.fullmatch(name):
        found.append(f"name {name!r} is not of the form fig-words-with-hyphens")
    if len(alt.strip()) < MIN_ALT:
        found.append(f"alt text missing or shorter than {MIN_ALT} characters: {alt!r}")
    if alt.strip() == caption.strip():
        found.append("alt text repeats the caption; say what the figure shows")
    if FILE_LIKE.search(alt):
        found.append(f"alt text looks like a file name: {alt!r}")
    return found


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: p.stem[:5])
def test_every_figure_cell_has_a_name_a_caption_and_alt_text(nb_path):
    bad = {f"cell {i} ({c.get('id')})": problems_of(c) for i, c in enumerate(cells(nb_path)) if makes_a_figure(c)}
    bad = {k: v for k, v in bad.items() if v}
    assert not bad, bad


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: p.stem[:5])
def test_every_figure_is_cited_by_number_and_every_citation_has_its_figure(nb_path):
    cs = cells(nb_path)
    names = [figure_meta(c)[0].get("name") for c in cs if makes_a_figure(c)]
    prose = "\n".join(c.source for c in cs if c.cell_type == "markdown")
    cited = set(re.findall(r"\{numref\}`(?:[^`<]*<)?(fig-[^`>]+)>?`", prose))
    assert cited <= set(names), f"cited but not in this section: {sorted(cited - set(names))}"
    diagrams = [figure_meta(c)[0].get("name") for c in cs if makes_a_figure(c) and "helpers.diagrams" in c.source]
    assert set(diagrams) <= cited, f"diagrams the text never cites: {sorted(set(diagrams) - cited)}"


def test_figure_names_are_unique_across_the_book():
    names = [figure_meta(c)[0].get("name") for p in NOTEBOOKS for c in cells(p) if makes_a_figure(c)]
    dupes = sorted({n for n in names if names.count(n) > 1})
    assert not dupes, dupes


def test_diagram_cells_hide_their_code_and_the_part_has_sixteen():
    diagram_cells = [(p.stem, c) for p in NOTEBOOKS for c in cells(p) if makes_a_figure(c) and "helpers.diagrams" in c.source]
    assert len(diagram_cells) >= 16
    assert all("remove-input" in tags(c) for _, c in diagram_cells)
    assert len({stem for stem, _ in diagram_cells}) >= 15, "diagrams should sit across the sections"


def test_the_caption_check_catches_what_it_should():
    cell = nbformat.v4.new_code_cell("(p9.ggplot(df) + p9.geom_line())")
    assert makes_a_figure(cell) and problems_of(cell)
    cell.metadata["mystnb"] = {"figure": {"caption": "A caption long enough to pass the minimum.", "name": "fig-x"},
                               "image": {"alt": "../_images/" + "0" * 64 + ".png"}}
    assert any("file name" in p or "shorter" in p for p in problems_of(cell))


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: p.stem[:5])
def test_every_executed_figure_output_is_captioned_and_single(nb_path):
    """From the outputs, not the source: any cell that displayed an image or a plotly figure has its metadata,
    and shows exactly one figure (two would get the same name)."""
    nb = load_executed(nb_path.stem)
    for i, cell in enumerate(nb["cells"]):
        displays = [o for o in cell.get("outputs", []) if o.get("output_type") in ("display_data", "execute_result")]
        figures = [o for o in displays if any(k.startswith("image/") for k in o.get("data", {}))
                   or "plotly-graph-div" in str(o.get("data", {}).get("text/html", ""))]
        if not figures:
            continue
        meta = cell["metadata"].get("mystnb", {})
        assert meta.get("figure", {}).get("name"), f"cell {i} shows a figure without mystnb.figure metadata"
        assert meta.get("image", {}).get("alt"), f"cell {i} shows a figure without alt text"
        assert len(displays) == 1, f"cell {i} displays {len(displays)} outputs; a figure cell must show one"


LEGEND_NONE = re.compile(r"\b(colour|color|fill|linetype|shape)\s*=\s*None\b")


def _labs_calls(src):
    """The text of every ``labs(...)`` call in ``src`` (one level of nested parentheses)."""
    return re.findall(r"labs\((?:[^()]|\([^()]*\))*\)", src, re.S)


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: p.stem[:5])
def test_no_legend_title_is_removed_with_none(nb_path):
    """plotnine 0.15 ignores ``labs(colour=None)`` and titles the legend with the column's name (the
    leftover "cell" an expert reviewer found); ``labs(colour="")`` removes it."""
    bad = [(i, call) for i, c in enumerate(cells(nb_path)) if c.cell_type == "code"
           for call in _labs_calls(c.source) if LEGEND_NONE.search(call)]
    assert not bad, f"{nb_path.name}: write colour=\"\" (not None) to drop a legend title, cells {[i for i, _ in bad]}"


def test_labs_none_really_leaves_the_title_and_empty_removes_it():
    """The reason for the rule above, checked on plotnine itself."""
    import pandas as pd
    import plotnine as p9

    df = pd.DataFrame({"x": [1, 2, 1, 2], "y": [1, 2, 2, 3], "cell": ["a", "a", "b", "b"]})

    def legend_title(extra):
        plot = p9.ggplot(df, p9.aes("x", "y", colour="cell")) + p9.geom_line() + extra
        figure = plot.draw()
        texts = [t.get_text() for t in figure.findobj(lambda a: hasattr(a, "get_text"))]
        import matplotlib.pyplot as plt
        plt.close(figure)
        return "cell" in texts

    assert legend_title(p9.labs(colour=None)), "plotnine now drops the title for None: the rule above can go"
    assert not legend_title(p9.labs(colour=""))
