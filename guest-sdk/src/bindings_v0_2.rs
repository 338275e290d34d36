//! Bindings generated from `wit/v0.2/reconciler.wit`: the records and `host` of contract 0.1 (shared with
//! [`bindings`](crate::bindings)), plus `variables` and the 0.2 `controller` export.
//!
//! The world is included under a name of its own so that its export macro does not collide with the 0.1 one.

wit_bindgen::generate!({
    inline: "
        package wasm-reconciler:sdk;

        world reconciler-v0-2 {
            include wasm-reconciler:plugin/reconciler@0.2.0;
        }
    ",
    path: ["../wit", "../wit/v0.2"],
    world: "wasm-reconciler:sdk/reconciler-v0-2",
    with: {
        "wasm-reconciler:plugin/types@0.1.0": crate::bindings::wasm_reconciler::plugin::types,
        "wasm-reconciler:plugin/host@0.1.0": crate::bindings::wasm_reconciler::plugin::host,
        "wasm-reconciler:plugin/variables@0.2.0": generate,
    },
    pub_export_macro: true,
    export_macro_name: "export_component_v0_2",
    default_bindings_module: "wasm_reconciler_sdk::bindings_v0_2",
});
