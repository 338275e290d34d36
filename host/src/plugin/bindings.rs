//! Host bindings generated from the contract's WIT, one module per contract version (generated code only).

/// `wasm-reconciler:plugin@0.1.0` (`wit/reconciler.wit`).
pub(crate) mod v0_1 {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "reconciler",
    });
}

/// `wasm-reconciler:plugin@0.2.0` (`wit/v0.2/reconciler.wit`): the 0.1 records and host functions, shared with
/// [`v0_1`], plus `variables`.
pub(crate) mod v0_2 {
    wasmtime::component::bindgen!({
        path: ["../wit", "../wit/v0.2"],
        world: "wasm-reconciler:plugin/reconciler@0.2.0",
        with: {
            "wasm-reconciler:plugin/types@0.1.0": super::v0_1::wasm_reconciler::plugin::types,
            "wasm-reconciler:plugin/host@0.1.0": super::v0_1::wasm_reconciler::plugin::host,
        },
    });
}

/// `wasm-reconciler:plugin@0.3.0` (`wit/v0.3/reconciler.wit`): the 0.1 and 0.2 interfaces, shared with [`v0_1`] and
/// [`v0_2`], plus the lazily read view (a resource backed by [`super::view::LentView`]) and the 0.3 `controller`.
pub(crate) mod v0_3 {
    wasmtime::component::bindgen!({
        path: ["../wit", "../wit/v0.2", "../wit/v0.3"],
        world: "wasm-reconciler:plugin/reconciler@0.3.0",
        // Only `view` is generated here; a handle that is not in the call's table traps the call.
        imports: { default: trappable },
        with: {
            "wasm-reconciler:plugin/types@0.1.0": super::v0_1::wasm_reconciler::plugin::types,
            "wasm-reconciler:plugin/host@0.1.0": super::v0_1::wasm_reconciler::plugin::host,
            "wasm-reconciler:plugin/variables@0.2.0": super::v0_2::wasm_reconciler::plugin0_2_0::variables,
            "wasm-reconciler:plugin/view@0.3.0.world-view": super::super::view::LentView,
        },
    });
}
