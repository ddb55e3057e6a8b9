"""Numbers typed into the prose by hand: every number a markdown cell shows outside a glue role.

    python tools/prose_numbers.py                    # every source notebook of this checkout
    python tools/prose_numbers.py --root /work/wt/s45 --section 14_45
    python tools/prose_numbers.py --all              # also list what the rules and allow-list let through
    python tools/prose_numbers.py --shrink-pending   # delete pending entries whose number is gone

The book's rule (CONTRIBUTING.md): a number in prose is glued, never typed. This scanner parses
each markdown cell with myst-parser's markdown-it (tools/claims_check.walk_markdown), so code
spans, code blocks, link targets, citation keys and every role's target (``{glue:text}``,
``{cite}``, ``{doc}``, ``{ref}``, ...) are never scanned; admonition titles and bodies are. In the
plain text tokens left, a *number* is a run of digits (``1,115,394``, ``0.6``, ``1e-7``), or a
spelled-out number word right before ``times``/``-fold`` ("eight times longer").

What may stay typed, each a named rule (tests/prose_numbers_allow.yml lists them with reasons):

- ``section``: section numbers ``§14.NN`` / ``14.NN``;
- ``year``: a four-digit year 1940-2029;
- ``small-integer``: a whole number 0-10 used as a word (step 1, Exercise 3, 5-grams, a beam
  of 8) -- not when it is followed by ``%``, ``×``, ``times`` or ``-fold``, and never a decimal;
- ``math``: numbers inside ``$...$`` / ``$$...$$`` / amsmath are constants of equations and the
  settings they are evaluated at (``\\rho = 0.7``, ``\\ln 32 \\approx 3.47``) -- but a math span
  that is a bare number (``$10^{-7}$``, ``$0.6$``) is prose in disguise and is scanned;
- ``allowed``: an entry of the allow-list (a notebook, a literal snippet of its prose, a reason):
  dataset facts, published figures with their citation, definitions.

Everything else is a *finding*. tests/test_prose_numbers.py fails on a finding that is not in
tests/prose_numbers_pending.yml (what existed when the test was written, per notebook; it only
shrinks).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

try:
    from tools.claims_check import walk_markdown
except ImportError:  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from claims_check import walk_markdown  # type: ignore

DEFAULT_ROOT = Path(__file__).resolve().parent.parent
ALLOW_FILE = Path("tests") / "prose_numbers_allow.yml"

NUMBER_WORDS = ("two three four five six seven eight nine ten eleven twelve fifteen twenty thirty forty "
                "fifty hundred thousand million half").split()
DIGITS = re.compile(r"(?<![\w.,])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-−+]?\d+)?(?![\w])")
SPELLED = re.compile(r"\b(" + "|".join(NUMBER_WORDS) + r")(?=(?:\s+times\b|-fold\b))", re.IGNORECASE)
SECTION = re.compile(r"(?:§\s*)?14\.\d\d")
AFTER_SCALE = re.compile(r"^\s*(?:%|×|x\b|times\b|-fold\b|per ?cent\b)")
#: a math span that is one number: 0.6, 10^{-7}, 3 \times 10^{4}, 1.5\%, \approx 0.6
BARE_MATH = re.compile(r"\s*(?:\\approx\s*|\\sim\s*|~\s*)?([-−+]?\s*\d+(?:\.\d+)?(?:\s*(?:\\times|\\cdot)\s*10\^\{?[-−+]?\d+\}?)?"
                       r"|10\^\{?[-−+]?\d+\}?)\s*(?:\\%|\\,\\%)?\s*")


def bare_math_number(content: str) -> str:
    """The number a math span consists of, or '' if it is an expression (has a variable, an operator)."""
    m = BARE_MATH.fullmatch(content)
    return m.group(1).replace(" ", "") if m else ""


def classify_bare(number: str) -> str:
    """A bare math number is prose: small integers pass as in text; powers of ten and decimals do not."""
    return "small-integer" if re.fullmatch(r"[-−+]?\d+", number) and abs(int(number.replace("−", "-"))) <= 10 else ""


@dataclass
class Number:
    stem: str
    cell: int
    text: str       # the number as typed
    context: str    # the words around it
    rule: str       # "" for a finding, else the rule that lets it stay
    reason: str = ""

    @property
    def section(self) -> str:
        return self.stem[:5]


def load_allow(root: Path) -> list[dict]:
    """The allow-list's entries: dicts with notebook (a section id or '*'), a literal ``text`` or a
    regular expression ``pattern`` (matched within one text token of the prose), and a reason."""
    data = yaml.safe_load((root / ALLOW_FILE).read_text()) if (root / ALLOW_FILE).is_file() else {}
    entries = (data or {}).get("allowed", []) or []
    for i, entry in enumerate(entries):
        has_target = ("text" in entry) != ("pattern" in entry)
        if not has_target or "notebook" not in entry or not str(entry.get("reason", "")).strip():
            raise ValueError(f"{ALLOW_FILE} entry {i} ({entry!r}) needs notebook, one of text/pattern, "
                             "and a non-empty reason")
        if "pattern" in entry:
            entry["regex"] = re.compile(entry["pattern"])
    return entries


def _allowed_spans(text: str, section: str, entries: list[dict]) -> list[tuple[int, int, str]]:
    spans = []
    for entry in entries:
        if entry["notebook"] not in ("*", section):
            continue
        if "regex" in entry:
            spans += [(m.start(), m.end(), entry["reason"]) for m in entry["regex"].finditer(text)]
            continue
        snippet = str(entry["text"])
        start = text.find(snippet)
        while start >= 0:
            spans.append((start, start + len(snippet), entry["reason"]))
            start = text.find(snippet, start + 1)
    return spans


def classify(match_text: str, text: str, start: int, end: int) -> str:
    """The built-in rule that lets a digit run stay in plain text, or ''."""
    before = text[max(0, start - 2):start]
    if SECTION.fullmatch(match_text) or ("§" in before and re.fullmatch(r"\d+(?:\.\d+)?", match_text)):
        return "section"
    if re.fullmatch(r"\d+", match_text) and re.search(r"(?:Chapter|Part)\s$", text[max(0, start - 8):start]):
        return "section"
    if re.fullmatch(r"(19[4-9]\d|20[0-2]\d)", match_text):
        return "year"
    if re.fullmatch(r"\d+", match_text) and int(match_text) <= 10 and not AFTER_SCALE.match(text[end:]):
        return "small-integer"
    return ""


def scan_text(text: str, stem: str, cell: int, entries: list[dict], math: bool = False) -> list[Number]:
    """Numbers in one plain text token (or a bare-number math span, ``math=True``)."""
    out = []
    spans = _allowed_spans(text, stem[:5], entries)
    matches = [(m.start(), m.end(), m.group()) for m in DIGITS.finditer(text)]
    if not math:
        # 14.NN as one token (the digit pattern would split it at the dot only if it were "14.")
        matches += [(m.start(), m.end(), m.group()) for m in SPELLED.finditer(text)]
    for start, end, number in sorted(matches):
        context = text[max(0, start - 40):end + 40].replace("\n", " ")
        rule, reason = ("", "")
        allowed = next((r for s, e, r in spans if s <= start and end <= e), None)
        if allowed is not None:
            rule, reason = "allowed", allowed
        elif not math and number[0].isdigit():
            rule = classify(number, text, start, end)
        out.append(Number(stem, cell, number, context.strip(), rule, reason))
    return out


def scan_markdown(text: str, stem: str, cell: int, entries: list[dict]) -> list[Number]:
    """Every number in one markdown cell, classified (see the module doc)."""
    found = []
    for piece in walk_markdown(text):
        if piece.kind == "inline":
            for child in piece.token.children or []:
                if child.type == "text":
                    found += scan_text(child.content, stem, cell, entries)
                elif child.type.startswith("math"):
                    bare = bare_math_number(child.content)
                    if bare:
                        found.append(Number(stem, cell, bare, child.content, classify_bare(bare)))
                    else:
                        found += [Number(stem, cell, m.group(), child.content[:60], "math")
                                  for m in DIGITS.finditer(child.content)]
                elif child.type == "image":
                    found += scan_text(child.content, stem, cell, entries)
        elif piece.kind == "directive" and piece.argument and piece.name in ADMONITIONS:
            found += scan_markdown(piece.argument, stem, cell, entries)
        elif piece.kind == "math":
            found += [Number(stem, cell, m.group(), piece.token.content[:60].strip(), "math")
                      for m in DIGITS.finditer(piece.token.content)]
    return found


#: directives whose argument is a title in prose (scanned); other arguments are targets (paths, names)
ADMONITIONS = {"admonition", "note", "tip", "hint", "important", "warning", "caution", "attention",
               "danger", "error", "seealso", "dropdown", "topic", "sidebar", "margin", "card", "exercise",
               "solution"}


def _literal_numbers(node) -> list[float]:
    """The numbers of a literal: 32, -0.5, (8, 16, 32), [0.5, 1.0], 2**10 is not a literal."""
    import ast

    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return [float(node.value)]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return [(-v if isinstance(node.op, ast.USub) else v) for v in _literal_numbers(node.operand)]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [v for elt in node.elts for v in _literal_numbers(elt)]
    return []


def code_settings(nb: dict) -> set[float]:
    """Numbers the notebook's code sets as constants: literals assigned to UPPER_CASE names
    (``T_TRAIN = 32``, ``WIDTHS = (8, 16, 32)``) in its code cells. A number typed in the prose
    that equals one of them is a setting the reader is told, and it is allowed (rule ``setting``);
    if the code's value changes, the typed number stops matching and becomes a finding."""
    import ast

    values: set[float] = set()
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        src = cell["source"]
        src = "".join(src) if isinstance(src, list) else src
        lines = [ln for ln in src.splitlines() if not ln.lstrip().startswith(("%", "!"))]
        try:
            tree = ast.parse("\n".join(lines))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [t.id for t in targets if isinstance(t, ast.Name)]
                if names and all(re.fullmatch(r"[A-Z][A-Z0-9_]*", n) for n in names):
                    values.update(_literal_numbers(node.value))
    return values


def to_float(number: str) -> float | None:
    text = number.replace(",", "").replace("−", "-").replace("+", "")
    try:
        return float(text)
    except ValueError:
        return None


def scan_notebook(path: Path, entries: list[dict]) -> list[Number]:
    nb = json.loads(path.read_text())
    settings = code_settings(nb)
    found = []
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        src = cell["source"]
        found += scan_markdown("".join(src) if isinstance(src, list) else src, path.stem, index, entries)
    for n in found:
        if not n.rule and to_float(n.text) in settings:
            n.rule = "setting"
    return found


def source_notebooks(root: Path) -> list[Path]:
    return sorted(p for p in (root / "chapters").glob("14_*.ipynb") if not p.name.startswith("_"))


def scan_book(root: Path = DEFAULT_ROOT, sections: list[str] | None = None) -> list[Number]:
    entries = load_allow(root)
    found = []
    for path in source_notebooks(root):
        if sections and path.stem[:5] not in sections:
            continue
        found += scan_notebook(path, entries)
    return found


PENDING = Path("tests") / "prose_numbers_pending.yml"


def shrink_pending(root: Path, numbers: list[Number]) -> list[str]:
    """Delete from <root>/tests/prose_numbers_pending.yml the entries whose number is no longer
    typed in that section (never adds one); keeps every other line, comments included."""
    from collections import Counter

    path = root / PENDING
    have = {}
    for n in numbers:
        if not n.rule:
            have.setdefault(n.section, Counter())[n.text] += 1
    out, changes, section = [], [], None
    for line in path.read_text().splitlines():
        head = re.fullmatch(r'"?(14_\d\d)"?:\s*', line)
        item = re.match(r'\s+-\s+"((?:[^"\\]|\\.)*)"', line)
        if head:
            section = head[1]
        elif item and section:
            text = item[1]
            if have.get(section, Counter())[text] > 0:
                have[section][text] -= 1
            else:
                changes.append(f"{section}: {text!r} deleted (no longer typed)")
                continue
        out.append(line)
    # drop section headers left without entries
    cleaned = [ln for i, ln in enumerate(out)
               if not (re.fullmatch(r'"?14_\d\d"?:\s*', ln)
                       and (i + 1 == len(out) or not out[i + 1].startswith(" ")))]
    path.write_text("\n".join(cleaned) + "\n")
    return changes


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Numbers typed into the prose outside glue roles.")
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--section", action="append", help="section id such as 14_48 (repeatable)")
    parser.add_argument("--all", action="store_true", help="also list numbers a rule or the allow-list lets stay")
    parser.add_argument("--shrink-pending", action="store_true",
                        help="delete entries of tests/prose_numbers_pending.yml whose number is gone (never adds)")
    args = parser.parse_args(argv)
    numbers = scan_book(args.root.resolve(), args.section)
    if args.shrink_pending:
        if args.section:
            parser.error("--shrink-pending needs the whole book (no --section)")
        for change in shrink_pending(args.root.resolve(), numbers) or ["nothing to delete"]:
            print(change)
    for n in numbers:
        if n.rule and not args.all:
            continue
        tag = f"[{n.rule}]" if n.rule else "[typed]"
        print(f"{n.section} c{n.cell:<3} {tag:16} {n.text!r:12} ...{n.context}...")
    typed = [n for n in numbers if not n.rule]
    print(f"{len(typed)} hand-typed numbers in {len({n.stem for n in typed})} notebooks "
          f"({len(numbers) - len(typed)} let through by a rule or the allow-list)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
