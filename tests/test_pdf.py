"""The whole-Part PDF (`make pdf`): complete, typeset, with the book's numbers and its edition.

Skips when no PDF has been built (`make test` does not build it); CI runs `make pdf` first and
sets BOOK_REQUIRE_PDF=1, which turns the skip into a failure.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from pathlib import Path

import pytest

from conftest import EXECUTED, glued_values, source_notebooks
from tools import pdf as pdf_tool
from tools import version

RAW_MARKUP = ["{glue", ":::", "{cite}`", "$$", "\\frac", "\\mathbf", "{doc}", "{numref}"]
#: Markup the book shows on purpose, as an example (references.md: "cite into it with {cite}`key`").
SHOWN_ON_PURPOSE = ["{cite}`key`"]


pytestmark = pytest.mark.full   # `make full` builds the PDF first

#: The PDF under test; BOOK_PDF=path checks another copy.
PDF = Path(os.environ.get("BOOK_PDF") or pdf_tool.PDF)


def _flat(text: str) -> str:
    """Whitespace collapsed, ligatures (e.g. U+FB00 'ff') spelled out."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip()


def _squeezed(text: str) -> str:
    """Without any whitespace: text extraction may join or split words at line ends."""
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text))


@pytest.fixture(scope="module")
def book_pdf():
    if not PDF.is_file():
        if os.environ.get("BOOK_REQUIRE_PDF"):
            pytest.fail(f"{PDF} was not built: run `make pdf`")
        pytest.skip("no PDF built; `make pdf` builds it (CI does)")
    from pypdf import PdfReader

    reader = PdfReader(str(PDF))
    pages = [_flat(page.extract_text() or "") for page in reader.pages]
    return reader, pages


def _section_titles() -> list[str]:
    titles = []
    for nb_path in source_notebooks():
        cells = json.loads(nb_path.read_text())["cells"]
        first = next(c for c in cells if c["cell_type"] == "markdown" and "".join(c["source"]).startswith("# "))
        titles.append(_flat("".join(first["source"]).splitlines()[0][2:]))
    return titles


def test_every_section_is_in_the_pdf_each_from_a_new_page(book_pdf):
    reader, pages = book_pdf
    titles = _section_titles()
    assert len(titles) == 20
    starts = []
    for title in titles:
        hits = [i for i, text in enumerate(pages) if _squeezed(text).startswith(_squeezed(title))]
        assert hits, f"section {title!r} is not at the top of any page of the PDF"
        starts.append(hits[0])
    assert starts == sorted(starts), "sections are out of order"
    assert starts[0] >= 2, "the title page and the contents come first"
    # twenty sections of several pages each, plus title, contents, landing page and references
    assert len(pages) >= starts[-1] + 2 and len(pages) >= 3 * len(titles)


def test_title_page_contents_and_outline(book_pdf):
    reader, pages = book_pdf
    assert pages[0].startswith("Sequence Models: Recurrence and Attention")
    edition = re.search(r"Edition (\S+)", pages[0]).group(1)
    assert edition != version.UNKNOWN
    assert all(f"edition {edition}" in text for text in pages[1:]), "every page's footer names the edition"
    contents = _squeezed(" ".join(pages[1:3]))
    assert "Contents" in contents and all(_squeezed(title) in contents for title in _section_titles())
    outline = []

    def walk(items):
        for item in items:
            walk(item) if isinstance(item, list) else outline.append(_flat(item.title))

    walk(reader.outline)
    assert all(any(_squeezed(title) in _squeezed(entry) for entry in outline) for title in _section_titles())


def test_no_raw_markup_and_math_is_typeset(book_pdf):
    _, pages = book_pdf
    for i, text in enumerate(pages):
        for example in SHOWN_ON_PURPOSE:
            text = text.replace(example, "")
        found = [m for m in RAW_MARKUP if m in text]
        assert not found, f"page {i + 1} shows raw markup {found}: {text[:200]}"


def _numeric_glue_samples(per_notebook: int = 3):
    """(stem, shown text) of a few glued numbers per section, formatted as the prose formats them."""
    samples = []
    for nb_path in source_notebooks():
        executed = EXECUTED / nb_path.name
        if not executed.is_file():
            continue
        nb = json.loads(executed.read_text())
        values = glued_values(nb)
        prose = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
        shown = []
        for name, spec in re.findall(r"\{glue:text\}`([A-Za-z_][\w]*)(?::([^`]*))?`", prose):
            value = values.get(name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            text = format(value, spec) if spec else str(value)
            if len(text) >= 4 and "e" not in text and text not in shown:  # long enough not to turn up by chance
                shown.append(text)
        samples += [(nb_path.stem, text) for text in shown[:per_notebook]]
    return samples


def test_glued_numbers_are_printed(book_pdf):
    _, pages = book_pdf
    samples = _numeric_glue_samples()
    assert len(samples) >= 30, "too few glued numbers found to sample"
    text = " ".join(pages)
    missing = [(stem, shown) for stem, shown in samples if shown not in text]
    assert not missing, f"glued values not in the PDF: {missing[:10]}"


def test_figures_are_images_and_the_bibliography_is_there(book_pdf):
    reader, pages = book_pdf
    expected = 0
    for nb_path in source_notebooks():
        for cell in json.loads((EXECUTED / nb_path.name).read_text())["cells"]:
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                if "image/png" in data or "plotly-graph-div" in "".join(data.get("text/html", "")):
                    expected += 1
    images = sum(len(page.images) for page in reader.pages)
    assert images >= expected, f"{images} images in the PDF, {expected} figures in the notebooks"
    def flat(items):
        for item in items:
            yield from flat(item) if isinstance(item, list) else [item]

    entry = next(item for item in flat(reader.outline) if _squeezed(item.title).startswith("References"))
    references = reader.get_destination_page_number(entry)
    assert "Makridakis" in " ".join(pages[references:]) and "Karpathy" in " ".join(pages[references:])
