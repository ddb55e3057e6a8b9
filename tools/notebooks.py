"""The book's notebooks, read one way by every tool, tests/conftest.py and benchmarks/.

The repository root; the section notebooks (``chapters/*.ipynb``) and their executed copies
(``_build/executed/chapters/``), in book order; a notebook's cells and their text; the MyST
parser (myst-parser's markdown-it, with the book's extensions) and a walk through its pieces;
the values glued into an executed notebook. Run the tools as modules from the root
(``python -m tools.book``), so that ``tools`` and ``helpers`` import from this checkout.
"""

from __future__ import annotations

import ast
import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: where the build puts the executed copies, relative to a root
EXECUTED = Path("_build") / "executed" / "chapters"
#: the myst-parser extensions the book enables (_config.yml parse.myst_enable_extensions)
MYST_EXTENSIONS = {"amsmath", "colon_fence", "dollarmath", "deflist", "substitution"}
#: directives whose body is code or math, not MyST to parse further
RAW_DIRECTIVES = {"code-cell", "code", "code-block", "sourcecode", "math", "raw", "literalinclude",
                  "eval-rst", "csv-table", "mermaid", "bibliography"}


# ------------------------------------------------------------------------ the notebooks and their cells

def source_notebooks(root: Path = ROOT) -> list[Path]:
    """Every section notebook of the book in book order (file-name order is section order)."""
    return sorted(p for p in (root / "chapters").glob("*.ipynb") if not p.name.startswith("_"))


def executed_notebooks(root: Path = ROOT) -> list[Path]:
    """The executed copies the last build left, in book order."""
    return sorted(p for p in (root / EXECUTED).glob("*.ipynb") if not p.name.startswith("_"))


def executed_path(stem: str, root: Path = ROOT) -> Path:
    """Where the build puts the executed copy of ``chapters/<stem>.ipynb``."""
    return root / EXECUTED / f"{stem}.ipynb"


def read(path: Path) -> dict:
    """A notebook as its JSON (the cells' ``source`` a string or a list of lines)."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def as_text(source: str | list[str]) -> str:
    """A cell's source (or an output's text), which the JSON may hold as a list of lines."""
    return "".join(source) if isinstance(source, list) else source


def markdown_cells(nb: dict) -> Iterator[tuple[int, str]]:
    """``(index, text)`` of every markdown cell."""
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "markdown":
            yield index, as_text(cell["source"])


# ------------------------------------------------------------------------ glued values

@dataclass
class Glued:
    value: Any    # the text/plain read back as a Python literal (the text itself where it is none)
    setting: bool  # glued with helpers.book.glue(..., setting=True): chosen by the author
    text: str     # the text/plain, as the site shows {glue}`name`


def glued(nb: dict) -> dict[str, Glued]:
    """Every value glued into an executed notebook (myst-nb's glue outputs: ``scrapbook`` metadata,
    the value under ``<mime_prefix>text/plain``), by name."""
    values = {}
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            meta = out.get("metadata", {})
            scrap = meta.get("scrapbook")
            if not scrap:
                continue
            plain = as_text(out["data"][scrap["mime_prefix"] + "text/plain"])
            try:
                value = ast.literal_eval(plain)
            except (ValueError, SyntaxError):
                value = plain
            values[scrap["name"]] = Glued(value, bool((meta.get("book") or {}).get("setting")), plain)
    return values


def glued_values(nb: dict) -> dict[str, Any]:
    """``name -> value`` of every value glued into an executed notebook."""
    return {name: g.value for name, g in glued(nb).items()}


# ------------------------------------------------------------------------ MyST: the parse and its pieces

@functools.lru_cache(maxsize=1)
def md_parser():
    """myst-parser's markdown-it (the parser the site uses), with the book's extensions."""
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    return create_md_parser(MdParserConfig(enable_extensions=MYST_EXTENSIONS), RendererHTML)


def tokens(src: str):
    """The markdown-it token stream of ``src`` as the site's parser sees it."""
    return md_parser().parse(src)


def split_directive(info: str) -> tuple[str, str] | None:
    """``"{admonition} Title"`` -> ``("admonition", "Title")``; None for a plain code fence."""
    info = info.strip()
    if not info.startswith("{") or "}" not in info:
        return None
    name, _, argument = info[1:].partition("}")
    return name.strip(), argument.strip()


def directive_body(content: str) -> tuple[dict[str, str], str]:
    """Split a directive's content into its options (``:key: value`` lines or a ``---`` YAML block)
    and the MyST body that follows them."""
    lines = content.splitlines()
    options: dict[str, str] = {}
    i = 0
    if lines and lines[0].strip() == "---":
        end = next((j for j in range(1, len(lines)) if lines[j].strip() == "---"), None)
        if end is not None:
            import yaml

            loaded = yaml.safe_load("\n".join(lines[1:end])) or {}
            options = {str(k): str(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}
            i = end + 1
    else:
        while i < len(lines) and lines[i].startswith(":") and lines[i].count(":") >= 2:
            key, _, value = lines[i][1:].partition(":")
            options[key.strip()] = value.strip()
            i += 1
    return options, "\n".join(lines[i:])


@dataclass
class Piece:
    """One piece of a markdown cell, as the walker meets it.

    kind: ``"inline"`` (a markdown-it inline token: prose, with its children), ``"directive"``
    (a fence or colon fence with ``{name}``; ``name``/``argument``/``options`` set),
    ``"code"`` (a plain fenced or indented code block), ``"math"`` (a math block), ``"html"``.
    """

    kind: str
    token: Any = None
    name: str = ""
    argument: str = ""
    options: dict = field(default_factory=dict)


def walk_markdown(src: str) -> Iterator[Piece]:
    """Every piece of a MyST markdown text, recursing into directive bodies (admonitions, ...)."""
    for tok in tokens(src):
        if tok.type == "inline":
            yield Piece("inline", tok)
        elif tok.type in ("fence", "colon_fence"):
            parts = split_directive(tok.info)
            if parts is None:
                yield Piece("code", tok)
                continue
            name, argument = parts
            options, body = directive_body(tok.content)
            yield Piece("directive", tok, name, argument, options)
            if name not in RAW_DIRECTIVES:
                yield from walk_markdown(body)
        elif tok.type == "code_block":
            yield Piece("code", tok)
        elif tok.type in ("math_block", "math_block_label", "amsmath"):
            yield Piece("math", tok)
        elif tok.type in ("html_block",):
            yield Piece("html", tok)
