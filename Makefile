# How every figure and table is made. `make paper` and `make test` each work alone on a fresh machine.
SHELL := /bin/bash
PROFILE ?= sim
VENV ?= .venv
PY := $(VENV)/bin/python
SETUP_STAMP := $(VENV)/.setup-stamp
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))
EXECUTED := build/executed/$(PROFILE)

.PHONY: help setup paper test lint unit nbval lab data bench clean clean-cache

help:
	@echo "make paper [PROFILE=sim]  run every notebook headlessly (papermill); outputs in figures/ tables/"
	@echo "make test                 lint + unit tests + notebooks under nbval (smoke profile)"
	@echo "make lab                  JupyterLab on the notebooks"
	@echo "make data                 download public benchmark files (pinned URLs, sha256-checked)"
	@echo "make bench                speed benchmarks"
	@echo "make clean                remove build products and tool caches (never .cache/, figures/, tables/)"
	@echo "make clean-cache          delete .cache/ (paid model answers): asks first, or CONFIRM=1"

# Re-installs only when pyproject.toml changes, so repeated calls are quick.
setup: $(SETUP_STAMP)
$(SETUP_STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

# Each notebook is executed into build/executed/<profile>/ (temp file, renamed on success; a
# failed run is kept as FAILED-<name> for debugging, never under the finished name). The
# notebooks write their own figures and tables under figures/<profile>/ and tables/<profile>/.
paper: setup
	@mkdir -p $(EXECUTED)
	@set -e; for nb in $(NOTEBOOKS); do \
	  name=$$(basename $$nb); \
	  echo "== $$name (profile $(PROFILE))"; \
	  rm -f $(EXECUTED)/FAILED-$$name; \
	  if $(VENV)/bin/papermill --no-progress-bar --cwd notebooks -k python3 -p profile $(PROFILE) \
	      $$nb $(EXECUTED)/.tmp-$$name; then \
	    mv $(EXECUTED)/.tmp-$$name $(EXECUTED)/$$name; \
	  else \
	    mv $(EXECUTED)/.tmp-$$name $(EXECUTED)/FAILED-$$name 2>/dev/null || true; \
	    rm -f $(EXECUTED)/$$name; \
	    echo "$$name failed: see $(EXECUTED)/FAILED-$$name"; exit 1; \
	  fi; \
	done
	@echo "figures: figures/$(PROFILE)/  tables: tables/$(PROFILE)/  executed notebooks: $(EXECUTED)/"

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# Run from tests/, not the root, so a test that depends on the working directory fails here.
unit: setup
	cd tests && $(abspath $(VENV))/bin/pytest -q

# Notebooks run as-is under nbval with the smoke profile injected through the environment;
# outputs and caches go to a temporary folder, never into the working tree.
nbval: setup
	@tmp=$$(mktemp -d); \
	DELIBERATION_PROFILE=smoke DELIBERATION_OUTPUT_ROOT=$$tmp/out DELIBERATION_CACHE_DIR=$$tmp/cache \
	  $(VENV)/bin/pytest -q -p no:cacheprovider --nbval-lax $(NOTEBOOKS); \
	status=$$?; rm -rf $$tmp; exit $$status

test: lint unit nbval

lab: setup
	$(PY) -m pip install --quiet -e '.[dev,lab]'
	$(VENV)/bin/jupyter lab notebooks/

data: setup
	$(PY) -m deliberation data fetch --dest data/external

bench: setup
	@set -e; for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b; done

# .cache/ holds the response caches: answers of paid API and GPU runs. `clean` never touches it;
# only `clean-cache` deletes it, after a "yes" typed at the prompt or with CONFIRM=1.
clean:
	rm -rf build .pytest_cache .ruff_cache
	find . -name __pycache__ -type d -prune -not -path './$(VENV)/*' -exec rm -rf {} +

clean-cache:
	@if [ ! -e .cache ]; then echo "no .cache/ to delete"; exit 0; fi; \
	if [ "$(CONFIRM)" != 1 ]; then \
	  read -r -p ".cache/ holds paid model answers ($$(du -sh .cache | cut -f1)); type yes to delete it: " answer \
	    || answer=""; \
	  if [ "$$answer" != yes ]; then echo "kept .cache/ (run make clean-cache CONFIRM=1 to delete)"; exit 1; fi; \
	fi; \
	rm -rf .cache && echo "deleted .cache/"
