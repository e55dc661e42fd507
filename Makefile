# The README's two commands, `make run` and `make test`, and the steps they are made of.
# Both work on a fresh machine that has only python3 and pip: they create .venv and install
# what they need first, `make run` the runtime (requirements.txt), `make test` everything
# the suite needs (requirements-dev.txt). `make help` lists the targets.

SHELL := /bin/bash
.DEFAULT_GOAL := help
# `make test` must stop at the first failing step, in the README's order, even under -j.
.NOTPARALLEL:

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Touched after a successful install, so pip runs again only when a requirements file changes:
# one for the runtime `make run` needs, one for everything `make test` needs.
RUNTIME_STAMP := $(VENV)/.runtime-installed
STAMP := $(VENV)/.requirements-installed
HOST ?= 127.0.0.1
PORT ?= 8000
# The address the demo's commands print: a server on every interface answers on loopback.
DEMO_URL = http://$(if $(filter 0.0.0.0,$(HOST)),127.0.0.1,$(HOST)):$(PORT)
# Extra pytest arguments, e.g. make test-sqlite PYTEST_ARGS="-k checks -x".
PYTEST_ARGS ?=
TIMED := bash scripts/timed.sh

.PHONY: help venv run test lint typecheck test-suites test-sqlite test-postgres system-packages services clean

help:
	@echo "make run            install the runtime in .venv, migrate, create the demo admin, serve on $(HOST):$(PORT)"
	@echo "make test           install the dev tools, then ruff, mypy, pytest on SQLite and on PostgreSQL side by side"
	@echo "make lint           ruff check, ruff format --check, and the import layers (lint-imports)"
	@echo "make typecheck      mypy on cogitator_memory (config in pyproject.toml)"
	@echo "make test-suites    the pytest suite on SQLite and on PostgreSQL, side by side"
	@echo "make test-sqlite    the pytest suite on SQLite"
	@echo "make test-postgres  the pytest suite on embedded PostgreSQL"
	@echo "make clean          remove .venv, caches and test databases (keeps db.sqlite3)"

VENV_MADE = test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || { \
	echo "Could not create $(VENV) with '$(PYTHON) -m venv'; on Debian: apt-get install python3-venv" >&2; \
	exit 1; }

$(RUNTIME_STAMP): requirements.txt
	@$(VENV_MADE)
	$(BIN)/python -m pip install --disable-pip-version-check -r requirements.txt
	@touch $@

$(STAMP): requirements.txt requirements-deploy.txt requirements-dev.txt requirements-local.txt
	@$(VENV_MADE)
	$(BIN)/python -m pip install --disable-pip-version-check -r requirements-dev.txt
	@touch $@ $(RUNTIME_STAMP)

venv: $(STAMP)

run: $(RUNTIME_STAMP)
	$(BIN)/python manage.py migrate --noinput
	COGITATOR_DEMO_URL=$(DEMO_URL) $(BIN)/python manage.py ensure_demo_admin
	COGITATOR_DEMO_URL=$(DEMO_URL) $(BIN)/python manage.py load_demo
	$(BIN)/python manage.py runserver $(HOST):$(PORT)

# Debian packages the suite needs (docker-compose), installed with apt-get when root.
system-packages:
	@$(TIMED) "system packages" bash scripts/ensure-system-packages.sh

# Redis for the Celery round-trip test; started when root and nothing answers on 6379.
services:
	@$(TIMED) "redis" bash scripts/ensure-redis.sh
	@$(TIMED) "debian postgres" bash scripts/ensure-debian-postgres.sh

# Prerequisites run left to right (.NOTPARALLEL), and make stops at the first that fails.
test: system-packages services $(STAMP) lint typecheck test-suites

lint: $(STAMP)
	@$(TIMED) "ruff check" $(BIN)/ruff check .
	@$(TIMED) "ruff format --check" $(BIN)/ruff format --check .
	@$(TIMED) "import layers" $(BIN)/lint-imports --no-cache

typecheck: $(STAMP)
	@$(TIMED) "mypy" $(BIN)/mypy cogitator_memory

# The two suites at once (scripts/test-suites.sh): each in a process of its own with its own
# database, its log printed whole when it ends; fails when either fails.
test-suites: $(STAMP)
	@$(TIMED) "pytest on SQLite and PostgreSQL" bash scripts/test-suites.sh $(MAKE)

test-sqlite: $(STAMP)
	@COGITATOR_TEST_DATABASE=sqlite $(TIMED) "pytest on SQLite" $(BIN)/pytest $(PYTEST_ARGS)

# tests/settings.py puts each run's server in .pgdata/<pid> and needs .pgdata to exist.
test-postgres: $(STAMP)
	@mkdir -p .pgdata
	@COGITATOR_TEST_DATABASE=postgres $(TIMED) "pytest on PostgreSQL" $(BIN)/pytest $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis .pgdata staticfiles test-output
	rm -f test-db-*.sqlite3*
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
