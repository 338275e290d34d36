//! Plugin logic compiled natively into the host, called through the same encode → call → decode path as a
//! wasm plugin. Used to measure what the sandbox costs; never used to run untrusted code.

use std::sync::Arc;

use wasm_reconciler_sdk::Reconciler;
use wasm_reconciler_sdk::native::{NativeHost, with_host};
use wasm_reconciler_sdk::wire as sdk;

use super::bindings::wasm_reconciler::plugin::types as wire;
use super::call::{CallLabels, ReconcileError};
use super::contract::{ControllerSpec, Gvk, Outcome, WorldView};
use super::host_api::ClusterReader;
use super::limits::Limits;
use super::outcome;

/// A reconciler linked into the host binary.
#[derive(Clone)]
pub struct NativePlugin {
    spec: Arc<ControllerSpec>,
    limits: Limits,
    reconcile: fn(sdk::WorldView) -> Result<sdk::Outcome, String>,
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
        let spec = wasm_reconciler_sdk::native::describe::<R>();
        let gvk = |g: sdk::Gvk| Gvk::new(g.group, g.version, g.kind);
        let spec = ControllerSpec {
            primary: gvk(spec.primary),
            owns: spec.owns.into_iter().map(gvk).collect(),
            reads: spec.reads.into_iter().map(gvk).collect(),
            finalizer: spec.finalizer,
            resync: spec.resync_seconds.map(|s| std::time::Duration::from_secs(s.into())),
        };
        Self {
            spec: Arc::new(spec),
            limits,
            reconcile: wasm_reconciler_sdk::native::reconcile::<R>,
        }
    }

    /// What the reconciler declares.
    pub fn spec(&self) -> &ControllerSpec {
        &self.spec
    }

    /// Runs one reconcile natively.
    pub fn reconcile(
        &self,
        view: &WorldView,
        reader: Arc<dyn ClusterReader>,
        labels: CallLabels,
    ) -> Result<Outcome, ReconcileError> {
        let encoded = outcome::encode_view(view);
        let view = sdk::WorldView {
            primary: encoded.primary,
            children: encoded.children,
            config: encoded.config,
            deleting: encoded.deleting,
            attempt: encoded.attempt,
        };
        let host = ReaderHost {
            spec: &self.spec,
            reader: reader.as_ref(),
            labels: &labels,
        };
        let answer = with_host(&host, || (self.reconcile)(view)).map_err(ReconcileError::Plugin)?;
        outcome::decode(to_wire(answer), &self.limits).map_err(ReconcileError::InvalidOutcome)
    }
}

fn to_wire(answer: sdk::Outcome) -> wire::Outcome {
    wire::Outcome {
        children: answer.children,
        status: answer.status,
        conditions: answer
            .conditions
            .into_iter()
            .map(|c| wire::Condition {
                type_: c.condition_type,
                status: match c.status {
                    sdk::ConditionStatus::True => wire::ConditionStatus::True,
                    sdk::ConditionStatus::False => wire::ConditionStatus::False,
                    sdk::ConditionStatus::Unknown => wire::ConditionStatus::Unknown,
                },
                reason: c.reason,
                message: c.message,
            })
            .collect(),
        events: answer
            .events
            .into_iter()
            .map(|e| wire::Event {
                type_: match e.event_type {
                    sdk::EventType::Normal => wire::EventType::Normal,
                    sdk::EventType::Warning => wire::EventType::Warning,
                },
                reason: e.reason,
                note: e.note,
            })
            .collect(),
        requeue_after_ms: answer.requeue_after_ms,
        finalized: answer.finalized,
    }
}

/// Serves the SDK's native host calls from a [`ClusterReader`], with the same declared-kind check as the
/// wasm host.
struct ReaderHost<'a> {
    spec: &'a ControllerSpec,
    reader: &'a dyn ClusterReader,
    labels: &'a CallLabels,
}

impl ReaderHost<'_> {
    fn check(&self, kind: &sdk::Gvk) -> Result<Gvk, String> {
        let gvk = Gvk::new(kind.group.clone(), kind.version.clone(), kind.kind.clone());
        if self.spec.may_read(&gvk) {
            Ok(gvk)
        } else {
            Err(super::host_api::undeclared_kind_message(&gvk))
        }
    }
}

impl NativeHost for ReaderHost<'_> {
    fn log(&self, level: wasm_reconciler_sdk::host::Level, message: &str) {
        let (plugin, key) = (self.labels.plugin.as_str(), self.labels.key.as_str());
        match level {
            wasm_reconciler_sdk::host::Level::Error => tracing::error!(plugin, key, "{message}"),
            wasm_reconciler_sdk::host::Level::Warn => tracing::warn!(plugin, key, "{message}"),
            wasm_reconciler_sdk::host::Level::Info => tracing::info!(plugin, key, "{message}"),
            wasm_reconciler_sdk::host::Level::Debug => tracing::debug!(plugin, key, "{message}"),
            wasm_reconciler_sdk::host::Level::Trace => tracing::trace!(plugin, key, "{message}"),
        }
    }

    fn get(&self, kind: &sdk::Gvk, namespace: Option<&str>, name: &str) -> Result<Option<String>, String> {
        let gvk = self.check(kind)?;
        self.reader.get(&gvk, namespace, name)
    }

    fn list(
        &self,
        kind: &sdk::Gvk,
        namespace: Option<&str>,
        label_selector: Option<&str>,
    ) -> Result<Vec<String>, String> {
        let gvk = self.check(kind)?;
        self.reader.list(&gvk, namespace, label_selector)
    }
}
