## check: every fixtures/*.world.yaml rendered by the component, compared with its .outcome.yaml.
check: build
	@command -v $(WASM_RECONCILER) >/dev/null || { echo "error: $(WASM_RECONCILER) is not installed; put it on PATH or run make check WASM_RECONCILER=/path/to/wasm-reconciler" >&2; exit 1; }
	@for world in fixtures/*.world.yaml; do \
		echo "render $$world"; \
		$(WASM_RECONCILER) render --plugin plugin.wasm --world $$world | diff -u $${world%.world.yaml}.outcome.yaml - || exit 1; \
	done
