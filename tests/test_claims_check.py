"""tools/claims_check.py, checked on a toy book whose answers are known by construction.

The toy checkout has the real tests/conftest.py (so the check must honour the real `glued` and
`g` fixtures), one executed notebook and one claims module. Which of its shown values are
guarded is decided by hand below, test by test.
"""

from __future__ import annotations

import json
import shutil
import textwrap

import nbformat
import pytest

from conftest import ROOT
from tools import claims_check as cc

PREFIX = "application/papermill.record/"
STEM = "14_99_toy"

# name -> (value, setting): what the toy notebook glues
VALUES = {
    "mean": (2.0, False), "count": (10, False), "err": (3e-8, False), "zero": (0.0, False),
    "nzero": (0, False), "inner": (5, False), "derived": (4.0, False), "broken": (1.0, False),
    "lonely": (7.5, False), "width": (64, True), "shape": ("(2, 3)", False), "flag": (True, False),
    "hidden": (3.0, False), "in_code": (1.0, False),
}

MARKDOWN = [
    "The mean is {glue:text}`mean:.2f`, the count {glue:text}`count` and the error "
    "{glue:text}`err:.1e`; exactly {glue:text}`zero` and {glue:text}`nzero:,` differ.",
    ":::{admonition} A width of {glue:text}`width`\n:class: tip\n"
    "Inside: {glue}`inner`, shape {glue:md}`shape`, flag {glue:any}`flag`.\n:::",
    "Not shown: ``{glue:text}`in_code` `` in a code span, nor in a block:\n\n"
    "```python\n{glue:text}`in_code`\n```",
    "Read through a fixture: {glue:text}`derived:.1f`. Read by a failing test: {glue:text}`broken`.",
    "Read by nothing: {glue:text}`lonely`. From elsewhere: {glue:text}`other_section.ipynb::foreign`.",
]

TESTS = '''
import pytest

STEM = "14_99_toy"


@pytest.fixture(scope="module")
def table(g):
    return {"d": g["derived"]}


def test_mean_is_pinned_both_ways(g):
    assert 1.5 < g["mean"] < 2.5


def test_count_only_from_below(g):
    assert g["count"] >= 8          # survives x1.5


def test_tolerances_and_zeros(g):
    assert g["err"] < 1e-6          # x1e4 -> 3e-4 fails
    assert g["zero"] == 0           # 0 -> 1e-4 fails
    assert g["nzero"] == 0          # -1 and +1 fail
    assert g["hidden"] > 0          # read, but not shown: not counted


def test_inner_exactly(glued):
    assert glued(STEM)["inner"] == pytest.approx(5)


def test_derived_through_a_fixture(table):
    assert 3 < table["d"] < 5


def test_broken_fails_unperturbed(g):
    assert g["broken"] > 100
'''


def _glue_output(name, value, setting):
    meta = {"scrapbook": {"name": name, "mime_prefix": PREFIX}}
    if setting:
        meta["book"] = {"setting": True}
    return nbformat.v4.new_output("display_data", data={PREFIX + "text/plain": repr(value)}, metadata=meta)


@pytest.fixture(scope="module")
def toy_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("toybook")
    (root / "tests").mkdir()
    shutil.copy(ROOT / "tests" / "conftest.py", root / "tests" / "conftest.py")
    (root / "tests" / "test_ch14_99.py").write_text(textwrap.dedent(TESTS))
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(m) for m in MARKDOWN]
    code = nbformat.v4.new_code_cell("glue(...)")
    code.outputs = [_glue_output(n, v, s) for n, (v, s) in VALUES.items()]
    nb.cells.append(code)
    executed = root / "_build" / "executed" / "chapters"
    executed.mkdir(parents=True)
    nbformat.write(nb, executed / f"{STEM}.ipynb")
    return root


@pytest.fixture(scope="module")
def report(toy_root):
    return cc.run_check(toy_root)


def by_name(report):
    return {v.name: v for v in report.values}


def test_counts_only_shown_numbers_that_are_not_settings(report):
    (section,) = report.sections
    assert sorted(by_name(report)) == sorted(
        ["mean", "count", "err", "zero", "nzero", "inner", "derived", "broken", "lonely"])
    assert section.skipped["setting"] == ["width"]
    assert section.skipped["str"] == ["shape"]
    assert section.skipped["bool"] == ["flag"]
    assert section.skipped["other doc"] == ["other_section::foreign"]
    assert "in_code" not in by_name(report) and "hidden" not in by_name(report)


def test_guarded_exactly_where_a_test_fails_both_ways(report):
    guarded = sorted(n for n, v in by_name(report).items() if v.guarded)
    assert guarded == ["derived", "err", "inner", "mean", "nzero", "zero"]
    (section,) = report.sections
    assert (section.shown, section.guarded) == (9, 6)
    assert report.score == pytest.approx(6 / 9)


def test_says_which_perturbation_survived_and_why(report):
    values = by_name(report)
    assert list(values["count"].caught) == ["x0.5"] and "x1.5 (15)" in values["count"].reason
    assert values["lonely"].reason == "no test reads it"
    assert "failing unperturbed" in values["broken"].reason
    (section,) = report.sections
    assert list(section.baseline_failures) == ["tests/test_ch14_99.py::test_broken_fails_unperturbed"]
    assert any("via fixture table" in t for t in values["derived"].caught["x0.5"])


def test_leaves_the_callers_imports_alone(report):
    import sys

    import conftest

    assert sys.modules["conftest"] is conftest
    assert "test_ch14_99" not in sys.modules


def test_perturbation_rules():
    assert cc.perturbations(2.0) == [("x0.5", 1.0), ("x1.5", 3.0)]
    assert cc.perturbations(-0.4) == [("x0.5", -0.2), ("x1.5", pytest.approx(-0.6))]
    assert cc.perturbations(3e-8) == [("x1e4", pytest.approx(3e-4))]
    assert cc.perturbations(0.0) == [("0->1e-4", 1e-4)]
    assert cc.perturbations(10) == [("x0.5", 5), ("x1.5", 15)]
    assert cc.perturbations(1) == [("x0.5", 0), ("x1.5", 2)]
    assert cc.perturbations(0) == [("-1", -1), ("+1", 1)]
    assert cc.perturbations(float("nan")) == []


def test_glue_forms_are_found_by_the_parser_not_in_code():
    names = [(doc, name) for doc, name, _ in cc.shown_glue_names("\n\n".join(MARKDOWN))]
    assert ("other_section", "foreign") in names
    found = {name for _, name in names}
    assert {"mean", "count", "err", "width", "inner", "shape", "flag", "derived"} <= found
    assert "in_code" not in found


def test_command_line(toy_root, tmp_path, capsys):
    out = tmp_path / "guard.json"
    assert cc.main(["--root", str(toy_root), "--json", str(out), "--require", "0.6"]) == 0
    printed = capsys.readouterr().out
    assert "14_99        9       6  66.7%" in printed and "count = 10" in printed
    data = json.loads(out.read_text())
    assert (data["shown"], data["guarded"]) == (9, 6)
    assert cc.main(["--root", str(toy_root), "--require", "1.0"]) == 1
    with pytest.raises(SystemExit):
        cc.main(["--root", str(toy_root), "--section", "14_01"])
    assert "--section ['14_01']" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cc.main(["--root", str(tmp_path)])
    assert "no tests/conftest.py" in capsys.readouterr().err


def test_shrink_pending_only_tightens(toy_root, report):
    pending = toy_root / cc.PENDING
    pending.write_text("# comment\n14_99  5/9\n")
    assert cc.shrink_pending(toy_root, report) == ["14_99: 5/9 -> 6/9"]
    assert pending.read_text() == "# comment\n14_99  6/9\n"
    pending.write_text("14_99  7/9\n")  # listed tighter than today: left alone (the test fails instead)
    assert cc.shrink_pending(toy_root, report) == [] and pending.read_text() == "14_99  7/9\n"


def test_claims_only_reads_the_numbers_of_marked_verdict_sentences_only():
    text = ("The RNN reaches {glue:text}`a:.2f`. The LSTM reaches {glue:text}`b:.2f`, more than the RNN. "
            "<!-- claim: lstm-more -->\n\nA shown size: {glue:text}`c`.")
    names = [name for _doc, name, _form in cc.shown_glue_names(cc.claim_sentences_text(text))]
    assert names == ["b"]
    assert [n for _d, n, _f in cc.shown_glue_names(text)] == ["a", "b", "c"]
