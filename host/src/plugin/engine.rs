//! The process-wide wasmtime engine, its epoch ticker and the linker every plugin is instantiated with.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use wasmtime::component::{HasSelf, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::artifact_cache::ArtifactCache;
use super::bindings::{v0_1, v0_2, v0_3};
use super::call::CallState;
use super::outbound::add_timed_io_to_linker;

/// How often the ticker advances the engine's epoch; the granularity of deadlines.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Plugin instances that can be alive at once across all plugins (one per running call or `describe`).
///
/// Instances come from a pool reserved when the engine starts (about 4 GiB of address space, not memory, per
/// slot); a call beyond this fails to instantiate (`ReconcileError::Instantiate`) and is retried like any
/// failed reconcile.
const MAX_CONCURRENT_INSTANCES: u32 = 256;
/// Core instances per plugin instance the pool provides for: a Rust component has three (the program and two
/// adapter shims).
const CORE_INSTANCES_PER_INSTANCE: u32 = 8;
/// Tables per plugin instance the pool provides for (a Rust component has two).
const TABLES_PER_INSTANCE: u32 = 4;
/// Linear memory kept mapped (and zeroed with `memset`) when an instance ends, so the next call in that slot
/// takes no page faults for it; a reconcile of the example plugins touches about 1.2 MiB.
const MEMORY_KEPT_RESIDENT: usize = 4 * 1024 * 1024;
/// Table memory kept mapped when an instance ends.
const TABLES_KEPT_RESIDENT: usize = 64 * 1024;

/// Errors creating the engine.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// wasmtime refused the configuration.
    #[error("configuring the WebAssembly engine")]
    Config(#[source] wasmtime::Error),
    /// The WASI or host imports could not be added to the linker.
    #[error("linking host functions")]
    Link(#[source] wasmtime::Error),
    /// The epoch ticker thread could not start.
    #[error("starting the epoch ticker thread")]
    Ticker(#[source] std::io::Error),
}

/// Result alias for this module.
pub type Result<T, E = EngineError> = std::result::Result<T, E>;

/// One per process: the engine, the shared linker, the epoch ticker and the compiled-artifact cache.
///
/// Cheap to clone; plugins keep a clone so the ticker runs as long as any plugin can be called.
#[derive(Clone)]
pub struct PluginEngine {
    pub(crate) inner: Arc<EngineInner>,
}

/// WASI with timed `wasi:io` and checked `wasi:http`: what contract 0.2 and later plugins may import besides the
/// contract's own interfaces.
fn outbound_linker(engine: &Engine) -> Result<Linker<CallState>, EngineError> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(EngineError::Link)?;
    add_timed_io_to_linker(&mut linker).map_err(EngineError::Link)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_sync(&mut linker).map_err(EngineError::Link)?;
    Ok(linker)
}

pub(crate) struct EngineInner {
    pub(crate) engine: Engine,
    /// What a contract 0.1 plugin may import: WASI without network, and the `host` interface.
    pub(crate) linker: Linker<CallState>,
    /// What a contract 0.2 plugin may import: the same, with timed `wasi:io`, `wasi:http` (each request checked
    /// against the plugin's grants) and `variables`.
    pub(crate) linker_v0_2: Linker<CallState>,
    /// The linker of contract 0.3 plugins: that of 0.2 plus the lent view.
    pub(crate) linker_v0_3: Linker<CallState>,
    pub(crate) artifacts: Option<ArtifactCache>,
    ticker: EpochTicker,
}

impl std::fmt::Debug for PluginEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginEngine")
            .field("artifacts", &self.inner.artifacts)
            .finish_non_exhaustive()
    }
}

impl PluginEngine {
    /// Creates the engine. With `artifact_dir`, compiled plugins are kept there (see [`ArtifactCache`]).
    pub fn new(artifact_dir: Option<PathBuf>) -> Result<Self> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(true);
        config.parallel_compilation(true);
        // A fresh instance per call is the hot path: a pooling allocator reuses memory slots instead of mapping
        // and unmapping linear memory per call, and keeping the used part resident avoids re-faulting it. Where the
        // kernel has the PAGEMAP_SCAN ioctl (Linux 6.7+), resetting a slot clears only the pages the call wrote,
        // not the whole resident part (docs/benchmarks.md, plugin runtime).
        // Each memory slot may grow to 4 GiB (wasm32's whole space), so `Limits::memory_bytes` stays the only
        // memory limit and its violations keep their typed error.
        let mut pool = PoolingAllocationConfig::new();
        pool.total_component_instances(MAX_CONCURRENT_INSTANCES)
            .total_core_instances(MAX_CONCURRENT_INSTANCES * CORE_INSTANCES_PER_INSTANCE)
            .total_memories(MAX_CONCURRENT_INSTANCES)
            .total_tables(MAX_CONCURRENT_INSTANCES * TABLES_PER_INSTANCE)
            .max_memory_size(1 << 32)
            .linear_memory_keep_resident(MEMORY_KEPT_RESIDENT)
            .pagemap_scan(wasmtime::Enabled::Auto)
            .table_keep_resident(TABLES_KEPT_RESIDENT);
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = Engine::new(&config).map_err(EngineError::Config)?;

        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(EngineError::Link)?;
        v0_1::Reconciler::add_to_linker::<CallState, HasSelf<CallState>>(&mut linker, |state| state)
            .map_err(EngineError::Link)?;

        let mut linker_v0_2 = outbound_linker(&engine)?;
        v0_2::Reconciler::add_to_linker::<CallState, HasSelf<CallState>>(&mut linker_v0_2, |state| state)
            .map_err(EngineError::Link)?;
        let mut linker_v0_3 = outbound_linker(&engine)?;
        v0_3::Reconciler::add_to_linker::<CallState, HasSelf<CallState>>(&mut linker_v0_3, |state| state)
            .map_err(EngineError::Link)?;

        let ticker = EpochTicker::start(engine.clone()).map_err(EngineError::Ticker)?;
        let artifacts = artifact_dir.map(|dir| ArtifactCache::new(dir, &engine));
        Ok(Self {
            inner: Arc::new(EngineInner {
                engine,
                linker,
                linker_v0_2,
                linker_v0_3,
                artifacts,
                ticker,
            }),
        })
    }

    /// The underlying wasmtime engine.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// Number of epoch ticks that make up `deadline`, rounded up, plus one so a call always gets at least
    /// the whole deadline.
    pub(crate) fn deadline_ticks(deadline: Duration) -> u64 {
        let tick = EPOCH_TICK.as_nanos();
        u64::try_from(deadline.as_nanos().div_ceil(tick))
            .unwrap_or(u64::MAX)
            .saturating_add(1)
    }
}

impl Drop for EngineInner {
    fn drop(&mut self) {
        self.ticker.stop();
    }
}

/// A thread advancing the engine's epoch every [`EPOCH_TICK`] so running calls notice their deadline.
struct EpochTicker {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl EpochTicker {
    fn start(engine: Engine) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("wasm-epoch-ticker".into())
            .spawn(move || {
                // Ticks follow the wall clock: a wake-up delayed by a busy machine catches up on the ticks it
                // missed, so deadlines stay deadlines under load.
                let mut next = Instant::now() + EPOCH_TICK;
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(next.saturating_duration_since(Instant::now()));
                    let now = Instant::now();
                    while next <= now {
                        engine.increment_epoch();
                        next += EPOCH_TICK;
                    }
                }
            })?;
        Ok(Self {
            stop,
            handle: Some(handle),
        })
    }

    fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(handle) = self.handle.take() {
            // The thread wakes within one tick; a panic in it has nothing left to clean up.
            let _ = handle.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_ticks_round_up_and_add_one() {
        assert_eq!(PluginEngine::deadline_ticks(Duration::from_millis(1000)), 201);
        assert_eq!(PluginEngine::deadline_ticks(Duration::from_millis(1)), 2);
        assert_eq!(PluginEngine::deadline_ticks(Duration::ZERO), 1);
    }
}
