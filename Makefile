# The book's two commands:  `make book`  and  `make test`  (see README.md).  Also: `make full` (the full
# test tier), `make check` (both tiers, as CI), `make pdf`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HEAVY_EVAL ?= False
# SOLUTIONS=hidden: a site without the exercise solutions, for a term in progress
SOLUTIONS ?= shown
# the fast tier's pytest workers (pytest-xdist); one test file stays on one worker (its module fixtures
# load an executed notebook or start a browser once). TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= auto
BOOK_FLAGS := $(if $(filter True true 1,$(HEAVY_EVAL)),--heavy,) --solutions $(SOLUTIONS)
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
# pip's notes about a machine-wide local index that lacks a package (this build machine's pip
# config, not the project's) are dropped; every other message of pip is shown.
PIP_QUIET_FILTER := { grep -v "^WARNING: Location 'file:.*' is ignored" || true; }

.PHONY: book test full check pdf browser venv clean

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt 2>&1 | $(PIP_QUIET_FILTER)
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e . 2>&1 | $(PIP_QUIET_FILTER)
	touch $@

book: venv
	$(PY) -m tools.book $(BOOK_FLAGS)

# the site tests drive Chromium: use the one installed, or install Debian's or Playwright's
browser: venv
	$(PY) -m tools.browser

# axe-core (the accessibility checker tests/test_site.py injects into every page), from npm;
# npm itself comes from Debian's packages when it is missing and we are root
AXE := _build/node/node_modules/axe-core/axe.min.js
AXE_VERSION := 4.14.1

$(AXE):
	@command -v npm > /dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get > /dev/null \
	  && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm > /dev/null; } \
	  || { echo "npm not found: install Node.js and npm (Debian: apt-get install npm), then rerun"; exit 1; }
	npm install --prefix _build/node --no-save --no-audit --no-fund axe-core@$(AXE_VERSION)

# the fast tier, the README's test command: every test not marked `full` (pyproject.toml's markers)
test: book browser $(AXE)
	$(PY) -m pytest -m "not full" -n $(TEST_WORKERS) --dist loadfile

# the full tier only: the tests marked `full`, with the PDF built first and required
full: book browser $(AXE) pdf
	BOOK_REQUIRE_PDF=1 $(PY) -m pytest -m full

# both tiers (what CI runs)
check: test full

# the whole Part as one PDF in _build/pdf/ (not part of `make test`: see README, "Editions")
pdf: book browser
	$(PY) -m tools.pdf

clean:
	rm -rf _build
