## check: every fixtures/*.world.yaml rendered by the component and compared with its .outcome.yaml, then
## `wasm-reconciler plugin check` on the component, crd.yaml and the fixtures: determinism, stability, and spec
## mutations from the CRD's schema (each finding printed with the command that replays it; CHECK_FLAGS adds options,
## e.g. CHECK_FLAGS="--seed 7 --sequences 50").
CHECK_FLAGS ?=
check: build
	@command -v $(WASM_RECONCILER) >/dev/null || { echo "error: $(WASM_RECONCILER) is not installed; put it on PATH or run make check WASM_RECONCILER=/path/to/wasm-reconciler" >&2; exit 1; }
	@for world in fixtures/*.world.yaml; do \
		echo "render $$world"; \
		$(WASM_RECONCILER) render --plugin plugin.wasm --world $$world | diff -u $${world%.world.yaml}.outcome.yaml - || exit 1; \
	done
	$(WASM_RECONCILER) plugin check plugin.wasm --crd crd.yaml --world fixtures $(CHECK_FLAGS)
