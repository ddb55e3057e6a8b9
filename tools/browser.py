"""Find, or install, the Chromium that the site tests (and `make pdf`) drive through Playwright.

    python -m tools.browser            # print the path of a usable Chromium; install one if none
    python -m tools.browser --check    # print it, or one line saying what to install; install nothing

Where it looks, in order: ``$BOOK_CHROMIUM`` (a path you choose), a Chromium or Chrome on
``PATH`` (Debian's ``chromium`` is ``/usr/bin/chromium``), then Playwright's own Chromium.
What it installs when none is found: Debian's ``chromium`` through apt when running as root
on Debian (CI, containers); otherwise Playwright's Chromium (``python -m playwright install
chromium``, a download from Playwright's servers). If that fails too it says, in one line,
what to install.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ENV_VAR = "BOOK_CHROMIUM"
#: Executable names of Chromium-family browsers that Playwright can drive, most preferred first.
NAMES = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"]
APT_COMMANDS = [["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium"]]


def missing_message() -> str:
    """The one line shown when no Chromium can be found or installed."""
    return (f"no Chromium found: install Debian's `chromium` (`sudo apt-get install -y chromium`), or "
            f"Playwright's (`{Path(sys.executable).name} -m playwright install chromium`), or set "
            f"{ENV_VAR}=/path/to/chromium")


def _playwright_chromium() -> str | None:
    """Path of Playwright's own Chromium (None if Playwright is missing or has not downloaded it)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    try:
        with sync_playwright() as p:
            return p.chromium.executable_path
    except Exception:  # the driver could not start: treat as "not installed"
        return None


def _run(cmd: list[str]) -> bool:
    print(f"browser: {' '.join(cmd)}", flush=True)
    return subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode == 0


@dataclass
class System:
    """What the lookup asks of the machine; tests replace these with fakes."""

    environ: dict = field(default_factory=lambda: os.environ)
    which: Callable[[str], str | None] = shutil.which
    is_file: Callable[[str], bool] = os.path.isfile
    playwright_chromium: Callable[[], str | None] = _playwright_chromium
    is_root: Callable[[], bool] = lambda: hasattr(os, "geteuid") and os.geteuid() == 0
    is_debian: Callable[[], bool] = lambda: os.path.isfile("/etc/debian_version")
    run: Callable[[list[str]], bool] = _run


def find_chromium(system: System | None = None) -> str | None:
    """Path of a Chromium to drive, or None. Raises ``FileNotFoundError`` for a wrong ``$BOOK_CHROMIUM``."""
    system = system or System()
    chosen = system.environ.get(ENV_VAR)
    if chosen:
        if not system.is_file(chosen):
            raise FileNotFoundError(f"{ENV_VAR}={chosen} is not a file: point it at a Chromium executable or unset it")
        return chosen
    for name in NAMES:
        path = system.which(name)
        if path:
            return path
    path = system.playwright_chromium()
    return path if path and system.is_file(path) else None


def install_plans(system: System | None = None) -> list[list[list[str]]]:
    """Ways to install a Chromium here, tried in order: apt (as root on Debian), then Playwright."""
    system = system or System()
    playwright = [[sys.executable, "-m", "playwright", "install", "chromium"]]
    if system.is_root() and system.is_debian() and system.which("apt-get"):
        return [APT_COMMANDS, playwright]
    return [playwright]


def ensure_chromium(system: System | None = None) -> str:
    """Path of a Chromium, installing one if none is found; ``SystemExit`` with one line if impossible."""
    system = system or System()
    found = find_chromium(system)
    for plan in [] if found else install_plans(system):
        if all(system.run(cmd) for cmd in plan):  # stops at the first failing command
            found = find_chromium(system)
            if found:
                break
    if not found:
        raise SystemExit(missing_message())
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only look; never install")
    args = parser.parse_args(argv)
    try:
        path = find_chromium() if args.check else ensure_chromium()
    except FileNotFoundError as err:
        print(err, file=sys.stderr)
        return 1
    if path is None:
        print(missing_message(), file=sys.stderr)
        return 1
    print(f"browser: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
