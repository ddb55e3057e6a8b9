"""Every number a verdict sentence shows is guarded by a claims test (issue 11 item 3, narrowed by issue 23).

Runs the guard check (tools/claims_check.py) in-process on this checkout's build: each measured
glued value that a verdict sentence (``<!-- claim: id -->``, tools/verdicts.py) shows is halved and
grown by half (a tolerance-like value grown 10^4 times), and at least one of the section's claims
tests must fail each time. A section must score 100 %. A number the prose only shows, outside a
verdict, needs no band: the glue mechanism already makes it the computed value (issue 23 item 2), so
it is not perturbed; the figure of merit is tests/test_verdicts.py's coverage of verdict sentences.

Sections not there yet are listed in tests/claims_guard_pending.txt with their score when
listed. The list only shrinks: a listed section may not gain unguarded values, and one that has
reached 100 % must be taken off the list. `pytest -rA tests/test_claims_guarded.py` prints the
scores and every unguarded value.
"""

from __future__ import annotations

import re

import pytest

from conftest import ROOT, source_notebooks
from tools import claims_check

pytestmark = pytest.mark.full   # the whole-book guard reruns every section's claims tests: the full tier

PENDING_FILE = ROOT / "tests" / "claims_guard_pending.txt"
SECTIONS = [p.stem[:5] for p in source_notebooks()]


def read_pending() -> dict[str, tuple[int, int]]:
    """section -> (guarded, shown) when listed; lines like ``14_45  10/25``; '#' starts a comment."""
    pending = {}
    for number, line in enumerate(PENDING_FILE.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"(14_\d\d)\s+(\d+)/(\d+)", line)
        if not m:
            raise ValueError(f"{PENDING_FILE.name}:{number}: expected '14_NN  guarded/shown', got {line!r}")
        pending[m[1]] = (int(m[2]), int(m[3]))
    return pending


@pytest.fixture(scope="module")
def report():
    result = claims_check.run_check(ROOT, claims_only=True)
    print(claims_check.format_report(result))
    return result


def test_print_the_scores(report):
    """Not a check: prints the table (visible with -rA) and the check's own run time."""
    print(claims_check.format_report(report, show_unguarded=False))
    assert report.sections


def test_pending_list_names_real_sections_once():
    pending = read_pending()
    unknown = sorted(set(pending) - set(SECTIONS))
    assert not unknown, f"{PENDING_FILE.name} lists sections with no notebook: {unknown}"
    lines = [ln.split()[0] for ln in PENDING_FILE.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    assert len(lines) == len(set(lines)), f"{PENDING_FILE.name} lists a section twice"


@pytest.mark.parametrize("section", SECTIONS)
def test_section_shown_numbers_are_guarded(report, section):
    result = next((r for r in report.sections if r.section == section), None)
    assert result is not None, f"§{section}: no executed notebook (build the book: `make book`)"
    unguarded = [v for v in report.unguarded() if v.section == section]
    listing = "\n".join(f"  {v.name} = {claims_check._fmt(v.value)} (cells {v.cells}): {v.reason}"
                        for v in unguarded)
    print(f"§{section}: {result.guarded}/{result.shown} guarded ({result.score:.1%})\n{listing}")
    assert not result.collect_errors, f"§{section}: the claims tests did not load: {result.collect_errors}"
    pending = read_pending()
    if section in pending:
        listed_guarded, listed_shown = pending[section]
        assert unguarded, (
            f"§{section} is now fully guarded ({result.shown}/{result.shown}): "
            f"delete its line from tests/{PENDING_FILE.name} (the list only shrinks)")
        assert len(unguarded) <= listed_shown - listed_guarded, (
            f"§{section} has {len(unguarded)} unguarded shown values, more than the "
            f"{listed_shown - listed_guarded} it was listed with; guard the new ones:\n{listing}")
    else:
        assert not unguarded, (
            f"§{section}: {len(unguarded)} of {result.shown} shown numbers survive a perturbation "
            f"(no claims test fails when they halve or grow by half):\n{listing}")
