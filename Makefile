# mini-scheduler: every target installs what it needs into .venv on first use.
# Only a Python 3.11+ interpreter is needed beforehand (set PYTHON=... to pick another one).

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-dev

.DEFAULT_GOAL := help
.PHONY: help install run test lint bench clean

help:
	@echo "make run     run the scheduler locally on the sample cron file (no AWS account needed)"
	@echo "make test    run the whole test suite"
	@echo "make lint    ruff and mypy"
	@echo "make bench   benchmarks, each figure next to a baseline measured in the same run"

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "mini-scheduler needs Python 3.11 or later; set PYTHON=/path/to/python3.11")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/mini-scheduler next samplecode/cron.yaml --count 3

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) .cache .pytest_cache .mypy_cache .ruff_cache .hypothesis
