//! wasm-reconciler: a Kubernetes controller host that runs reconcile logic compiled to WebAssembly components.
//!
//! The crate is laid out along the data flow: [`delivery`] brings plugin packages from a directory or
//! ConfigMaps; [`plugin`] turns wasm bytes into callable, sandboxed plugins; [`runtime`] runs one controller per
//! plugin on shared caches and a workqueue; [`apply`] turns outcomes into API writes; [`telemetry`] exposes
//! metrics and health; [`cli`] is the command line.

pub mod apply;
pub mod cli;
pub mod delivery;
pub mod plugin;
pub mod runtime;
pub mod telemetry;

/// Formats an error with its whole chain of causes: `outer: middle: root`.
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
