# The book's two commands:  `make book`  and  `make test`  (see README.md).  Also: `make pdf`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HEAVY_EVAL ?= False
# SOLUTIONS=hidden: a site without the exercise solutions, for a term in progress
SOLUTIONS ?= shown
BOOK_FLAGS := $(if $(filter True true 1,$(HEAVY_EVAL)),--heavy,) --solutions $(SOLUTIONS)
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
# pip's notes about a machine-wide local index that lacks a package (this build machine's pip
# config, not the project's) are dropped; every other message of pip is shown.
PIP_QUIET_FILTER := { grep -v "^WARNING: Location 'file:.*' is ignored" || true; }

.PHONY: book test pdf browser venv clean

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt 2>&1 | $(PIP_QUIET_FILTER)
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e . 2>&1 | $(PIP_QUIET_FILTER)
	touch $@

book: venv
	$(PY) tools/book.py $(BOOK_FLAGS)

# the site tests drive Chromium: use the one installed, or install Debian's or Playwright's
browser: venv
	$(PY) tools/browser.py

test: book browser
	$(PY) -m pytest

# the whole Part as one PDF in _build/pdf/ (not part of `make test`: see README, "Editions")
pdf: book browser
	$(PY) tools/pdf.py

clean:
	rm -rf _build
