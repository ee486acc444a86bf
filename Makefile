# Two entry points (see README): `make demo` and `make test`. Both set everything up.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test test-fast test-core lint typecheck unit system-deps demo-deps bench clean openb fuzz \
	lock image push overlay demo-picture conformance conformance-build conformance-fixtures

# The image and the overlay that deploys it (README "Deploying to a cluster"):
#   make image push IMAGE=registry.example.com/team/xgpu-insight:0.1.0
#   make overlay IMAGE=registry.example.com/team/xgpu-insight:0.1.0 OVERLAY=overlays/prod
# with docker or podman, whichever is on PATH (ENGINE=... to choose). BASE=... is what a
# new overlay builds on (default deploy/base, or one of deploy/overlays/).
ENGINE ?= $(notdir $(shell command -v docker 2>/dev/null || command -v podman 2>/dev/null))
EXAMPLE_IMAGE := registry.example.com/team/xgpu-insight:0.1.0
# Refused before anything runs, in one line (make prints it with "*** ... Stop.", exit 2).
ifneq ($(filter image push overlay,$(MAKECMDGOALS)),)
ifeq ($(strip $(IMAGE)),)
$(error IMAGE is unset: name the image to build, push and deploy (make image push IMAGE=$(EXAMPLE_IMAGE)))
endif
endif
ifneq ($(filter image push,$(MAKECMDGOALS)),)
ifeq ($(strip $(ENGINE)),)
$(error no container engine: neither docker nor podman is on PATH (or set ENGINE=))
endif
endif
ifneq ($(filter overlay,$(MAKECMDGOALS)),)
ifeq ($(strip $(OVERLAY)),)
$(error OVERLAY is unset: name the overlay's folder (make overlay IMAGE=$(IMAGE) OVERLAY=overlays/prod))
endif
endif

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $@

system-deps:
	bash scripts/install-system-deps.sh test

demo-deps:
	bash scripts/install-system-deps.sh demo

demo: $(STAMP) demo-deps
	$(BIN)/python -m advisor.demo --output-dir out/demo-report

# The README's picture (docs/images/demo-report.png): the top of the demo's report, as
# `make demo` writes it, drawn by headless Chromium 1200 px wide. The scenario is named
# relative to the checkout so that the page's header shows no path of this machine.
PICTURE := docs/images/demo-report.png
demo-picture: demo-deps | $(BIN)/python
	@command -v chromium >/dev/null || { echo "make demo-picture: chromium is not on PATH (make system-deps installs it)" >&2; exit 2; }
	rm -rf out/demo-picture
	$(BIN)/python -m advisor.demo --scenario advisor/examples/demo.yaml --output-dir out/demo-picture/report
	@# Chromium's own log (D-Bus and GPU noise on a headless machine) goes to a file.
	chromium --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars \
	  --no-first-run --disable-background-networking --disable-component-update --disable-sync \
	  --user-data-dir=$(CURDIR)/out/demo-picture/profile --window-size=1200,1400 \
	  --screenshot=$(CURDIR)/$(PICTURE) file://$(CURDIR)/out/demo-picture/report/report.html \
	  2>out/demo-picture/chromium.log || { tail -3 out/demo-picture/chromium.log >&2; exit 1; }
	@echo "wrote $(PICTURE)"

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports  # the layers of docs/architecture.md (pyproject.toml)
	$(BIN)/python scripts/check_image.py  # deploy/Dockerfile's rules, requirements.lock

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP) system-deps
	$(BIN)/pytest

test: lint typecheck unit

# The inner loop between edits (README "Development"): no lint, no test that starts a process
# or a server, no openb replay, a tenth of each property test's examples, on two workers.
# `make test` (CI) runs everything.
test-fast: $(STAMP)
	$(BIN)/pytest -q -p no:cacheprovider -m "not realservices and not slow" --quick-properties -n 2

# The loop for a change to advisor/core (README "Development"): the core's own tests only,
# as test-fast runs them, and the cross-check against the reference scheduler; under a
# minute on two busy cores. test-fast and CI run the rest.
CORE_TESTS := tests/advisor/core tests/benchmarks/test_reference_crosscheck.py
test-core: $(STAMP)
	$(BIN)/pytest -q -p no:cacheprovider -m "not realservices and not slow" --quick-properties -n 2 \
	  $(CORE_TESTS)

# The public openb trace (pinned commits, SHA-256 checked) into the git-ignored data/openb.
openb: $(STAMP)
	$(BIN)/python scripts/fetch_openb.py --dest data/openb

# The fuzz suite's long run (tests/fuzz, README "Fuzzing"): random examples, 20 times as many
# per target as `make unit` tries with its fixed seed; about four minutes, so no per-test limit.
fuzz: $(STAMP)
	HYPOTHESIS_PROFILE=fuzz $(BIN)/pytest tests/fuzz -m fuzz --timeout=0 -q -p no:cacheprovider

# requirements.lock: the image's dependencies and build backend, pinned with hashes, from
# pyproject.toml and PyPI (deploy/Dockerfile installs it with --require-hashes).
lock: $(STAMP)
	$(BIN)/pip install -q 'pip-tools>=7.4'
	PIP_CONFIG_FILE=/dev/null $(BIN)/pip-compile --quiet --generate-hashes --allow-unsafe \
	  --all-build-deps --strip-extras --index-url=https://pypi.org/simple --no-emit-index-url \
	  --output-file=requirements.lock pyproject.toml

# The differential test (docs/conformance.md): N generated clusters through the upstream
# schedulers' own code (Go harnesses under conformance/, built into the git-ignored
# conformance/.build) and through the advisor; one agreement line per upstream, each
# disagreement shrunk into out/conformance. Needs Go; `make test` skips it without.
# N clusters per profile (cce, hami, volcano-vgpu).
N ?= 2000
conformance: $(STAMP)
	$(BIN)/python -m conformance.cli -n $(N) --out out/conformance advisor/examples/*.yaml

# The test suite's own scenarios (docs/conformance.md "The suite's scenarios"): the advisor's
# tests run with the recorder on, each scenario they build written to out/fixtures, then every
# one through each comparison its profile fits; disagreements into out/conformance.
conformance-fixtures: $(STAMP)
	rm -rf out/fixtures
	$(BIN)/python -m conformance.fixtures --record --out out/conformance out/fixtures

# What CI runs before the tests: the harnesses built from go.mod and go.sum as committed.
conformance-build: $(STAMP)
	@if command -v go >/dev/null; then $(BIN)/python -c 'from conformance import harness; [print(harness.binary(h)) for h in ("kube", "volcano-cards", "volcano-mig", "volcano")]'; \
	else echo "conformance-build: go is not on PATH; the differential test will skip"; fi

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

image:
	$(ENGINE) build -f deploy/Dockerfile -t '$(IMAGE)' .

push: $(filter image,$(MAKECMDGOALS))
	$(ENGINE) push '$(IMAGE)'

# A checkout with a venv (make demo, make test) uses it as it is; a fresh one gets one.
$(BIN)/python:
	$(MAKE) --no-print-directory $(STAMP)

overlay: | $(BIN)/python
	@$(BIN)/python scripts/image_overlay.py '$(IMAGE)' '$(OVERLAY)' $(if $(BASE),--resources '$(BASE)')

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .import_linter_cache conformance/.build
