"""Every verdict sentence is asserted as stated (issue 23 items 2-3): tools/verdicts.py's coverage.

A verdict sentence is marked in the prose, ``<!-- claim: id -->`` right after it, and a test that asserts
what it says carries ``@pytest.mark.claim("id")``. Unmarked sentences that read like verdicts (the
tool's CUES) are listed in tests/verdicts_pending/14_NN.yml as ``untested`` (debt; the list only shrinks) or
``not-a-verdict`` (with a reason). Nothing is executed: the marks are read from the source notebooks,
the markers from the test files, and (for the ``booleans`` rule) which glued values are booleans from the
executed notebooks. ``pytest -rA tests/test_verdicts.py`` prints the table.
"""

from __future__ import annotations

import pytest

from conftest import ROOT, source_notebooks
from tools import verdicts

SECTIONS = [p.stem[:5] for p in source_notebooks()]


@pytest.fixture(scope="module")
def reports():
    return {r.section: r for r in verdicts.report(ROOT)}


def test_print_the_coverage_table(reports):
    """Not a check: the per-section table (visible with -rA)."""
    print(verdicts.format_table(list(reports.values())))
    assert set(reports) == set(SECTIONS)


@pytest.mark.parametrize("section", SECTIONS)
def test_every_marked_claim_has_a_test_and_every_candidate_is_listed(reports, section):
    r = reports[section]
    assert not r.problems, "\n".join(r.problems)
    assert not r.unasserted, (
        f"§{section}: claims marked in the prose that no test asserts (add @pytest.mark.claim(...) to the "
        f"test that asserts each): {r.unasserted}")
    assert not r.unlisted, (
        f"§{section}: sentences that read like verdicts, neither marked <!-- claim: id --> nor listed in "
        f"tests/verdicts_pending/{section}.yml (mark and test them, or list them as not-a-verdict with a reason):\n"
        + "\n".join(f"  cell {s.cell}: {s.opening(16)}" for s in r.unlisted))
    assert not r.booleans_unlisted, (
        f"§{section}: tests assert glued booleans without their data: {r.booleans_unlisted}. Glue the data the "
        "notebook decided from (the curve, the two values) and assert the verdict from it")
    assert not r.stale, (
        f"§{section}: tests/verdicts_pending/{section}.yml lists sentences that are gone or now marked "
        f"(`python -m tools.verdicts --shrink-pending`): {r.stale}")


def test_sentences_split_and_marks_attach_to_the_sentence_before_them():
    parts = verdicts.split_sentences(
        "The LSTM wins (Fig. 3). <!-- claim: wins --> Next, e.g. this, is {glue:text}`x:.2f` lower "
        "than B.<!-- claim: b, c --> A plain sentence.")
    assert parts == [("The LSTM wins (Fig. 3).", ("wins",)),
                     ("Next, e.g. this, is {glue:text}`x:.2f` lower than B.", ("b", "c")),
                     ("A plain sentence.", ())]


def test_a_mark_on_its_own_line_or_a_misspelt_mark_is_a_problem(tmp_path):
    import json
    (tmp_path / "chapters").mkdir()
    (tmp_path / "tests").mkdir()
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "The GRU is faster than the LSTM.\n\n<!-- claim: fast -->\n"},
             {"cell_type": "markdown", "metadata": {}, "source": "It wins every seed. <!-- claims: seeds -->\n"}]
    (tmp_path / "chapters" / "14_99_x.ipynb").write_text(json.dumps({"cells": cells}))
    (r,) = verdicts.report(tmp_path)
    assert any("on a line of its own" in p for p in r.problems)
    assert any("looks like a claim mark" in p for p in r.problems)
    assert [s.opening() for s in r.unlisted] == ["The GRU is faster than the LSTM.", "It wins every seed. <!-- claims: seeds -->"]


def test_a_claim_without_a_test_and_a_test_without_a_claim_are_reported(tmp_path):
    import json
    (tmp_path / "chapters").mkdir()
    (tmp_path / "tests").mkdir()
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "The GRU is faster than the LSTM. <!-- claim: fast -->\n"
              "It is smaller, too. <!-- claim: small -->"}]
    (tmp_path / "chapters" / "14_99_x.ipynb").write_text(json.dumps({"cells": cells}))
    (tmp_path / "tests" / "test_ch14_99.py").write_text(
        'import pytest\nSTEM = "14_99_x"\n\n@pytest.mark.claim("fast", "gone")\ndef test_fast(g):\n    pass\n')
    (r,) = verdicts.report(tmp_path)
    assert r.asserted == ["fast"] and r.unasserted == ["small"]
    assert any("'gone'" in p for p in r.problems)
    assert r.score == pytest.approx(1 / 2)


def test_pending_entries_match_by_opening_and_stale_ones_are_reported(tmp_path):
    import json
    (tmp_path / "chapters").mkdir()
    (tmp_path / "tests").mkdir()
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "The GRU is faster than the LSTM. Attention is more flexible."}]
    (tmp_path / "chapters" / "14_99_x.ipynb").write_text(json.dumps({"cells": cells}))
    (tmp_path / "tests" / "verdicts_pending").mkdir()
    (tmp_path / "tests" / "verdicts_pending" / "14_99.yml").write_text(
        'untested: ["The GRU is faster"]\nnot-a-verdict: ["Attention is more  # a definition", "Gone sentence  # x"]\n')
    (r,) = verdicts.report(tmp_path)
    assert r.untested == ["The GRU is faster"] and r.dismissed == ["Attention is more"]
    assert r.stale == [("not-a-verdict", "Gone sentence")] and not r.unlisted
    assert r.score == 0.0   # one verdict, untested
