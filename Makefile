# The book's two commands:  `make book`  and  `make test`  (see README.md).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HEAVY_EVAL ?= False
# SOLUTIONS=hidden: a site without the exercise solutions, for a term in progress
SOLUTIONS ?= shown
BOOK_FLAGS := $(if $(filter True true 1,$(HEAVY_EVAL)),--heavy,) --solutions $(SOLUTIONS)

.PHONY: book test venv clean

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $@

book: venv
	$(PY) tools/book.py $(BOOK_FLAGS)

test: book
	$(PY) -m pytest

clean:
	rm -rf _build
