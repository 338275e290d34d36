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
