//! Bindings generated from `wit/reconciler.wit`; plugin authors use the SDK types instead.

wit_bindgen::generate!({
    path: "../wit",
    world: "reconciler",
    pub_export_macro: true,
    export_macro_name: "export_component",
    default_bindings_module: "wasm_reconciler_sdk::bindings",
});
