"""No number typed into the prose by hand (issue 11 item 4): every number a markdown cell shows
is a glue role, or one of the named exceptions of tests/prose_numbers_allow.yml.

The scanner (tools/prose_numbers.py) parses the MyST with myst-parser's markdown-it: code spans,
code blocks, link targets and role targets (glue, cite, doc, ref) are never scanned; admonition
titles and bodies are; math follows the `math` rule. Hand-typed numbers that existed when this
test was written are listed per notebook in tests/prose_numbers_pending.yml; that list only
shrinks. `pytest -rA tests/test_prose_numbers.py` prints the rules, the allow-list and what is left.
"""

from __future__ import annotations

from collections import Counter

import pytest
import yaml

from conftest import ROOT, source_notebooks
from tools import prose_numbers as pn

PENDING_FILE = ROOT / "tests" / "prose_numbers_pending.yml"
SECTIONS = [p.stem[:5] for p in source_notebooks()]


@pytest.fixture(scope="module")
def found():
    return pn.scan_book(ROOT)


def pending() -> dict[str, list[str]]:
    data = yaml.safe_load(PENDING_FILE.read_text()) or {}
    return {str(k): [str(v) for v in (vals or [])] for k, vals in data.items()}


def test_print_rules_and_allow_list():
    """Shows the named rules and every allow-list entry with its reason (visible with -rA)."""
    allow = yaml.safe_load((ROOT / pn.ALLOW_FILE).read_text())
    print("Rules:")
    for name, reason in allow["rules"].items():
        print(f"  {name}: {reason}")
    print("Allowed:")
    for entry in pn.load_allow(ROOT):
        print(f"  [{entry['notebook']}] {entry.get('text') or entry.get('pattern')!r}: {entry['reason']}")
    assert set(allow["rules"]) == {"section", "year", "small-integer", "math", "setting"}


def test_pending_list_names_real_sections():
    unknown = sorted(set(pending()) - set(SECTIONS))
    assert not unknown, f"{PENDING_FILE.name} lists sections with no notebook: {unknown}"


def test_every_allow_list_entry_is_used(found):
    used = {n.reason for n in found if n.rule == "allowed"}
    unused = [e for e in pn.load_allow(ROOT) if e["reason"] not in used]
    assert not unused, f"allow-list entries that match nothing any more (delete them): {unused}"


@pytest.mark.parametrize("section", SECTIONS)
def test_no_new_hand_typed_numbers(found, section):
    typed = [n for n in found if n.section == section and not n.rule]
    listed = Counter(pending().get(section, []))
    have = Counter(n.text for n in typed)
    new = [n for n in typed if have[n.text] > listed[n.text]]
    for n in typed:
        print(f"{section} c{n.cell}: {n.text!r} ...{n.context}...")
    stale = sorted((listed - have).elements())
    assert not new, (
        f"§{section}: numbers typed into the prose (glue them, or allow them in "
        f"{pn.ALLOW_FILE} with a reason):\n"
        + "\n".join(f"  cell {n.cell}: {n.text!r} in ...{n.context}..." for n in new))
    assert not stale, (
        f"§{section}: {PENDING_FILE.name} lists {stale}, no longer in the prose: delete them (the list only shrinks)")


# ---------------------------------------------------------------------------------- the scanner itself

def numbers(markdown, settings=(), allow=()):
    found = pn.scan_markdown(markdown, "14_99_toy", 0, list(allow))
    for n in found:
        if not n.rule and pn.to_float(n.text) in set(settings):
            n.rule = "setting"
    return [(n.text, n.rule) for n in found]


def test_scanner_skips_code_roles_and_link_targets():
    md = ("Loss {glue:text}`loss:.3f` after `steps=300` ({cite}`vaswani2017`, {doc}`§14.50 <14_50_x>`), "
          "see [the table](https://example.org/t/2024/77).\n\n```python\nx = 12345\n```\n")
    assert numbers(md) == []


def test_scanner_finds_typed_numbers_in_text_titles_and_bare_math():
    md = (":::{admonition} A 32-dimensional vector\n:class: warning\nIt shrinks by roughly 0.6 per step "
          "and is $10^{-7}$ at lag 40, eight times longer.\n:::\n")
    assert numbers(md) == [("32", ""), ("0.6", ""), ("10^{-7}", ""), ("40", ""), ("eight", "")]


def test_scanner_rules():
    md = ("§14.45 and Chapter 12 (2014): step 1 of 5-grams, but 3 % and 2× are typed. "
          "With $\\rho = 0.7$ and $T = 6d = 384$, width 32 as set.")
    assert numbers(md, settings={32.0}) == [
        ("14.45", "section"), ("12", "section"), ("2014", "year"), ("1", "small-integer"),
        ("5", "small-integer"), ("3", ""), ("2", ""), ("0.7", "math"), ("384", "math"),
        ("32", "setting")]


def test_allow_list_entries_match_only_their_snippet():
    allow = [{"notebook": "*", "text": "414 series", "reason": "dataset fact"}]
    assert numbers("all 414 series, 414 windows", allow=allow) == [("414", "allowed"), ("414", "")]


def test_allow_list_needs_a_reason(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / pn.ALLOW_FILE).write_text("allowed:\n  - notebook: '*'\n    text: '414'\n    reason: ''\n")
    with pytest.raises(ValueError, match="non-empty reason"):
        pn.load_allow(tmp_path)


def test_code_settings_are_upper_case_literals():
    nb = {"cells": [{"cell_type": "code", "source": "T_TRAIN = 32\nWIDTHS = (8, -16)\nlr = 3e-4\n%time x = 1\n"}]}
    assert pn.code_settings(nb) == {32.0, 8.0, -16.0}
