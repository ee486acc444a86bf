# Two entry points (see README): `make demo` and `make test`. Both set everything up.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test lint typecheck unit system-deps demo-deps bench clean openb

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $@

system-deps:
	bash scripts/install-system-deps.sh test

demo-deps:
	bash scripts/install-system-deps.sh demo

demo: $(STAMP) demo-deps
	$(BIN)/python -m advisor.demo --output-dir out/demo-report

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports  # the layers of docs/architecture.md (pyproject.toml)

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP) system-deps
	$(BIN)/pytest

test: lint typecheck unit

# The public openb trace (pinned commits, SHA-256 checked) into the git-ignored data/openb.
openb: $(STAMP)
	$(BIN)/python scripts/fetch_openb.py --dest data/openb

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .import_linter_cache
