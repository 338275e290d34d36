//! The host side of the `host` WIT interface: logging and read-only cluster access.

use super::bindings::v0_1::wasm_reconciler::plugin::{host, types as generated};
use super::call::CallState;
use super::{Gvk, types};

/// Where `get` and `list` read from: the controller runtime's caches, or a render fixture.
///
/// Objects are returned as JSON text so caches can serialise each object once. Implementations also record
/// what was read, for dependency tracking.
pub trait ClusterReader: Send + Sync {
    /// One object, or `None` when absent. `namespace` is ignored for cluster-scoped kinds.
    fn get(&self, kind: &Gvk, namespace: Option<&str>, name: &str) -> Result<Option<String>, String>;

    /// Objects of a kind, optionally in one namespace and matching a label selector.
    fn list(&self, kind: &Gvk, namespace: Option<&str>, label_selector: Option<&str>) -> Result<Vec<String>, String>;

    /// Whether the reconcile may still act outside the cluster (send an outbound request) — not once the replica may
    /// have lost the role it reconciles in. Allowed unless the reader says otherwise.
    fn may_act(&self) -> Result<(), String> {
        Ok(())
    }
}

/// A reader that sees nothing; used where reads make no sense (`describe`).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoReads;

impl ClusterReader for NoReads {
    fn get(&self, _kind: &Gvk, _namespace: Option<&str>, _name: &str) -> Result<Option<String>, String> {
        Err("the host offers no reads during describe()".into())
    }

    fn list(&self, _: &Gvk, _: Option<&str>, _: Option<&str>) -> Result<Vec<String>, String> {
        Err("the host offers no reads during describe()".into())
    }
}

/// Longest log line kept from a plugin; longer ones are cut.
const MAX_LOG_LINE: usize = 4096;
/// Log lines kept per call; the rest are counted and dropped.
pub(crate) const MAX_LOG_LINES: u32 = 1000;

/// The error a plugin gets when it reads a kind it did not declare.
pub(crate) fn undeclared_kind_message(kind: &Gvk) -> String {
    format!("kind {kind} is not declared in the plugin's `owns` or `reads`; declare it in describe() to read it")
}

impl CallState {
    fn check_readable(&self, kind: &Gvk) -> Result<(), String> {
        match &self.spec {
            Some(spec) if spec.may_read(kind) => Ok(()),
            Some(_) => Err(undeclared_kind_message(kind)),
            None => Err("the host offers no reads during describe()".into()),
        }
    }
}

impl host::Host for CallState {
    fn log(&mut self, level: host::Level, message: String) {
        self.log_lines += 1;
        if self.log_lines > MAX_LOG_LINES {
            return;
        }
        let mut message = message;
        if message.len() > MAX_LOG_LINE {
            let mut cut = MAX_LOG_LINE;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
            message.push('…');
        }
        match level {
            host::Level::Trace => tracing::trace!("{message}"),
            host::Level::Debug => tracing::debug!("{message}"),
            host::Level::Info => tracing::info!("{message}"),
            host::Level::Warn => tracing::warn!("{message}"),
            host::Level::Error => tracing::error!("{message}"),
        }
    }

    /// In a `host.get` span for traces: the kind, namespace and name read, and whether the object was found.
    fn get(&mut self, kind: generated::Gvk, namespace: Option<String>, name: String) -> Result<Option<String>, String> {
        let kind = types::gvk(kind);
        let span = tracing::info_span!(
            target: crate::TRACE_ONLY_TARGET,
            "host.get",
            kind = %kind,
            namespace = namespace.as_deref(),
            name = %name,
            found = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        let _entered = span.enter();
        let result = self
            .check_readable(&kind)
            .and_then(|()| self.reader.get(&kind, namespace.as_deref(), &name));
        match &result {
            Ok(found) => span.record("found", found.is_some()),
            Err(_) => span.record("otel.status_code", "ERROR"),
        };
        result
    }

    /// In a `host.list` span for traces: the kind, namespace and label selector read, and how many objects matched.
    fn list(
        &mut self,
        kind: generated::Gvk,
        namespace: Option<String>,
        label_selector: Option<String>,
    ) -> Result<Vec<String>, String> {
        let kind = types::gvk(kind);
        let span = tracing::info_span!(
            target: crate::TRACE_ONLY_TARGET,
            "host.list",
            kind = %kind,
            namespace = namespace.as_deref(),
            label_selector = label_selector.as_deref(),
            count = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        let _entered = span.enter();
        let result = self
            .check_readable(&kind)
            .and_then(|()| self.reader.list(&kind, namespace.as_deref(), label_selector.as_deref()));
        match &result {
            Ok(objects) => span.record("count", objects.len() as i64),
            Err(_) => span.record("otel.status_code", "ERROR"),
        };
        result
    }
}
