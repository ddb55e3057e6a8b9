"""No number typed into the prose by hand (issue 11 item 4): every number a markdown cell shows
is a glue role, or one of the named exceptions of tests/prose_numbers_allow.yml.

The scanner (tools/prose_numbers.py) parses the MyST with myst-parser's markdown-it: code spans,
code blocks, link targets and role targets (glue, cite, doc, ref) are never scanned; admonition
titles and bodies are; math follows the `math` rule. The rules (section, year, small-integer,
count-word, math, setting, allowed) are defined in the scanner's docstring; issue 23 item 4 closed
four loopholes, each with its test below. Hand-typed numbers that existed when the rules last
changed are listed per notebook in tests/prose_numbers_pending.yml; that list only shrinks. `pytest -rA tests/test_prose_numbers.py` prints the rules, the allow-list and what is left.
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
    assert set(allow["rules"]) == {"section", "year", "small-integer", "count-word", "math", "setting"}


def test_pending_list_names_real_sections():
    unknown = sorted(set(pending()) - set(SECTIONS))
    assert not unknown, f"{PENDING_FILE.name} lists sections with no notebook: {unknown}"


def test_every_allow_list_entry_is_used(found):
    """An entry that lets no number of its notebook stay is stale: the prose it was written for has
    changed, and it would silently allow whatever matches it next."""
    stale = pn.stale_allow_entries(found, pn.load_allow(ROOT))
    assert not stale, "allow-list entries that match nothing any more (delete them): " + "; ".join(
        f"[{e['notebook']}] {e.get('text') or e.get('pattern')!r}" for e in stale)


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

def numbers(markdown, settings=None, allow=()):
    """(number, rule) of every number in a toy markdown cell; settings: NAME -> values."""
    settings = {k: {float(v) for v in vs} for k, vs in (settings or {}).items()}
    return [(n.text, n.rule) for n in pn.scan_markdown(markdown, "14_99_toy", 0, list(allow), settings)]


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
    assert numbers(md, settings={"D_HIDDEN": [32]}) == [
        ("14.45", "section"), ("12", "section"), ("2014", "year"), ("1", "small-integer"),
        ("5", "small-integer"), ("3", ""), ("2", ""), ("0.7", "math"), ("384", "math"),
        ("32", "setting")]


# ------------------------------------------------------------ the loopholes of issue 23 item 4, closed

#: §14.47's settings as its code writes them: a tuple assignment, and grids that share values with it
TOY_47 = {"cells": [{"cell_type": "code", "source":
                     "D_IN, D_HIDDEN, T_STEPS = 4, 32, 20\nLENGTHS = [1, 10, 20, 50, 100]\n"
                     "WIDTHS = [8, 16, 32, 64, 128]\n"}]}


def test_loophole_setting_is_bound_per_name_not_per_value():
    """Before: "32" passed anywhere in §14.47 because some UPPER_CASE literal somewhere was 32
    (WIDTHS), and the tuple that really sets D_HIDDEN and T_STEPS was skipped. Now the tuple is read
    per name, and a typed number passes only next to the name (or an alias) of a setting with that
    value."""
    settings = pn.code_settings(TOY_47)
    assert settings["D_HIDDEN"] == {32.0} and settings["T_STEPS"] == {20.0} and settings["D_IN"] == {4.0}
    assert numbers("Run it for 20 steps on a state of width 32.", settings) == [
        ("20", "setting"), ("32", "setting")]
    # the old rule let both through: 32 and 20 are literals of the notebook (WIDTHS, LENGTHS)
    assert numbers("The loss falls by 32 after 20 epochs.", settings) == [("32", ""), ("20", "")]
    # per name: 32 is D_HIDDEN's value, but "steps" names T_STEPS, which is 20
    assert numbers("Run it for 32 steps.", settings) == [("32", "")]
    # a code span names the setting exactly
    assert numbers("with `T_STEPS` at 20", settings) == [("20", "setting")]
    # the name must stand in the same clause, as the noun counted ("bias vectors" is not BIASES)
    assert numbers("Unlike the first 20, a step", settings) == [("20", "")]
    assert numbers("two bias vectors", {"BIASES": [2]}) == [("two", "")]
    assert numbers("forget bias 2, three seeds", {"BIASES": [2], "N_SEEDS": [3]}) == [
        ("2", "setting"), ("three", "setting")]


def test_loophole_number_words_are_scanned_everywhere():
    """Before: a spelled number was scanned only before "times"/"-fold". Now everywhere; it stays
    only as a count of a set the text has named ("the two models", "all three"), as a setting bound
    by name, or as a named half (the first half of a sequence, half precision)."""
    md = ("The loss is about three nats, twice as large, and eight random seeds agree. "
          "The two models and all three cells; the first half, in half precision. "
          "Three quarters of the cost; the four times faster kernel.")
    assert numbers(md) == [
        ("three", ""), ("twice", ""), ("eight", ""), ("two", "count-word"), ("three", "count-word"),
        ("half", "count-word"), ("half", "count-word"), ("Three", ""), ("quarters", ""), ("four", "")]


def test_loophole_small_integers_only_in_named_uses():
    """Before: any 0-10 passed ("slightly below 2"). Now only in a named use: step/Exercise/Solution/
    Part/Figure/Table/head/layer/block/seed/order/position/lag N (or a run "N and M", "N–M" after
    one), an N-gram, GPT-2 and UTF-8, top-5, a heading's list marker."""
    md = ("The true ratio is slightly below 2, with mean 0. Step 1, Exercise 3, Solution 4, "
          "Parts 1 and 2, positions 0–2, layer 2, head 8, seed 0, lag-1, 5-grams, GPT-2, UTF-8, top-5.")
    assert numbers(md) == [("2", ""), ("0", "")] + [
        (n, "small-integer") for n in ["1", "3", "4", "1", "2", "0", "2", "2", "8", "0", "1", "5", "2", "8", "5"]]
    assert numbers("### 1. Accuracy at equal cost\n\nIt is 1. No.") == [("1", "small-integer"), ("1", "")]


def test_loophole_allow_list_entries_must_be_anchored(tmp_path):
    """Before: an entry could be a bare number (``\\b414\\b``), allowing 414 in any sentence. Now
    every entry (each alternative of a pattern) must hold words of the prose beside the number."""
    (tmp_path / "tests").mkdir()
    for bare in ("text: '95/5'", "pattern: '\\b414\\b'", "pattern: '414 series|\\b168\\b'"):
        (tmp_path / pn.ALLOW_FILE).write_text(f"allowed:\n  - notebook: '*'\n    {bare}\n    reason: 'a fact'\n")
        with pytest.raises(ValueError, match="not anchored"):
            pn.load_allow(tmp_path)
    (tmp_path / pn.ALLOW_FILE).write_text("allowed:\n  - notebook: '*'\n    pattern: '\\b414 series|lag 168'\n"
                                          "    reason: 'a fact'\n")
    assert pn.load_allow(tmp_path)[0]["regex"].pattern == "\\b414 series|lag 168"


def test_stale_allow_list_entry_is_a_failure(tmp_path):
    """An entry that matches no number in its notebook is reported (test_every_allow_list_entry_is_used
    fails on it), even when another entry with the same reason still matches."""
    (tmp_path / "tests").mkdir()
    (tmp_path / pn.ALLOW_FILE).write_text(
        "allowed:\n  - notebook: '14_99'\n    text: '414 series'\n    reason: 'M4 Hourly'\n"
        "  - notebook: '14_99'\n    text: '414 hourly series'\n    reason: 'M4 Hourly'\n"
        "  - notebook: '14_98'\n    text: '414 windows'\n    reason: 'elsewhere'\n")
    entries = pn.load_allow(tmp_path)
    found = pn.scan_markdown("all 414 series and 414 windows", "14_99_toy", 0, entries)
    assert [(n.text, n.rule) for n in found] == [("414", "allowed"), ("414", "")]
    assert [e["text"] for e in pn.stale_allow_entries(found, entries)] == ["414 hourly series", "414 windows"]


def test_allow_list_entries_match_only_their_snippet():
    allow = [{"notebook": "*", "text": "414 series", "reason": "dataset fact", "index": 0}]
    assert numbers("all 414 series, 414 windows", allow=allow) == [("414", "allowed"), ("414", "")]


def test_allow_list_needs_a_reason(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / pn.ALLOW_FILE).write_text("allowed:\n  - notebook: '*'\n    text: '414 series'\n    reason: ''\n")
    with pytest.raises(ValueError, match="non-empty reason"):
        pn.load_allow(tmp_path)


def test_code_settings_are_upper_case_literals_per_name():
    nb = {"cells": [{"cell_type": "code", "source":
                     "T_TRAIN = 32\nWIDTHS = (8, -16)\nlr = 3e-4\n%time x = 1\nA, B = 3, 4\nC = D = 5\n"
                     "E, f = 6, 7\nG, H = pair\n"}]}
    assert pn.code_settings(nb) == {"T_TRAIN": {32.0}, "WIDTHS": {8.0, -16.0}, "A": {3.0}, "B": {4.0},
                                    "C": {5.0}, "D": {5.0}, "E": {6.0}}
