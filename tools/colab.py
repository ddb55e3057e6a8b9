"""The book's notebook editions: Colab (``_build/colab``) and student (``_build/student``).

    python -m tools.colab                # write both editions from the last build
    python -m tools.colab --ref v1.0     # the first cell fetches this tag instead of HEAD's commit

The site is MyST; Colab and plain Jupyter render only CommonMark, HTML and ``$`` math. Each
edition notebook is made from the *source* notebook (no outputs: the reader runs it) and the
*executed* one (its glued values), with the Sphinx environment of the rendered site for figure
numbers, labels and citation anchors. Markdown is converted from the markdown-it token stream
of myst-parser (the parser the site itself uses), never by pattern-matching the text:

- ``{glue:text}`name:fmt``` -> the value, formatted as the site formats it (myst-nb's own code);
- ``{doc}``, ``{ref}``, ``{numref}`` -> links to the published site (``html.baseurl``);
- ``{cite}`` / ``{cite:p}`` / ``{cite:t}`` -> "[Vaswani et al., 2017]" linked to the references page;
- ``:::{admonition}`` with ``:class: dropdown`` (solutions) -> a collapsed ``<details>`` block;
  any other admonition -> a block quote headed by its title;
- ``(label)=`` targets -> an HTML anchor; ``$$ ... $$ (label)`` -> ``\\tag{N}``;
- a figure's myst-nb caption (cell metadata ``mystnb.figure``) -> a caption line after the cell,
  numbered as the site numbers it.

Anything else MyST-specific raises :class:`UnknownConstruct` naming the notebook and cell, so
a new construct cannot slip into the editions raw. Code cells: the site's ``remove-cell`` and
``hide-input`` cells stay and run, collapsed; ``hide-cell`` cells (solution code) are collapsed
(Colab ``cellView: form``, Jupyter ``source_hidden``) and still run. The student edition drops
the solutions and the ``hide-cell`` code and keeps the exercise prompts.
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:  # `python tools/colab.py`: tools/ is a package
    raise SystemExit("run it as a module, from the repository root: python -m tools.colab ...")

import argparse
import ast
import functools
import json
import pickle
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
import yaml

from tools import notebooks
from tools.notebooks import ROOT, executed_path, md_parser, read, source_notebooks, tokens

BUILD = ROOT / "_build"
EXECUTED = BUILD / "executed"
DOCTREES = BUILD / ".doctrees"
EDITIONS = ("colab", "student")

#: markdown-it block tokens that plain CommonMark (+ tables, $ math) renders as they are.
PLAIN_BLOCKS = {
    "paragraph_open", "paragraph_close", "inline", "heading_open", "heading_close", "bullet_list_open",
    "bullet_list_close", "ordered_list_open", "ordered_list_close", "list_item_open", "list_item_close",
    "blockquote_open", "blockquote_close", "table_open", "table_close", "thead_open", "thead_close",
    "tbody_open", "tbody_close", "tr_open", "tr_close", "th_open", "th_close", "td_open", "td_close",
    "fence", "code_block", "hr", "html_block", "math_block",
}
#: Inline tokens that plain CommonMark renders as they are.
PLAIN_INLINE = {
    "text", "softbreak", "hardbreak", "code_inline", "math_inline", "em_open", "em_close", "strong_open",
    "strong_close", "link_open", "link_close", "image", "html_inline", "s_open", "s_close",
}
#: Roles the converter knows (myst_role tokens), by name.
ROLES = ("glue:text", "glue", "glue:", "glue:any", "doc", "ref", "numref", "eq", "cite", "cite:p", "cite:t",
         "math")
ADMONITIONS = ("admonition", "note", "tip", "hint", "warning", "caution", "important", "attention", "danger",
               "error", "seealso")
#: Every construct (as ``constructs`` names them) the converter writes for Colab.
KNOWN_CONSTRUCTS = ({f"role:{r}" for r in ROLES} | {f"directive:{d}" for d in ADMONITIONS + ("math",)}
                    | {"myst_target", "math_block_label", "myst_line_comment", "amsmath"} | PLAIN_INLINE)
SETUP_TAG = "colab-setup"


class UnknownConstruct(ValueError):
    """MyST markup the converter does not know how to write for Colab."""


# --------------------------------------------------------------------------------------------
# What the conversion needs to know about the book


@dataclass
class Citation:
    label: str  # "Vaswani et al."
    year: str
    anchor: str = ""  # the id on the site's references page


@dataclass
class Context:
    """Everything the converter reads from the book: URLs, glued values, titles, numbers.

    ``labels`` maps a target name to ``(docname, anchor, title)``; ``fignumbers`` maps a
    figure/equation name to its number as the site shows it ("14.45.1" or "3").
    """

    repo_url: str
    site_url: str
    ref: str
    colab_branch: str = "colab"
    glue: dict[str, dict[str, str]] = field(default_factory=dict)  # docname -> name -> text/plain
    titles: dict[str, str] = field(default_factory=dict)  # docname -> title
    labels: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    fignumbers: dict[str, str] = field(default_factory=dict)
    citations: dict[str, Citation] = field(default_factory=dict)
    numfig_format: dict[str, str] = field(default_factory=lambda: {"figure": "Fig. %s", "table": "Table %s"})
    install: dict[str, str] = field(default_factory=dict)  # distribution -> pip spec, for the first cell
    references_doc: str = "references"

    def page(self, docname: str, anchor: str = "") -> str:
        """The published URL of ``docname`` (``chapters/14_45_...``), optionally at ``#anchor``."""
        return f"{self.site_url.rstrip('/')}/{docname}.html" + (f"#{anchor}" if anchor else "")

    def colab_link(self, notebook: str) -> str:
        """The Colab URL of ``chapters/<notebook>.ipynb`` in the Colab edition's branch."""
        slug = self.repo_url.rstrip("/").removeprefix("https://github.com/")
        return f"https://colab.research.google.com/github/{slug}/blob/{self.colab_branch}/{notebook}"


def book_config(root: Path = ROOT) -> dict[str, Any]:
    return yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))


def urls(config: dict[str, Any]) -> tuple[str, str, str]:
    """(repository URL, site base URL, Colab branch) as defined once in ``_config.yml``."""
    try:
        repo = config["repository"]["url"].rstrip("/")
        site = config["html"]["baseurl"].rstrip("/")
    except KeyError as err:
        raise KeyError(f"_config.yml lacks {err}: set repository.url and html.baseurl") from None
    return repo, site, edition_branches(config)["colab"]


def edition_branches(config: dict[str, Any]) -> dict[str, str]:
    """Edition -> the branch ``--publish`` pushes it to (``edition.colab_branch``, ``edition.student_branch``)."""
    edition = config.get("edition") or {}
    return {"colab": edition.get("colab_branch", "colab"), "student": edition.get("student_branch", "student")}


def edition_ref(root: Path = ROOT) -> str:
    """The tag at HEAD if there is one, else HEAD's commit: what the first cell fetches."""
    run = lambda *a: subprocess.run(["git", *a], cwd=root, capture_output=True, text=True)
    tag = run("describe", "--tags", "--exact-match", "HEAD")
    if tag.returncode == 0 and tag.stdout.strip():
        return tag.stdout.strip()
    head = run("rev-parse", "HEAD")
    if head.returncode != 0:
        raise RuntimeError(f"not a git checkout ({root}): pass --ref to name the edition's commit or tag")
    return head.stdout.strip()


#: Import names of distributions whose import name differs from their own.
IMPORT_NAMES = {"pyyaml": "yaml"}


def imported_modules(code: str) -> set[str]:
    """Top-level module names ``code`` imports (anywhere, also inside functions)."""
    import ast

    try:
        tree = ast.parse(code)
    except SyntaxError:  # IPython magics or shell escapes: drop those lines
        tree = ast.parse("\n".join(line for line in code.splitlines() if not line.lstrip().startswith(("%", "!"))))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


@functools.lru_cache(maxsize=4)
def helpers_top_level_imports(root: Path = ROOT) -> set[str]:
    """Modules the helpers package imports at module level (so every notebook needs them)."""
    import ast

    names = set()
    for path in (root / "helpers").glob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names |= imported_modules(ast.unparse(node))
    return names


def needed_specs(specs: dict[str, str], code: str, root: Path = ROOT) -> dict[str, str]:
    """The part of ``specs`` a notebook whose code is ``code`` needs: what helpers or the code import."""
    used = helpers_top_level_imports(root) | imported_modules(code)
    return {d: s for d, s in specs.items() if IMPORT_NAMES.get(_canon(d), _canon(d).replace("-", "_")) in used}


def install_specs(root: Path = ROOT) -> dict[str, str]:
    """distribution -> pip spec of every run-time dependency (pyproject), pinned as the book's build.

    torch, numpy and pandas are never installed by the first cell (Colab's own are kept), so
    they are left out. A notebook's first cell lists only those it needs (``needed_specs``).
    """
    deps = tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = {}
    for line in (root / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[_canon(name)] = f"{name}=={version}"
    specs = {}
    for dep in deps:
        name = re.split(r"[<>=!~;\[ ]", dep, maxsplit=1)[0]
        if _canon(name) in KEPT:
            continue
        specs[name] = pins.get(_canon(name), dep)
    return specs


KEPT = ("torch", "numpy", "pandas")


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _title_of(cells: list) -> str:
    for cell in cells:
        if cell["cell_type"] == "markdown":
            m = re.search(r"^# (.+)$", "".join(cell["source"]), re.M)
            if m:
                return m.group(1).strip()
    return ""


def context_from_build(root: Path = ROOT, ref: str | None = None) -> Context:
    """The Context of the last build: _config.yml, executed notebooks, the site's Sphinx env."""
    repo, site, branch = urls(book_config(root))
    ctx = Context(repo_url=repo, site_url=site, ref=ref or edition_ref(root), colab_branch=branch,
                  install=install_specs(root))
    for path in source_notebooks(root):
        doc = f"chapters/{path.stem}"
        done = executed_path(path.stem, root)
        if not done.is_file():
            raise FileNotFoundError(f"{done} missing: build the book first (`make book`)")
        ctx.glue[doc] = {name: g.text for name, g in notebooks.glued(read(done)).items()}
        ctx.titles[doc] = _title_of(read(path)["cells"])
    for md in ("intro", "references"):
        if (root / f"{md}.md").is_file():
            m = re.search(r"^# (.+)$", (root / f"{md}.md").read_text(), re.M)
            ctx.titles[md] = m.group(1).strip() if m else md
    env_file = root / "_build" / ".doctrees" / "environment.pickle"
    if env_file.is_file():
        _read_sphinx_env(ctx, env_file)
    else:  # no rendered site yet: author-year from the .bib; {ref}/{numref} will say what is missing
        ctx.citations = citations_from_bib(root / "references.bib")
    return ctx


def _read_sphinx_env(ctx: Context, env_file: Path) -> None:
    with env_file.open("rb") as f:
        env = pickle.load(f)  # our own build's file, written by Sphinx a moment ago
    for doc, title in env.titles.items():
        ctx.titles.setdefault(doc, title.astext())
    for name, (doc, anchor, title) in env.domaindata["std"]["labels"].items():
        if doc:
            ctx.labels[name] = (doc, anchor, str(title))
    for name, (doc, anchor) in env.domaindata["std"]["anonlabels"].items():
        if doc and name not in ctx.labels:
            ctx.labels[name] = (doc, anchor, "")
    for doc, kinds in env.toc_fignumbers.items():
        for kind, ids in kinds.items():
            for anchor, number in ids.items():
                for name, (ldoc, lanchor, _) in ctx.labels.items():
                    if ldoc == doc and lanchor == anchor:
                        ctx.fignumbers[name] = ".".join(map(str, number))
    for name, eq in env.domaindata.get("math", {}).get("objects", {}).items():
        doc, number = eq
        ctx.labels.setdefault(name, (doc, f"equation-{name}", ""))
        ctx.fignumbers.setdefault(name, str(number))
    ctx.numfig_format.update(env.config.numfig_format or {})
    for cit in env.domaindata.get("cite", {}).get("citations", []):
        ctx.citations[cit.key] = Citation(_author_label(cit.entry), cit.entry.fields.get("year", "n.d."),
                                          cit.citation_id)
        ctx.references_doc = cit.bibliography_key.docname


def _author_label(entry) -> str:
    import codecs

    import latexcodec  # noqa: F401  (registers the "ulatex" codec; installed with sphinxcontrib-bibtex)

    people = entry.persons.get("author") or entry.persons.get("editor") or []
    plain = lambda tex: codecs.decode(tex, "ulatex").replace("{", "").replace("}", "")
    last = [plain(" ".join(p.prelast_names + p.last_names)) for p in people]
    if not last:
        return "Anon."
    if len(last) == 1:
        return last[0]
    if len(last) == 2:
        return f"{last[0]} and {last[1]}"
    return f"{last[0]} et al."


def citations_from_bib(path: Path) -> dict[str, Citation]:
    """Author-year labels from a .bib file (used where no Sphinx env is at hand, e.g. tests)."""
    from pybtex.database import parse_file

    data = parse_file(str(path))
    return {k: Citation(_author_label(e), e.fields.get("year", "n.d.")) for k, e in data.entries.items()}


# --------------------------------------------------------------------------------------------
# Markdown


def constructs(src: str) -> set[str]:
    """Names of the MyST constructs in ``src``: block token types, ``role:<name>``, ``directive:<name>``."""
    found = set()
    for tok in tokens(src):
        if tok.type == "colon_fence" or (tok.type == "fence" and tok.info.startswith("{")):
            found.add("directive:" + _directive(tok.info)[0])
            found |= constructs(_directive_body(tok.content)[1])
        elif tok.type not in PLAIN_BLOCKS:
            found.add(tok.type)
        for child in tok.children or []:
            found.add(f"role:{child.meta['name']}" if child.type == "myst_role" else child.type)
    return found


def _directive(info: str) -> tuple[str, str]:
    m = re.fullmatch(r"\{([\w:\-]+)\}\s*(.*)", info.strip())
    return (m.group(1), m.group(2).strip()) if m else ("", info.strip())


def _directive_body(content: str) -> tuple[dict[str, str], str]:
    """The ``:key: value`` options and the body of a directive's content."""
    options, lines = {}, content.splitlines(keepends=True)
    while lines and (m := re.match(r"^:([\w\-]+):\s*(.*)$", lines[0].rstrip("\n"))):
        options[m.group(1)] = m.group(2).strip()
        lines.pop(0)
    return options, "".join(lines)


def _escape(text: str) -> str:
    """Markdown-escape a glued value so it shows literally."""
    return re.sub(r"([\\`*_\[\]<>$|])", r"\\\1", text)


@dataclass
class _Doc:
    ctx: Context
    docname: str
    where: str  # "chapters/x.ipynb cell 7", for error messages
    solutions: bool = True
    answers: frozenset = frozenset()  # glued answers (solution_glue): shown as ANSWER where solutions are not


#: What an edition without solutions shows where the prose quotes a value that an exercise's
#: solution computes (§14.58's "about 1.9 characters per token ... measured in Exercise 3").
ANSWER = "**?** *(an exercise's answer)*"


def _cell_source(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def solution_glue(cells) -> frozenset:
    """Names that only solution code (``hide-cell`` cells) glues, settings excepted: the answers.

    A value the prose quotes outside the solutions but a solution computes would hand the answer
    to a reader of an edition without solutions; a setting (``glue(..., setting=True)``, the
    exercise's own parameters) is part of the question and stays.
    """
    def glued(cell) -> dict[str, bool]:
        try:
            tree = ast.parse(_cell_source(cell))
        except SyntaxError:  # IPython magics: such a cell glues nothing
            return {}
        out = {}
        for node in ast.walk(tree):
            func = getattr(node, "func", None)
            if (isinstance(node, ast.Call) and getattr(func, "id", getattr(func, "attr", None)) == "glue"
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                out[node.args[0].value] = any(k.arg == "setting" and isinstance(k.value, ast.Constant)
                                              and k.value.value is True for k in node.keywords)
        return out

    solution, elsewhere = {}, set()
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        names = glued(cell)
        if "hide-cell" in cell.get("metadata", {}).get("tags", []):
            solution.update(names)
        else:
            elsewhere.update(names)
    return frozenset(n for n, setting in solution.items() if not setting and n not in elsewhere)


def _glue_role(names) -> re.Pattern:
    """A MyST glue role (any form) of one of ``names``."""
    return re.compile(r"\{glue(?::\w*)?\}`(" + "|".join(map(re.escape, sorted(names))) + r")(?::[^`]*)?`")


def _role(doc: _Doc, name: str, content: str) -> str:
    ctx = doc.ctx
    if name.startswith("glue"):
        from myst_nb.core.variables import format_plain_text

        # as myst-nb reads them: {glue:text}`key:spec` splits at the last colon; {glue}/{glue:any}
        # take no format and show the value's text/plain as it is
        key, spec = content.rsplit(":", 1) if name == "glue:text" and ":" in content else (content, None)
        if not doc.solutions and key in doc.answers:
            return ANSWER
        values = ctx.glue.get(doc.docname, {})
        if key not in values:
            raise UnknownConstruct(f"{doc.where}: {{{name}}}`{content}`: {key!r} is not glued in the executed notebook")
        return _escape(values[key] if spec is None and name != "glue:text" else format_plain_text(values[key], spec or ""))
    if name == "math":
        return f"${content}$"
    if name.startswith("cite"):
        cites = []
        for key in (k.strip() for k in content.split(",")):
            if key not in ctx.citations:
                raise UnknownConstruct(f"{doc.where}: citation {key!r} is not in references.bib")
            cites.append((ctx.citations[key], ctx.page(ctx.references_doc, ctx.citations[key].anchor)))
        if name == "cite:t":
            return "; ".join(f"[{c.label} [{c.year}]]({url})" for c, url in cites)
        return "[" + "; ".join(f"[{c.label}, {c.year}]({url})" for c, url in cites) + "]"
    m = re.fullmatch(r"(.*?)\s*<([^<>]+)>", content, re.S)
    text, target = (m.group(1).strip(), m.group(2).strip()) if m else ("", content.strip())
    if name == "doc":
        base = doc.docname.rsplit("/", 1)[0] if "/" in doc.docname else ""
        target_doc = target.lstrip("/") if target.startswith("/") else "/".join(p for p in (base, target) if p)
        target_doc = _normpath(target_doc.removesuffix(".ipynb").removesuffix(".md"))
        if target_doc not in ctx.titles:
            raise UnknownConstruct(f"{doc.where}: {{doc}}`{content}`: no page {target_doc!r} in the book")
        return f"[{text or _inline_plain(ctx.titles[target_doc])}]({ctx.page(target_doc)})"
    if name in ("ref", "numref", "eq"):
        if target not in ctx.labels:
            raise UnknownConstruct(f"{doc.where}: {{{name}}}`{content}`: label {target!r} not found in the site")
        tdoc, anchor, title = ctx.labels[target]
        # a target in this notebook is linked inside it (its anchor: `anchor_html`); others go to the site
        url = f"#{target}" if tdoc == doc.docname else ctx.page(tdoc, anchor)
        if name == "ref":
            return f"[{text or title}]({url})"
        number = ctx.fignumbers.get(target)
        if number is None:
            raise UnknownConstruct(f"{doc.where}: {{{name}}}`{content}`: {target!r} has no number on the site")
        if name == "eq":
            return f"[({number})]({url})"
        shown = (text or ctx.numfig_format.get("figure", "Fig. %s")).replace("%s", number).replace("{number}", number)
        return f"[{shown}]({url})"
    raise UnknownConstruct(f"{doc.where}: role {{{name}}} is not one the Colab edition knows")


def _normpath(path: str) -> str:
    parts: list[str] = []
    for p in path.split("/"):
        if p == "..":
            parts and parts.pop()
        elif p not in ("", "."):
            parts.append(p)
    return "/".join(parts)


def anchor_html(name: str) -> str:
    """The anchor a link ``#name`` inside a Colab notebook lands on (Jupyter follows ``id``, Colab ``name``)."""
    return f'<a id="{name}" name="{name}"></a>'


def _inline_plain(text: str) -> str:
    return text.replace("[", "\\[").replace("]", "\\]")


def _literal_at(text: str, start: int, opener: str, content: str) -> tuple[int, int]:
    """Span of ``opener`` + backtick-quoted ``content`` in ``text`` at or after ``start``."""
    best = None
    for n in (1, 2, 3):
        ticks = "`" * n
        for pad in ("", " "):
            lit = f"{opener}{ticks}{pad}{content}{pad}{ticks}"
            i = text.find(lit, start)
            if i >= 0 and (best is None or i < best[0]):
                best = (i, i + len(lit))
    if best is None:
        raise UnknownConstruct(f"cannot locate {opener}`{content}` in its source line")
    return best


def _convert_inline(doc: _Doc, text: str, children) -> str:
    """Replace each role of an inline token (its source ``text``) by its conversion."""
    out, cursor = [], 0
    for child in children:
        if child.type == "code_inline":
            i, j = _literal_at(text, cursor, "", child.content)
            out.append(text[cursor:j])
            cursor = j
        elif child.type == "myst_role":
            name = child.meta["name"]
            i, j = _literal_at(text, cursor, "{" + name + "}", child.content)
            out.append(text[cursor:i] + _role(doc, name, child.content))
            cursor = j
        elif child.type not in PLAIN_INLINE:
            raise UnknownConstruct(f"{doc.where}: inline markup {child.type!r} is not one the Colab edition knows")
    return "".join(out) + text[cursor:]


def _admonition(doc: _Doc, info: str, content: str, indent: str) -> str:
    kind, title = _directive(info)
    options, body = _directive_body(content)
    known_options = {"class", "name"}
    if set(options) - known_options:
        raise UnknownConstruct(f"{doc.where}: {{{kind}}} option(s) {sorted(set(options) - known_options)}")
    if kind == "admonition":
        head = title
    elif kind in ADMONITIONS:
        head = kind.capitalize() + (f": {title}" if title else "")
    else:
        raise UnknownConstruct(f"{doc.where}: directive {{{kind}}} is not one the Colab edition knows")
    head = convert_markdown(head, doc).strip()
    inner = convert_markdown(body, doc).rstrip("\n")
    classes = options.get("class", "").split()
    if "dropdown" in classes:
        if not doc.solutions and head.lower().startswith("solution"):
            return ""
        summary = _markdown_to_html_inline(head)
        block = f"<details>\n<summary><b>{summary}</b></summary>\n\n{inner}\n\n</details>\n"
    else:
        mark = {"warning": "⚠️ ", "caution": "⚠️ ", "danger": "⚠️ ", "tip": "💡 ", "hint": "💡 "}.get(
            next((c for c in classes if c != "dropdown"), kind), "")
        quoted = "\n".join(f"> {line}" if line else ">" for line in inner.splitlines())
        block = f"> **{mark}{head}**\n>\n{quoted}\n"
    return "".join(f"{indent}{line}" if line.strip() else line for line in block.splitlines(keepends=True))


def _markdown_to_html_inline(text: str) -> str:
    """A one-line Markdown title as HTML (a <summary> does not render Markdown)."""
    html = md_parser().renderInline(text) if hasattr(md_parser(), "renderInline") else text
    return html.strip()


def convert_markdown(src: str, doc: _Doc) -> str:
    """``src`` (MyST Markdown) as CommonMark + HTML that Colab and Jupyter render."""
    lines = src.splitlines(keepends=True)
    edits: list[tuple[int, int, str]] = []
    inline: dict[tuple[int, int], list] = {}  # table cells of one row share their source line
    for tok in tokens(src):
        if tok.map is None:
            continue
        start, end = tok.map
        indent = re.match(r"[ \t>]*", lines[start]).group(0) if start < len(lines) else ""
        if tok.type == "inline":
            inline.setdefault((start, end), []).extend(tok.children or [])
        elif tok.type == "colon_fence" or (tok.type == "fence" and tok.info.startswith("{")):
            if tok.type == "fence" and _directive(tok.info)[0] == "math":
                edits.append((start, end, f"{indent}$$\n{tok.content.strip()}\n{indent}$$\n"))
                continue
            edits.append((start, end, _admonition(doc, tok.info, tok.content, indent)))
        elif tok.type == "myst_target":
            edits.append((start, end, f"{anchor_html(tok.content)}\n\n"))
        elif tok.type == "math_block_label":
            number = doc.ctx.fignumbers.get(tok.info, "")
            tag = f" \\tag{{{number}}}" if number else ""
            edits.append((start, end, f"{anchor_html(tok.info)}\n\n$$\n{tok.content.strip()}{tag}\n$$\n"))
        elif tok.type == "myst_line_comment":
            edits.append((start, end, ""))
        elif tok.type == "amsmath":
            edits.append((start, end, f"$$\n{tok.content.strip()}\n$$\n"))
        elif tok.type not in PLAIN_BLOCKS:
            raise UnknownConstruct(f"{doc.where}: block markup {tok.type!r} is not one the Colab edition knows")
    for (start, end), children in inline.items():
        text = "".join(lines[start:end])
        new = _convert_inline(doc, text, children)
        if new != text:
            edits.append((start, end, new))
    for start, end, new in sorted(edits, reverse=True):
        lines[start:end] = [new]
    return "".join(lines)


# --------------------------------------------------------------------------------------------
# Notebooks


def setup_source(ctx: Context, install: dict[str, str] | None = None) -> str:
    """The first cell of every Colab notebook: fetch the book at ``ctx.ref``, install what is missing.

    ``install`` (distribution -> pip spec; default ``ctx.install``) is what the notebook needs.
    The cell puts BOOK_DIR on ``sys.path`` (and ``PYTHONPATH``, for subprocesses) on purpose: in the
    reader's Colab the book is a fetched checkout, not installed, and the notebooks import its helpers.
    """
    install = ctx.install if install is None else install
    install = json.dumps(install, indent=4).replace("\n}", ",\n}") if install else "{}"
    return f'''# @title Set-up: fetch the book and install what Colab lacks (run me first)
# Fetches the book at the commit or tag this notebook was built from, installs the packages
# Colab lacks (never replacing its torch, numpy or pandas), and moves into chapters/.
# A second run does nothing. Outside Colab it does nothing at all.
import importlib.metadata, os, subprocess, sys, tempfile
BOOK_REPO = "{ctx.repo_url}"
BOOK_REF = "{ctx.ref}"
BOOK_DIR = os.environ.get("BOOK_DIR", "/content/book")
NEEDED = {install}  # distribution -> what to install when it is missing

def _installed(dist):
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None

def _git(*args):
    """Run git in BOOK_DIR; on failure, stop with git's own message and what to do about it."""
    r = subprocess.run(["git", "-C", BOOK_DIR, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(
            f"Set-up could not fetch the book: `git {{' '.join(args[:2])}}` failed with\\n    "
            + (r.stderr.strip() or f"exit status {{r.returncode}}").replace("\\n", "\\n    ")
            + f"\\nLikely causes: the repository {{BOOK_REPO}} is not published (or is private), the commit "
            f"{{BOOK_REF[:12]}} was never pushed to it, or this runtime has no internet access. Open the "
            "repository's address in a browser to check, then run this cell again.") from None

if "google.colab" in sys.modules:
    did = []
    if not os.path.isdir(os.path.join(BOOK_DIR, "helpers")):
        git = _git
        os.makedirs(BOOK_DIR, exist_ok=True)
        git("init", "-q")
        git("fetch", "-q", "--depth=1", BOOK_REPO, BOOK_REF)
        git("checkout", "-q", "FETCH_HEAD")
        did.append(f"fetched {{BOOK_REPO}} at {{BOOK_REF[:12]}}")
    missing = [spec for dist, spec in NEEDED.items() if _installed(dist) is None]
    if missing:
        keep = "".join(f"{{d}}=={{_installed(d)}}\\n" for d in ("torch", "numpy", "pandas") if _installed(d))
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as pins:
            pins.write(keep)  # constraints: pip may add packages, never replace these
        print("Set-up: installing " + ", ".join(missing) + " ...", flush=True)  # pip's own progress follows
        subprocess.run([sys.executable, "-m", "pip", "install", "--progress-bar", "off", "-c", pins.name, *missing],
                       check=True)
        did.append("installed " + ", ".join(missing))
    if BOOK_DIR not in sys.path:
        sys.path.insert(0, BOOK_DIR)
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (BOOK_DIR, os.environ.get("PYTHONPATH")) if p)
    os.chdir(os.path.join(BOOK_DIR, "chapters"))
    print("Set-up: " + ("; ".join(did) if did else "nothing to do, already set up")
          + f" (torch {{_installed('torch')}}, numpy {{_installed('numpy')}}, pandas {{_installed('pandas')}})")
'''


def setup_cell(ctx: Context, install: dict[str, str] | None = None, cell_id: str = "colab-setup"):
    cell = nbformat.v4.new_code_cell(setup_source(ctx, install))
    cell.id = cell_id
    cell.metadata = {"tags": [SETUP_TAG], "cellView": "form", "jupyter": {"source_hidden": False}}
    return cell


def is_solution_markdown(src: str) -> bool:
    return any(t.type == "colon_fence" and _directive(t.info)[1].lower().startswith("solution")
               for t in tokens(src))


def strip_solutions(nb):
    """``nb`` (nbformat, MyST kept) without its solutions: the rendered site of a term in progress.

    Removes every ``Solution`` admonition from the markdown and every ``hide-cell`` code cell
    (the solutions' code); a markdown cell left empty goes too. A value that only solution code
    glues, quoted elsewhere in the prose, becomes ``ANSWER`` (``solution_glue``). Returns ``nb``,
    changed in place.
    """
    answers = solution_glue(nb.cells)
    kept = []
    for cell in nb.cells:
        if cell.cell_type == "code" and "hide-cell" in cell.metadata.get("tags", []):
            continue
        if cell.cell_type == "markdown" and answers:  # the answers the prose quotes (solution_glue)
            cell.source = _glue_role(answers).sub(ANSWER, cell.source)
        if cell.cell_type == "markdown" and is_solution_markdown(cell.source):
            lines = cell.source.splitlines(keepends=True)
            for tok in sorted(tokens(cell.source), key=lambda t: -(t.map or (0, 0))[0]):
                if tok.type == "colon_fence" and _directive(tok.info)[1].lower().startswith("solution"):
                    del lines[tok.map[0]:tok.map[1]]
            cell.source = "".join(lines).strip("\n")
            if not cell.source.strip():
                continue
        kept.append(cell)
    nb.cells = kept
    return nb


def glue_cell_title(src: str) -> str:
    """The Colab title of a cell the site hides (``remove-cell``): what it computes for the text.

    Only the first cell of a Colab notebook is called "Set-up" (the one a reader runs by hand); these
    cells only glue the numbers that the prose quotes, so their title names those numbers.
    """
    names = list(dict.fromkeys(re.sub(r"\{[^}]*\}", "…", n) for n in re.findall(r"""\bglue\(\s*f?["']([^"']+)["']""", src)))
    shown = ", ".join(names[:2]) + (f", … {len(names)} in all" if len(names) > 2 else "")
    return f"Numbers the text quotes ({shown})" if names else "Numbers the text quotes"


def not_executed_markdown(cell) -> nbformat.NotebookNode:
    """A code cell the site shows but does not run (``skip-execution``: the plotly twin of a 2-D figure),
    as a markdown cell holding its code, so that Colab's "Run all" does not draw the figure twice."""
    lines = cell.source.splitlines()
    lead = "This code is shown, not run"
    if lines and lines[0].startswith("#"):
        lead = re.sub(r"\s*\(shown, not executed\)\s*$", "", lines[0].lstrip("# ").strip()).rstrip(".")
        lines = lines[1:]
    code = "\n".join(lines).strip("\n")
    md = nbformat.v4.new_markdown_cell(
        f"**{lead}.** Not run with the notebook; to try it, paste it into a new code cell:\n\n```python\n{code}\n```")
    md.id = cell.id
    return md


def _collapse(cell, title: str) -> None:
    """Collapse a code cell's source in Colab (a titled form) and Jupyter (source_hidden); it still runs."""
    src = cell.source
    if not src.lstrip().startswith("# @title"):
        cell.source = f"# @title {title}\n{src}"
    cell.metadata["cellView"] = "form"
    cell.metadata.setdefault("jupyter", {})["source_hidden"] = True


def _caption_cell(cell, ctx: Context, doc: _Doc):
    fig = (cell.metadata.get("mystnb") or {}).get("figure") or {}
    caption = fig.get("caption")
    if not caption:
        return None
    name = fig.get("name", "")
    number = ctx.fignumbers.get(name) if name else None
    label = ctx.numfig_format.get("figure", "Fig. %s").replace("%s", number) if number else "Figure"
    anchor = anchor_html(name) if name else ""
    md = nbformat.v4.new_markdown_cell(f"{anchor}**{label}.** {convert_markdown(caption, doc).strip()}")
    md.id = f"{cell.id}-caption"[:64]
    return md


def convert_notebook(source: dict, ctx: Context, docname: str, edition: str = "colab"):
    """The Colab (or student) edition of one source notebook (``docname`` = ``chapters/<stem>``)."""
    if edition not in EDITIONS:
        raise ValueError(f"edition must be one of {EDITIONS}, got {edition!r}")
    nb = nbformat.reads(json.dumps(source), as_version=4)  # sources as strings
    student = edition == "student"
    answers = solution_glue(nb.cells) if student else frozenset()
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code" and not c.source.lstrip().startswith("%"))
    cells = [setup_cell(ctx, needed_specs(ctx.install, code))]
    for index, cell in enumerate(nb.cells):
        tags = list(cell.metadata.get("tags", []))
        doc = _Doc(ctx, docname, f"{docname}.ipynb cell {index}", solutions=not student, answers=answers)
        if index == 0 and cell.cell_type == "code" and "remove-cell" in tags and "import helpers" not in cell.source \
                and "from helpers" not in cell.source and "google.colab" in cell.source:
            continue  # the source's Colab placeholder: replaced by the set-up cell above
        if cell.cell_type == "markdown":
            cell.source = convert_markdown(cell.source, doc).rstrip("\n")
            if not cell.source.strip():
                continue
        elif cell.cell_type == "code" and "skip-execution" in tags:
            cells.append(not_executed_markdown(cell))
            continue
        elif cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            if "hide-cell" in tags:
                if student:
                    continue
                _collapse(cell, "Solution code (double-click to show)")
            elif "remove-cell" in tags or "hide-input" in tags:
                _collapse(cell, glue_cell_title(cell.source) if "remove-cell" in tags else "Show code")
            if not tags:
                cell.metadata.pop("tags", None)
        cells.append(cell)
        if cell.cell_type == "code":
            caption = _caption_cell(cell, ctx, doc)
            if caption is not None:
                cells.append(caption)
    nb.cells = cells
    nb.metadata.pop("book", None)
    nb.metadata.pop("papermill", None)
    nb.metadata["colab"] = {"provenance": [], "toc_visible": True, "name": docname.rsplit("/", 1)[-1] + ".ipynb"}
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["book_edition"] = {"edition": edition, "ref": ctx.ref, "repository": ctx.repo_url}
    return nb


def write_editions(root: Path = ROOT, ref: str | None = None, ctx: Context | None = None,
                   out: Path | None = None) -> list[Path]:
    """Write ``_build/colab/chapters/*.ipynb`` and ``_build/student/chapters/*.ipynb``; returns the paths."""
    ctx = ctx or context_from_build(root, ref)
    out = out or root / "_build"
    written = []
    for path in source_notebooks(root):
        docname = f"chapters/{path.stem}"
        source = read(path)
        for edition in EDITIONS:
            nb = convert_notebook(source, ctx, docname, edition)
            dst = out / edition / "chapters" / path.name
            dst.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, str(dst))
            written.append(dst)
    for edition in EDITIONS:
        (out / edition / "README.md").write_text(
            f"# {edition.capitalize()} edition of {ctx.repo_url}\n\nBuilt from {ctx.ref} by tools/colab.py; "
            f"do not edit (the sources are the `chapters/` notebooks of the book's main branch).\n")
    return written


def publish(edition: Path, remote: str, branch: str, message: str) -> str:
    """Commit the folder ``edition`` as the next commit of ``branch`` at ``remote`` and push it; returns the commit.

    The branch keeps its history (one commit per edition); files the new edition lacks are
    removed. Used by .github/workflows/publish.yml; tested against a local bare repository.
    """
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        git = lambda *a: subprocess.run(["git", "-C", tmp, "-c", "user.name=book-edition", "-c",
                                         "user.email=book-edition@users.noreply.github.com", *a],
                                        check=True, capture_output=True, text=True).stdout.strip()
        git("init", "-q", "-b", branch)
        git("remote", "add", "origin", remote)
        exists = subprocess.run(["git", "-C", tmp, "fetch", "-q", "--depth=1", "origin", branch], capture_output=True)
        if exists.returncode == 0:
            git("reset", "-q", "--soft", "FETCH_HEAD")
        import shutil

        shutil.copytree(edition, tmp, dirs_exist_ok=True)
        git("add", "-A")
        git("commit", "-q", "--allow-empty", "-m", message)
        git("push", "-q", "origin", f"HEAD:refs/heads/{branch}")
        return git("rev-parse", "HEAD")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ref", help="tag or commit the first cell fetches (default: tag at HEAD, else HEAD)")
    parser.add_argument("--publish", metavar="REMOTE",
                        help="instead: push _build/colab and _build/student to REMOTE's edition branches "
                             "(edition.colab_branch, edition.student_branch)")
    parser.add_argument("--message", default="Colab edition", help="commit message for --publish")
    args = parser.parse_args(argv)
    if args.publish:
        branches = edition_branches(book_config())
        missing = [e for e in EDITIONS if not (BUILD / e / "chapters").is_dir()]
        if missing:
            parser.error(f"_build/{missing[0]}/chapters missing: build the book first (make book)")
        for edition in EDITIONS:  # the student branch is what a site without solutions launches
            commit = publish(BUILD / edition, args.publish, branches[edition], f"{args.message} ({edition})")
            print(f"published {commit[:12]} to {branches[edition]}")
        return 0
    written = write_editions(ref=args.ref)
    print(f"editions: {len(written) // len(EDITIONS)} notebooks each in "
          + ", ".join(str((BUILD / e).relative_to(ROOT)) for e in EDITIONS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
