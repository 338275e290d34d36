//! The contract's records as plain Rust structs, one to one with `wit/reconciler.wit`, objects as JSON text.
//!
//! Both ways of running a plugin go through this module: the WebAssembly component converts the
//! generated bindings to these structs and back, and a host that links a plugin natively (benchmarks,
//! tests) calls [`describe`] and [`reconcile`] directly. So the conversion code is the same on both paths.

use serde_json::{Map, Value};

pub use crate::host::Level;
use crate::outcome::OutcomeParts;
use crate::{Reconciler, condition, event};

/// `record gvk`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Gvk {
    /// API group; empty for the core group.
    pub group: String,
    /// Version within the group.
    pub version: String,
    /// Kind.
    pub kind: String,
}

/// `enum condition-status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConditionStatus {
    /// `true`.
    True,
    /// `false`.
    False,
    /// `unknown`.
    Unknown,
}

/// `record condition`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    /// `type`.
    pub condition_type: String,
    /// `status`.
    pub status: ConditionStatus,
    /// `reason`.
    pub reason: String,
    /// `message`.
    pub message: String,
}

/// `enum event-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// `normal`.
    Normal,
    /// `warning`.
    Warning,
}

/// `record event`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// `type`.
    pub event_type: EventType,
    /// `reason`.
    pub reason: String,
    /// `note`.
    pub note: String,
}

/// `record controller-spec`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerSpec {
    /// `primary`.
    pub primary: Gvk,
    /// `owns`.
    pub owns: Vec<Gvk>,
    /// `reads`.
    pub reads: Vec<Gvk>,
    /// `finalizer`.
    pub finalizer: Option<String>,
    /// `resync-seconds`.
    pub resync_seconds: Option<u32>,
}

/// `record world-view`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorldView {
    /// `primary`: JSON text of the primary object.
    pub primary: String,
    /// `children`: JSON text of each observed child.
    pub children: Vec<String>,
    /// `config`: JSON text of the plugin configuration (`{}` when none; empty text reads as `{}`).
    pub config: String,
    /// `deleting`.
    pub deleting: bool,
    /// `attempt`.
    pub attempt: u32,
}

/// `record outcome`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// `children`: JSON text of each desired child; `None` leaves children alone.
    pub children: Option<Vec<String>>,
    /// `status`: JSON text of the status object to merge.
    pub status: Option<String>,
    /// `conditions`.
    pub conditions: Vec<Condition>,
    /// `events`.
    pub events: Vec<Event>,
    /// `requeue-after-ms`.
    pub requeue_after_ms: Option<u64>,
    /// `finalized`.
    pub finalized: bool,
}

/// Calls `T::describe` and converts the spec to its wire form.
pub fn describe<T: Reconciler>() -> ControllerSpec {
    ControllerSpec::from(T::describe())
}

/// Parses a wire view, calls `T::reconcile`, and converts the outcome to its wire form. `Err` carries the
/// message the host records as the plugin's error.
pub fn reconcile<T: Reconciler>(view: WorldView) -> Result<Outcome, String> {
    let view = crate::WorldView::try_from(view).map_err(|error| error.to_string())?;
    let outcome = T::reconcile(view).map_err(|error| error.to_string())?;
    Outcome::try_from(outcome).map_err(|error| error.to_string())
}

impl From<crate::Gvk> for Gvk {
    fn from(gvk: crate::Gvk) -> Self {
        Self {
            group: gvk.group,
            version: gvk.version,
            kind: gvk.kind,
        }
    }
}

impl From<Gvk> for crate::Gvk {
    fn from(gvk: Gvk) -> Self {
        Self::new(gvk.group, gvk.version, gvk.kind)
    }
}

impl From<&crate::Gvk> for Gvk {
    fn from(gvk: &crate::Gvk) -> Self {
        Self::from(gvk.clone())
    }
}

impl From<crate::ControllerSpec> for ControllerSpec {
    fn from(spec: crate::ControllerSpec) -> Self {
        let (primary, owns, reads, finalizer, resync_seconds) = spec.into_parts();
        Self {
            primary: primary.into(),
            owns: owns.into_iter().map(Gvk::from).collect(),
            reads: reads.into_iter().map(Gvk::from).collect(),
            finalizer,
            resync_seconds,
        }
    }
}

impl TryFrom<WorldView> for crate::WorldView {
    type Error = crate::Error;

    fn try_from(view: WorldView) -> Result<Self, Self::Error> {
        let primary: Value = serde_json::from_str(&view.primary)
            .map_err(|error| crate::Error::from(error).context("world view: primary is not JSON"))?;
        let children = view
            .children
            .iter()
            .enumerate()
            .map(|(position, child)| {
                serde_json::from_str(child).map_err(|error| {
                    crate::Error::from(error).context(format_args!("world view: child #{position} is not JSON"))
                })
            })
            .collect::<Result<Vec<Value>, _>>()?;
        let config = if view.config.trim().is_empty() {
            Value::Object(Map::new())
        } else {
            serde_json::from_str(&view.config)
                .map_err(|error| crate::Error::from(error).context("world view: config is not JSON"))?
        };
        Ok(Self::from_parts(primary, children, config, view.deleting, view.attempt))
    }
}

impl TryFrom<crate::Outcome> for Outcome {
    type Error = crate::Error;

    fn try_from(outcome: crate::Outcome) -> Result<Self, Self::Error> {
        let OutcomeParts {
            children,
            status,
            conditions,
            events,
            requeue_after_ms,
            finalized,
        } = outcome.into_parts()?;
        Ok(Self {
            children: children.map(|children| children.iter().map(Value::to_string).collect()),
            status: status.as_ref().map(Value::to_string),
            conditions: conditions.into_iter().map(Condition::from).collect(),
            events: events.into_iter().map(Event::from).collect(),
            requeue_after_ms,
            finalized,
        })
    }
}

impl From<condition::Condition> for Condition {
    fn from(condition: condition::Condition) -> Self {
        Self {
            condition_type: condition.condition_type,
            status: match condition.status {
                condition::ConditionStatus::True => ConditionStatus::True,
                condition::ConditionStatus::False => ConditionStatus::False,
                condition::ConditionStatus::Unknown => ConditionStatus::Unknown,
            },
            reason: condition.reason,
            message: condition.message,
        }
    }
}

impl From<event::Event> for Event {
    fn from(event: event::Event) -> Self {
        Self {
            event_type: match event.event_type {
                event::EventType::Normal => EventType::Normal,
                event::EventType::Warning => EventType::Warning,
            },
            reason: event.reason,
            note: event.note,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    struct Echo;

    impl Reconciler for Echo {
        fn describe() -> crate::ControllerSpec {
            crate::ControllerSpec::new(crate::Gvk::new("example.com", "v1", "Widget"))
                .owns(crate::Gvk::new("", "v1", "ConfigMap"))
                .reads(crate::Gvk::new("", "v1", "Secret"))
                .finalizer("example.com/cleanup")
                .resync(Duration::from_secs(60))
        }

        fn reconcile(view: crate::WorldView) -> Result<crate::Outcome, crate::Error> {
            crate::ensure!(view.attempt() < 3, "gave up after {} attempts", view.attempt());
            let children: Vec<Value> = view.children_json().to_vec();
            Ok(crate::Outcome::new()
                .children(&children)
                .status(&json!({"name": view.name(), "config": view.config_json()}))
                .condition(crate::Condition::status_unknown("Ready", "Waiting", "m"))
                .event(crate::Event::warning("Seen", "n"))
                .requeue_after(Duration::from_millis(250))
                .finalized())
        }
    }

    fn wire_view() -> WorldView {
        WorldView {
            primary: r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}"#.into(),
            children: vec![r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}"#.into()],
            config: r#"{"a":1}"#.into(),
            deleting: true,
            attempt: 0,
        }
    }

    #[test]
    fn describe_converts_every_field() {
        let spec = describe::<Echo>();
        assert_eq!(
            spec,
            ControllerSpec {
                primary: Gvk {
                    group: "example.com".into(),
                    version: "v1".into(),
                    kind: "Widget".into()
                },
                owns: vec![Gvk {
                    group: String::new(),
                    version: "v1".into(),
                    kind: "ConfigMap".into()
                }],
                reads: vec![Gvk {
                    group: String::new(),
                    version: "v1".into(),
                    kind: "Secret".into()
                }],
                finalizer: Some("example.com/cleanup".into()),
                resync_seconds: Some(60),
            }
        );
    }

    #[test]
    fn reconcile_round_trips_every_field() {
        let outcome = reconcile::<Echo>(wire_view()).unwrap();
        assert_eq!(
            outcome,
            Outcome {
                children: Some(vec![
                    r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}"#.into()
                ]),
                status: Some(r#"{"name":"w","config":{"a":1}}"#.into()),
                conditions: vec![Condition {
                    condition_type: "Ready".into(),
                    status: ConditionStatus::Unknown,
                    reason: "Waiting".into(),
                    message: "m".into(),
                }],
                events: vec![Event {
                    event_type: EventType::Warning,
                    reason: "Seen".into(),
                    note: "n".into(),
                }],
                requeue_after_ms: Some(250),
                finalized: true,
            }
        );
    }

    #[test]
    fn empty_config_text_reads_as_empty_object() {
        let view = crate::WorldView::try_from(WorldView {
            config: String::new(),
            ..wire_view()
        })
        .unwrap();
        assert_eq!(view.config_json(), &json!({}));
        assert!(view.deleting());
    }

    #[test]
    fn plugin_error_becomes_the_error_string() {
        let error = reconcile::<Echo>(WorldView {
            attempt: 3,
            ..wire_view()
        })
        .unwrap_err();
        assert_eq!(error, "gave up after 3 attempts");
    }

    #[test]
    fn malformed_view_is_reported_before_the_plugin_runs() {
        let error = reconcile::<Echo>(WorldView {
            children: vec!["{".into()],
            ..wire_view()
        })
        .unwrap_err();
        assert!(error.starts_with("world view: child #0 is not JSON: "), "{error}");
        let error = reconcile::<Echo>(WorldView {
            primary: "nope".into(),
            ..wire_view()
        })
        .unwrap_err();
        assert!(error.starts_with("world view: primary is not JSON: "), "{error}");
    }
}
