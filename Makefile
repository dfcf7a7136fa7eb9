# Heddle: `make serve` runs the whole service on 127.0.0.1:8080 over SQLite; `make test` runs the suite.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP_RUN := $(VENV)/.installed-run
STAMP_DEV := $(VENV)/.installed-dev

.PHONY: serve test test-fast bench lint clean demo js-types web

# The console and the chat widget (web/*/, npm packages with lockfiles) built into
# src/heddle/web/static/. Without npm the server still runs and /console says how to build them.
WEB_SOURCES := $(shell find web -type f -not -path '*/node_modules/*' 2>/dev/null)
WEB_STAMP := src/heddle/web/static/.built

$(WEB_STAMP): $(WEB_SOURCES)
	@web/build.sh $(WEB_STAMP)

web: $(WEB_STAMP)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP_RUN): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(STAMP_DEV): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $@ $(STAMP_RUN)

serve: $(STAMP_RUN) $(WEB_STAMP)
	$(BIN)/heddle serve

demo: $(STAMP_RUN)
	$(BIN)/heddle migrate
	$(BIN)/heddle demo

# Two worker processes, each module's tests in one of them (their module-scoped servers start
# once): half the wall time of one process on a 2-core machine. TEST_WORKERS=0 runs in-process.
TEST_WORKERS ?= 2

test: $(STAMP_DEV) $(WEB_STAMP)
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadscope

test-fast: $(STAMP_DEV)
	HEDDLE_TEST_PG=0 $(BIN)/pytest -x -q -m "not slow"

bench: $(STAMP_DEV)
	$(BIN)/python bench/run_all.py

# Regenerate the JS client's OpenAPI snapshot and its TypeScript types after an API change.
js-types: $(STAMP_DEV)
	$(BIN)/python -c "from heddle.app import document_json; print(document_json(), end='')" > clients/js/openapi.json
	cd clients/js && npm ci --no-audit --no-fund --ignore-scripts && npm run generate


lint: $(STAMP_DEV)
	$(BIN)/ruff check src tests bench

clean:
	rm -rf $(VENV) build *.egg-info heddle.db heddle.db-wal heddle.db-shm src/heddle/web/static web/*/node_modules
