"""What the build prints: one counted line per notebook, no kernel noise, failures that name the cell."""

import re
import tempfile

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from conftest import SITE
from tools import book as build


def _notebook(path, *sources):
    nb = new_notebook(cells=[new_code_cell("HEAVY_EVAL = False", metadata={"tags": ["parameters"]}),
                             *(new_code_cell(s) for s in sources)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(path))


@pytest.fixture
def tiny_book(tmp_path, monkeypatch):
    """A book of three notebooks in a temporary folder, one of which fails in its third cell."""
    chapters = tmp_path / "chapters"
    chapters.mkdir()
    _notebook(chapters / "01_fine.ipynb", "x = 1", "print(x + 1)")
    _notebook(chapters / "02_plots.ipynb", "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()")
    _notebook(chapters / "03_broken.ipynb", "y = 2", "ratio = y / 0  # the broken claim")
    for name, value in [("ROOT", tmp_path), ("CHAPTERS", chapters), ("BUILD", tmp_path / "_build"),
                        ("STAGE", tmp_path / "_build" / "executed")]:
        monkeypatch.setattr(build, name, value)
    return tmp_path


def test_build_prints_one_counted_line_per_notebook_and_names_the_failure(tiny_book, capfd):
    code = build.main(["--no-render", "--jobs", "2"])
    out, err = capfd.readouterr()  # file-descriptor level: what the kernels print is caught too
    assert code == 1
    lines = [line for line in out.splitlines() if line.startswith("[")]
    assert sorted(line[:5] for line in lines) == ["[1/3]", "[2/3]", "[3/3]"]
    ran = {m.group(1) for m in (re.search(r"\] ran\s+(\S+)\s+\d+\.\d s$", line) for line in lines) if m}
    assert ran == {"01_fine", "02_plots"}
    failed = [line for line in lines if "FAILED" in line]
    assert len(failed) == 1
    assert "chapters/03_broken.ipynb" in failed[0] and "cell 2 `ratio = y / 0" in failed[0]
    assert "ZeroDivisionError: division by zero" in failed[0]
    assert "1 of 3 notebooks failed" in err
    for noise in ("WARNING", "without encryption", "KeyboardInterrupt", "Traceback"):
        assert noise not in out + err, f"{noise!r} printed by the build:\n{out}\n{err}"


def test_kernels_talk_over_private_sockets_not_tcp(tmp_path):
    manager = build._kernel_manager_class()(kernel_name="python3")
    assert manager.transport == "ipc" and manager.ip.startswith(tempfile.gettempdir())
    other = build._kernel_manager_class()(kernel_name="python3")
    assert other.ip != manager.ip  # two kernels of a parallel build never share socket names


# Text a page shows outside code: what a dollar-math span that MyST did not parse leaves next to
# MathJax's delimiters, e.g. `$\(...\)$` from a `$$` block written without blank lines around it.
_NOT_PROSE = re.compile(r"<(script|style|pre|code)\b.*?</\1>", re.S)
_RAW_MATH = re.compile(r"\$\\[(\[]|\\[)\]]\$|\$\$")


def raw_dollar_math(html):
    """The stretches of a page's prose where a `$` stands next to a MathJax delimiter, or `$$` is left."""
    text = re.sub(r"<[^>]+>", "", _NOT_PROSE.sub("", html))
    return [text[max(0, m.start() - 40): m.end() + 40] for m in _RAW_MATH.finditer(text)]


def test_raw_dollar_math_is_found():
    broken = '<p>for every lag <span class="math">\\(T-t\\)</span>\n$<span class="math">\\(\n x \\)</span>$</p>'
    assert len(raw_dollar_math(broken)) == 2
    fine = '<p>costs <span class="math">\\(x\\)</span> $5</p><pre>echo $$</pre><div class="math">\\[x\\]</div>'
    assert raw_dollar_math(fine) == []


def test_no_rendered_page_shows_dollar_math_that_was_not_parsed():
    pages = sorted(SITE.rglob("*.html"))
    if not (SITE / "index.html").is_file():
        pytest.fail(f"{SITE} has no site: build it first (`make book`)")
    broken = {str(p.relative_to(SITE)): hits for p in pages if (hits := raw_dollar_math(p.read_text(encoding="utf-8")))}
    assert not broken, f"dollar math left unparsed (a `$$` block needs a blank line before and after): {broken}"
