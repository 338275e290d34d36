//! One call into a plugin: a fresh store with limits, the call, and the classification of what went wrong.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::component::ResourceTable;
use wasmtime::{Store, Trap, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::engine::PluginEngine;
use super::grants::Grants;
use super::host_api::{ClusterReader, MAX_LOG_LINES};
use super::instance::Answer;
use super::limits::{Limits, MemoryLimiter};
use super::load::Plugin;
use super::outbound::{IoBudgetExhausted, IoClock, OutboundHooks};
use super::outcome::{self, Outcome};
use super::output::{CapturedOutput, panic_message};
use super::variables::VariableSource;
use super::{ControllerSpec, WorldView, types};

/// Why a reconcile produced no outcome.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// The plugin returned its own error.
    #[error("plugin returned an error: {0}")]
    Plugin(String),
    /// The plugin trapped (a panic, an `unreachable`, an out-of-bounds access...).
    #[error("plugin trapped: {message}")]
    Trap {
        /// The panic message when the plugin panicked, else the trap's description.
        message: String,
    },
    /// The call ran past its deadline and was interrupted.
    #[error("plugin exceeded its deadline of {deadline:?}")]
    Timeout {
        /// The deadline in force.
        deadline: Duration,
    },
    /// The call spent its whole outbound budget blocked on I/O and was interrupted (contract 0.2).
    #[error("plugin spent its outbound budget of {budget:?} waiting on I/O")]
    OutboundBudget {
        /// The budget in force.
        budget: Duration,
    },
    /// The plugin tried to grow its memory past the limit.
    #[error("plugin exhausted its memory limit of {limit_bytes} bytes")]
    MemoryExhausted {
        /// The limit in force.
        limit_bytes: usize,
    },
    /// The plugin's answer broke the contract: malformed JSON, wrong shapes, over the size limit.
    #[error("plugin returned an invalid outcome: {0}")]
    InvalidOutcome(String),
    /// The host could not set up the call (instantiation failed).
    #[error("could not instantiate the plugin")]
    Instantiate(#[source] wasmtime::Error),
}

impl ReconcileError {
    /// The CamelCase reason the host reports on the object's `Reconciled` condition.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Plugin(_) => "PluginError",
            Self::Trap { .. } => "PluginTrapped",
            Self::Timeout { .. } | Self::OutboundBudget { .. } => "Timeout",
            Self::MemoryExhausted { .. } => "MemoryExhausted",
            Self::InvalidOutcome(_) => "InvalidOutcome",
            Self::Instantiate(_) => "InstantiateFailed",
        }
    }
}

/// Store data of one call.
pub(crate) struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(crate) limiter: MemoryLimiter,
    pub(crate) reader: Arc<dyn ClusterReader>,
    /// The plugin's spec; `None` while `describe` itself runs.
    pub(crate) spec: Option<Arc<ControllerSpec>>,
    pub(crate) log_lines: u32,
    stdout: CapturedOutput,
    stderr: CapturedOutput,
    /// Where `variables.get` reads from (contract 0.2).
    pub(crate) variables: Arc<dyn VariableSource>,
    /// Time blocked on I/O, kept out of the deadline.
    io: IoClock,
    http: WasiHttpCtx,
    outbound: OutboundHooks,
}

impl CallState {
    /// The call's I/O clock.
    pub(crate) fn io_clock(&self) -> &IoClock {
        &self.io
    }

    /// The call's resource table.
    pub(crate) fn table(&self) -> &ResourceTable {
        &self.table
    }

    /// The call's resource table, to change.
    pub(crate) fn table_mut(&mut self) -> &mut ResourceTable {
        &mut self.table
    }

    /// The resource table with the clock its blocking calls are measured by.
    pub(crate) fn table_and_clock(&mut self) -> (&mut ResourceTable, &IoClock) {
        (&mut self.table, &self.io)
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// `wasi:http` for contract 0.2 plugins; the hooks decide what may be sent (only 0.2 linkers have `wasi:http`).
impl WasiHttpView for CallState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.outbound,
        }
    }
}

/// What `wasi:random/insecure-seed` answers every call.
const INSECURE_SEED: u128 = 0x7761_736d_2d72_6563_6f6e_6369_6c65_7221;

/// Builds a store that grants the plugin nothing but bounded stdout/stderr and what `grants` allows (which only a
/// contract 0.2 plugin's linker lets it use), with the limits in force.
///
/// Everything the call logs (guest output, `host.log` lines, outbound requests) goes to `tracing` inside the
/// caller's span, which names the plugin and the object.
pub(crate) fn new_store(
    engine: &PluginEngine,
    limits: &Limits,
    reader: Arc<dyn ClusterReader>,
    spec: Option<Arc<ControllerSpec>>,
    grants: &Grants,
) -> Store<CallState> {
    let stdout = CapturedOutput::new(limits.max_output_bytes);
    let stderr = CapturedOutput::new(limits.max_output_bytes);
    // No args, no environment, no preopened directories, no network: the builder grants none by default. The seed of
    // `wasi:random/insecure-seed` (which Rust's `HashMap` seeds itself with) is the same on every call, so that a
    // plugin's answer does not depend on it: the host skips calls for an unchanged world only for plugins whose
    // answer is a function of their input (`Capabilities::is_pure`).
    let wasi = WasiCtx::builder()
        .stdout(stdout.clone())
        .stderr(stderr.clone())
        .allow_ip_name_lookup(false)
        .insecure_random_seed(INSECURE_SEED)
        .build();
    let io = IoClock::new(limits.outbound_budget);
    let outbound = OutboundHooks::new(
        grants.outbound.clone(),
        grants.counters.clone(),
        io.clone(),
        limits.outbound_timeout,
        limits.max_response_bytes,
        reader.clone(),
    );
    let state = CallState {
        wasi,
        table: ResourceTable::new(),
        limiter: MemoryLimiter::new(limits.memory_bytes),
        reader,
        spec,
        log_lines: 0,
        stdout,
        stderr,
        variables: grants.variables.clone(),
        io,
        http: WasiHttpCtx::new(),
        outbound,
    };
    let mut store = Store::new(&engine.inner.engine, state);
    store.limiter(|state| &mut state.limiter);
    // Ticks can come in a burst when the ticker catches up after the machine stalled it, so reaching the tick
    // count only means "look at the clock": the call is interrupted once the deadline has really passed, never
    // before, and at most a tick or two after. Time the call spent blocked on I/O moves the deadline out by as
    // much (it is bounded by the outbound budget instead); it stays zero for a 0.1 plugin, which cannot block.
    let deadline_from = Instant::now() + limits.deadline;
    store.set_epoch_deadline(PluginEngine::deadline_ticks(limits.deadline));
    store.epoch_deadline_callback(move |store| {
        let ends_at = deadline_from + store.data().io.waited();
        let left = ends_at.saturating_duration_since(Instant::now());
        Ok(if left.is_zero() {
            UpdateDeadline::Interrupt
        } else {
            UpdateDeadline::Continue(PluginEngine::deadline_ticks(left))
        })
    });
    store
}

/// Forwards captured guest output to the log and returns stderr for panic extraction.
pub(crate) fn drain_output(state: &CallState) -> String {
    let (stdout, stdout_dropped) = state.stdout.take();
    for line in stdout.lines().filter(|line| !line.trim().is_empty()) {
        tracing::info!(stream = "stdout", "{line}");
    }
    let (stderr, stderr_dropped) = state.stderr.take();
    for line in stderr.lines().filter(|line| !line.trim().is_empty()) {
        tracing::warn!(stream = "stderr", "{line}");
    }
    if stdout_dropped + stderr_dropped > 0 {
        tracing::warn!(
            stdout_dropped,
            stderr_dropped,
            "plugin output over the limit was dropped"
        );
    }
    if state.log_lines > MAX_LOG_LINES {
        tracing::warn!(
            lines = state.log_lines,
            "plugin logged too many lines; the rest were dropped"
        );
    }
    stderr
}

/// Turns a failed call into the error the host reports.
pub(crate) fn classify(error: wasmtime::Error, state: &CallState, stderr: &str, limits: &Limits) -> ReconcileError {
    if state.limiter.exhausted {
        return ReconcileError::MemoryExhausted {
            limit_bytes: limits.memory_bytes,
        };
    }
    if let Some(exhausted) = error
        .chain()
        .find_map(|cause| cause.downcast_ref::<IoBudgetExhausted>())
    {
        return ReconcileError::OutboundBudget {
            budget: exhausted.budget,
        };
    }
    match error.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => ReconcileError::Timeout {
            deadline: limits.deadline,
        },
        Some(trap) => ReconcileError::Trap {
            message: panic_message(stderr).unwrap_or_else(|| trap.to_string()),
        },
        None => ReconcileError::Trap {
            message: panic_message(stderr).unwrap_or_else(|| format!("{error:#}")),
        },
    }
}

impl Plugin {
    /// Runs one reconcile on `view` in a fresh instance, with `reader` serving `get` and `list`.
    ///
    /// The call (instantiation included) runs in a `plugin.call` span for traces, with the component's digest; its
    /// reads and outbound requests are spans under it.
    pub fn reconcile(&self, view: WorldView, reader: Arc<dyn ClusterReader>) -> Result<Outcome, ReconcileError> {
        let started = Instant::now();
        // Made in the caller's span, which the store keeps for the log lines of outbound requests.
        let mut store = new_store(
            &self.engine,
            &self.limits,
            reader,
            Some(self.spec.clone()),
            &self.grants,
        );
        let span = tracing::info_span!(
            target: crate::TRACE_ONLY_TARGET,
            "plugin.call",
            plugin.digest = self.sha256(),
            otel.status_code = tracing::field::Empty,
            error.type = tracing::field::Empty,
        );
        let result = span.in_scope(|| {
            self.pre
                .instantiate(&mut store)
                .map_err(ReconcileError::Instantiate)
                .and_then(|instance| {
                    instance.call_reconcile(&mut store, view).map_err(|error| {
                        let stderr = drain_output(store.data());
                        classify(error, store.data(), &stderr, &self.limits)
                    })
                })
        });
        match &result {
            Ok(Err(_)) => {
                span.record("otel.status_code", "ERROR");
                span.record("error.type", "PluginError");
            }
            Err(error) => {
                span.record("otel.status_code", "ERROR");
                span.record("error.type", error.reason());
            }
            Ok(Ok(_)) => {}
        }
        drop(span);
        let result = match result {
            Ok(Ok(answer)) => {
                drain_output(store.data());
                match answer {
                    Answer::Whole(answer) => outcome::decode(types::outcome(answer), &self.limits),
                    Answer::Patched(answer) => outcome::decode_patched(answer, &self.limits),
                }
                .map_err(ReconcileError::InvalidOutcome)
            }
            Ok(Err(message)) => {
                drain_output(store.data());
                Err(ReconcileError::Plugin(message))
            }
            Err(error) => Err(error),
        };
        tracing::trace!(
            elapsed_us = started.elapsed().as_micros() as u64,
            ok = result.is_ok(),
            "reconcile call finished"
        );
        result
    }
}
