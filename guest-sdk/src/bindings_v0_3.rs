//! Bindings generated from `wit/v0.3/reconciler.wit`: the records and `host` of contract 0.1 and `variables` of 0.2
//! (shared with [`bindings`](crate::bindings) and [`bindings_v0_2`](crate::bindings_v0_2)), plus the lent `view` and
//! the 0.3 `controller` export.

wit_bindgen::generate!({
    inline: "
        package wasm-reconciler:sdk-v0-3;

        world reconciler-v0-3 {
            include wasm-reconciler:plugin/reconciler@0.3.0;
        }
    ",
    path: ["../wit", "../wit/v0.2", "../wit/v0.3"],
    world: "wasm-reconciler:sdk-v0-3/reconciler-v0-3",
    with: {
        "wasm-reconciler:plugin/types@0.1.0": crate::bindings::wasm_reconciler::plugin::types,
        "wasm-reconciler:plugin/host@0.1.0": crate::bindings::wasm_reconciler::plugin::host,
        "wasm-reconciler:plugin/variables@0.2.0": crate::bindings_v0_2::wasm_reconciler::plugin0_2_0::variables,
        "wasm-reconciler:plugin/view@0.3.0": generate,
    },
    pub_export_macro: true,
    export_macro_name: "export_component_v0_3",
    default_bindings_module: "wasm_reconciler_sdk::bindings_v0_3",
});
