//! Plugin-tier tests: real components (example plugins, SDK round trip, misbehaving guests) run through the
//! host's plugin runtime, `render` and the CLI.

mod check;
mod cli;
mod misbehaving;
mod outbound;
mod polyglot;
mod render_golden;
mod round_trip;
mod scaffold;

use std::sync::{Arc, OnceLock};

use wasm_reconciler::plugin::{Limits, Plugin, PluginEngine};

/// One engine for the whole test binary, as in the host.
pub fn engine() -> &'static PluginEngine {
    static ENGINE: OnceLock<PluginEngine> = OnceLock::new();
    ENGINE.get_or_init(|| PluginEngine::new(None).expect("engine starts"))
}

/// Loads a built guest with the given limits.
pub fn load(path: &str, limits: Limits) -> Plugin {
    load_on(engine(), path, limits)
}

/// Loads a built guest on `engine` with the given limits.
pub fn load_on(engine: &PluginEngine, path: &str, limits: Limits) -> Plugin {
    let wasm = wasm_reconciler_artifacts::read(path);
    engine
        .load("test", &wasm, limits)
        .unwrap_or_else(|e| panic!("loading {path}: {}", wasm_reconciler::error_chain(&e)))
}

/// A reader over a fixed set of objects, shared by the tests.
pub fn reader(objects: Vec<serde_json::Value>) -> Arc<dyn wasm_reconciler::plugin::ClusterReader> {
    Arc::new(wasm_reconciler::plugin::ObjectReader::new(objects).expect("test objects have apiVersion and kind"))
}
