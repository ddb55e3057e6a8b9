"""Verdict sentences and the tests that assert them: the book's figure of merit (issue 23 items 2-3).

    python -m tools.verdicts                    # per-section table: claims marked, asserted, candidates left
    python -m tools.verdicts --section 14_47    # one section, with every untested sentence
    python -m tools.verdicts --list             # also every claim and the tests that assert it
    python -m tools.verdicts --shrink-pending   # delete pending entries whose sentence is gone or now marked

A **verdict sentence** states a result that could have come out otherwise: a direction, an order, a
threshold, "every seed", "monotone", "faster", "most", "dominates". The author marks each one in the
prose with an HTML comment right after the sentence, on the same line::

    The LSTM reaches the target in every seed. <!-- claim: lstm-every-seed -->

The comment is invisible on the site, in the PDF and in Colab. A test asserts what the sentence says,
from data it recomputes or reads (glued values, the cache), and names the claim with a pytest marker::

    @pytest.mark.claim("lstm-every-seed")
    def test_lstm_reaches_the_target_in_every_seed(g): ...

In a section's own test file (``tests/test_ch14_NN.py``, which names its notebook in ``STEM``) the id is
the claim's id; a test elsewhere qualifies it, ``"14_47/lstm-every-seed"``. One test may assert several
claims, and a claim may have several tests.

**Candidates.** A sentence that is not marked but reads like a verdict (a comparison, an order, a
trend, a universal: the words of CUES) is a *candidate*. Each candidate is either marked and tested,
or listed in tests/verdicts_pending/14_NN.yml (its section and the sentence's opening words), under one of:

- ``untested``: a verdict with no test yet -- debt; the list only shrinks;
- ``not-a-verdict``: explanation, definition, motivation or a quoted result of the literature, each
  entry with its reason (why nothing could come out otherwise in this book's runs).

**Booleans.** A verdict computed by the notebook and glued as ``True`` proves nothing by itself: its test
must assert it from the data. ``boolean_asserts`` finds the glued booleans a section's tests still assert
(``assert g["x_monotone"]``); those that existed when the check was written are listed under
``booleans`` in the same file, and that list only shrinks too.

The score of a section is ``asserted / (marked + untested)``: the fraction of its verdict sentences
that a test asserts as stated. A marked claim without a test, a marker naming a claim the prose does
not mark, an unmarked candidate not listed, and a listed sentence that is gone are failures
(tests/test_verdicts.py).
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:  # `python tools/verdicts.py`: tools/ is a package
    raise SystemExit("run it as a module, from the repository root: python -m tools.verdicts ...")

import argparse
import ast
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tools.notebooks import ROOT, executed_notebooks, glued, markdown_cells, read, source_notebooks, walk_markdown

PENDING_DIR = Path("tests") / "verdicts_pending"   # one file per section, 14_NN.yml
KINDS = ("untested", "not-a-verdict", "booleans")

#: a claim mark: <!-- claim: id --> or several ids, <!-- claim: a, b -->
MARK = re.compile(r"<!--\s*claim:\s*([A-Za-z0-9][\w.-]*(?:\s*,\s*[A-Za-z0-9][\w.-]*)*)\s*-->")
#: a comment that tries to be a mark but is not one (a typo must not hide a claim)
LOOSE_MARK = re.compile(r"<!--\s*claims?\b", re.IGNORECASE)
#: the words that make a sentence read like a verdict: comparisons, orders, trends, universals
CUES = re.compile(
    r"\b(?:faster|slower|quicker|better|worse|beats?|beaten|outperform\w*|overtak\w*|below|above|lower|higher"
    r"|smaller|larger|bigger|fewer|more|less|least|most|best|worst|every seed|all seeds|each seed|monoton\w*"
    r"|dominat\w*|wins?|won|improv\w*|grows?|grew|falls?|fell|drops?|rises?|rose|decreas\w*|increas\w*"
    r"|exceeds?|never|always|stays?|stayed|matches|agrees?|identical|same|converg\w*|ties|tied|within|than"
    r"|only|twice|half|halves|doubles?)\b", re.IGNORECASE)
#: where a sentence ends: . ! ? (after an optional closing bracket, quote or emphasis) then space and a
#: capital, a bracket, a role, emphasis, math or a code span; abbreviations do not end one
ABBREVIATIONS = ("e.g.", "i.e.", "et al.", "Fig.", "Figs.", "vs.", "cf.", "Eq.", "Eqs.", "approx.", "resp.", "No.")
BOUNDARY = re.compile(r"[.!?][)\]\"'”’*_]*\s+(?=[A-Z(\[{*_$`\"“])")
SENTINEL = "\x00"


@dataclass
class Sentence:
    """One sentence of a markdown cell, as written (glue roles and all), its claim ids if marked."""

    section: str
    cell: int
    text: str
    claims: tuple[str, ...] = ()

    @property
    def candidate(self) -> bool:
        return bool(CUES.search(_plain(self.text)))

    def opening(self, words: int = 12) -> str:
        return " ".join(self.text.split()[:words])


@dataclass
class SectionReport:
    section: str
    claims: dict[str, Sentence] = field(default_factory=dict)     # id -> sentence
    tests: dict[str, list[str]] = field(default_factory=dict)     # id -> test names
    untested: list[str] = field(default_factory=list)             # openings (pending: untested)
    dismissed: list[str] = field(default_factory=list)            # openings (pending: not-a-verdict)
    unlisted: list[Sentence] = field(default_factory=list)        # unmarked candidates not in the list
    stale: list[tuple[str, str]] = field(default_factory=list)    # (kind, opening) listed but gone/marked
    problems: list[str] = field(default_factory=list)             # bad marks, duplicate ids
    booleans: list[str] = field(default_factory=list)             # glued booleans its tests assert
    booleans_unlisted: list[str] = field(default_factory=list)    # ... that the list does not name

    @property
    def asserted(self) -> list[str]:
        return [c for c in self.claims if self.tests.get(c)]

    @property
    def unasserted(self) -> list[str]:
        return [c for c in self.claims if not self.tests.get(c)]

    @property
    def verdicts(self) -> int:
        return len(self.claims) + len(self.untested) + len(self.unlisted)

    @property
    def score(self) -> float:
        return len(self.asserted) / self.verdicts if self.verdicts else 1.0


def _plain(text: str) -> str:
    """A sentence's words without its code spans, role targets and math (where cue words are not prose)."""
    text = re.sub(r"\{[\w:-]+\}`[^`]*`", " ◆ ", text)
    text = re.sub(r"`[^`]*`", " ◆ ", text)
    return re.sub(r"\$[^$]*\$", " ◆ ", text)


def split_sentences(content: str) -> list[tuple[str, tuple[str, ...]]]:
    """``(sentence, claim ids)`` for each sentence of one paragraph's inline markdown; a mark belongs to
    the sentence it follows."""
    content = " ".join(content.split())
    # glue each mark to the text before it, so it travels with that sentence
    content = MARK.sub(lambda m: SENTINEL + ",".join(i.strip() for i in m[1].split(",")) + SENTINEL, content)
    content = re.sub(r"\s+" + SENTINEL, SENTINEL, content)
    protected = content
    for abbreviation in ABBREVIATIONS:
        protected = protected.replace(abbreviation, abbreviation.replace(".", "\x01"))
    pieces, start = [], 0
    for m in BOUNDARY.finditer(protected):
        pieces.append(content[start:m.end()])
        start = m.end()
    pieces.append(content[start:])
    # a mark right after the boundary's punctuation: "... here.\x00id\x00 Next" -- split after the mark
    out: list[tuple[str, tuple[str, ...]]] = []
    for piece in pieces:
        for part in re.split(r"(?<=" + SENTINEL + r")\s+(?=[A-Z(\[{*_$`\"“])", piece):
            ids = tuple(i for group in re.findall(SENTINEL + r"([^" + SENTINEL + r"]*)" + SENTINEL, part)
                        for i in group.split(","))
            text = re.sub(SENTINEL + r"[^" + SENTINEL + r"]*" + SENTINEL, "", part).strip()
            if text:
                out.append((text, ids))
            elif ids and out:
                out[-1] = (out[-1][0], out[-1][1] + ids)
    return out


def notebook_sentences(path: Path) -> tuple[list[Sentence], list[str]]:
    """Every prose sentence of a source notebook's markdown cells, and the problems its marks have."""
    section = path.stem[:5]
    sentences: list[Sentence] = []
    problems: list[str] = []
    for index, source in markdown_cells(read(path)):
        for piece in walk_markdown(source):
            if piece.kind == "html" and MARK.search(piece.token.content):
                problems.append(f"{section} cell {index}: a claim mark on a line of its own "
                                f"({piece.token.content.strip()[:60]!r}): put it right after its sentence, "
                                "on the same line")
            if piece.kind != "inline":
                continue
            content = piece.token.content
            marks = len(MARK.findall(content))
            if len(LOOSE_MARK.findall(content)) != marks:
                problems.append(f"{section} cell {index}: a comment that looks like a claim mark but is not "
                                f"one (write <!-- claim: some-id -->): {content[:80]!r}")
            for text, ids in split_sentences(content):
                sentences.append(Sentence(section, index, text, ids))
    return sentences, problems


def test_claims(root: Path) -> dict[str, dict[str, list[str]]]:
    """section -> claim id -> the tests (``file::name``) whose ``@pytest.mark.claim`` names it."""
    found: dict[str, dict[str, list[str]]] = {}
    for path in sorted((root / "tests").glob("test_*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        stem = next((node.value.value for node in tree.body
                     if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "STEM" for t in node.targets)
                     and isinstance(node.value, ast.Constant)), None)
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for decorator in node.decorator_list:
                if not (isinstance(decorator, ast.Call) and ast.unparse(decorator.func) == "pytest.mark.claim"):
                    continue
                for arg in decorator.args:
                    if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                        raise ValueError(f"{path.name}:{decorator.lineno}: pytest.mark.claim takes claim ids "
                                         f"as string literals, got {ast.unparse(arg)}")
                    section, _, claim = arg.value.rpartition("/")
                    if not section:
                        if not stem:
                            raise ValueError(f"{path.name}:{decorator.lineno}: {arg.value!r} has no section and "
                                             "the file names no STEM: write '14_NN/id'")
                        section = stem[:5]
                    found.setdefault(section, {}).setdefault(claim, []).append(f"{path.name}::{node.name}")
    return found


def load_pending(root: Path) -> dict[str, dict[str, list[str]]]:
    """section -> kind -> [opening, ...] (for ``not-a-verdict``, each entry is ``opening  # reason``)."""
    out: dict[str, dict[str, list[str]]] = {}
    for path in sorted((root / PENDING_DIR).glob("14_*.yml")):
        kinds = yaml.safe_load(path.read_text()) or {}
        if not isinstance(kinds, dict) or set(kinds) - set(KINDS):
            raise ValueError(f"{PENDING_DIR / path.name}: must map {list(KINDS)} to lists of sentence openings")
        out[path.stem] = {kind: [str(e) for e in (kinds.get(kind) or [])] for kind in KINDS}
    return out


def boolean_asserts(root: Path, section: str) -> list[str]:
    """The glued booleans of ``section``'s executed notebook that its test file reads inside an assert."""
    test_file = root / "tests" / f"test_ch{section}.py"
    executed = [p for p in executed_notebooks(root) if p.stem.startswith(f"{section}_")]
    if not test_file.is_file() or not executed:
        return []
    booleans = {name for name, out in glued(read(executed[0])).items()
                if isinstance(out.value, bool)}
    found = []
    for node in ast.walk(ast.parse(test_file.read_text())):
        if isinstance(node, ast.Assert):
            for sub in ast.walk(node.test):
                if (isinstance(sub, ast.Subscript) and isinstance(sub.slice, ast.Constant)
                        and sub.slice.value in booleans and sub.slice.value not in found):
                    found.append(sub.slice.value)
    return found


def _matches(opening: str, sentence: Sentence) -> bool:
    return " ".join(sentence.text.split()).startswith(" ".join(opening.split()))


def report(root: Path = ROOT, sections: list[str] | None = None) -> list[SectionReport]:
    """The verdict coverage of every (or the given) section of the checkout at ``root``."""
    tests = test_claims(root)
    pending = load_pending(root)
    reports = []
    for path in source_notebooks(root):
        section = path.stem[:5]
        if sections and section not in sections:
            continue
        sentences, problems = notebook_sentences(path)
        rep = SectionReport(section, problems=problems)
        for s in sentences:
            for claim in s.claims:
                if claim in rep.claims:
                    rep.problems.append(f"{section}: claim id {claim!r} marks two sentences")
                rep.claims[claim] = s
        rep.tests = {c: tests.get(section, {}).get(c, []) for c in rep.claims}
        for claim, names in tests.get(section, {}).items():
            if claim not in rep.claims:
                rep.problems.append(f"{section}: {', '.join(names)} asserts claim {claim!r}, "
                                    "which no sentence of the section marks")
        listed = pending.get(section, {k: [] for k in KINDS})
        entries = [(kind, entry.split("  #", 1)[0].strip()) for kind in KINDS[:2] for entry in listed[kind]]
        used: set[tuple[str, str]] = set()
        for s in sentences:
            if s.claims or not s.candidate:
                continue
            # an entry stands for one sentence; the same sentence written twice may share one
            hit = next((e for e in entries if e not in used and _matches(e[1], s)), None) \
                or next((e for e in entries if _matches(e[1], s)), None)
            if hit is None:
                rep.unlisted.append(s)
                continue
            used.add(hit)
            (rep.untested if hit[0] == "untested" else rep.dismissed).append(hit[1])
        rep.stale = [e for e in entries if e not in used]
        rep.problems += [f"{section}: not-a-verdict entry without a reason ('opening  # reason'): {e!r}"
                         for e in listed["not-a-verdict"] if "  #" not in e]
        rep.booleans = boolean_asserts(root, section)
        rep.booleans_unlisted = [b for b in rep.booleans if b not in listed["booleans"]]
        rep.stale += [("booleans", b) for b in listed["booleans"] if b not in rep.booleans]
        reports.append(rep)
    return reports


def format_table(reports: list[SectionReport]) -> str:
    lines = [f"{'section':8} {'marked':>6} {'asserted':>8} {'untested':>8} {'unlisted':>8} {'dismissed':>9} "
             f"{'score':>6} {'booleans':>8}"]
    total = SectionReport("book")
    for r in reports:
        lines.append(f"{r.section:8} {len(r.claims):6} {len(r.asserted):8} {len(r.untested) + len(r.unasserted):8} "
                     f"{len(r.unlisted):8} {len(r.dismissed):9} {r.score:6.0%} {len(r.booleans):8}")
        total.claims.update({f"{r.section}/{k}": v for k, v in r.claims.items()})
        total.tests.update({f"{r.section}/{k}": v for k, v in r.tests.items()})
        total.untested += r.untested
        total.unlisted += r.unlisted
        total.dismissed += r.dismissed
        total.booleans += r.booleans
    lines.append(f"{'book':8} {len(total.claims):6} {len(total.asserted):8} "
                 f"{len(total.untested) + len(total.unasserted):8} {len(total.unlisted):8} {len(total.dismissed):9} "
                 f"{total.score:6.0%} {len(total.booleans):8}")
    return "\n".join(lines)


def shrink_pending(root: Path, reports: list[SectionReport]) -> int:
    """Delete the pending entries whose sentence is gone or now marked; return how many."""
    pending = load_pending(root)
    removed = 0
    for r in reports:
        if r.section not in pending:
            continue
        stale = set(r.stale)
        kept = {kind: [e for e in pending[r.section][kind] if (kind, e.split("  #", 1)[0].strip()) not in stale]
                for kind in KINDS}
        removed += sum(len(pending[r.section][k]) - len(kept[k]) for k in KINDS)
        write_pending(root, r.section, kept)
    return removed


HEADER = """\
# §SECTION: verdict sentences not (yet) marked as claims; tools/verdicts.py reads this list (issue 23 items 2-3).
# A candidate is a sentence with a verdict's words (a comparison, an order, a trend, a universal) and no
# <!-- claim: id --> mark. Per section:
#   untested:      a verdict no test asserts yet -- debt: mark it, write the test, delete the line.
#                  The list only shrinks (tests/test_verdicts.py).
#   not-a-verdict: explanation, definition, motivation or the literature's result -- 'opening  # reason'.
#   booleans:      glued verdict booleans (a notebook's `x_monotone = True`) that a test still asserts without
#                  the data: glue the data, assert the verdict from it, delete the name. Only shrinks.
# An entry is the sentence's opening words (they must match the start of the sentence as written).
"""


def write_pending(root: Path, section: str, kinds: dict[str, list[str]]) -> None:
    path = root / PENDING_DIR / f"{section}.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    body = yaml.safe_dump({kind: kinds.get(kind) or [] for kind in KINDS},
                          allow_unicode=True, sort_keys=False, width=200)
    path.write_text(HEADER.replace("SECTION", section) + body)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--section", action="append")
    parser.add_argument("--list", action="store_true", help="every claim and its tests")
    parser.add_argument("--shrink-pending", action="store_true")
    parser.add_argument("--init-pending", action="store_true",
                        help="list every unlisted candidate as untested (only when the list is first made)")
    args = parser.parse_args(argv)
    reports = report(args.root, args.section)
    if args.init_pending:
        pending = load_pending(args.root)
        for r in reports:
            kinds = pending.get(r.section, {k: [] for k in KINDS})
            kinds["untested"] = kinds["untested"] + [s.opening() for s in r.unlisted]
            kinds["booleans"] = kinds["booleans"] + r.booleans_unlisted
            write_pending(args.root, r.section, kinds)
        reports = report(args.root, args.section)
    if args.shrink_pending:
        print(f"removed {shrink_pending(args.root, reports)} entries")
        reports = report(args.root, args.section)
    print(format_table(reports))
    for r in reports:
        for p in r.problems:
            print("problem:", p)
        if args.section or args.list:
            for claim, s in r.claims.items():
                print(f"{r.section} [{claim}] {s.opening(16)} -> {', '.join(r.tests.get(claim) or ['NO TEST'])}")
            for s in r.unlisted:
                print(f"{r.section} unlisted cell {s.cell}: {s.opening(16)}")
            if args.section:
                for e in r.untested:
                    print(f"{r.section} untested: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
