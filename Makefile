# Two commands on a fresh machine with Python >= 3.11 and make:
#   make demo   analyse the bundled divergence example
#   make test   lint, type-check and run the test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DEMO_LOG := examples/divergence/trainer_state.json

.PHONY: demo test lint typecheck pytest bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[tensorboard,dev]'
	touch $@

# The divergent run fails the gate (exit 1) by design: that is the demo, not a make error.
demo: $(STAMP)
	@$(BIN)/trainspotter analyze $(DEMO_LOG) || [ $$? -eq 1 ]

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy trainspotter

# pytest exits 5 when it collected no test: that is a broken suite, said plainly.
pytest: $(STAMP)
	@$(BIN)/python -m pytest -q; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests (exit 5): the suite is missing" >&2; fi; \
	exit $$rc

test: lint typecheck pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
