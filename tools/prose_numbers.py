"""Numbers typed into the prose by hand: every number a markdown cell shows outside a glue role.

    python -m tools.prose_numbers                    # every source notebook of this checkout
    python -m tools.prose_numbers --root /work/wt/s45 --section 14_45
    python -m tools.prose_numbers --all              # also list what the rules and allow-list let through
    python -m tools.prose_numbers --shrink-pending   # delete pending entries whose number is gone

The book's rule (CONTRIBUTING.md): a number in prose is glued, never typed. This scanner parses
each markdown cell with myst-parser's markdown-it (tools/notebooks.walk_markdown), so code
spans, code blocks, link targets, citation keys and every role's target (``{glue:text}``,
``{cite}``, ``{doc}``, ``{ref}``, ...) are never scanned; admonition titles and bodies are. In the
plain text tokens left, a *number* is a run of digits (``1,115,394``, ``0.6``, ``1e-7``), or,
anywhere, a number word: two to twelve, fifteen, twenty, thirty, forty, fifty, hundred, thousand,
million, dozen, twice, thrice, half, quarter(s). "one" is not read: it is a pronoun or an article
far more often than a count ("the one before", "one of them").

What may stay typed, each a named rule (tests/prose_numbers_allow.yml lists them with reasons):

- ``section``: section numbers ``§14.NN`` / ``14.NN``, ``Chapter N``, ``Part N``;
- ``year``: a four-digit year 1940-2029;
- ``small-integer``: a whole number 0-10 in a *named use*, and nowhere else: right after one of
  the words step(s), Exercise(s), Solution, Property, Part(s), Section(s), Figure(s), Fig., Table(s),
  head, layer, block, seed, order(s), position(s), token, row(s), column(s), example, lag(s), top,
  distinct, stride -- joined by a space or a hyphen ("step 1", "lag-1", "top-5"), or as the later
  members of a run after one ("Parts 1 and 2", "positions 0–2", "orders 1 and 2"); in the names
  GPT-N and UTF-N; before ``-gram(s)`` ("5-grams"); as a list marker opening a heading or a
  paragraph ("### 1. Accuracy"). Never before ``%``, ``×``, ``times``, ``-fold``; never a decimal.
  "slightly below 2", "mean 0", "a beam of 8" are findings. Equation numbers "(N)" are not a
  named use: the book cites equations by label, and a bracketed small number in its prose is a
  value ("linear growth (2)");
- ``count-word``: a number word two-twelve that counts a set the text has named: right after
  the, these, those, its, their, our, all, both, or a possessive 's ("the two models", "all
  three", "the GRU's three") and not followed by quarters, times, as, -fold, "orders of"; and
  ``half`` after first, second, last, mirror, each or other ("the second half") or before
  "precision" (a number format). Any other number word ("about three nats", "twice as large",
  "eight random seeds", "three quarters of") is a finding;
- ``setting``: a typed number bound to a setting *by name*. The notebook's code cells give each
  UPPER_CASE name the numbers of its literal (``T_TRAIN = 32``; ``WIDTHS = (8, 16, 32)``; a
  tuple ``A, B = 3, 4`` per name: A is 3 and B is 4; ``A = B = 5`` both). A typed number (digits,
  or a number word's value) passes only when a name with that value is written within
  SETTING_WINDOW (3) words of it in the same clause (no ``,;:.!?``, bracket or dash between):
  the NAME itself (in a code span, `` `T_STEPS` ``), or an alias of it -- one of the name's own
  words of three letters or more (RECALL_STEPS: recall, steps), or, for a name of more than one
  word, its prefix's (D_*: width, dimension, dimensional, unit, wide; T_*: length, step,
  position, long). An alias before the number names it ("lag 40", "forget bias 1", "a window of
  16"); one after it must be the noun it counts, in the plural or joined by a hyphen ("20
  steps", "three seeds", "a 32-unit state", "a three-layer CLM", but not "two bias vectors").
  The number's equal to some other setting's literal proves nothing (the old loophole);
- ``math``: numbers inside ``$...$`` / ``$$...$$`` / amsmath are constants of equations and the
  settings they are evaluated at (``\\rho = 0.7``, ``\\ln 32 \\approx 3.47``) -- but a math span
  that is a bare number (``$10^{-7}$``, ``$0.6$``) is prose in disguise and is scanned;
- ``allowed``: an entry of the allow-list (a notebook, a literal snippet of its prose or a
  regular expression, a reason): dataset facts, published figures with their citation,
  definitions. Every entry is *anchored*: its snippet (each top-level alternative of a pattern)
  holds the prose's words beside the number, never a bare number (``414 series``, not ``\\b414\\b``);
  load_allow refuses one that is not. And every entry must still let a number of its notebook
  stay (any notebook for ``*``): one that matches nothing is stale, and the test fails on it.

Everything else is a *finding*. tests/test_prose_numbers.py fails on a finding that is not in
tests/prose_numbers_pending.yml (what existed when the rules last changed, per notebook; it only
shrinks).
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:  # `python tools/prose_numbers.py`: tools/ is a package
    raise SystemExit("run it as a module, from the repository root: python -m tools.prose_numbers ...")

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from tools.notebooks import ROOT, as_text, markdown_cells, read, source_notebooks, walk_markdown

ALLOW_FILE = Path("tests") / "prose_numbers_allow.yml"

#: spelled-out numbers the scanner reads everywhere (not "one": it is a pronoun and an article
#: far more often than a count, "the one before", "one of them"), with their values
NUMBER_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
                "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30,
                "forty": 40, "fifty": 50, "hundred": 100, "thousand": 1000, "million": 1e6, "dozen": 12,
                "twice": 2, "thrice": 3, "half": 0.5, "quarter": 0.25, "quarters": 0.25}
#: the words the ``count-word`` rule may let through (counts of a set); the others are quantities
COUNT_WORDS = {"two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"}
DIGITS = re.compile(r"(?<![\w.,])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-−+]?\d+)?(?![\w])")
SPELLED = re.compile(r"\b(" + "|".join(NUMBER_WORDS) + r")\b", re.IGNORECASE)
SECTION = re.compile(r"(?:§\s*)?14\.\d\d")
AFTER_SCALE = re.compile(r"^\s*(?:%|×|x\b|times\b|-fold\b|per ?cent\b)")
#: the named uses of a small integer (0-10): the word right before it (or before a run
#: ``N and M``, ``N to M``, ``N–M``, ``N, M`` of them), joined by a space or a hyphen
NAMED_BEFORE = re.compile(
    r"(?:\b(?:[Ss]teps?|[Ee]xercises?|Solution|Property|Parts?|Sections?|Figures?|Fig\.|Tables?|[Hh]ead|[Ll]ayer|"
    r"[Bb]lock|[Ss]eed|[Oo]rders?|[Pp]ositions?|[Tt]oken|[Rr]ows?|[Cc]olumns?|[Ee]xample|[Ll]ags?|[Tt]op|"
    r"distinct|stride)[ \t\n-]|\b(?:GPT|UTF)-)"
    r"(?:\d+\s*(?:,|and|or|to|–)\s*)*$")
#: ... or the word right after it: an n-gram's order (5-gram, 10-grams)
NAMED_AFTER = re.compile(r"^-grams?\b")
#: a list marker written into a heading or a paragraph's first text ("### 1. Accuracy at equal cost")
LIST_MARKER = re.compile(r"^\s*\d+\.\s")
#: the determiners before a number word that point back to a set the text has named
DEFINITE = re.compile(r"(?:\b(?:[Tt]he|[Tt]hese|[Tt]hose|[Ii]ts|[Tt]heir|[Oo]ur|[Aa]ll|[Bb]oth)|['’]s)\s+$")
#: ... and the words after one that make it a quantity after all (three quarters, twice as)
SCALE_AFTER_WORD = re.compile(r"^\s*(?:quarters?\b|times\b|as\b|-fold\b|orders? of\b|%|×|per ?cent\b)")
#: the halves the text defines (of a sequence, a palindrome, a horizon) and a number format's name
HALF_NAMED = re.compile(r"\b(?:first|second|last|mirror|each|other)[ \t\n-]+$")
HALF_FORMAT = re.compile(r"^[ -]precision\b")
#: a math span that is one number: 0.6, 10^{-7}, 3 \times 10^{4}, 1.5\%, \approx 0.6
BARE_MATH = re.compile(r"\s*(?:\\approx\s*|\\sim\s*|~\s*)?([-−+]?\s*\d+(?:\.\d+)?(?:\s*(?:\\times|\\cdot)\s*10\^\{?[-−+]?\d+\}?)?"
                       r"|10\^\{?[-−+]?\d+\}?)\s*(?:\\%|\\,\\%)?\s*")
#: how many words on each side of a typed setting its name (or an alias) may stand, in one sentence
SETTING_WINDOW = 3
#: prose aliases of a setting's name by its prefix (besides the name's own words): D_* is a width,
#: T_* a length in steps or positions
PREFIX_ALIASES = {"d": ("width", "dimension", "dimensional", "unit", "wide"),
                  "t": ("length", "step", "position", "long")}
CLAUSE_END = re.compile(r"[,;:.!?](?:\s|$)|[()\[\]—–]")
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d[\d,.]*|\u25c6")


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
    entry: int = -1  # the allow-list entry that lets it stay (rule "allowed"), by index

    @property
    def section(self) -> str:
        return self.stem[:5]


def _alternatives(pattern: str) -> list[str]:
    """The top-level ``|`` alternatives of a regular expression."""
    out, depth, cur, i = [], 0, "", 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            cur += pattern[i:i + 2]
            i += 2
            continue
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "|" and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    return out + [cur]


def anchored(entry: dict) -> bool:
    """An allow-list entry is anchored when its snippet (every alternative of its pattern) holds a
    word of the prose beside the number: two letters in a row, outside an escape such as ``\\b``."""
    targets = [str(entry["text"])] if "text" in entry else _alternatives(entry["pattern"])
    return all(re.search(r"[A-Za-z]{2,}", re.sub(r"\\.", " ", t)) for t in targets)


def load_allow(root: Path) -> list[dict]:
    """The allow-list's entries: dicts with notebook (a section id or '*'), a literal ``text`` or a
    regular expression ``pattern`` (matched within one text token of the prose), and a reason.
    Each must be anchored (see :func:`anchored`): a bare number would allow it anywhere."""
    data = yaml.safe_load((root / ALLOW_FILE).read_text()) if (root / ALLOW_FILE).is_file() else {}
    entries = (data or {}).get("allowed", []) or []
    for i, entry in enumerate(entries):
        has_target = ("text" in entry) != ("pattern" in entry)
        if not has_target or "notebook" not in entry or not str(entry.get("reason", "")).strip():
            raise ValueError(f"{ALLOW_FILE} entry {i} ({entry!r}) needs notebook, one of text/pattern, "
                             "and a non-empty reason")
        if not anchored(entry):
            raise ValueError(f"{ALLOW_FILE} entry {i} ({entry.get('text') or entry.get('pattern')!r}) is not "
                             "anchored: write the words around the number into it, not the bare number")
        if "pattern" in entry:
            entry["regex"] = re.compile(entry["pattern"])
        entry["index"] = i
    return entries


def _allowed_spans(text: str, section: str, entries: list[dict]) -> list[tuple[int, int, dict]]:
    spans = []
    for entry in entries:
        if entry["notebook"] not in ("*", section):
            continue
        if "regex" in entry:
            spans += [(m.start(), m.end(), entry) for m in entry["regex"].finditer(text)]
            continue
        snippet = str(entry["text"])
        start = text.find(snippet)
        while start >= 0:
            spans.append((start, start + len(snippet), entry))
            start = text.find(snippet, start + 1)
    return spans


def classify(match_text: str, text: str, start: int, end: int, first: bool = False) -> str:
    """The built-in rule that lets a digit run stay in plain text, or ''. ``first``: the text is
    the first of its paragraph or heading (where a list marker may stand)."""
    before = text[max(0, start - 2):start]
    if SECTION.fullmatch(match_text) or ("§" in before and re.fullmatch(r"\d+(?:\.\d+)?", match_text)):
        return "section"
    if re.fullmatch(r"\d+", match_text) and re.search(r"(?:Chapter|Part)\s$", text[max(0, start - 8):start]):
        return "section"
    if re.fullmatch(r"(19[4-9]\d|20[0-2]\d)", match_text):
        return "year"
    if re.fullmatch(r"\d+", match_text) and int(match_text) <= 10 and not AFTER_SCALE.match(text[end:]):
        if (NAMED_BEFORE.search(text[:start]) or NAMED_AFTER.match(text[end:])
                or (first and LIST_MARKER.match(text) and LIST_MARKER.match(text).end() > start)):
            return "small-integer"
    return ""


def classify_word(word: str, text: str, start: int, end: int) -> str:
    """The rule that lets a number word stay (``count-word``), or ''."""
    w = word.lower()
    if w in COUNT_WORDS and DEFINITE.search(text[:start]) and not SCALE_AFTER_WORD.match(text[end:]):
        return "count-word"
    if w == "half" and (HALF_NAMED.search(text[:start]) or HALF_FORMAT.match(text[end:])):
        return "count-word"
    return ""


def number_value(number: str) -> float | None:
    """The value of a typed number: a digit run or a number word."""
    return NUMBER_WORDS.get(number.lower()) if number[0].isalpha() else to_float(number)


def _variants(word: str) -> set[str]:
    w = word.lower()
    out = {w, w + "s", w + "es"}
    if w.endswith("es"):
        out.add(w[:-2])
    if w.endswith("s"):
        out.add(w[:-1])
    return out


def _plural(word: str) -> str:
    """The plural of an alias, whichever number it is written in: step(s) -> steps, bias(es) -> biases."""
    w = word.lower()
    if w.endswith("es") and w[:-2].endswith(("s", "x", "ch", "sh")):
        return w
    if w.endswith("s") and not w.endswith(("ss", "as", "us", "is")):
        return w
    return w + ("es" if w.endswith(("s", "x", "ch", "sh")) else "s")


def setting_aliases(name: str) -> set[str]:
    """The words that name a setting in prose: the name itself, each of its words of three letters
    or more (``RECALL_STEPS``: recall, steps), and the aliases of its prefix (PREFIX_ALIASES)."""
    parts = name.lower().split("_")
    words = {p for p in parts if len(p) >= 3}
    if len(parts) > 1:
        words.update(PREFIX_ALIASES.get(parts[0], ()))
    return words


def bound_setting(value: float | None, before: str, after: str, settings: dict[str, set[float]]) -> str:
    """The setting a typed number is bound to, or '': a name whose literal values include ``value``
    and that is written within SETTING_WINDOW words of the number, in the same clause (no ``,;:.!?``,
    bracket or dash between). Written means the NAME itself (a code span `` `T_STEPS` `` counts),
    or one of its setting_aliases: before the number ("lag 40", "forget bias 1", "a window of 16"),
    or after it as the noun it counts, in the plural or joined by a hyphen ("20 steps",
    "three seeds", "a 32-unit state", "a three-layer CLM"; not "two bias vectors"). The setting's
    own words are tried before its prefix's aliases. ``before``/``after``: the inline's text on
    each side of the number, code spans included."""
    if value is None or not settings:
        return ""
    ends = list(CLAUSE_END.finditer(before))
    before = before[ends[-1].end():] if ends else before
    cut = CLAUSE_END.search(after)
    after = after[:cut.start()] if cut else after
    left = WORD.findall(before)[-SETTING_WINDOW:]
    right = WORD.findall(after)[:SETTING_WINDOW]
    hyphen = re.match(r"-([A-Za-z]+)", after)
    near_exact = set(left + right)

    def written(alias: str) -> bool:
        if any(_variants(alias) & _variants(w) for w in left):
            return True
        if hyphen and _variants(alias) & _variants(hyphen[1]):
            return True
        return any(w.lower() == _plural(alias) for w in right)

    candidates = [(name, values) for name, values in sorted(settings.items()) if value in values]
    for name, _ in candidates:
        if name in near_exact:
            return name
    for prefix_pass in (False, True):
        for name, _ in candidates:
            parts = name.lower().split("_")
            own = {p for p in parts if len(p) >= 3}
            aliases = (set(PREFIX_ALIASES.get(parts[0], ())) if len(parts) > 1 else set()) if prefix_pass else own
            if any(written(a) for a in aliases):
                return name
    return ""


def scan_text(text: str, stem: str, cell: int, entries: list[dict], math: bool = False,
              settings: dict[str, set[float]] | None = None, left: str = "", right: str = "",
              first: bool = False) -> list[Number]:
    """Numbers in one plain text token (or a bare-number math span, ``math=True``). ``left`` and
    ``right``: the rest of its inline (code spans included), for binding a typed setting."""
    out = []
    spans = _allowed_spans(text, stem[:5], entries)
    matches = [(m.start(), m.end(), m.group()) for m in DIGITS.finditer(text)]
    if not math:
        matches += [(m.start(), m.end(), m.group()) for m in SPELLED.finditer(text)]
    for start, end, number in sorted(matches):
        context = text[max(0, start - 40):end + 40].replace("\n", " ")
        rule, reason, index = ("", "", -1)
        allowed = next((e for s, e_, e in spans if s <= start and end <= e_), None)
        if allowed is not None:
            rule, reason, index = "allowed", allowed["reason"], allowed.get("index", -1)
        elif not math:
            rule = (classify(number, text, start, end, first) if number[0].isdigit()
                    else classify_word(number, text, start, end))
            if not rule:
                name = bound_setting(number_value(number), left + text[:start], text[end:] + right,
                                     settings or {})
                if name:
                    rule, reason = "setting", name
        out.append(Number(stem, cell, number, context.strip(), rule, reason, index))
    return out


def _inline_text(child) -> str:
    """What a child of an inline token contributes to the words around a number."""
    if child.type == "text":
        return child.content
    if child.type == "code_inline":
        return f" {child.content} "
    if child.type in ("softbreak", "hardbreak"):
        return " "
    return " \u25c6 "  # a role, a link: one word, no name


def scan_markdown(text: str, stem: str, cell: int, entries: list[dict],
                  settings: dict[str, set[float]] | None = None) -> list[Number]:
    """Every number in one markdown cell, classified (see the module doc)."""
    found = []
    for piece in walk_markdown(text):
        if piece.kind == "inline":
            children = piece.token.children or []
            pieces = [_inline_text(c) for c in children]
            for i, child in enumerate(children):
                if child.type == "text":
                    found += scan_text(child.content, stem, cell, entries, settings=settings,
                                       left="".join(pieces[:i]), right="".join(pieces[i + 1:]),
                                       first=i == 0)
                elif child.type.startswith("math"):
                    bare = bare_math_number(child.content)
                    if bare:
                        found.append(Number(stem, cell, bare, child.content, classify_bare(bare)))
                    else:
                        found += [Number(stem, cell, m.group(), child.content[:60], "math")
                                  for m in DIGITS.finditer(child.content)]
                elif child.type == "image":
                    found += scan_text(child.content, stem, cell, entries, settings=settings)
        elif piece.kind == "directive" and piece.argument and piece.name in ADMONITIONS:
            found += scan_markdown(piece.argument, stem, cell, entries, settings)
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


SETTING_NAME = re.compile(r"[A-Z][A-Z0-9_]*")


def _bind(target, value, out: dict[str, set[float]]) -> None:
    """Bind the literal numbers of ``value`` to the UPPER_CASE names of ``target``, per name:
    ``A, B = 3, 4`` gives A 3 and B 4 (not both of them 3 and 4)."""
    import ast

    if isinstance(target, ast.Name):
        if SETTING_NAME.fullmatch(target.id):
            numbers = _literal_numbers(value)
            if numbers:
                out.setdefault(target.id, set()).update(numbers)
    elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)):
        if len(target.elts) == len(value.elts) and not any(isinstance(t, ast.Starred) for t in target.elts):
            for t, v in zip(target.elts, value.elts):
                _bind(t, v, out)


def code_settings(nb: dict) -> dict[str, set[float]]:
    """The settings the notebook's code assigns: UPPER_CASE name -> the numbers of its literal
    (``T_TRAIN = 32``, ``WIDTHS = (8, 16, 32)``, ``D_IN, D_HIDDEN = 4, 32`` per name). A number
    typed in the prose passes as that setting only where the prose names it beside the number
    (bound_setting); if the code's value changes, the typed number stops matching and fails."""
    import ast

    settings: dict[str, set[float]] = {}
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        lines = [ln for ln in as_text(cell["source"]).splitlines() if not ln.lstrip().startswith(("%", "!"))]
        try:
            tree = ast.parse("\n".join(lines))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    _bind(target, node.value, settings)
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                _bind(node.target, node.value, settings)
    return settings


def to_float(number: str) -> float | None:
    text = number.replace(",", "").replace("−", "-").replace("+", "")
    try:
        return float(text)
    except ValueError:
        return None


def scan_notebook(path: Path, entries: list[dict]) -> list[Number]:
    nb = read(path)
    settings = code_settings(nb)
    found = []
    for index, src in markdown_cells(nb):
        found += scan_markdown(src, path.stem, index, entries, settings)
    return found


def stale_allow_entries(numbers: list[Number], entries: list[dict]) -> list[dict]:
    """The allow-list entries that let no number of the book stay: each must still match, in its
    own notebook (any notebook for '*'), a snippet holding a number it allows."""
    used = {n.entry for n in numbers if n.rule == "allowed"}
    return [e for e in entries if e["index"] not in used]


def scan_book(root: Path = ROOT, sections: list[str] | None = None) -> list[Number]:
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
    parser.add_argument("--root", type=Path, default=ROOT)
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
