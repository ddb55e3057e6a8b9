"""The documents agree with each other and with what they describe (issue 25, item 6): the edition
tags the README tells you to push are the ones the publishing workflow runs on; the heavy sections
are listed from one place, the cache; the README's torch advice matches the pin and the workflow."""

from __future__ import annotations

import fnmatch
import re

import pytest
import yaml

from conftest import ROOT, SITE

README = (ROOT / "README.md").read_text(encoding="utf-8")
WORKFLOW = ROOT / ".github" / "workflows" / "publish.yml"


def _tag_patterns() -> list[str]:
    return yaml.safe_load(WORKFLOW.read_text())[True]["push"]["tags"]  # YAML 1.1 reads `on` as True


def _github_tag_match(pattern: str, tag: str) -> bool:
    """GitHub's filter: `*` matches any characters but `/`."""
    return "/" not in tag and fnmatch.fnmatchcase(tag, pattern)


def _readme_tags() -> list[str]:
    """Every tag the README creates, pushes or names as an edition's."""
    made = re.findall(r"git tag -a ([^\s`]+)", README) + re.findall(r"git push origin ([^\s`]+)", README)
    named = re.findall(r"own tag \(`([^`]+)`\)|a tag such as `([^`]+)`", README)
    return made + [a or b for a, b in named]


def test_the_readmes_edition_tags_trigger_the_publishing_workflow():
    tags = _readme_tags()
    assert len(tags) >= 4, f"the README's edition recipe is gone: {tags}"
    missed = [t for t in tags if not any(_github_tag_match(p, t) for p in _tag_patterns())]
    assert not missed, f"README tags {missed} would not run publish.yml (on.push.tags {_tag_patterns()})"
    assert not _github_tag_match("v*", "2027-spring")  # the check can fail: the old recipe's tag


def test_the_workflows_pointers_into_the_readme_exist():
    comment = "\n".join(l for l in WORKFLOW.read_text().splitlines() if l.startswith("#"))
    for section in re.findall(r'README, "([^"]+)"', comment):
        assert f"## {section}\n" in README, f"publish.yml points to README section {section!r}, which does not exist"
    for tag in re.findall(r"\bv\d{4}[\w.-]*", comment):
        assert any(_github_tag_match(p, tag) for p in _tag_patterns()) and tag.rstrip(".") in README


def _heavy():
    from tools import book

    return book.heavy_sections()


def test_the_heavy_sections_come_from_the_cache():
    heavy = _heavy()
    assert {h["cache"] for h in heavy} == {p.parent.name for p in (ROOT / "cache").glob("*/manifest.json")}
    assert len(heavy) >= 2 and all((ROOT / "chapters" / f"{h['stem']}.ipynb").is_file() for h in heavy)


def test_the_readme_lists_the_heavy_sections_the_cache_holds():
    """The README's cost table has one 'heavy retrain' row per cache entry, with the entry's own
    retrain time (cache/<name>/manifest.json), and says how many there are."""
    rows = re.findall(r"^\| §(\d+\.\d+) heavy retrain \(`cache/(\w+)`.*?\| (\d+) min\b", README, flags=re.M)
    assert rows == [(h["section"], h["cache"], str(h["minutes"])) for h in _heavy()]
    count = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}[len(_heavy())]
    assert f"retrain the {count} heavy sections" in README
    # the total that `make book HEAVY_EVAL=True` quotes is the sum of those rows (the README said
    # "about 2 h 45 min" while the manifests added up to 232 min)
    total = re.search(rf"retrain the {count} heavy sections .*?\(about (\d+) h (\d+) min", README)
    assert total and 60 * int(total.group(1)) + int(total.group(2)) == sum(h["minutes"] for h in _heavy())


def test_the_landing_page_lists_the_heavy_sections_the_cache_holds():
    page = (SITE / "intro.html").read_text(encoding="utf-8")
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", page))
    heavy = _heavy()
    sentence = re.search(r"(\w+) sections train for minutes rather than seconds: (.*?)\. With", text)
    assert sentence, "the landing page no longer names the heavy sections"
    assert sentence.group(1) == {2: "Two", 3: "Three", 4: "Four", 5: "Five", 6: "Six"}[len(heavy)]
    assert re.findall(r"§(\d+\.\d+) \(cache/(\w+), about (\d+) min\)", sentence.group(2)) == [
        (h["section"], h["cache"], str(h["minutes"])) for h in heavy]
    for h in heavy:
        assert f'href="chapters/{h["stem"]}.html"' in page


def test_the_readme_says_how_to_take_the_cpu_only_torch_of_the_pinned_version():
    pin = re.search(r"^torch==(\S+)$", (ROOT / "requirements.txt").read_text(), flags=re.M)
    assert pin, "requirements.txt no longer pins torch"
    command = f"pip install torch=={pin.group(1)} --index-url https://download.pytorch.org/whl/cpu"
    assert command in README, "the README does not give the CPU-only torch install for the pinned version"
    assert "CUDA build" in README and "gigabytes" in README
    assert command in WORKFLOW.read_text().replace(".venv/bin/pip install -q", "pip install"), \
        "the workflow installs another torch than the README and requirements.txt"


@pytest.mark.parametrize("stem", ["14_48_encoder_decoder_bottleneck"])
def test_a_heavy_sections_prose_gives_its_retrain_time(stem, glued):
    """§14.48 states what its retrain took, glued from the cache's manifest."""
    minutes = glued(stem)["heavy_minutes"]
    assert round(minutes) == next(h["minutes"] for h in _heavy() if h["stem"] == stem)


def test_the_module_map_lists_every_helpers_module():
    """helpers/__init__.py's docstring is the map of the package: every module appears in it, and nothing else."""
    import helpers

    listed = set(re.findall(r"``helpers\.(\w+)``", helpers.__doc__))
    modules = {p.stem for p in (ROOT / "helpers").glob("*.py") if p.stem != "__init__"}
    assert listed == modules, f"missing from the map: {sorted(modules - listed)}; not a module: {sorted(listed - modules)}"
