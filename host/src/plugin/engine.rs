//! The process-wide wasmtime engine, its epoch ticker and the linker every plugin is instantiated with.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use wasmtime::component::{HasSelf, Linker};
use wasmtime::{Config, Engine};

use super::artifact_cache::ArtifactCache;
use super::bindings::Reconciler;
use super::call::CallState;

/// How often the ticker advances the engine's epoch; the granularity of deadlines.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(5);

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

pub(crate) struct EngineInner {
    pub(crate) engine: Engine,
    pub(crate) linker: Linker<CallState>,
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
        let engine = Engine::new(&config).map_err(EngineError::Config)?;

        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(EngineError::Link)?;
        Reconciler::add_to_linker::<CallState, HasSelf<CallState>>(&mut linker, |state| state)
            .map_err(EngineError::Link)?;

        let ticker = EpochTicker::start(engine.clone()).map_err(EngineError::Ticker)?;
        let artifacts = artifact_dir.map(|dir| ArtifactCache::new(dir, &engine));
        Ok(Self {
            inner: Arc::new(EngineInner {
                engine,
                linker,
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
