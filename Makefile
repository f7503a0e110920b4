# Two commands on a fresh machine: `make demo` and `make test`. Both create `.venv` and install
# the project (pinned by constraints.txt) on first use; nothing else needs installing by hand.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-dev
BENCH_STAMP := $(VENV)/.installed-bench

.PHONY: demo test lint typecheck pytest bench lock clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[dev]"
	touch $@

demo: $(STAMP)
	$(BIN)/convstore demo

test: lint typecheck pytest

lint: $(STAMP)
	$(BIN)/ruff check src tests bench migrations
	$(BIN)/ruff format --check src tests bench migrations

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/pytest

$(BENCH_STAMP): $(STAMP) bench/requirements.txt
	$(BIN)/python -m pip install --quiet -c constraints.txt -r bench/requirements.txt
	touch $@

bench: $(BENCH_STAMP)
	$(BIN)/python -m bench.compare

# Re-pin every dependency to what resolves today (run after changing pyproject.toml).
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet -e ".[dev]"
	.lock-venv/bin/python -m pip freeze --exclude-editable | grep -v '^-e' > constraints.txt
	rm -rf .lock-venv

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis build dist convstore.db* convstore-blobs
