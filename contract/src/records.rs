//! The two records that carry Kubernetes objects as JSON text: what the host observed, and what the plugin wants.

use serde_json::Value;

/// `record world-view`: what the host observed about one primary object.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WorldView {
    /// JSON text of the primary object.
    pub primary: String,
    /// JSON text of each observed child (objects of owned kinds whose controller ownerReference is the primary).
    pub children: Vec<String>,
    /// JSON text of the plugin configuration (`{}` when none is configured).
    pub config: String,
    /// The primary is being deleted and still carries the plugin's finalizer.
    pub deleting: bool,
    /// Consecutive failed reconciles of this primary so far.
    pub attempt: u32,
}

impl WorldView {
    /// A view of parsed JSON (fixtures, tests, benchmarks), each value serialised once; not deleting, attempt 0.
    pub fn from_json(primary: &Value, children: &[Value], config: &Value) -> Self {
        Self {
            primary: primary.to_string(),
            children: children.iter().map(Value::to_string).collect(),
            config: config.to_string(),
            deleting: false,
            attempt: 0,
        }
    }
}

/// `record outcome`: the plugin's desired state for one primary.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Outcome {
    /// JSON text of each desired child; `None` leaves children alone, `Some([])` deletes them all.
    pub children: Option<Vec<String>>,
    /// JSON text of an object merged into `.status`.
    pub status: Option<String>,
    /// Conditions to merge into `.status.conditions`.
    pub conditions: Vec<crate::Condition>,
    /// Events to record on the primary.
    pub events: Vec<crate::Event>,
    /// Reconcile again after this many milliseconds.
    pub requeue_after_ms: Option<u64>,
    /// With a deleting view: cleanup is complete and the finalizer may go.
    pub finalized: bool,
}
