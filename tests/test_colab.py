"""tools/colab.py: the Colab and student editions, construct by construct, and on the whole book."""

from __future__ import annotations

import ast
import json
import re

import nbformat
import pytest

from conftest import ROOT, source_notebooks
from tools import colab
from tools.colab import Citation, Context, UnknownConstruct

DOC = "chapters/14_99_test"


@pytest.fixture
def ctx():
    return Context(
        repo_url="https://github.com/org/book", site_url="https://org.github.io/book", ref="0123456789abcdef",
        glue={DOC: {"loss": "0.123456", "n": "12345", "share": "0.25", "name": "'Seasonal Naive'",
                    "star": "'a*b_c'"}},
        titles={DOC: "14.99 Test", "chapters/14_46_recurrent_networks": "14.46 Recurrent networks",
                "intro": "Sequence Models", "references": "References"},
        labels={"fig-loss": (DOC, "fig-loss", ""), "sec-rnn": ("chapters/14_46_recurrent_networks", "sec-rnn", "The RNN"),
                "eq-sdpa": (DOC, "equation-eq-sdpa", "")},
        fignumbers={"fig-loss": "14.99.2", "eq-sdpa": "3"},
        citations={"vaswani2017": Citation("Vaswani et al.", "2017", "id7"),
                   "hochreiter1997": Citation("Hochreiter and Schmidhuber", "1997", "id3")},
        install={"plotly": "plotly==7.1.0", "statsforecast": "statsforecast==2.1.1"},
    )


def md(src, ctx, solutions=True):
    return colab.convert_markdown(src, colab._Doc(ctx, DOC, "test cell", solutions=solutions))


# ---- roles ------------------------------------------------------------------------------------

@pytest.mark.parametrize("role, shown", [
    ("{glue:text}`loss:.3f`", "0.123"), ("{glue:text}`n:,`", "12,345"), ("{glue:text}`share:.0%`", "25%"),
    ("{glue:text}`name`", "Seasonal Naive"), ("{glue:text}`loss:.1e`", "1.2e-01"),
    ("{glue}`n`", "12345"), ("{glue:any}`name`", "'Seasonal Naive'"),  # {glue}: the text/plain as it is
])
def test_glue_roles_become_the_value_formatted_as_the_site_formats_it(ctx, role, shown):
    assert md(f"MASE {role} here.", ctx) == f"MASE {shown} here."


def test_glued_text_is_escaped_so_markdown_shows_it_literally(ctx):
    assert md("{glue:text}`star`", ctx) == r"a\*b\_c"


def test_a_glue_name_the_notebook_never_glued_is_an_error_naming_it(ctx):
    with pytest.raises(UnknownConstruct, match="'missing' is not glued"):
        md("{glue:text}`missing:.2f`", ctx)


def test_roles_in_table_cells_of_one_row_all_convert(ctx):
    out = md("| a | b |\n|---|---|\n| {glue:text}`n:,` | {glue:text}`loss:.2f` |\n", ctx)
    assert "| 12,345 | 0.12 |" in out and "{glue" not in out


def test_a_role_written_inside_a_code_span_stays_code(ctx):
    out = md("Write `{glue:text}`n`` to show {glue:text}`n`.", ctx)
    assert out == "Write `{glue:text}`n`` to show 12345."


def test_citations_become_author_year_links_to_the_references_page(ctx):
    assert md("The Transformer {cite}`vaswani2017` and {cite:t}`hochreiter1997`.", ctx) == (
        "The Transformer [[Vaswani et al., 2017](https://org.github.io/book/references.html#id7)] and "
        "[Hochreiter and Schmidhuber [1997]](https://org.github.io/book/references.html#id3).")
    two = md("{cite:p}`vaswani2017,hochreiter1997`", ctx)
    assert two.startswith("[[Vaswani et al., 2017](") and "; [Hochreiter and Schmidhuber, 1997](" in two
    with pytest.raises(UnknownConstruct, match="'nobody2020'"):
        md("{cite}`nobody2020`", ctx)


def test_doc_links_go_to_the_published_page_titled_as_the_site_titles_it(ctx):
    assert md("See {doc}`14_46_recurrent_networks`.", ctx) == (
        "See [14.46 Recurrent networks](https://org.github.io/book/chapters/14_46_recurrent_networks.html).")
    assert md("See {doc}`§14.46 <14_46_recurrent_networks>`.", ctx) == (
        "See [§14.46](https://org.github.io/book/chapters/14_46_recurrent_networks.html).")
    assert md("{doc}`the intro </intro>`", ctx) == "[the intro](https://org.github.io/book/intro.html)"
    with pytest.raises(UnknownConstruct, match="no page 'chapters/14_00_nowhere'"):
        md("{doc}`14_00_nowhere`", ctx)


def test_ref_numref_and_eq_use_the_sites_labels_and_numbers_and_stay_in_their_own_notebook(ctx):
    """A target on another page links to the site; one in this notebook links to its anchor here."""
    assert md("{ref}`sec-rnn`", ctx) == "[The RNN](https://org.github.io/book/chapters/14_46_recurrent_networks.html#sec-rnn)"
    assert md("{numref}`fig-loss`", ctx) == "[Fig. 14.99.2](#fig-loss)"
    assert md("{numref}`Figure %s <fig-loss>`", ctx) == "[Figure 14.99.2](#fig-loss)"
    assert md("{eq}`eq-sdpa`", ctx).startswith("[(3)](")
    with pytest.raises(UnknownConstruct, match="label 'fig-none'"):
        md("{numref}`fig-none`", ctx)


def test_an_unknown_role_is_an_error_not_raw_markup(ctx):
    with pytest.raises(UnknownConstruct, match=r"role \{abbr\}"):
        md("{abbr}`LM (language model)`", ctx)


# ---- blocks -----------------------------------------------------------------------------------

SOLUTION = ":::{admonition} Solution 2\n:class: dropdown\nIt is {glue:text}`n:,`, see {cite}`vaswani2017`.\n:::\n"


def test_a_solution_becomes_a_collapsed_details_block_with_its_markup_converted(ctx):
    out = md("Text before.\n\n" + SOLUTION, ctx)
    assert out.startswith("Text before.\n\n<details>\n<summary><b>Solution 2</b></summary>\n\nIt is 12,345, see [[Vaswani")
    assert out.rstrip().endswith("</details>") and ":::" not in out and ":class:" not in out


def test_the_student_edition_drops_the_solution_and_keeps_the_rest_of_the_cell(ctx):
    out = md("Text before.\n\n" + SOLUTION + "\nText after.\n", ctx, solutions=False)
    assert "Text before." in out and "Text after." in out
    assert "Solution" not in out and "12,345" not in out and "<details>" not in out


def test_other_admonitions_become_block_quotes_headed_by_their_title(ctx):
    src = ':::{admonition} Common misconception: "$O(T^2)$ is always slow"\n:class: warning\nIt is {glue:text}`loss:.2f`.\n\nTwo paragraphs.\n:::\n'
    out = md(src, ctx)
    assert out.splitlines()[0] == '> **⚠️ Common misconception: "$O(T^2)$ is always slow"**'
    assert "> It is 0.12." in out and "> Two paragraphs." in out and ":::" not in out
    assert md(":::{note}\nPlain.\n:::\n", ctx).startswith("> **Note**")


def test_targets_equation_labels_and_math_fences_become_plain_markdown(ctx):
    assert md("(sec-x)=\n## Heading\n", ctx) == '<a id="sec-x" name="sec-x"></a>\n\n## Heading\n'
    assert md("$$\nQK^T\n$$ (eq-sdpa)\n", ctx) == '<a id="eq-sdpa" name="eq-sdpa"></a>\n\n$$\nQK^T \\tag{3}\n$$\n'
    assert md("```{math}\na = b\n```\n", ctx) == "$$\na = b\n$$\n"
    assert md("% an author's note\nText.\n", ctx) == "Text.\n"


def test_an_unknown_directive_is_an_error(ctx):
    with pytest.raises(UnknownConstruct, match=r"directive \{glue:figure\}"):
        md(":::{glue:figure} fig_x\n:::\n", ctx)


def test_plain_markdown_passes_through_unchanged(ctx):
    src = "# Title\n\n- a *b* **c** `d` $e$\n\n$$\nf\n$$\n\n```python\nx = {1: 2}\n```\n\n> quote\n"
    assert md(src, ctx) == src


# ---- notebooks --------------------------------------------------------------------------------

def notebook(*cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = list(cells)
    for i, cell in enumerate(nb.cells):
        cell.id = f"c{i}"
    return json.loads(nbformat.writes(nb))


def code(src, *tags, **meta):
    cell = nbformat.v4.new_code_cell(src)
    if tags:
        cell.metadata["tags"] = list(tags)
    cell.metadata.update(meta)
    return cell


def test_notebook_cells_setup_hidden_solution_code_figures_and_student_edition(ctx):
    src = notebook(
        code('import sys\nif "google.colab" in sys.modules:\n    raise RuntimeError("source")', "remove-cell"),
        nbformat.v4.new_markdown_cell("# 14.99 Test\n\nMASE {glue:text}`loss:.2f`."),
        code("from helpers.book import glue", "remove-cell"),
        code("fig.show()", "hide-input", mystnb={"figure": {"caption": "Loss after {glue:text}`n:,` steps.",
                                                             "name": "fig-loss"}}),
        code("# The same figure in plotly (shown, not executed)\nfig2.show()", "skip-execution"),
        nbformat.v4.new_markdown_cell("## Exercises\n\n1. **(Code.)** Do it.\n\n" + SOLUTION),
        code("answer = 42", "hide-cell"),
    )
    nb = colab.convert_notebook(src, ctx, DOC, "colab")
    setup, title, helpers_cell, figure, caption, plotly, exercises, solution_code = nb.cells
    assert setup.metadata["tags"] == [colab.SETUP_TAG] and 'BOOK_REPO = "https://github.com/org/book"' in setup.source
    assert 'raise RuntimeError("source")' not in "".join(c.source for c in nb.cells)  # the source's placeholder is gone
    assert title.source.endswith("MASE 0.12.")
    assert helpers_cell.metadata["jupyter"]["source_hidden"] and helpers_cell.source.endswith("from helpers.book import glue")
    assert not helpers_cell.source.startswith("# @title Set-up")  # only the first cell is the set-up
    assert figure.metadata["cellView"] == "form" and figure.source.endswith("fig.show()")
    assert caption.cell_type == "markdown" and caption.source == '<a id="fig-loss" name="fig-loss"></a>**Fig. 14.99.2.** Loss after 12,345 steps.'
    # the site shows the plotly twin without running it; Colab's "Run all" must not run it either
    assert plotly.cell_type == "markdown" and plotly.source == (
        "**The same figure in plotly.** Not run with the notebook; to try it, paste it into a new code cell:"
        "\n\n```python\nfig2.show()\n```")
    assert "<details>" in exercises.source
    assert solution_code.metadata["cellView"] == "form" and solution_code.metadata["jupyter"]["source_hidden"]
    assert solution_code.source.splitlines()[0].startswith("# @title") and solution_code.source.endswith("answer = 42")
    student = colab.convert_notebook(src, ctx, DOC, "student")
    text = "\n".join(c.source for c in student.cells)
    assert "Do it." in text and "Solution" not in text and "answer = 42" not in text
    with pytest.raises(ValueError, match="edition must be one of"):
        colab.convert_notebook(src, ctx, DOC, "teacher")


def test_an_answer_that_the_prose_quotes_outside_the_solutions_is_not_in_an_edition_without_them(ctx):
    """§14.58's misconception box quoted Exercise 3's measured answer ("about 1.9 characters per
    token") to the student edition. A value only solution code glues becomes colab.ANSWER there and in
    the SOLUTIONS=hidden site; a setting glued in a solution (the exercise's parameter) stays."""
    src = notebook(
        nbformat.v4.new_markdown_cell("Tokens hold {glue:text}`loss:.1f` characters each (Exercise 1), "
                                      "of a {glue:text}`n`-token vocabulary.\n\n" + SOLUTION),
        code('glue("n", 12345, setting=True)\nglue("loss", 0.123456)', "hide-cell"),
    )
    assert colab.solution_glue(src["cells"]) == {"loss"}
    colab_text = colab.convert_notebook(src, ctx, DOC, "colab").cells[1].source
    student_text = colab.convert_notebook(src, ctx, DOC, "student").cells[1].source
    assert "hold 0.1 characters" in colab_text
    assert f"hold {colab.ANSWER} characters" in student_text and "0.1" not in student_text
    assert "12345-token vocabulary" in student_text  # the setting is part of the question
    site = colab.strip_solutions(nbformat.reads(json.dumps(src), as_version=4))
    assert site.cells[0].source.startswith(f"Tokens hold {colab.ANSWER} characters each") and "{glue:text}`n`" in site.cells[0].source


def test_the_student_edition_of_14_58_does_not_quote_exercise_3s_answer(editions, book_ctx):
    stem = "14_58_language_modelling_objective"
    nb = json.loads((editions / "student" / "chapters" / f"{stem}.ipynb").read_text())
    box = next("".join(c["source"]) for c in nb["cells"] if "Common misconception: \"a lower perplexity" in "".join(c["source"]))
    value = f"{float(book_ctx.glue['chapters/' + stem]['bpe_chars_per_token']):.1f}"
    assert f"predicts about {colab.ANSWER} characters per token" in box and f"about {value} characters" not in box
    colab_nb = json.loads((editions / "colab" / "chapters" / f"{stem}.ipynb").read_text())
    assert any(f"predicts about {value} characters per token" in "".join(c["source"]) for c in colab_nb["cells"])


def test_the_setup_cell_lists_only_what_its_notebook_needs(ctx):
    plain = colab.convert_notebook(notebook(code("import plotly")), ctx, DOC)
    m4 = colab.convert_notebook(notebook(code("from statsforecast import StatsForecast")), ctx, DOC)
    needed = lambda nb: ast.literal_eval(re.search(r"NEEDED = (\{.*?\})", nb.cells[0].source, re.S).group(1))
    assert "statsforecast" not in needed(plain) and needed(m4)["statsforecast"] == "statsforecast==2.1.1"
    compile(plain.cells[0].source, "setup", "exec")


def test_install_specs_are_the_pyproject_dependencies_pinned_as_the_build_and_never_torch_numpy_pandas():
    specs = colab.install_specs(ROOT)
    assert not {"torch", "numpy", "pandas"} & set(specs)
    pinned = dict(line.split("==") for line in (ROOT / "requirements.txt").read_text().split()
                  if "==" in line)
    for dist, spec in specs.items():
        assert spec.split("==")[1] == next(v for k, v in pinned.items() if k.lower() == dist.lower()), dist


def test_every_import_of_the_notebooks_and_helpers_is_a_declared_dependency():
    import sys
    import tomllib

    declared = {colab.IMPORT_NAMES.get(d.lower(), d.lower().replace("-", "_"))
                for d in (re.split(r"[<>=!~; ]", dep)[0] for dep in
                          tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])}
    used = set(colab.helpers_top_level_imports(ROOT))
    for path in list(source_notebooks()) + sorted((ROOT / "helpers").glob("*.py")):
        if path.suffix == ".ipynb":
            used |= colab.imported_modules("\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"]
                                                     if c["cell_type"] == "code"))
        else:
            used |= colab.imported_modules(path.read_text())
    # helpers.book.glue imports these inside `try: ... except ImportError` (the kernel's IPython; myst-nb
    # only while the book builds)
    optional = {"IPython", "myst_nb"}
    third_party = {m for m in used if m not in sys.stdlib_module_names and m not in {"helpers", "tools", "__future__"} | optional}
    assert third_party - declared == set(), f"imported but not in pyproject.toml: {sorted(third_party - declared)}"


# ---- the whole book ---------------------------------------------------------------------------

def test_every_construct_the_book_uses_is_one_the_converter_knows():
    used = set()
    for path in source_notebooks():
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "markdown":
                used |= colab.constructs("".join(cell["source"]))
    assert used - colab.KNOWN_CONSTRUCTS == set()
    assert {"role:glue:text", "role:cite", "role:doc", "directive:admonition"} <= used  # the census sees them


@pytest.fixture(scope="module")
def book_ctx():
    return colab.context_from_build(ROOT, ref="0" * 40)


@pytest.fixture(scope="module")
def editions(book_ctx, tmp_path_factory):
    out = tmp_path_factory.mktemp("editions")
    colab.write_editions(ROOT, ctx=book_ctx, out=out)
    return out


@pytest.mark.parametrize("path", source_notebooks(), ids=lambda p: p.stem)
def test_the_colab_edition_has_no_myst_left_and_shows_the_builds_values(path, editions, book_ctx):
    from tools.colab_sim import edition_problems, leftover_myst

    nb = json.loads((editions / "colab" / "chapters" / path.name).read_text())
    assert leftover_myst(nb) == []
    src_cells = json.loads(path.read_text())["cells"]
    prose = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    from myst_nb.core.variables import format_plain_text

    glued = book_ctx.glue[f"chapters/{path.stem}"]
    for cell in src_cells:
        for key, spec in re.findall(r"\{glue:text\}`([A-Za-z_]\w*):?([^`]*)`", "".join(cell["source"])):
            assert colab._escape(format_plain_text(glued[key], spec)) in prose, key
    runs = lambda c: c["cell_type"] == "code" and "skip-execution" not in c["metadata"].get("tags", [])
    code_src = [("".join(c["source"])) for c in src_cells[1:] if runs(c)]
    code_out = ["".join(c["source"]) for c in nb["cells"][1:] if c["cell_type"] == "code"]
    assert [re.sub(r"^# @title .*\n", "", s) for s in code_out] == code_src  # every code cell, unchanged, in order
    assert nb["cells"][0]["metadata"]["tags"] == [colab.SETUP_TAG]
    # the cells the site shows without running are there to read, as code blocks, not as cells that run
    shown = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    for c in src_cells:
        if c["cell_type"] == "code" and not runs(c):
            assert "```python\n" + "".join(c["source"]).split("\n", 1)[1].strip("\n") + "\n```" in shown
    assert edition_problems(nb, book_ctx.page(f"chapters/{path.stem}")) == []


@pytest.mark.parametrize("path", source_notebooks(), ids=lambda p: p.stem)
def test_the_student_edition_keeps_every_prompt_and_no_solution(path, editions):
    nb = json.loads((editions / "student" / "chapters" / path.name).read_text())
    source = json.loads(path.read_text())["cells"]
    prose = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    src_prose = "\n".join("".join(c["source"]) for c in source if c["cell_type"] == "markdown")
    prompts = re.findall(r"^\d+\. \*\*\((.+?)\.\)\*\*", src_prose.split("## Exercises", 1)[1], flags=re.M)
    assert prompts and re.findall(r"^\d+\. \*\*\((.+?)\.\)\*\*", prose.split("## Exercises", 1)[1], flags=re.M) == prompts
    assert not re.search(r"Solution \d", prose) and "<details>" not in prose
    hidden = ["".join(c["source"]) for c in source if "hide-cell" in c["metadata"].get("tags", [])]
    kept = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    assert hidden and not set(hidden) & {re.sub(r"^# @title .*\n", "", s) for s in kept}
    # what the solutions' code defines, no kept cell uses (else the student notebook would fail)
    only_in_solutions = bound(hidden) - bound(kept)
    used = {n.id for s in kept for n in ast.walk(ast.parse(s)) if isinstance(n, ast.Name)}
    assert not only_in_solutions & used


def bound(sources):
    names = set()
    for src in sources:
        for n in ast.walk(ast.parse(src)):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                names.add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.ClassDef)):
                names.add(n.name)
            elif isinstance(n, ast.arg):  # a function's or lambda's own arguments
                names.add(n.arg)
            elif isinstance(n, ast.alias):
                names.add((n.asname or n.name).split(".")[0])
    return names


def test_strip_solutions_leaves_the_site_notebook_without_solutions_but_with_its_prompts():
    path = ROOT / "_build" / "executed" / "chapters" / source_notebooks()[0].name
    nb = colab.strip_solutions(nbformat.read(str(path), as_version=4))
    prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert ":::{admonition} Solution" not in prose and "Solution 1" not in prose
    assert not any("hide-cell" in c.metadata.get("tags", []) for c in nb.cells)
    assert re.findall(r"^\d+\. \*\*\(", prose.split("## Exercises", 1)[1], flags=re.M)


# ---- SOLUTIONS=hidden: the site of a term in progress --------------------------------------

def test_the_hidden_solutions_stage_has_every_prompt_and_no_solution():
    from tools import book

    hidden = book.stage_without_solutions()
    for path in source_notebooks():
        nb = nbformat.read(str(hidden / "chapters" / path.name), as_version=4)
        whole = nbformat.read(str(ROOT / "_build" / "executed" / "chapters" / path.name), as_version=4)
        prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        full = "\n".join(c.source for c in whole.cells if c.cell_type == "markdown")
        prompt = r"^\d+\. \*\*\((.+?)\.\)\*\*"
        assert re.findall(prompt, prose, re.M) == re.findall(prompt, full, re.M) != []
        assert "{admonition} Solution" in full and "{admonition} Solution" not in prose, path.name
        assert not any("hide-cell" in c.metadata.get("tags", []) for c in nb.cells)
        assert len(nb.cells) < len(whole.cells)


def test_a_site_rendered_without_solutions_shows_the_prompts_and_no_solution(tmp_path):
    """Jupyter Book renders one stripped section (as `make book SOLUTIONS=hidden` renders all)."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    from tools import book

    hidden = book.stage_without_solutions()
    name = source_notebooks()[0].name
    site = tmp_path / "book"
    (site / "chapters").mkdir(parents=True)
    shutil.copy2(hidden / "chapters" / name, site / "chapters" / name)
    for item in ("_config.yml", "references.bib"):
        shutil.copy2(hidden / item, site / item)
    shutil.copytree(ROOT / "_ext", site / "_ext")  # this checkout's, as the next build stages them
    shutil.copytree(ROOT / "_assets", site / "_assets")
    (site / "_toc.yml").write_text(f"format: jb-book\nroot: chapters/{Path(name).stem}\n")
    jb = Path(sys.executable).with_name("jupyter-book")
    subprocess.run([str(jb), "build", str(site), "--path-output", str(tmp_path), "-q"], check=True,
                   capture_output=True)
    page = (tmp_path / "_build" / "html" / "chapters" / name.replace(".ipynb", ".html")).read_text()
    text = re.sub(r"<[^>]+>", "", page)
    assert "Exercises" in text and "(Classify.)" in text and "(Derive.)" in text
    assert "Solution 1" not in text and "Solution 2" not in text
    # what such a site hands out carries no solutions either: the launch button opens the student
    # edition's branch, and the download menu offers the student notebook only (no Colab notebook, no PDF)
    stem = Path(name).stem
    menu = page.split('class="dropdown dropdown-download-buttons"', 1)[1].split("</ul>", 1)[0]
    assert re.findall(r'href="([^"]+)"', menu) == [f"../_editions/student/{stem}.ipynb"]
    branches = colab.edition_branches(colab.book_config())
    launch = re.findall(r'href="(https://colab\.research\.google\.com/[^"]+)"', page)
    assert launch and all(f"/blob/{branches['student']}/chapters/{stem}.ipynb" in u for u in launch), launch


def test_author_year_labels_from_the_bib_agree_with_the_sites_citations(book_ctx):
    from_bib = colab.citations_from_bib(ROOT / "references.bib")
    assert book_ctx.citations and set(book_ctx.citations) <= set(from_bib)
    for key, cit in book_ctx.citations.items():
        assert (cit.label, cit.year) == (from_bib[key].label, from_bib[key].year)
        assert re.fullmatch(r"id\d+", cit.anchor)
    page = (ROOT / "_build" / "html" / "references.html").read_text()
    vaswani = book_ctx.citations["vaswani2017attention"] if "vaswani2017attention" in book_ctx.citations else next(
        c for c in book_ctx.citations.values() if c.label.startswith("Vaswani"))
    assert f'id="{vaswani.anchor}"' in page and vaswani.label == "Vaswani et al."


def test_a_failed_fetch_says_what_git_said_and_what_to_do(ctx, tmp_path, monkeypatch):
    import sys
    import types

    source = colab.convert_notebook(notebook(code("import plotly")), ctx, DOC).cells[0].source
    source = re.sub(r'BOOK_REPO = ".*?"', f'BOOK_REPO = "{tmp_path / "no-such-repository"}"', source)
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    monkeypatch.setenv("BOOK_DIR", str(tmp_path / "book"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RuntimeError) as err:
        exec(compile(source, "setup", "exec"), {"__name__": "__main__"})
    message = str(err.value)
    assert "`git fetch -q` failed with" in message
    assert "no-such-repository" in message and ("does not appear to be a git repository" in message
                                                or "not found" in message.lower())
    assert "not published" in message and "never pushed" in message and "internet" in message
