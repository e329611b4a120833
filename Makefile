# Two commands: `make demo` and `make test`. Both create .venv and install into it.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo

.PHONY: install demo test test-kafka test-gateway-clis test-typescript test-typescript-kafka typescript-build kafka-jars docs lint typecheck bench reliability clean \
	extension-free

# Python keeps compiled modules (pytest its rewritten tests) in __pycache__: where the
# environment asks it not to (PYTHONDONTWRITEBYTECODE), every test process and every
# worker a test starts compiled them again (collecting the suite: 13.5 s of CPU per
# test process instead of 9.3)
unexport PYTHONDONTWRITEBYTECODE

# mkdocs 1.6 and its plugins print a page-long notice about a future mkdocs 2 on every build
export NO_MKDOCS_2_WARNING := 1
export DISABLE_MKDOCS_2_WARNING := true

# The loop-health page test drives Debian's Chromium (package chromium). Installed
# here when missing: as root directly, otherwise through sudo.
CHROMIUM := /usr/bin/chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# the compiled extensions (Cython, built by pip into the source folders) are rebuilt
# when their sources change
$(STAMP): pyproject.toml $(wildcard agents/*/*.pyx)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[worker,dev]'
	touch $(STAMP) $(DEMO_STAMP)

# the demo needs the worker and the embedded broker only (the dev extra adds the test
# and docs tools and every framework: about 1 GB more); `make test` installs those too
$(DEMO_STAMP): pyproject.toml $(wildcard agents/*/*.pyx)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[worker,embedded]'
	touch $(DEMO_STAMP)

install: $(STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/loopwarden demo

$(CHROMIUM):
	@command -v apt-get >/dev/null || { echo "install Chromium at $(CHROMIUM) (the loop-health page test needs it)"; exit 1; }
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null

# mypy runs as a test (tests/unit/test_typecheck.py) among the others: its CPU (12 s
# cold) fills the suite's waits; it and the longest modules are handed out first
# (tests/conftest.py; --no-loadscope-reorder, else xdist hands out the modules with
# the most tests first, and mypy's one test came last: 92 s at the end of the run).
# Each test process collects every module: a test module imports the agent frameworks
# it drives at first use (tests/support/deferred.py), not at its top.
# Six test processes (much of an integration test is waiting for a group join: with the
# workers forked warm, -n 6 kept both cores busy, 1.96 on average, where -n 4 left them
# idle a quarter of the time; 339 s against 410 s of pytest here), a module's
# tests together in one (module-scoped workers), each with its own embedded broker
# (test-kafka: four, each its own Kafka JVM).
# Beside them, in one more process, the unit tests again on the pure-Python paths (no
# compiled extension: LOOPWARDEN_NO_EXTENSIONS=1) but for the tests that never reach a
# compiled pass (tests/support/extension_free.txt, made by `make extension-free`: whole
# files left out, single tests deselected) and
# the storage modules (the redactor's output is the same either way:
# test_redaction_prefilter); its report follows the main one (the whole of it when it
# failed). Both run in the background of one shell that waits for them, so
# a `make test` stopped midway stops them too. `make reliability` runs the fault suite
# in full.
TEST_JOBS ?= 6
KAFKA_TEST_JOBS ?= 4
EXTENSION_FREE := tests/support/extension_free.txt
NOT_EXTENSION_PATHS := $(shell grep -v -e '^\#' -e '::' $(EXTENSION_FREE)) \
	$(foreach m,memory_concurrency memory_consistency memory_indexes memory_in_memory,tests/unit/test_$(m).py)
NO_EXTENSIONS_LOG := $(VENV)/test-no-extensions.log
DOCS_LOG := $(VENV)/docs-build.log
test: $(STAMP) $(CHROMIUM)
	$(BIN)/ruff check .
	@LOOPWARDEN_NO_EXTENSIONS=1 PYTHONPATH=tests/support $(BIN)/pytest -q -p no:cacheprovider \
		-p extension_calls --skip-extension-free $(EXTENSION_FREE) tests/unit \
		$(foreach path,$(NOT_EXTENSION_PATHS),--ignore $(path)) \
		> $(NO_EXTENSIONS_LOG) 2>&1 & no_extensions=$$!; \
	$(BIN)/mkdocs build --strict --quiet --site-dir $(VENV)/site > $(DOCS_LOG) 2>&1 & docs=$$!; \
	echo "$(BIN)/pytest -n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder"; \
	$(BIN)/pytest -n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder & tests=$$!; \
	trap 'kill $$tests $$no_extensions $$docs 2>/dev/null' INT TERM; \
	wait $$docs; site=$$?; \
	if [ $$site != 0 ]; then echo "--- mkdocs build --strict failed:"; cat $(DOCS_LOG); fi; \
	wait $$tests; main=$$?; \
	wait $$no_extensions; without=$$?; \
	echo "--- the unit tests again, without extensions (LOOPWARDEN_NO_EXTENSIONS=1):"; \
	if [ $$without = 0 ]; then tail -n 1 $(NO_EXTENSIONS_LOG); else cat $(NO_EXTENSIONS_LOG); fi; \
	[ $$main = 0 ] && [ $$without = 0 ] && [ $$site = 0 ]

# The integration suite (the reduced fault suite among it) on Apache Kafka: one KRaft
# node per test process, started by the tests' fixture from the jars of
# infra/kafka/pom.xml (Maven fetches them once into ~/.cache/loopwarden/kafka, or
# LOOPWARDEN_KAFKA_CACHE). Needs Java 17+ and Maven; about 6 minutes here.
KAFKA_REQUIRES := java mvn
test-kafka: $(STAMP) $(CHROMIUM) kafka-jars
	$(BIN)/pytest -n $(KAFKA_TEST_JOBS) --dist loadfile --no-loadscope-reorder tests/integration --broker kafka

# The TypeScript client (clients/typescript, Node 20+ and npm): its contract checked
# against the schemas the Python models export (docs/schemas), the package compiled and
# type-checked with its tests and examples, then its tests against a real broker and
# worker started as the Python fixtures start them (tests/support/ts_stack.py: the
# embedded broker here, Apache Kafka in test-typescript-kafka) and stopped by their
# pids. npm ci installs the locked packages with no install script run: nothing is
# downloaded or built at install time (esbuild, the one package with a script, finds
# its binary in its optional dependency).
TS_CLIENT := clients/typescript
# $(call ts_test,BROKER): the suite on the embedded broker or Apache Kafka
ts_test = cd $(TS_CLIENT) && LOOPWARDEN_TEST_BROKER=$(1) LOOPWARDEN_PYTHON=$(abspath $(BIN))/python npm test
$(TS_CLIENT)/node_modules/.installed: $(TS_CLIENT)/package.json $(TS_CLIENT)/package-lock.json
	@command -v npm >/dev/null || { echo "make test-typescript needs Node 20+ and npm"; exit 1; }
	cd $(TS_CLIENT) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

typescript-build: $(STAMP) $(TS_CLIENT)/node_modules/.installed
	cd $(TS_CLIENT) && node scripts/generate-types.mjs --check
	cd $(TS_CLIENT) && npx tsc -p tsconfig.json && npx tsc -p tsconfig.test.json

test-typescript: typescript-build
	$(call ts_test,embedded)

test-typescript-kafka: typescript-build kafka-jars
	$(call ts_test,kafka)

# Real agent CLIs through `loopwarden gateway` (tests/integration/test_agent_clis.py):
# Claude Code and Codex CLI, at the versions below, installed from npm once into
# ~/.cache/loopwarden/agent-clis (LOOPWARDEN_AGENT_CLIS_CACHE), pointed at the gateway by
# their documented base-URL settings, the gateway at the tests' scripted model.
AGENT_CLIS ?= $(or $(LOOPWARDEN_AGENT_CLIS_CACHE),$(HOME)/.cache/loopwarden/agent-clis)
CLAUDE_CODE_VERSION := 2.1.332
CODEX_VERSION := 0.171.0
AGENT_CLIS_STAMP := $(AGENT_CLIS)/.installed-$(CLAUDE_CODE_VERSION)-$(CODEX_VERSION)
$(AGENT_CLIS_STAMP):
	@command -v npm >/dev/null || { echo "make test-gateway-clis needs Node 20+ and npm"; exit 1; }
	mkdir -p $(AGENT_CLIS)
	npm install --prefix $(AGENT_CLIS) --no-audit --no-fund --loglevel=error \
		@anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION) @openai/codex@$(CODEX_VERSION)
	touch $@

test-gateway-clis: $(STAMP) $(AGENT_CLIS_STAMP)
	LOOPWARDEN_AGENT_CLIS=$(AGENT_CLIS)/node_modules/.bin $(BIN)/pytest -m agent_clis \
		tests/integration/test_agent_clis.py

kafka-jars: $(STAMP)
	@for tool in $(KAFKA_REQUIRES); do command -v $$tool >/dev/null || \
		{ echo "make test-kafka needs Java 17+ and Maven ($$tool is not on PATH)"; exit 1; }; done
	@$(BIN)/python -c "import sys; sys.path.insert(0, 'tests/support'); \
		import apache_kafka as k; jars = k.fetch_jars(); \
		print(f'Apache Kafka {k.kafka_version()}: {len(jars)} jars in {k.cache_dir()}')"

# the unit-test files that never reach a compiled pass, which `make test` runs once
extension-free: $(STAMP)
	PYTHONPATH=tests/support $(BIN)/pytest -q -n $(TEST_JOBS) -p no:cacheprovider \
		-p extension_calls --extension-free $(EXTENSION_FREE) tests/unit \
		--ignore tests/unit/test_textscan.py  # checks the passes are the compiled ones
	@echo "$$(grep -v '^#' $(EXTENSION_FREE) | grep -vc '::') files and $$(grep -c '::' $(EXTENSION_FREE)) tests in $(EXTENSION_FREE)"

# the docs site in site/ (make test builds it too, with --strict: a broken page fails)
docs: $(STAMP)
	$(BIN)/mkdocs build --strict --site-dir site

# mypy on the product code, laid out as installed (strict at the kit's seams)
typecheck: $(STAMP)
	$(BIN)/python tests/support/typecheck.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# the action monitor on both brokers (Apache Kafka needs Java and Maven), paced at 200 and
# 1,000 events/s in the same run
bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[worker,dev,bench]'
	$(BIN)/python benchmarks/action_monitor.py --brokers embedded kafka --rate 200 1000
	$(BIN)/python benchmarks/replay.py

# the fault suite in full (about 15 minutes here); a reduced form is part of `make test`.
# Its `brokers` scenario runs on a three-node Apache Kafka cluster (Java and Maven);
# LOOPWARDEN_TEST_BROKER=kafka runs the others on one Apache Kafka node too.
reliability: $(STAMP) kafka-jars
	$(BIN)/python benchmarks/reliability.py

clean:
	rm -rf $(VENV) .pytest_cache benchmarks/results site $(TS_CLIENT)/node_modules $(TS_CLIENT)/dist
