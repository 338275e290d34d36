# wasm-reconciler — the two commands a newcomer needs: `make dev` and `make test`.

SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
CARGO ?= cargo
WASM_TARGET := wasm32-wasip2
WASM_PROFILE := wasm-release
EXAMPLE_PLUGINS := configmapset webapp
# Built by `make plugins` too; not run by `make dev`, since it needs a PowerDNS server (docs/plugin-guide.md, 13).
EXTERNAL_PLUGINS := dnsrecord
DEV_DIR := .dev

# CI builds in a fresh clone: keep cargo's output outside it so repeated runs reuse builds.
ifdef CI
CARGO_TARGET_DIR ?= $(HOME)/.cache/wasm-reconciler/target
endif
CARGO_TARGET_DIR ?= $(CURDIR)/target
export CARGO_TARGET_DIR

# The features of every test-time cargo command (`make test`): the plugins' CRD generators and their tests.
TEST_FEATURES := --features configmapset/crd,webapp/crd,dnsrecord/crd
# The one build of `make test`: every test and the host binary that the image (`make image`) ships, as static
# (musl) release builds, compiled once. The tests run that very binary (`wasm-reconciler run` processes, the image
# in Pods), so what ships is what was tested. Every cargo command of the run passes these flags: with the same
# packages, features and profile they resolve alike, and the test steps reuse the build's units.
CI_TARGET := x86_64-unknown-linux-musl
CI_CARGO := --release --locked --target $(CI_TARGET) --workspace $(TEST_FEATURES)
CI_OUT := $(CARGO_TARGET_DIR)/$(CI_TARGET)/release
# ring and psm compile C: musl-gcc is the C compiler of the musl target.
export CC_x86_64_unknown_linux_musl ?= musl-gcc
# `make build` and `make dev`: the host in the dev profile, quick to build.
HOST_BUILD = $(CARGO) build -p wasm-reconciler

WASM_OUT := $(CARGO_TARGET_DIR)/$(WASM_TARGET)/$(WASM_PROFILE)
# The configmapset plugin in Python and TypeScript (`make polyglot`); its Python tools live in a virtual environment.
POLYGLOT_OUT := $(CARGO_TARGET_DIR)/polyglot
ifdef CI
POLYGLOT_VENV ?= $(HOME)/.cache/wasm-reconciler/polyglot-venv
endif
POLYGLOT_VENV ?= $(CARGO_TARGET_DIR)/polyglot-venv

comma := ,
RUST_CHANNEL := $(shell sed -n 's/^channel = "\(.*\)"/\1/p' rust-toolchain.toml)

.PHONY: dev test test-tools unused-deps machete-install toolchain toolchain-static plugins polyglot build build-release \
	crds deploy-files deploy-files-pack bench clean-dev image image-context

## dev: build the example plugins and run the embedded API server + host with them (prints the kubeconfig path).
## It loads the Rust plugins only, so it needs neither Python nor Node (`make polyglot` builds the other ports).
dev: plugins build
	@mkdir -p $(DEV_DIR)/plugins
	@for plugin in $(EXAMPLE_PLUGINS); do \
		mkdir -p $(DEV_DIR)/plugins/$$plugin; \
		cp plugins/$$plugin/crd.yaml $(DEV_DIR)/plugins/$$plugin/crd.yaml; \
		cp $(WASM_OUT)/$$plugin.wasm $(DEV_DIR)/plugins/$$plugin/plugin.wasm.tmp; \
		mv $(DEV_DIR)/plugins/$$plugin/plugin.wasm.tmp $(DEV_DIR)/plugins/$$plugin/plugin.wasm; \
	done
	$(CARGO_TARGET_DIR)/debug/wasm-reconciler dev --plugins-dir $(DEV_DIR)/plugins --kubeconfig-out $(DEV_DIR)/kubeconfig $(DEV_ARGS)

## test: everything CI runs — formatting, lints, every test (unit, plugin, API server, end to end on the embedded
## API server and again on a real kube-apiserver, the differential conformance suite of the two servers, the
## DNSRecord plugin against a real PowerDNS, traces received by a real OpenTelemetry Collector, and the alerts and
## dashboard evaluated by a real Prometheus), each test exactly once per server (tests/ci/accounting.py).
# The steps below run TEST_JOBS at a time, as soon as what they need is built (docs/contributing.md, "make test"):
# each writes its output to $(TEST_LOGS)/<step>.log and prints a line when it starts, one a minute while it runs, one
# when it ends, and the end of its log when it fails. $(TEST_LOGS)/steps.tsv keeps each step's times.
TEST_JOBS ?= 6
TEST_LOGS := $(CARGO_TARGET_DIR)/make-test
STEP := tests/ci/step.sh
CARGO_TEST := tests/ci/cargo-test.sh
test:
	@rm -rf $(TEST_LOGS) && mkdir -p $(TEST_LOGS)
	@echo "make test: $(TEST_JOBS) steps at a time, logs in $(TEST_LOGS)"
	@export CI_STARTED=$$(date +%s) CI_LOG_DIR=$(TEST_LOGS); \
	status=0; $(MAKE) --no-print-directory -j$(TEST_JOBS) test-steps || status=$$?; \
	echo "make test: steps by start (seconds: start, wall, CPU):"; \
	sort -t$$'\t' -k2,2n $(TEST_LOGS)/steps.tsv | awk -F'\t' '{ printf "  %-22s %5d %6.0f %6.0f%s\n", $$1, $$2, $$3, $$4 + $$5, ($$6 == 0 ? "" : "  FAILED") }'; \
	echo "make test: $$(( $$(date +%s) - CI_STARTED )) s in all"; \
	[[ $$status == 0 ]] || exit $$status; \
	python3 tests/ci/accounting.py $(TEST_LOGS) -- $(CI_CARGO)

# What the longest suites need first: the first build (the host and the test binaries `all` and `plugins`), the other
# builds, and deploy/'s generated files (the kustomize and chart tests read them). They start while the rest of the
# workspace builds (step-build); the other test steps need that too.
FIRST_NEEDS := step-build-first step-polyglot step-kube-build step-otelcol-build step-test-tools step-deploy-files
TEST_NEEDS := $(FIRST_NEEDS) step-build
# cargo's messages of the first build: where its test binaries are (tests/ci/cargo-test.sh --exe).
export CI_FIRST_BUILD := $(TEST_LOGS)/build-first.json
# The steps, in the order they take free slots: the long chains first, the checks that only use CPU last. Two lanes
# keep one server's suites apart: the fault plans run several hosts at once and the sharding tests thousands of
# objects, so each waits for the suite before it on its server.
test-steps: step-e2e-real step-faults-real step-sharding-real step-e2e-embedded step-faults-embedded \
	step-sharding-embedded step-test-plugins step-in-pod step-test-unit step-test-doc step-clippy step-fmt step-openapi \
	step-kube-gotest step-kube-selfcheck step-kube-selfcheck-node step-helm-check step-unused-deps step-monitoring-check

# --- builds: each thing once ------------------------------------------------------------------------------------
step-toolchain:
	@$(STEP) toolchain $(MAKE) --no-print-directory toolchain toolchain-static
step-test-tools:
	@$(STEP) test-tools $(MAKE) --no-print-directory test-tools
# Every Go module of the run (the control plane and node, containerd, Prometheus, the collector) into the one module
# cache, while the first builds use the CPU.
step-go-download:
	@$(STEP) go-download bash -c 'for module in $(GO_MODULES); do (cd $$module && go mod download -x) || exit 1; done'
step-build-first: step-toolchain step-test-tools
	@$(STEP) build-first $(MAKE) --no-print-directory build-release-first
# The rest of the build at a lower priority: the suites that started after build-first run servers with deadlines.
step-build: step-toolchain step-test-tools | step-build-first
	@$(STEP) build nice -n 10 $(MAKE) --no-print-directory build-release
# The control plane (etcd, kube-apiserver, kube-controller-manager, kubectl, helm, the launcher) beside the first
# build: the suites on a real server need it. The node's part (kube-scheduler, kubelet, kube-proxy, containerd and
# the images), which only the Pods need, once the first build is done, at the suites' priority: the node's check and
# the Pods (about 9 minutes) follow it, as long a chain as the real server's suites.
step-kube-build: step-test-tools step-go-download
	@$(STEP) kube-build tests/kube/build.sh --control-plane
step-kube-build-node: step-kube-build | step-build-first
	@$(STEP) kube-build-node tests/kube/build.sh
# Only the monitoring check needs Prometheus: it builds once the release build is done, when the tests leave CPU free.
step-prometheus-build: step-go-download | step-build
	@$(STEP) prometheus-build tests/monitoring/build.sh
step-otelcol-build: step-go-download
	@$(STEP) otelcol-build tests/otelcol/build.sh
step-polyglot:
	@$(STEP) polyglot $(MAKE) --no-print-directory polyglot
step-machete-install: step-toolchain | step-build
	@$(STEP) machete-install nice -n 10 $(MAKE) --no-print-directory machete-install MACHETE_PROFILE=--debug
step-image: step-build-first step-test-tools
	@$(STEP) image deploy/image/build.sh --binary $(CI_OUT)/wasm-reconciler
step-deploy-files: step-build-first
	@$(STEP) deploy-files $(MAKE) --no-print-directory deploy-files-pack HOST_BIN=$(CI_OUT)/wasm-reconciler

# --- checks -----------------------------------------------------------------------------------------------------
step-fmt: step-toolchain
	@$(STEP) fmt $(CARGO) fmt --all -- --check
# The built-in kinds' OpenAPI documents are compared with those of the Kubernetes module go-download fetches.
step-openapi: step-go-download
	@$(STEP) openapi python3 apiserver/tools/builtin_openapi.py --check
# clippy over every target with the build's flags, in a target directory of its own so that it never holds the
# build's lock (cargo lets one command at a time compile in a directory), sharing the guest components; once the
# first build is done (not the rest of it: both run niced, beside the suites) and at a lower priority, so that it
# takes the CPU the tests leave while they wait on servers.
step-clippy: step-toolchain step-test-tools | step-build-first
	@CARGO_TARGET_DIR=$(CARGO_TARGET_DIR)/clippy WASM_RECONCILER_GUESTS_TARGET_DIR=$(CARGO_TARGET_DIR) \
		$(STEP) clippy nice -n 10 $(CARGO) clippy $(CI_CARGO) --all-targets -- -D warnings
step-unused-deps: step-machete-install
	@$(STEP) unused-deps cargo machete
# The launcher's own checks take CPU only once the first build is done.
step-kube-gotest: step-kube-build | step-build-first
	@$(STEP) kube-gotest bash -c 'cd tests/kube && go test ./internal/...'
step-kube-selfcheck: step-kube-build | step-build-first
	@$(STEP) kube-selfcheck tests/kube/selfcheck.sh
step-kube-selfcheck-node: step-kube-build-node step-test-tools
	@$(STEP) kube-selfcheck-node tests/kube/selfcheck-node.sh
step-helm-check: step-deploy-files step-kube-build
	@$(STEP) helm-check tests/kube/helm-check.sh
step-monitoring-check: step-build step-prometheus-build step-kube-build
	@HOST_BIN=$(CI_OUT)/wasm-reconciler PLUGINS_WASM_DIR=$(WASM_OUT) $(STEP) monitoring-check tests/monitoring/check.sh

# --- tests: every test binary of the build, each test once per server (tests/ci/accounting.py) --------------------
step-test-unit: $(TEST_NEEDS)
	@$(STEP) test-unit $(CARGO_TEST) test-unit $(CI_CARGO) --lib --bins --test api
# The plugin tests (host/tests/plugins): the SDKs' scaffolds built and tested in Rust, Python and TypeScript.
step-test-plugins: $(FIRST_NEEDS)
	@$(STEP) test-plugins $(CARGO_TEST) test-plugins --exe plugins
step-test-doc: $(TEST_NEEDS)
	@$(STEP) test-doc $(CARGO_TEST) test-doc $(CI_CARGO) --doc
# The end-to-end suite (tests/all) on the embedded API server, then on a real kube-apiserver; three tests at a time,
# as they mostly wait on servers and hosts.
step-e2e-embedded: $(FIRST_NEEDS)
	@$(STEP) e2e-embedded $(CARGO_TEST) e2e-embedded --exe all -- \
		--skip real_only:: --skip faults:: --skip sharding:: --skip in_pod:: --test-threads=3
step-e2e-real: $(FIRST_NEEDS)
	@E2E_SERVER=real $(STEP) e2e-real $(CARGO_TEST) e2e-real --exe all -- \
		--skip embedded_only:: --skip differential:: --skip faults:: --skip sharding:: --skip in_pod:: --test-threads=3
# The fault plans (docs/fault-testing.md): host processes killed at every write, stale and hidden views, a sharded
# member killed during a drain; several plans at once. Each run prints `plans N, passed N, failed 0`.
step-faults-embedded: $(FIRST_NEEDS) | step-e2e-embedded
	@$(STEP) faults-embedded $(CARGO_TEST) faults-embedded --exe all -- faults:: --nocapture
step-faults-real: $(FIRST_NEEDS) | step-e2e-real
	@E2E_SERVER=real $(STEP) faults-real $(CARGO_TEST) faults-real --exe all -- faults:: --nocapture
# The sharding tests run several hosts on thousands of objects each.
step-sharding-embedded: $(FIRST_NEEDS) | step-faults-embedded
	@$(STEP) sharding-embedded $(CARGO_TEST) sharding-embedded --exe all -- sharding::
step-sharding-real: $(FIRST_NEEDS) | step-faults-real
	@E2E_SERVER=real $(STEP) sharding-real $(CARGO_TEST) sharding-real --exe all -- sharding::
# The host as Pods on a real node (the image, deploy/ and the chart): one node at a time, after the node's own check,
# and after helm-check, which writes the chart's example files.
step-in-pod: $(FIRST_NEEDS) step-image step-kube-build-node step-kube-selfcheck-node step-helm-check
	@E2E_SERVER=real $(STEP) in-pod $(CARGO_TEST) in-pod --exe all -- in_pod:: --test-threads=1 --nocapture

.PHONY: test-steps step-toolchain step-test-tools step-go-download step-build step-kube-build step-prometheus-build \
	step-otelcol-build step-kube-build-node step-polyglot step-machete-install step-image step-deploy-files step-fmt step-openapi \
	step-clippy step-unused-deps step-kube-gotest step-kube-selfcheck step-kube-selfcheck-node step-helm-check \
	step-monitoring-check step-test-unit step-test-doc step-e2e-embedded step-e2e-real step-faults-embedded \
	step-faults-real step-sharding-embedded step-sharding-real step-in-pod step-build-first step-test-plugins

# The Go modules `make test` builds from: the real control plane and node, containerd, Prometheus, the collector.
GO_MODULES := tests/kube tests/kube/containerd tests/monitoring tests/otelcol

## test-tools: the Debian packages the checks use, installed when missing: jq, yq, curl; docker-registry (CNCF
## Distribution, the OCI registry the registry tests start); pdns-server with pdns-backend-sqlite3 and sqlite3 (the
## PowerDNS server the DNSRecord tests start); musl-tools, ca-certificates and buildah (the host image); for the
## real cluster's node (docs/real-cluster.md): runc, containernetworking-plugins, iptables, conntrack, skopeo (pushes
## the node's images), buildah and busybox-static (build them).
TEST_TOOLS := jq:jq yq:yq curl:curl docker-registry:docker-registry sqlite3:sqlite3 \
	musl-gcc:musl-tools /etc/ssl/certs/ca-certificates.crt:ca-certificates \
	/usr/sbin/pdns_server:pdns-server \
	/usr/share/pdns-backend-sqlite3/schema/schema.sqlite3.sql:pdns-backend-sqlite3 \
	runc:runc /usr/lib/cni/bridge:containernetworking-plugins iptables:iptables conntrack:conntrack \
	skopeo:skopeo buildah:buildah /usr/share/doc/busybox-static:busybox-static
test-tools:
	@missing=""; for entry in $(TEST_TOOLS); do \
		tool="$${entry%%:*}"; package="$${entry#*:}"; \
		case "$$tool" in /*) [ -e "$$tool" ] ;; *) command -v "$$tool" >/dev/null ;; esac || missing="$$missing $$package"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:$$missing"; \
		sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$missing; \
	fi

## unused-deps: fail on a dependency a crate declares and does not use (cargo-machete, pinned, installed if missing).
CARGO_MACHETE_VERSION := 0.9.1
unused-deps: machete-install
	cargo machete
machete-install:
	@cargo machete --version 2>/dev/null | grep -qx "$(CARGO_MACHETE_VERSION)" || \
		$(CARGO) install cargo-machete --version $(CARGO_MACHETE_VERSION) --locked $(MACHETE_PROFILE)

# A rustup command, tried again while it fails: another build on the machine (or a cargo reading
# rust-toolchain.toml) may be installing the same toolchain or target at that moment, and rustup then refuses with
# "detected conflict" instead of waiting for it.
define rustup_retry
for attempt in 1 2 3 4 5 6; do \
	error="$$(rustup $(1) 2>&1 >/dev/null)" && break; \
	if [ $$attempt = 6 ]; then echo "$$error" >&2; exit 1; fi; \
	echo "rustup $(1): $$(echo "$$error" | grep -m1 'error:' || echo "$$error" | tail -n1); trying again in 10 s" >&2; \
	sleep 10; \
done
endef

## toolchain: the pinned Rust toolchain with the wasm32-wasip2 target.
toolchain:
	@command -v rustup >/dev/null || { echo "rustup is required: https://rustup.rs"; exit 1; }
	@$(call rustup_retry,toolchain install --profile minimal --component rustfmt$(comma)clippy $(RUST_CHANNEL))
	@$(call rustup_retry,target add $(WASM_TARGET))

## toolchain-static: the target of the static host binary (build-release, make image).
toolchain-static: toolchain
	@$(call rustup_retry,target add $(CI_TARGET))

## plugins: build the example plugins as WebAssembly components.
plugins: toolchain
	@# `cargo rustc --crate-type cdylib`, one plugin at a time: the plugins are also rlibs, and cargo does no link-time
	@# optimisation for a crate with an rlib output (the components would be about a quarter larger and slower).
	@for plugin in $(EXAMPLE_PLUGINS) $(EXTERNAL_PLUGINS); do \
		$(CARGO) rustc -p $$plugin --lib --crate-type cdylib --target $(WASM_TARGET) --profile $(WASM_PROFILE) || exit 1; \
	done
	@for plugin in $(EXAMPLE_PLUGINS) $(EXTERNAL_PLUGINS); do ls -l $(WASM_OUT)/$$plugin.wasm; done

## polyglot: the Python and TypeScript SDKs tested, and built in both languages (pinned tools, cached): the
## configmapset plugin and the outbound test guest (contract 0.2: variables and outbound HTTP).
polyglot:
	plugins/configmapset-py/build.sh $(POLYGLOT_OUT) $(POLYGLOT_VENV)
	plugins/configmapset-ts/build.sh $(POLYGLOT_OUT)
	test-guests/outbound-py/build.sh $(POLYGLOT_OUT) $(POLYGLOT_VENV)
	test-guests/outbound-ts/build.sh $(POLYGLOT_OUT)

## image: the host image from the Dockerfile, built without a Docker engine (buildah) around a static musl binary,
## pushed to the loopback registry (storage in ~/.cache/wasm-reconciler/registry); prints its digest. With
## IMAGE_PUSH=registry.example.com/team/wasm-reconciler:0.1.0 it is pushed there instead (docs/deploy.md).
image: test-tools build-release
	deploy/image/build.sh --binary $(CI_OUT)/wasm-reconciler $(if $(IMAGE_PUSH),--push $(IMAGE_PUSH))

## image-context: the image's build context for `docker build .` (dist/image: the static binary and the CA bundle).
image-context: test-tools build-release
	deploy/image/build.sh --binary $(CI_OUT)/wasm-reconciler --context

## build: the host binary (dev profile), what `make dev` runs.
build: toolchain
	$(HOST_BUILD)

## build-release: the static (musl) release build of the host binary and of every test, with the features of the
## test run: what `make test` tests and `make image` ships ($(CI_OUT)/wasm-reconciler).
build-release: toolchain-static test-tools
	$(CARGO) build $(CI_CARGO) --bins --tests --examples

# The first part of build-release, in make test: the host binary and the test binaries of the longest suites, with the
# same flags (so the rest reuses every unit), and cargo's messages in $(CI_FIRST_BUILD).
build-release-first: toolchain-static test-tools
	@mkdir -p $(dir $(CI_FIRST_BUILD))
	$(CARGO) build $(CI_CARGO) --bin wasm-reconciler --test all --test plugins --message-format json-render-diagnostics \
		>$(CI_FIRST_BUILD).partial
	@mv $(CI_FIRST_BUILD).partial $(CI_FIRST_BUILD)

## crds: regenerate the example plugins' CRD manifests from their Rust types.
crds:
	@for plugin in $(EXAMPLE_PLUGINS) $(EXTERNAL_PLUGINS); do \
		$(CARGO) run -q -p $$plugin --features crd --bin $$plugin-crdgen > plugins/$$plugin/crd.yaml; \
	done

## deploy-files: the generated parts of deploy/ (CRD copies, plugin ConfigMaps packed from fresh builds).
deploy-files: plugins build
	@$(MAKE) --no-print-directory deploy-files-pack
# The packing alone, with HOST_BIN (the dev build unless given) and the components in WASM_OUT.
HOST_BIN ?= $(CARGO_TARGET_DIR)/debug/wasm-reconciler
deploy-files-pack:
	@mkdir -p deploy/crds deploy/plugins
	@for plugin in $(EXAMPLE_PLUGINS); do \
		cp plugins/$$plugin/crd.yaml deploy/crds/$$plugin.yaml; \
		$(HOST_BIN) plugin pack $(WASM_OUT)/$$plugin.wasm --name $$plugin --gzip -o deploy/plugins/$$plugin.yaml; \
	done

## bench: the benchmarks; each writes its results under docs/benchmarks/.
bench: toolchain polyglot
	$(CARGO) bench -p wasm-reconciler
	$(CARGO) bench -p wasm-reconciler-apiserver
	@# The Python and TypeScript components' per-reconcile time (docs/benchmarks/polyglot.md): an ignored test.
	$(CARGO) test --release -p wasm-reconciler --test plugins polyglot::measure -- --ignored --nocapture
	@# `plugin diff` for 1,000 primaries on the embedded server (docs/benchmarks/plugin-diff.md): an ignored test.
	$(CARGO) test --release -p wasm-reconciler-tests --test all plugin_diff::measure -- --ignored --nocapture

# The peers' builds live outside the repository: the Go binary and the Kopf venv (pinned requirements).
PEERS_CACHE ?= $(HOME)/.cache/wasm-reconciler/peers
PEERS_ARGS ?=

.PHONY: bench-scaling
## bench-scaling: converge time at 1,000, 10,000 and 30,000 ConfigMapSets, wasm and native (docs/benchmarks/scaling.md; CONVERGE_SCALING=1000,5000 CONVERGE_ROUNDS=3 etc.).
bench-scaling: toolchain
	CONVERGE_SCALING=$${CONVERGE_SCALING:-1000,10000,30000} CONVERGE_ROUNDS=$${CONVERGE_ROUNDS:-1} \
		$(CARGO) bench -p wasm-reconciler --bench converge

.PHONY: bench-peers-real
## bench-peers-real: the same four contenders against a real kube-apiserver + etcd started by the real-cluster harness (docs/benchmarks/peers-real.md; PEERS_ARGS as for bench-peers).
bench-peers-real: kube-harness
	$(MAKE) --no-print-directory bench-peers PEERS_RUN="benches/peers/real.sh $$(tests/kube/build.sh --print-bin-dir)"

CAPACITY_ARGS ?=

.PHONY: bench-capacity
## bench-capacity: the highest churn each setup sustains at p99 queue ≤ 1 s and p99 reconcile ≤ 5 s, on a real kube-apiserver + etcd: the wasm plugin, its native logic, kube-runtime, controller-runtime, Kopf, and 1-3 sharded replicas (docs/benchmarks/capacity.md; CAPACITY_ARGS="--setups wasm,kopf --rates 10,20" etc.).
bench-capacity: kube-harness
	$(MAKE) --no-print-directory bench-peers PEERS_RUN="benches/peers/real.sh $$(tests/kube/build.sh --print-bin-dir)" \
		PEERS_ARGS="capacity $(CAPACITY_ARGS)"

.PHONY: bench-allocator
## bench-allocator: the converge benchmark built static (musl) as the image is, with mimalloc (what ships) and with musl's own allocator (docs/benchmarks/allocator.md; writes allocator-mimalloc.md and allocator-musl.md there).
bench-allocator: toolchain-static test-tools
	CONVERGE_OUTPUT=$(CURDIR)/docs/benchmarks/allocator-mimalloc.md \
		$(CARGO) bench --target $(CI_TARGET) -p wasm-reconciler --bench converge
	CONVERGE_OUTPUT=$(CURDIR)/docs/benchmarks/allocator-musl.md \
		$(CARGO) bench --target $(CI_TARGET) -p wasm-reconciler --features musl-allocator --bench converge

.PHONY: bench-sharding
## bench-sharding: sharded mode with 1, 2 and 3 replicas at 30,000 cached objects: converge time, RSS per replica (docs/benchmarks/sharding.md; SHARDING_SETS=1000 etc.).
bench-sharding: toolchain
	$(CARGO) bench -p wasm-reconciler --bench sharding

.PHONY: bench-peers
## bench-peers: the configmapset controller as a wasm plugin, in kube-runtime, controller-runtime and Kopf, side by side (docs/benchmarks/peers.md; PEERS_ARGS="--rounds 5" etc.).
bench-peers: plugins
	@command -v go >/dev/null || { echo "bench-peers needs go (https://go.dev/dl/) to build the controller-runtime peer"; exit 1; }
	@command -v python3 >/dev/null || { echo "bench-peers needs python3 (with the venv module) for the Kopf peer"; exit 1; }
	$(CARGO) build --release -p wasm-reconciler -p configmapset-kube-runtime -p configmapset-native-host -p peers-bench
	cd benches/peers/controller-runtime && go build -o $(PEERS_CACHE)/bin/configmapset-controller-runtime .
	@test -x $(PEERS_CACHE)/kopf-venv/bin/python || python3 -m venv $(PEERS_CACHE)/kopf-venv
	$(PEERS_CACHE)/kopf-venv/bin/pip install --quiet --disable-pip-version-check -r benches/peers/kopf/requirements.txt
	$(PEERS_RUN) $(CARGO_TARGET_DIR)/release/peers-bench $(PEERS_ARGS) --peers-cache $(PEERS_CACHE)

## clean-dev: forget the local dev cluster's files.
clean-dev:
	rm -rf $(DEV_DIR)

# A real kube-apiserver + etcd + kube-controller-manager (and helm), built from Go modules, with a node (kubelet,
# containerd, kube-proxy, kube-scheduler) in a network namespace of its own: docs/real-cluster.md.
REAL_CLUSTER_ARGS ?=
REAL_NODE_ARGS ?=

.PHONY: kube-harness real-cluster real-node dev-real
## kube-harness: build the real control plane and node (cached under ~/.cache/wasm-reconciler/kube), test the
## launcher's Go packages and run its self-checks (the control plane, then the node).
kube-harness: test-tools
	tests/kube/build.sh >/dev/null
	cd tests/kube && go test ./internal/...
	tests/kube/selfcheck.sh
	tests/kube/selfcheck-node.sh

## dev-real: `make dev` on a real kube-apiserver, etcd and kube-controller-manager (built from Go modules by
## tests/kube/build.sh on first use, then cached): the same plugin directory, hot reload, CRDs and kubeconfig.
dev-real:
	@bin_dir="$$(tests/kube/build.sh --control-plane)"; \
	$(MAKE) --no-print-directory dev DEV_ARGS="--server real --kube-harness $$bin_dir/kube-harness $(DEV_ARGS)"

## real-cluster: a real Kubernetes control plane on .dev/real-cluster, in the foreground (Ctrl-C stops it; REAL_CLUSTER_ARGS="--fresh" etc.).
real-cluster:
	@bin_dir="$$(tests/kube/build.sh --control-plane)"; \
	echo "kubeconfig: $(CURDIR)/$(DEV_DIR)/real-cluster/kubeconfig (written when ready; Ctrl-C stops the cluster)"; \
	exec "$$bin_dir/kube-harness" up --dir $(DEV_DIR)/real-cluster $(REAL_CLUSTER_ARGS)

## real-node: the real control plane with a node and a registry on .dev/real-node, in the foreground (Ctrl-C stops it; REAL_NODE_ARGS="--fresh" etc.).
real-node: test-tools
	@bin_dir="$$(tests/kube/build.sh)"; \
	echo "kubeconfig: $(CURDIR)/$(DEV_DIR)/real-node/kubeconfig (written when ready; Ctrl-C stops the cluster)"; \
	exec "$$bin_dir/kube-harness" up --dir $(DEV_DIR)/real-node --node --registry-dir $(DEV_DIR)/real-node-registry $(REAL_NODE_ARGS)

.PHONY: otelcol
## otelcol: the OpenTelemetry Collector the trace tests send spans to (OTLP receiver, file exporter), built from Go
## modules (tests/otelcol/) and cached under ~/.cache/wasm-reconciler/otelcol.
otelcol:
	tests/otelcol/build.sh >/dev/null

.PHONY: helm-check
## helm-check: the Helm chart (deploy/helm/wasm-reconciler) linted, rendered, compared with `kubectl kustomize deploy/`, installed, upgraded and uninstalled on a real API server.
helm-check: deploy-files
	tests/kube/helm-check.sh

.PHONY: monitoring-files monitoring-check
## monitoring-files: regenerate deploy/monitoring/prometheusrule.yaml and the chart's files/monitoring/ from
## deploy/monitoring/rules.yaml and dashboard.json (the alerts' and the dashboard's sources).
monitoring-files:
	deploy/monitoring/generate.sh

## monitoring-check: the alerts and the dashboard of deploy/monitoring: generated copies up to date, promtool check
## and test rules, then a real Prometheus (promtool and prometheus built from Go modules, cached under
## ~/.cache/wasm-reconciler/monitoring) scraping two hosts under load, every panel query and alert evaluated through it.
monitoring-check: plugins build
	HOST_BIN=$(HOST_BIN) PLUGINS_WASM_DIR=$(WASM_OUT) tests/monitoring/check.sh
