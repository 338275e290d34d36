//! wasm-reconciler: a Kubernetes controller host that runs reconcile logic compiled to WebAssembly components.
//!
//! The crate is laid out along the data flow, and each module imports only the ones before it:
//!
//! 0. [`lease`]: who may write — Leases decide which replica holds a role, and each role's fence is checked before
//!    every write made in it;
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
/// serialises the threads that allocate, and a busy host spends its CPU waiting on it (measured in
/// docs/benchmarks/allocator.md).
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
