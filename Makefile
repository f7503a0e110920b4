# Two commands on a fresh machine: `make demo` and `make test`. Both create `.venv` and install
# the project (pinned by constraints.txt) on first use; nothing else needs installing by hand.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-dev
# `make demo` needs only the package itself (no test oracles, no provider SDKs).
BASE_STAMP := $(VENV)/.installed-base
# The benchmark's peer stores cannot share .venv with the dev extra's SDK oracles (see the
# bench extra in pyproject.toml), so `make bench` has its own environment.
BENCH_VENV  := .venv-bench
BENCH_STAMP := $(BENCH_VENV)/.installed-bench

# Framework integrations whose pins clash with the dev extra (and with each other) get their
# own environments; `make test` runs their tests and type-checks there, framework installed.
PAI_VENV  := .venv-pydantic-ai
PAI_STAMP := $(PAI_VENV)/.installed-pydantic-ai
ADK_VENV  := .venv-adk
ADK_STAMP := $(ADK_VENV)/.installed-google-adk

.PHONY: demo test lint typecheck pytest bench lock clean test-pydantic-ai test-google-adk \
	bench-frameworks

$(BASE_STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e .
	touch $@

$(STAMP): $(BASE_STAMP)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[dev]"
	touch $@

demo: $(BASE_STAMP)
	$(BIN)/convstore demo

test: lint typecheck pytest test-pydantic-ai test-google-adk

lint: $(STAMP)
	$(BIN)/ruff check src tests bench migrations
	$(BIN)/ruff format --check src tests bench migrations

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/pytest

$(PAI_STAMP): pyproject.toml constraints-pydantic-ai.txt
	test -x $(PAI_VENV)/bin/python || $(PYTHON) -m venv $(PAI_VENV)
	$(PAI_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PAI_VENV)/bin/python -m pip install --quiet -c constraints-pydantic-ai.txt -e ".[dev,pydantic-ai]"
	touch $@

test-pydantic-ai: $(PAI_STAMP)
	$(PAI_VENV)/bin/mypy
	CONVSTORE_REQUIRE_FRAMEWORKS=1 $(PAI_VENV)/bin/pytest tests/integrations/test_pydantic_ai.py tests/integrations/test_pydantic_ai_docs.py

$(ADK_STAMP): pyproject.toml constraints-google-adk.txt
	test -x $(ADK_VENV)/bin/python || $(PYTHON) -m venv $(ADK_VENV)
	$(ADK_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(ADK_VENV)/bin/python -m pip install --quiet -c constraints-google-adk.txt -e ".[dev,google-adk]"
	touch $@

test-google-adk: $(ADK_STAMP)
	$(ADK_VENV)/bin/mypy
	CONVSTORE_REQUIRE_FRAMEWORKS=1 $(ADK_VENV)/bin/pytest tests/integrations/test_google_adk.py tests/integrations/test_google_adk_docs.py

$(BENCH_STAMP): pyproject.toml bench/constraints.txt
	test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(BENCH_VENV)/bin/python -m pip install --quiet -c bench/constraints.txt -e ".[bench]"
	touch $@

# Every store in its own process, all from .venv-bench; writes docs/performance.md.
bench: $(BENCH_STAMP) bench-frameworks
	$(BENCH_VENV)/bin/python -m bench.compare --save-json docs/performance.json

# ADK's and pydantic-ai's workloads through the integrations beside the frameworks' own stores.
bench-frameworks: $(PAI_STAMP) $(ADK_STAMP)
	$(ADK_VENV)/bin/python -m bench.frameworks_bench adk
	$(PAI_VENV)/bin/python -m bench.frameworks_bench pydantic-ai

# Re-pin every dependency to what resolves today (run after changing pyproject.toml).
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet -e ".[dev]"
	.lock-venv/bin/python -m pip freeze --exclude-editable | grep -v '^-e' > constraints.txt
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet -e ".[bench]"
	{ echo "# Pins for $(BENCH_VENV) (make bench): the project and its [bench] extra. 'make lock'."; \
	  .lock-venv/bin/python -m pip freeze --exclude-editable | grep -v '^-e'; } > bench/constraints.txt
	rm -rf .lock-venv

clean:
	rm -rf $(VENV) $(BENCH_VENV) $(PAI_VENV) $(ADK_VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis build dist convstore.db* convstore-blobs
