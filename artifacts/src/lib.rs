//! Paths of the guest components (example plugins and test guests), built for `wasm32-wasip2` by this crate's
//! build script. Tests and benchmarks depend on this crate instead of building wasm themselves.

include!(concat!(env!("OUT_DIR"), "/artifacts.rs"));

/// Reads a component built by this crate.
pub fn read(path: &str) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("reading guest component {path}: {e}"))
}

/// Reads a component built by `make polyglot` (the Python and TypeScript plugins and test guests), failing with the command that
/// builds it when it is absent.
pub fn read_polyglot(path: &str) -> Vec<u8> {
    match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            panic!("{path} is missing: build the Python and TypeScript components with `make polyglot`")
        }
        Err(error) => panic!("reading guest component {path}: {error}"),
    }
}

/// Fails, naming `make polyglot`, unless the component built by it is present; returns the path.
pub fn polyglot(path: &str) -> &str {
    assert!(
        std::path::Path::new(path).is_file(),
        "{path} is missing: build the Python and TypeScript components with `make polyglot`"
    );
    path
}
