//! wasm-reconciler: a Kubernetes controller host that runs reconcile logic compiled to WebAssembly components.
//!
//! The crate is laid out along the data flow: [`plugin`] turns wasm bytes into callable, sandboxed plugins;
//! [`cli`] is the command line.

pub mod cli;
pub mod plugin;

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
