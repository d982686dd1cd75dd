# Two commands on a fresh machine with Python 3.11+: `make demo` and `make test`.
# Both create (or reuse) .venv and install what they need into it; `make test` also installs
# Debian's Chromium and ChromeDriver (apt-get, through sudo when not root) if either is missing.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test lint typecheck unit browser bench bench-service usage clean

$(BIN)/.ready: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit("neardup needs Python 3.11 or newer, found " + sys.version.split()[0]) if sys.version_info < (3, 11) else None'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $@

demo: $(BIN)/.ready
	@rm -rf out/demo-state && mkdir -p out
	$(BIN)/neardup run --state out/demo-state --events out/demo-events.jsonl samples/pages.jsonl
	@echo "--- clusters (neardup clusters --state out/demo-state) ---"
	@$(BIN)/neardup clusters --state out/demo-state

test: lint typecheck unit

unit: $(BIN)/.ready browser
	$(BIN)/python -m pytest

# the browser the dashboard test drives (not needed by the demo)
browser:
	@bash scripts/browser.sh

lint: $(BIN)/.ready
	$(BIN)/ruff check core state streams tests bench samples
	$(BIN)/ruff format --check core state streams tests bench samples

# mypy sees the installed layout (neardup.core, ...) through a tree of links to the folders.
typecheck: $(BIN)/.ready
	@rm -rf build/typecheck && mkdir -p build/typecheck/neardup
	@for p in core state streams; do ln -s ../../../$$p build/typecheck/neardup/$$p; done
	cd build/typecheck && MYPYPATH=. ../../$(BIN)/mypy --config-file ../../pyproject.toml --namespace-packages --explicit-package-bases -p neardup

# 20k documents, neardup and the peers (datasketch, rensa, gaoya; streaming and bulk), one
# table for each corpus: today's and the dense one (about a quarter of an hour)
bench: $(BIN)/.ready
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	$(BIN)/python -m bench --docs 20000 --repeat 3 --out out/bench-20k.json
	$(BIN)/python -m bench --docs 20000 --repeat 3 --corpus dense --out out/bench-20k-dense.json

# the service under load: queries and scrapes while a 100k-document state ingests 30k more
bench-service: $(BIN)/.ready
	$(BIN)/python -m bench.service_load --docs 100000 --more 30000 --rounds 3 --out out/service-load-100k.json

# the README's usage block, from the command table (a test fails when they disagree)
usage: $(BIN)/.ready
	$(BIN)/python -m neardup.streams.cli.usage --write README.md

clean:
	rm -rf $(VENV) build out .pytest_cache .mypy_cache .ruff_cache
