//! Host bindings generated from `wit/reconciler.wit` (generated code only).

wasmtime::component::bindgen!({
    path: "../wit",
    world: "reconciler",
});
