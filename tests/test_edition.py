"""Editions and licences: the version on every page, what `git describe` gives, the licence files."""

from __future__ import annotations

import re
import subprocess
import tomllib

import pytest

from conftest import ROOT, SITE
from tools import version


def _git(repo, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                   capture_output=True)


def test_book_version_names_tag_commit_and_dirty_tree(tmp_path):
    assert version.book_version(tmp_path) == version.UNKNOWN  # not a git checkout
    _git(tmp_path, "init", "-q")
    (tmp_path / "a.txt").write_text("one\n")
    _git(tmp_path, "add", "a.txt")
    _git(tmp_path, "commit", "-qm", "first")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tmp_path, capture_output=True,
                            text=True).stdout.strip()
    assert version.book_version(tmp_path) == commit
    _git(tmp_path, "tag", "-a", "2027-spring", "-m", "edition")
    assert version.book_version(tmp_path) == "2027-spring"
    (tmp_path / "a.txt").write_text("two\n")
    assert version.book_version(tmp_path) == "2027-spring-dirty"
    _git(tmp_path, "commit", "-qam", "fix")
    assert re.fullmatch(r"2027-spring-1-g[0-9a-f]{7,}", version.book_version(tmp_path))


def _pages():
    pages = sorted(SITE.glob("*.html")) + sorted((SITE / "chapters").glob("*.html"))
    if not (SITE / "index.html").is_file():
        pytest.fail(f"{SITE} has no site: build it first (`make book`)")
    return [p for p in pages if p.name not in ("genindex.html", "search.html", "index.html")]


def test_every_page_names_the_edition_it_was_built_from_and_the_licences():
    editions = {}
    for page in _pages():
        text = page.read_text()
        found = re.findall(r'<code class="book-edition-id">([^<]+)</code>', text)
        assert len(found) == 1, f"{page.name}: no edition in the footer"
        editions[page.name] = found[0]
        assert "CC BY-SA 4.0" in text and "MIT" in text, f"{page.name}: footer lacks the licences"
    assert len(set(editions.values())) == 1, f"pages from different builds: {set(editions.values())}"
    built = next(iter(editions.values()))
    assert built != version.UNKNOWN
    now = version.book_version(ROOT)
    assert built.removesuffix("-dirty") == now.removesuffix("-dirty"), \
        f"the site says edition {built} but the checkout is {now}: rebuild (`make book`)"


def test_licence_files_and_spdx():
    mit = (ROOT / "LICENSE").read_text()
    assert mit.startswith("MIT License") and "Permission is hereby granted, free of charge" in mit
    cc = (ROOT / "LICENSE-text").read_text()
    assert "Attribution-ShareAlike 4.0 International Public License" in cc
    for n in range(1, 9):  # the legal code is complete: Sections 1-8
        assert re.search(rf"^Section {n} -- ", cc, flags=re.M), f"LICENSE-text lacks Section {n}"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]


def test_landing_page_credits_data_and_states_the_licences():
    text = re.sub(r"<[^>]+>", " ", (SITE / "intro.html").read_text())
    text = re.sub(r"\s+", " ", text)
    for needed in ("CC BY-SA 4.0", "MIT", "Tiny Shakespeare", "M4 Hourly", "MathJax", "Apache-2.0"):
        assert needed in text, f"the landing page does not mention {needed!r}"
    assert "published so far" not in text
