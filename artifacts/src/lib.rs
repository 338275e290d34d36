//! Paths of the guest components (example plugins and test guests), built for `wasm32-wasip2` by this crate's
//! build script. Tests and benchmarks depend on this crate instead of building wasm themselves.

include!(concat!(env!("OUT_DIR"), "/artifacts.rs"));

/// Reads a component built by this crate.
pub fn read(path: &str) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("reading guest component {path}: {e}"))
}
