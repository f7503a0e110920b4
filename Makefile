# Two commands on a fresh machine: `make demo` and `make test`. Both create `.venv` and install
# the project (pinned by constraints.txt) on first use; nothing else needs installing by hand.

PYTHON ?= python3
# Every environment is made and filled by uv, pinned here and pip-installed once into .venv-uv:
# `make test` builds a dozen environments, and pip took 60-110 s of wall time for each one
# uv fills in about 10 (both from a warm cache, one langgraph environment, the same pins). Like
# uv's default, no bytecode is compiled at install time: Python compiles (and caches) what is
# imported on first use.
UV_VERSION := 0.13.9
UV_VENV := .venv-uv
UV := $(UV_VENV)/bin/uv
# $(call NEW_VENV,dir): an environment at dir unless one is there (with pip: a few tests run
# `python -m pip`). $(call INSTALL,dir) ...: install into it.
NEW_VENV = test -x $(1)/bin/python || $(UV) venv --quiet --seed --python $(PYTHON) $(1)
INSTALL = $(UV) pip install --quiet --python $(1)/bin/python
# Python compiling on first import is undone by PYTHONDONTWRITEBYTECODE (set in some
# containers): every `python -m
# convstore` a test starts would compile each module it imports again (about half of such a
# test's time). Recipes run without it, so the first import writes the cache.
unexport PYTHONDONTWRITEBYTECODE
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-dev
# `make demo` needs only the package itself (no test oracles, no provider SDKs).
BASE_STAMP := $(VENV)/.installed-base
# The benchmark's peer stores cannot share .venv with the dev extra's SDK oracles (see the
# bench extra in pyproject.toml), so `make bench` has its own environment.
BENCH_VENV  := .venv-bench
BENCH_STAMP := $(BENCH_VENV)/.installed-bench
# The AI SDK's own validator for tests/integrations/test_ai_sdk.py: node (from the system) and
# the `ai` npm package, pinned by its package-lock.json, in a project-local node_modules.
AI_SDK_NODE  := tests/integrations/node
AI_SDK_STAMP := $(AI_SDK_NODE)/node_modules/.installed
# openai-agents pins websockets<17, which the dev extra's SDK oracles do not allow: its tests
# (ConvstoreSession, and the SDK's own session suites from its sdist) run in .venv-agents.
AGENTS_VENV  := .venv-agents
AGENTS_PINS  := tests/integrations/openai_agents_contract/constraints.txt
AGENTS_STAMP := $(AGENTS_VENV)/.installed-agents

# Framework integrations whose pins clash with the dev extra (and with each other) get their
# own environments; `make test` runs their tests and type-checks there, framework installed.
PAI_VENV  := .venv-pydantic-ai
PAI_STAMP := $(PAI_VENV)/.installed-pydantic-ai
ADK_VENV  := .venv-adk
ADK_STAMP := $(ADK_VENV)/.installed-google-adk
# LangGraph and LangChain (ConvstoreSaver, ConvstoreChatMessageHistory): the frameworks, LangGraph's
# own checkpointer conformance suite and, for `make bench`, langgraph-checkpoint-sqlite.
LG_VENV  := .venv-langgraph
LG_STAMP := $(LG_VENV)/.installed-langgraph
LG_TEST_PACKAGES := langgraph langgraph-checkpoint-sqlite langgraph-checkpoint-conformance

.PHONY: demo test envs lint typecheck pytest pytest-agents bench lock clean test-pydantic-ai \
	test-google-adk bench-frameworks test-langgraph bench-langgraph screenshots serve test-fast checks frameworks \
	bench-smoke docs-extras pytest-partitioned

$(UV):
	test -x $(UV_VENV)/bin/python || $(PYTHON) -m venv $(UV_VENV)
	$(UV_VENV)/bin/python -m pip install --quiet "uv==$(UV_VERSION)"

$(BASE_STAMP): pyproject.toml constraints.txt | $(UV)
	$(call NEW_VENV,$(VENV))
	$(call INSTALL,$(VENV)) -c constraints.txt -e .
	touch $@

$(STAMP): $(BASE_STAMP)
	$(call INSTALL,$(VENV)) -c constraints.txt -e ".[dev]"
	touch $@

demo: $(BASE_STAMP)
	$(BIN)/convstore demo

# The inspector on the demo database (http://127.0.0.1:8765/): the package and its web extra
# only (a few seconds), not the development extra.
WEB_STAMP := $(VENV)/.installed-web
$(WEB_STAMP): $(BASE_STAMP)
	$(call INSTALL,$(VENV)) -c constraints.txt -e ".[web]"
	touch $@

serve: $(WEB_STAMP)
	test -f convstore.db || $(BIN)/convstore demo >/dev/null
	$(BIN)/convstore serve

# The README's screenshots, taken by the browser test (needs /usr/bin/chromium).
screenshots: $(STAMP)
	CONVSTORE_SCREENSHOTS=docs/images $(BIN)/pytest tests/web/test_browser.py -q

# Everything side by side, each check starting as soon as its own environment is there (separate
# venvs, one shared uv cache: uv locks it): the main suite first (the longest), spread over the
# cores by pytest-xdist (each worker has its own databases and, when it needs one, its own
# PostgreSQL cluster), beside the static checks, the framework environments (built while the
# main suite runs) and the benchmarks' smoke run. Five jobs: one more than when the environments
# were built before, as their installs (mostly disk) now take a job each beside the checks.
# --output-sync keeps each target's output together. `make envs` builds every environment alone.
test:
	$(MAKE) --output-sync=target -j5 pytest checks pytest-partitioned frameworks bench-smoke

# The inner loop: the main suite without PostgreSQL, S3, browsers, framework environments or
# the tests marked slow (the fuzzers' thousands of inputs, the memory bounds' subprocesses, the
# installed-wheel and Alembic-command checks); `make test` runs them all.
test-fast: $(STAMP)
	$(TEST_ENV) $(BIN)/pytest $(XDIST) $(PYTEST_TMP) -m "not postgres and not s3 and not slow" \
		--ignore=tests/web/test_browser.py

checks: lint typecheck

# The framework environments one after another (each is small; they run beside the main suite).
# Each one's mypy keeps its cache in its own environment: the shared .mypy_cache, written by the
# dev environment's mypy at the same time, held modules another environment does not have and
# crashed its mypy (AssertionError: Cannot find module for pydantic_ai...). A new one starts as
# a copy of the dev environment's finished cache (MYPY_CACHE_FROM_DEV): same mypy, options and
# pins, so mypy re-checks only what sees the framework (a module whose missing import is now
# found is stale) and reuses the rest. CPU (user + sys) from a clean clone: pydantic-ai 48 -> 34 s,
# google-adk 39 -> 24 s, langgraph 25 -> 10 s. Every file is checked, the framework installed.
MYPY_CACHE_FROM_DEV = test -d $(1)/.mypy_cache || cp -r .mypy_cache $(1)/.mypy_cache

frameworks: pytest-agents test-pydantic-ai test-google-adk test-langgraph docs-extras

# Each integration page's blocks in an environment built from its extra alone (the pinned
# constraints, no development extra, no pytest), as `pip install "convstore[EXTRA]"` would
# leave it: an extra that misses what its page imports fails here (tests/docs_in_extra.py).
# `base` is the package alone (the AI SDK page needs no extra). Built as prerequisites of
# `frameworks`, beside the main suite rather than before it.
DOCS_EXTRAS := base langchain langgraph openai-agents pydantic-ai google-adk
EXTRA_PINS_base := constraints.txt
EXTRA_PINS_langchain := constraints-langgraph.txt
EXTRA_PINS_langgraph := constraints-langgraph.txt
EXTRA_PINS_openai-agents := $(AGENTS_PINS)
EXTRA_PINS_pydantic-ai := constraints-pydantic-ai.txt
EXTRA_PINS_google-adk := constraints-google-adk.txt
EXTRA_STAMPS := $(foreach extra,$(DOCS_EXTRAS),.venv-extra-$(extra)/.installed)

.venv-extra-%/.installed: pyproject.toml constraints.txt constraints-langgraph.txt \
		constraints-pydantic-ai.txt constraints-google-adk.txt $(AGENTS_PINS) | $(UV)
	$(call NEW_VENV,.venv-extra-$*)
	$(call INSTALL,.venv-extra-$*) -c $(EXTRA_PINS_$*) \
		-e "$(if $(filter base,$*),.,.[$*])"
	touch $@

docs-extras: $(EXTRA_STAMPS)
	$(foreach extra,$(DOCS_EXTRAS),.venv-extra-$(extra)/bin/python -m tests.docs_in_extra $(extra) &&) true

envs:
	$(MAKE) -j4 $(STAMP) $(AI_SDK_STAMP) $(AGENTS_STAMP) $(PAI_STAMP) $(ADK_STAMP) $(LG_STAMP) \
		$(BENCH_STAMP)

lint: $(STAMP)
	$(BIN)/ruff check src tests bench migrations
	$(BIN)/ruff format --check src tests bench migrations

typecheck: $(STAMP)
	$(BIN)/mypy

# The PostgreSQL store, concurrency and v2-operation suites once more on a database
# hash-partitioned by `convstore partition` (docs/scaling.md). Left out: what does not touch
# the partitioned tables differently (blob-backend variants, migrating an empty database) and
# the reference-model state machines, the store's and the message cache's (the v2 operations
# and the cache have suites of their own).
PARTITIONED_SUITES := tests/store tests/reliability/test_concurrency.py -k "not migrating \
	and not postgres-s3 and not postgres-local and not state_machine \
	and not cache_on_and_off"

# The tests' temporary files (each test's SQLite database and blob directory, the PostgreSQL
# clusters' data directories) in memory, on /dev/shm, when it has 4 GiB free: the stores fsync
# every SQLite commit (synchronous=full) and every blob, and on a disk shared with other work
# each fsync waited its turn (the chatgpt import fuzz: 48 s of wall, 39 s with the same CPU on
# tmpfs). The same code runs, fsync included; like the test clusters' fsync=off, only the
# medium differs. A full run writes ~0.5 GB there; tests that pass leave nothing behind.
# `make test TEST_TMPDIR=` keeps the system's temporary directory.
TEST_TMPDIR ?= $(shell df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 && $$4 >= 4194304 {print "/dev/shm"}')
TEST_ENV := $(if $(TEST_TMPDIR),TMPDIR=$(TEST_TMPDIR))
PYTEST_TMP := $(if $(TEST_TMPDIR),-o tmp_path_retention_policy=failed)

# pytest-xdist workers: one per core by default (`make test PYTEST_WORKERS=1` runs in-process).
# Work stealing: an idle worker takes tests queued on the other, so a two-minute fuzzer near the
# end of one worker's share does not leave the other core idle.
PYTEST_WORKERS ?= auto
XDIST := -n $(PYTEST_WORKERS) --dist worksteal

pytest: $(STAMP) $(AI_SDK_STAMP)
	$(TEST_ENV) $(BIN)/pytest $(XDIST) $(PYTEST_TMP) --durations=40

# Beside the main suite rather than after it: its own session, clusters and ports.
pytest-partitioned: $(STAMP)
	$(TEST_ENV) CONVSTORE_TEST_PG_PARTITIONS=4 $(BIN)/pytest $(XDIST) $(PYTEST_TMP) -m postgres \
		$(PARTITIONED_SUITES)

$(AI_SDK_STAMP): $(AI_SDK_NODE)/package.json $(AI_SDK_NODE)/package-lock.json
	npm ci --prefix $(AI_SDK_NODE) --no-audit --no-fund --loglevel=error
	touch $@

$(AGENTS_STAMP): pyproject.toml $(AGENTS_PINS) | $(UV)
	$(call NEW_VENV,$(AGENTS_VENV))
	$(call INSTALL,$(AGENTS_VENV)) -c $(AGENTS_PINS) -e ".[openai-agents,mcp]" \
		pytest pytest-asyncio pytest-timeout
	touch $@

# --noconftest: the suite-wide conftest needs the dev extra (moto, boto3), not installed here.
# Each framework environment runs its tests and its docs page's blocks in one pytest session
# (a session costs ~5 s of CPU before the first test): "not test_docs_blocks or FRAMEWORK"
# keeps every test of the named files and, of test_docs_blocks.py, that framework's blocks.
pytest-agents: $(AGENTS_STAMP)
	$(TEST_ENV) CONVSTORE_REQUIRE_FRAMEWORKS=1 $(AGENTS_VENV)/bin/pytest $(PYTEST_TMP) --noconftest \
		tests/integrations/test_openai_agents.py tests/integrations/test_openai_agents_contract.py \
		tests/integrations/test_openai_agents_docs.py tests/mcp_server/test_openai_agents_client.py \
		tests/integrations/test_docs_blocks.py -k "not test_docs_blocks or openai_agents"

# pydantic-ai's MCP client (its mcp extra) for tests/mcp_server/test_pydantic_ai_client.py.
PAI_TEST_PACKAGES := "pydantic-ai-slim[mcp]"

$(PAI_STAMP): pyproject.toml constraints-pydantic-ai.txt | $(UV)
	$(call NEW_VENV,$(PAI_VENV))
	$(call INSTALL,$(PAI_VENV)) -c constraints-pydantic-ai.txt -e ".[dev,pydantic-ai]" \
		$(PAI_TEST_PACKAGES)
	touch $@

test-pydantic-ai: $(PAI_STAMP) typecheck
	$(call MYPY_CACHE_FROM_DEV,$(PAI_VENV))
	$(PAI_VENV)/bin/mypy --cache-dir $(PAI_VENV)/.mypy_cache
	$(TEST_ENV) CONVSTORE_REQUIRE_FRAMEWORKS=1 $(PAI_VENV)/bin/pytest $(PYTEST_TMP) tests/integrations/test_pydantic_ai.py tests/integrations/test_pydantic_ai_fidelity.py \
		tests/integrations/test_pydantic_ai_docs.py tests/integrations/test_pydantic_ai_crash.py \
		tests/mcp_server/test_pydantic_ai_client.py \
		tests/integrations/test_docs_blocks.py -k "not test_docs_blocks or pydantic_ai"

$(ADK_STAMP): pyproject.toml constraints-google-adk.txt | $(UV)
	$(call NEW_VENV,$(ADK_VENV))
	$(call INSTALL,$(ADK_VENV)) -c constraints-google-adk.txt -e ".[dev,google-adk]"
	touch $@

test-google-adk: $(ADK_STAMP) typecheck
	$(call MYPY_CACHE_FROM_DEV,$(ADK_VENV))
	$(ADK_VENV)/bin/mypy --cache-dir $(ADK_VENV)/.mypy_cache
	$(TEST_ENV) CONVSTORE_REQUIRE_FRAMEWORKS=1 $(ADK_VENV)/bin/pytest $(PYTEST_TMP) tests/integrations/test_google_adk.py tests/integrations/test_google_adk_crash.py \
		tests/integrations/test_google_adk_docs.py \
		tests/integrations/test_docs_blocks.py -k "not test_docs_blocks or google_adk"

$(LG_STAMP): pyproject.toml constraints-langgraph.txt | $(UV)
	$(call NEW_VENV,$(LG_VENV))
	$(call INSTALL,$(LG_VENV)) -c constraints-langgraph.txt \
		-e ".[dev,langgraph,langchain]" $(LG_TEST_PACKAGES)
	touch $@

test-langgraph: $(LG_STAMP) typecheck
	$(call MYPY_CACHE_FROM_DEV,$(LG_VENV))
	$(LG_VENV)/bin/mypy --cache-dir $(LG_VENV)/.mypy_cache
	$(TEST_ENV) CONVSTORE_REQUIRE_FRAMEWORKS=1 $(LG_VENV)/bin/pytest $(PYTEST_TMP) tests/integrations/test_langgraph_conformance.py \
		tests/integrations/test_langgraph.py tests/integrations/test_langchain.py \
		tests/integrations/test_langgraph_docs.py \
		tests/integrations/test_docs_blocks.py -k "not test_docs_blocks or langgraph or langchain"

$(BENCH_STAMP): pyproject.toml bench/constraints.txt | $(UV)
	$(call NEW_VENV,$(BENCH_VENV))
	$(call INSTALL,$(BENCH_VENV)) -c bench/constraints.txt -e ".[bench]"
	touch $@

# Every store in its own process, all from .venv-bench, beside the callgrind counts, the search
# benchmark and the frameworks' results; writes docs/performance.md (the issue-31 targets first).
# Takes hours on a small machine: every scenario at full size (bench/harness/scenarios.py).
bench: $(BENCH_STAMP) bench-frameworks bench-langgraph
	$(BENCH_VENV)/bin/python -m bench.compare --save-json docs/performance.json \
		--search-json docs/search-bench.json \
		--frameworks-json docs/frameworks-adk.json,docs/frameworks-pydantic-ai.json

# Every scenario of bench/harness/scenarios.py at tiny sizes, each from the environment it needs
# (callgrind runs dry: the counted code runs without valgrind), so a benchmark that no longer
# runs fails `make test`. One PostgreSQL cluster per environment's run.
bench-smoke: $(STAMP) $(BENCH_STAMP) $(LG_STAMP) $(ADK_STAMP) $(PAI_STAMP)
	$(BIN)/python -m bench.harness smoke --env dev
	$(BENCH_VENV)/bin/python -m bench.harness smoke --env bench
	$(LG_VENV)/bin/python -m bench.harness smoke --env langgraph
	$(ADK_VENV)/bin/python -m bench.harness smoke --env adk
	$(PAI_VENV)/bin/python -m bench.harness smoke --env pydantic-ai

# ConvstoreSaver beside langgraph-checkpoint-sqlite's AsyncSqliteSaver on a 200-turn agent run.
bench-langgraph: $(LG_STAMP)
	$(LG_VENV)/bin/python -m bench.langgraph_bench --json-out docs/langgraph-bench.json

# ADK's and pydantic-ai's workloads through the integrations beside the frameworks' own stores.
bench-frameworks: $(PAI_STAMP) $(ADK_STAMP)
	$(ADK_VENV)/bin/python -m bench.frameworks_bench adk --json-out docs/frameworks-adk.json
	$(PAI_VENV)/bin/python -m bench.frameworks_bench pydantic-ai \
		--json-out docs/frameworks-pydantic-ai.json

# Re-pin every dependency to what resolves today (run after changing pyproject.toml).
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet -e ".[dev]"
	.lock-venv/bin/python -m pip freeze --exclude-editable | grep -v '^-e' > constraints.txt
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet -e ".[bench]"
	{ echo "# Pins for $(BENCH_VENV) (make bench): the project and its [bench] extra. 'make lock'."; \
	  .lock-venv/bin/python -m pip freeze --exclude-editable | grep -v '^-e'; } > bench/constraints.txt
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet -e ".[openai-agents]" pytest pytest-asyncio pytest-timeout
	{ echo "# Pins for $(AGENTS_VENV) (make pytest-agents): [openai-agents] and pytest. 'make lock'."; \
	  .lock-venv/bin/python -m pip freeze --exclude-editable | grep -v '^-e'; } > $(AGENTS_PINS)
	rm -rf .lock-venv

clean:
	rm -rf $(UV_VENV) $(VENV) $(BENCH_VENV) $(AGENTS_VENV) $(PAI_VENV) $(ADK_VENV) $(LG_VENV) .venv-extra-* \
		$(AI_SDK_NODE)/node_modules \
		.mypy_cache .pytest_cache .ruff_cache .hypothesis build dist convstore.db* convstore-blobs
