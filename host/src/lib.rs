//! wasm-reconciler: a Kubernetes controller host that runs reconcile logic compiled to WebAssembly components.
//!
//! The crate is laid out along the data flow, and each module imports only the ones before it:
//!
//! 0. [`client`]: how the host's clients are made; [`lease`]: who may write — Leases decide which replica holds a
//!    role, and each role's fence is checked before every write made in it;
//! 1. [`plugin`]: wasm bytes → a validated, sandboxed, callable plugin; [`fixture`]: a world view on disk, what
//!    `render` and `plugin check` feed a plugin offline;
//! 2. [`delivery`]: plugin packages from a directory or ConfigMaps, handed to an [`delivery::Installer`];
//! 3. [`runtime`]: what the host observes and schedules — shared informer caches, the workqueue, world-view
//!    assembly, dependency tracking from reads;
//! 4. [`apply`]: an outcome → API writes (finalizer, children, status, events), folded back into the caches;
//!    [`check`]: `plugin check` — a plugin run offline against the embedded API server's object rules and the
//!    applier's planning, under determinism, stability and spec-mutation oracles;
//! 5. [`telemetry`]: metrics, health and traces;
//! 6. [`shard`]: sharded mode — membership Leases, the sharder that places primaries on a consistent-hash ring
//!    of live replicas, the labels and the drain handshake;
//! 7. [`controller`]: drives reconciles (queue → world view → plugin call → applier) and runs one controller
//!    per plugin, swapping versions only after they validated (the [`delivery::Installer`]);
//! 8. [`cli`]: the command line.

/// The allocator of static (musl) builds, the image's binary and the tests of `make test`: musl's own allocator
/// serialises the threads that allocate. Against it, mimalloc cuts the host's CPU by about 40 % and doubles its
/// throughput, and holds 3.5-4 times the memory (docs/benchmarks/allocator.md).
#[cfg(all(target_env = "musl", not(feature = "musl-allocator")))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod client;

pub mod lease;

pub mod plugin;

pub mod fixture;

pub mod delivery;

pub mod runtime;

pub mod apply;

pub mod check;

pub mod telemetry;

pub mod shard;

pub mod controller;

pub mod cli;

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

/// The target of the spans of a reconcile's steps (the plugin call, its reads and outbound requests, each write), made
/// for traces (`telemetry::traces`): log lines leave them out, so they name the `reconcile` span as before. When
/// traces are off no layer wants them, and they cost what a disabled span costs.
pub const TRACE_ONLY_TARGET: &str = "wasm_reconciler::step";

/// Installs the process-wide crypto provider rustls needs for reqwest's TLS (registries, an https OTLP endpoint):
/// ring, as kube uses.
pub(crate) fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race against another installer is fine: a provider is installed either way.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

#[cfg(test)]
mod layers {
    //! The module list above is a layering: a module may use the modules of its own layer and of the layers before
    //! it, never one after it. Checked on the sources, so that an arrow against the layers fails the build's tests.

    use std::path::Path;

    /// Each top-level module and its layer, as the crate's documentation lists them.
    const LAYERS: &[(&str, u8)] = &[
        ("client", 0),
        ("lease", 0),
        ("plugin", 1),
        ("fixture", 1),
        ("delivery", 2),
        ("runtime", 3),
        ("apply", 4),
        ("check", 4),
        ("telemetry", 5),
        ("shard", 6),
        ("controller", 7),
        ("cli", 8),
    ];

    fn layer(module: &str) -> Option<u8> {
        LAYERS.iter().find(|(name, _)| *name == module).map(|(_, layer)| *layer)
    }

    /// The top-level modules a line of code names through `crate::`, including `use crate::{a::…, b}`.
    fn named_modules(code: &str) -> Vec<&str> {
        let mut names = Vec::new();
        for (at, _) in code.match_indices("crate::") {
            let rest = &code[at + "crate::".len()..];
            let group = rest
                .strip_prefix('{')
                .map(|inner| inner.split('}').next().unwrap_or(inner));
            for path in group.map_or_else(|| vec![rest], |inner| inner.split(',').collect()) {
                let name = path
                    .trim_start()
                    .split(|c: char| !c.is_alphanumeric() && c != '_')
                    .next();
                names.extend(name.filter(|name| !name.is_empty()));
            }
        }
        names
    }

    fn sources(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("reading the crate's sources") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                sources(&path, found);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                found.push(path);
            }
        }
    }

    #[test]
    fn no_module_uses_a_later_layer() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        sources(&src, &mut files);
        let mut arrows = Vec::new();
        for file in &files {
            let relative = file.strip_prefix(&src).expect("inside src");
            let top = relative
                .iter()
                .next()
                .and_then(|part| part.to_str())
                .unwrap_or_default();
            let Some(own) = layer(top.trim_end_matches(".rs")) else {
                continue;
            };
            let text = std::fs::read_to_string(file).expect("reading a source file");
            for (number, line) in text.lines().enumerate() {
                if line.trim_start().starts_with("//") {
                    continue;
                }
                for name in named_modules(line) {
                    if layer(name).is_some_and(|used| used > own) {
                        arrows.push(format!("{}:{}: uses crate::{name}", relative.display(), number + 1));
                    }
                }
            }
        }
        assert!(files.len() > 50, "the sources were found ({} files)", files.len());
        assert!(arrows.is_empty(), "arrows against the layers:\n{}", arrows.join("\n"));
    }

    #[test]
    fn grouped_and_plain_paths_are_both_read() {
        assert_eq!(named_modules("use crate::cli::host_client;"), ["cli"]);
        assert_eq!(
            named_modules("use crate::{controller::Manager, runtime};"),
            ["controller", "runtime"]
        );
        assert_eq!(named_modules("let x = crate::error_chain(&e);"), ["error_chain"]);
    }
}
