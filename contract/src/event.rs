//! Events a plugin records on its primary object (`record event`).

use serde::{Deserialize, Serialize};

/// Kind of a Kubernetes Event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EventType {
    /// Something expected happened (`Normal`).
    Normal,
    /// Something the user should look at (`Warning`).
    Warning,
}

/// An event to record on the primary object; the host turns it into a Kubernetes Event and aggregates
/// repeats.
///
/// ```
/// use wasm_reconciler_contract::{Event, EventType};
///
/// let event = Event::normal("ScalingUp", "created 3 ConfigMaps");
/// assert_eq!(event.event_type, EventType::Normal);
/// assert_eq!(Event::warning("InvalidSpec", "replicas < 0").event_type, EventType::Warning);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// Normal or Warning.
    #[serde(rename = "type")]
    pub event_type: EventType,
    /// CamelCase reason, e.g. `ScalingUp`.
    pub reason: String,
    /// Human-readable description of what happened.
    pub note: String,
}

impl Event {
    /// A `Normal` event.
    pub fn normal(reason: impl Into<String>, note: impl Into<String>) -> Self {
        Self::new(EventType::Normal, reason, note)
    }

    /// A `Warning` event.
    pub fn warning(reason: impl Into<String>, note: impl Into<String>) -> Self {
        Self::new(EventType::Warning, reason, note)
    }

    /// An event with every field given.
    pub fn new(event_type: EventType, reason: impl Into<String>, note: impl Into<String>) -> Self {
        Self {
            event_type,
            reason: reason.into(),
            note: note.into(),
        }
    }
}
