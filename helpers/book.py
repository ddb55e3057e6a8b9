"""Where the book lives, and what every notebook needs from its surroundings.

The repository root is the folder that holds ``_config.yml``; the repository URL is
defined there once and read from there by everything else.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent


def repo_path(*parts: str) -> Path:
    """Absolute path of ``parts`` inside the repository, e.g. ``repo_path("data")``."""
    return REPO_ROOT.joinpath(*parts)


@functools.lru_cache(maxsize=1)
def book_config() -> dict[str, Any]:
    """The parsed ``_config.yml`` of the book."""
    path = repo_path("_config.yml")
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} not found: helpers must be used from a checkout of the book "
            "(git clone the repository, then `pip install -e .` from its root)."
        )
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def repository_url() -> str:
    """The book's repository URL, as defined once in ``_config.yml``."""
    return book_config()["repository"]["url"].rstrip("/")


def site_url() -> str:
    """The published site's base URL (``html.baseurl`` in ``_config.yml``), without a trailing slash."""
    return book_config()["html"]["baseurl"].rstrip("/")


def colab_url(notebook: str) -> str:
    """Where the Colab edition of ``notebook`` (e.g. ``"14_45_sequence_modelling_problems"``) opens.

    The edition is published to the branch ``edition.colab_branch`` of the repository; the
    site's launch buttons point at the same URL.
    """
    slug = repository_url().removeprefix("https://github.com/")
    branch = (book_config().get("edition") or {}).get("colab_branch", "colab")
    return f"https://colab.research.google.com/github/{slug}/blob/{branch}/chapters/{notebook.removesuffix('.ipynb')}.ipynb"


def in_colab() -> bool:
    """True when running inside Google Colab."""
    return "google.colab" in sys.modules


def building_book() -> bool:
    """True while the book's build executes a notebook (``tools/book.py`` sets BOOK_BUILD=1)."""
    return os.environ.get("BOOK_BUILD") == "1"


def glue(name: str, value: Any, setting: bool = False) -> None:
    """Bind ``value`` to ``name`` so the prose can show it (``{glue:text}`name```) and tests can read it.

    Uses myst-nb's glue mechanism (without displaying the value, so it is not rendered twice).
    NumPy and torch scalars are stored as plain Python numbers, so that format specs
    like ``:.2f`` work in the prose and tests can read the value back with
    ``ast.literal_eval``. Where myst-nb is not installed (e.g. in Colab) this only
    does nothing. Returns None, so a glue call at the end of a cell prints nothing.

    ``setting=True`` marks a value the author chose (a width, a step count, a seed, a grid
    size) rather than one the notebook measured: the glue output carries
    ``{"book": {"setting": true}}`` in its metadata, and the guard check
    (``tools/claims_check.py``) does not require a test to pin it.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"glue name must be a Python identifier, got {name!r}")
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        value = value.item()  # numpy / torch scalar -> int, float or bool
    if not isinstance(value, (bool, int, float, str)):
        raise TypeError(
            f"glue {name!r}: value must be a number, bool or str (got {type(value).__name__}); "
            "glue each number separately"
        )
    try:
        import IPython
        from IPython.display import display
        from myst_nb.ext.glue import GLUE_PREFIX
    except ImportError:  # Colab, plain Jupyter: nothing to bind into
        return
    # the same output myst-nb's own glue(name, value, display=False) writes, plus our flag
    bundle, metadata = IPython.core.formatters.format_display_data(value)
    metadata["scrapbook"] = {"name": name, "mime_prefix": GLUE_PREFIX}
    if setting:
        metadata["book"] = {"setting": True}
    display({GLUE_PREFIX + k: v for k, v in bundle.items()}, raw=True, metadata=metadata)
