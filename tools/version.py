"""The book's edition: ``git describe --tags --always --dirty`` of the repository.

A tag (e.g. ``2027-spring``) names an edition cut for a term; between tags the string reads
``<tag>-<commits since>-g<commit>``, or just the commit when there is no tag, and ends in
``-dirty`` when the working tree has uncommitted changes. The build passes it to Sphinx as
``$BOOK_VERSION`` (see ``_ext/book_edition.py``): every page's footer and the PDF show it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tools.notebooks import ROOT

ENV_VAR = "BOOK_VERSION"
UNKNOWN = "unversioned"


def book_version(root: Path = ROOT) -> str:
    """``git describe --tags --always --dirty`` in ``root``; ``"unversioned"`` outside a git checkout."""
    try:
        result = subprocess.run(["git", "describe", "--tags", "--always", "--dirty"], cwd=root,
                                capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return UNKNOWN
    return result.stdout.strip() if result.returncode == 0 and result.stdout.strip() else UNKNOWN
