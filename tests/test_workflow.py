"""The publishing workflow (.github/workflows/publish.yml): linted, and its steps run here where they can.

GitHub Actions itself cannot run on these machines; what can run locally is checked: the workflow
passes actionlint, the commands it calls exist, and its publish step pushes the Colab edition to
a (local, bare) remote's Colab branch, keeping one commit per edition.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from tools import colab

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def actionlint() -> str:
    found = shutil.which("actionlint") or str(Path(sys.executable).with_name("actionlint"))
    if not Path(found).is_file():
        pytest.fail("actionlint not installed: `make venv` installs it (requirements.txt)")
    return found


def test_there_is_a_publish_workflow():
    assert ROOT / ".github" / "workflows" / "publish.yml" in WORKFLOWS


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_passes_actionlint(path):
    run = subprocess.run([actionlint(), "-no-color", str(path)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  x:\n    runs-on: ubuntu-24.04\n    steps:\n      - run: echo ${{ github.nope }}\n")
    assert subprocess.run([actionlint(), str(bad)], capture_output=True).returncode != 0


def test_the_workflow_runs_on_a_tag_builds_tests_deploys_and_publishes():
    flow = yaml.safe_load((ROOT / ".github" / "workflows" / "publish.yml").read_text())
    on = flow[True]  # YAML 1.1 reads the key `on` as True
    assert on["push"]["tags"] == ["v*"]
    steps = flow["jobs"]["build"]["steps"]
    runs = "\n".join(s.get("run", "") for s in steps)
    assert "make test" in runs and "-m tools.colab" in runs and "--publish" in runs
    assert any(s.get("uses", "").startswith("actions/upload-pages-artifact") and s["with"]["path"] == "_build/html"
               for s in steps)
    assert any(s.get("uses", "").startswith("actions/deploy-pages") for s in flow["jobs"]["deploy"]["steps"])


def test_the_publish_command_pushes_both_editions_to_their_branches(tmp_path, monkeypatch):
    """`python -m tools.colab --publish REMOTE`, the workflow's step: the Colab edition to edition.colab_branch
    and the student edition (what a site without solutions launches) to edition.student_branch."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    for edition in colab.EDITIONS:
        (tmp_path / edition / "chapters").mkdir(parents=True)
        (tmp_path / edition / "chapters" / "14_45_a.ipynb").write_text(f'{{"edition": "{edition}"}}')
    monkeypatch.setattr(colab, "BUILD", tmp_path)
    assert colab.main(["--publish", remote.as_uri(), "--message", "edition v1"]) == 0
    branches = colab.edition_branches(colab.book_config())
    for edition, branch in branches.items():
        shown = subprocess.run(["git", "--git-dir", str(remote), "show", f"{branch}:chapters/14_45_a.ipynb"],
                               capture_output=True, text=True, check=True).stdout
        assert shown == f'{{"edition": "{edition}"}}'
    assert branches == {"colab": "colab", "student": "student"}


def test_publish_pushes_the_edition_to_the_colab_branch_keeping_its_history(tmp_path):
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    edition = tmp_path / "colab"
    (edition / "chapters").mkdir(parents=True)
    (edition / "chapters" / "14_45_a.ipynb").write_text("{}")
    (edition / "chapters" / "14_46_b.ipynb").write_text("{}")
    first = colab.publish(edition, remote.as_uri(), "colab", "edition v1")
    (edition / "chapters" / "14_46_b.ipynb").unlink()
    (edition / "chapters" / "14_45_a.ipynb").write_text('{"v": 2}')
    second = colab.publish(edition, remote.as_uri(), "colab", "edition v2")
    git = lambda *a: subprocess.run(["git", "--git-dir", str(remote), *a], capture_output=True, text=True,
                                    check=True).stdout
    assert git("rev-parse", "colab").strip() == second != first
    assert git("log", "--format=%s", "colab").split("\n")[:2] == ["edition v2", "edition v1"]
    assert git("ls-tree", "-r", "--name-only", "colab").split() == ["chapters/14_45_a.ipynb"]
    assert git("show", "colab:chapters/14_45_a.ipynb") == '{"v": 2}'
