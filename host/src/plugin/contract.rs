//! The host's own types for the plugin contract, independent of the generated bindings.
//!
//! Plugins speak WIT records with JSON text inside; the rest of the host works with these types, whose JSON
//! is already parsed and checked.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A Kubernetes group, version and kind.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Gvk {
    /// API group; empty for the core group.
    pub group: String,
    /// API version within the group.
    pub version: String,
    /// Kind, CamelCase.
    pub kind: String,
}

impl Gvk {
    /// A group/version/kind.
    pub fn new(group: impl Into<String>, version: impl Into<String>, kind: impl Into<String>) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }

    /// The `apiVersion` field of objects of this kind: `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The kind of a JSON object, from its `apiVersion` and `kind` fields.
    pub fn of_object(object: &Value) -> Option<Self> {
        let api_version = object.get("apiVersion")?.as_str()?;
        let kind = object.get("kind")?.as_str()?;
        let (group, version) = match api_version.split_once('/') {
            Some((group, version)) => (group, version),
            None => ("", api_version),
        };
        if version.is_empty() || kind.is_empty() {
            return None;
        }
        Some(Self::new(group, version, kind))
    }
}

impl std::fmt::Display for Gvk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.api_version(), self.kind)
    }
}

/// What a plugin reconciles, as returned by its `describe` export.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ControllerSpec {
    /// The kind whose objects are reconciled.
    pub primary: Gvk,
    /// Kinds of children the plugin creates and owns.
    pub owns: Vec<Gvk>,
    /// Further kinds the plugin may read.
    pub reads: Vec<Gvk>,
    /// Finalizer the host manages on the plugin's behalf.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finalizer: Option<String>,
    /// Periodic re-reconcile interval.
    #[serde(skip_serializing_if = "Option::is_none", with = "optional_seconds")]
    pub resync: Option<Duration>,
}

impl ControllerSpec {
    /// True when the plugin may read objects of `gvk` with `get`/`list`: the primary, owned and read kinds.
    pub fn may_read(&self, gvk: &Gvk) -> bool {
        &self.primary == gvk || self.owns.contains(gvk) || self.reads.contains(gvk)
    }
}

/// Serialises an optional duration as whole seconds (`resyncSeconds` in YAML output).
mod optional_seconds {
    use std::time::Duration;

    use serde::Serializer;

    pub(super) fn serialize<S: Serializer>(value: &Option<Duration>, serializer: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(duration) => serializer.serialize_u64(duration.as_secs()),
            None => serializer.serialize_none(),
        }
    }
}

/// What the host observed about one primary, handed to the plugin.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorldView {
    /// The primary object.
    pub primary: Value,
    /// Children of owned kinds controlled by the primary.
    #[serde(default)]
    pub children: Vec<Value>,
    /// Plugin configuration; an empty object when none.
    #[serde(default = "empty_object")]
    pub config: Value,
    /// The primary is being deleted and carries the plugin's finalizer.
    #[serde(default)]
    pub deleting: bool,
    /// Consecutive failed reconciles so far.
    #[serde(default)]
    pub attempt: u32,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// Status of a condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConditionStatus {
    /// The condition holds.
    True,
    /// The condition does not hold.
    False,
    /// Not known.
    Unknown,
}

impl ConditionStatus {
    /// The Kubernetes spelling: `True`, `False`, `Unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::True => "True",
            Self::False => "False",
            Self::Unknown => "Unknown",
        }
    }
}

/// A condition asserted about the primary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Condition {
    /// Condition type, CamelCase.
    #[serde(rename = "type")]
    pub type_: String,
    /// Whether it holds.
    pub status: ConditionStatus,
    /// CamelCase reason.
    pub reason: String,
    /// Human-readable message.
    pub message: String,
}

/// Kind of event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventType {
    /// Normal operation.
    Normal,
    /// Something went wrong.
    Warning,
}

/// An event to record on the primary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// Normal or Warning.
    #[serde(rename = "type")]
    pub type_: EventType,
    /// CamelCase reason.
    pub reason: String,
    /// What happened.
    pub note: String,
}

/// A plugin's decoded and checked answer for one primary.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    /// Full desired set of children, each an object with apiVersion, kind and metadata.name; `None` leaves
    /// children alone.
    pub children: Option<Vec<Value>>,
    /// Object merged into `.status`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Value>,
    /// Conditions to merge.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Events to record.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Event>,
    /// Requeue delay in milliseconds.
    #[serde(
        skip_serializing_if = "Option::is_none",
        rename = "requeueAfterMs",
        with = "optional_millis"
    )]
    pub requeue_after: Option<Duration>,
    /// Cleanup done; the finalizer may go.
    pub finalized: bool,
}

/// Serialises an optional duration as milliseconds.
mod optional_millis {
    use std::time::Duration;

    use serde::Serializer;

    pub(super) fn serialize<S: Serializer>(value: &Option<Duration>, serializer: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(duration) => serializer.serialize_u64(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)),
            None => serializer.serialize_none(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn gvk_of_object_splits_api_version() {
        assert_eq!(
            Gvk::of_object(&json!({"apiVersion": "apps/v1", "kind": "Deployment"})),
            Some(Gvk::new("apps", "v1", "Deployment"))
        );
        assert_eq!(
            Gvk::of_object(&json!({"apiVersion": "v1", "kind": "ConfigMap"})),
            Some(Gvk::new("", "v1", "ConfigMap"))
        );
        assert_eq!(Gvk::of_object(&json!({"apiVersion": "apps/", "kind": "X"})), None);
        assert_eq!(Gvk::of_object(&json!({"kind": "X"})), None);
    }

    #[test]
    fn api_version_of_core_and_grouped_kinds() {
        assert_eq!(Gvk::new("", "v1", "Pod").api_version(), "v1");
        assert_eq!(Gvk::new("apps", "v1", "Deployment").api_version(), "apps/v1");
    }

    #[test]
    fn spec_may_read_declared_kinds_only() {
        let spec = ControllerSpec {
            primary: Gvk::new("ex.io", "v1", "Foo"),
            owns: vec![Gvk::new("", "v1", "ConfigMap")],
            reads: vec![Gvk::new("", "v1", "Secret")],
            finalizer: None,
            resync: None,
        };
        assert!(spec.may_read(&Gvk::new("ex.io", "v1", "Foo")));
        assert!(spec.may_read(&Gvk::new("", "v1", "ConfigMap")));
        assert!(spec.may_read(&Gvk::new("", "v1", "Secret")));
        assert!(!spec.may_read(&Gvk::new("", "v1", "Pod")));
    }
}
