//! Plugin logic compiled natively into the host, called through the same encode → call → decode path as a
//! wasm plugin. Used to measure what the sandbox costs; never used to run untrusted code.

use std::sync::Arc;

use wasm_reconciler_sdk::Reconciler;
use wasm_reconciler_sdk::native::{NativeHost, with_host};

use super::call::ReconcileError;
use super::host_api::ClusterReader;
use super::limits::Limits;
use super::outcome::{self, Outcome};
use super::{ControllerSpec, Gvk, WorldView};

/// A reconciler linked into the host binary.
#[derive(Clone)]
pub struct NativePlugin {
    spec: Arc<ControllerSpec>,
    limits: Limits,
    reconcile: fn(WorldView) -> Result<wasm_reconciler_contract::Outcome, String>,
}

impl std::fmt::Debug for NativePlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativePlugin")
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}

impl NativePlugin {
    /// Wraps the reconciler `R`.
    pub fn new<R: Reconciler>(limits: Limits) -> Self {
        Self {
            spec: Arc::new(wasm_reconciler_sdk::native::describe::<R>()),
            limits,
            reconcile: wasm_reconciler_sdk::native::reconcile::<R>,
        }
    }

    /// What the reconciler declares.
    pub fn spec(&self) -> &ControllerSpec {
        &self.spec
    }

    /// Runs one reconcile natively.
    pub fn reconcile(&self, view: WorldView, reader: Arc<dyn ClusterReader>) -> Result<Outcome, ReconcileError> {
        let host = ReaderHost {
            spec: &self.spec,
            reader: reader.as_ref(),
        };
        let answer = with_host(&host, || (self.reconcile)(view)).map_err(ReconcileError::Plugin)?;
        outcome::decode(answer, &self.limits).map_err(ReconcileError::InvalidOutcome)
    }
}

/// Serves the SDK's native host calls from a [`ClusterReader`], with the same declared-kind check as the
/// wasm host.
struct ReaderHost<'a> {
    spec: &'a ControllerSpec,
    reader: &'a dyn ClusterReader,
}

impl ReaderHost<'_> {
    fn check(&self, kind: &Gvk) -> Result<(), String> {
        if self.spec.may_read(kind) {
            Ok(())
        } else {
            Err(super::host_api::undeclared_kind_message(kind))
        }
    }
}

impl NativeHost for ReaderHost<'_> {
    fn log(&self, level: wasm_reconciler_sdk::host::Level, message: &str) {
        match level {
            wasm_reconciler_sdk::host::Level::Error => tracing::error!("{message}"),
            wasm_reconciler_sdk::host::Level::Warn => tracing::warn!("{message}"),
            wasm_reconciler_sdk::host::Level::Info => tracing::info!("{message}"),
            wasm_reconciler_sdk::host::Level::Debug => tracing::debug!("{message}"),
            wasm_reconciler_sdk::host::Level::Trace => tracing::trace!("{message}"),
        }
    }

    fn get(&self, kind: &Gvk, namespace: Option<&str>, name: &str) -> Result<Option<String>, String> {
        self.check(kind)?;
        self.reader.get(kind, namespace, name)
    }

    fn list(&self, kind: &Gvk, namespace: Option<&str>, label_selector: Option<&str>) -> Result<Vec<String>, String> {
        self.check(kind)?;
        self.reader.list(kind, namespace, label_selector)
    }
}
