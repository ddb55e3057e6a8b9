# The book's two commands:  `make book`  and  `make test`  (see README.md).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HEAVY_EVAL ?= False
BOOK_FLAGS := $(if $(filter True true 1,$(HEAVY_EVAL)),--heavy,)

.PHONY: book test venv clean

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $@

book: venv
	$(PY) tools/book.py $(BOOK_FLAGS)

# axe-core (the accessibility checker tests/test_site.py injects into every page), from npm
AXE := _build/node/node_modules/axe-core/axe.min.js
AXE_VERSION := 4.14.1

$(AXE):
	npm install --prefix _build/node --no-save --no-audit --no-fund axe-core@$(AXE_VERSION)

test: book $(AXE)
	$(PY) -m pytest

clean:
	rm -rf _build
