//! The two entry points every way of running a plugin goes through, on the contract's wire records.
//!
//! The WebAssembly component converts the generated bindings to [`WorldView`] and [`Outcome`] (the records of
//! `wasm-reconciler-contract`, shared with the host) and calls [`describe`] and [`reconcile`]; a host that links a
//! plugin natively (benchmarks, tests) calls them directly. So the conversion code is the same on both paths.

pub use wasm_reconciler_contract::{ControllerSpec, Outcome, WorldView};

use crate::Reconciler;
use crate::outcome::OutcomeParts;

/// Calls `T::describe`.
pub fn describe<T: Reconciler>() -> ControllerSpec {
    T::describe()
}

/// Parses a wire view, calls `T::reconcile`, and converts the outcome to its wire form. `Err` carries the
/// message the host records as the plugin's error.
pub fn reconcile<T: Reconciler>(view: WorldView) -> Result<Outcome, String> {
    let view = parse_view(view).map_err(|error| error.to_string())?;
    let outcome = T::reconcile(view).map_err(|error| error.to_string())?;
    encode_outcome(outcome).map_err(|error| error.to_string())
}

/// The SDK's view of a wire view: the texts kept as they came, with what every plugin reads taken out.
fn parse_view(view: WorldView) -> Result<crate::WorldView, crate::Error> {
    crate::WorldView::from_texts(view.primary, view.children, view.config, view.deleting, view.attempt)
}

/// The wire form of a built outcome, or its first build error.
fn encode_outcome(outcome: crate::Outcome) -> Result<Outcome, crate::Error> {
    let mut parts = outcome.into_parts()?;
    let children = parts.whole_children()?;
    let OutcomeParts {
        status,
        conditions,
        events,
        requeue_after_ms,
        finalized,
        ..
    } = parts;
    Ok(Outcome {
        children,
        status,
        conditions,
        events,
        requeue_after_ms,
        finalized,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Condition, ConditionStatus, Event, EventType, Gvk};
    use serde_json::Value;
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

    /// Owns ConfigMaps and answers as its configuration says: a set of `replicas` children, or leave them alone.
    struct Chooser;

    impl Reconciler for Chooser {
        fn describe() -> crate::ControllerSpec {
            crate::ControllerSpec::new(crate::Gvk::new("example.com", "v1", "Widget")).owns(crate::Gvk::new(
                "",
                "v1",
                "ConfigMap",
            ))
        }

        fn reconcile(view: crate::WorldView) -> Result<crate::Outcome, crate::Error> {
            let replicas = view.config_json()["replicas"].as_u64().unwrap_or(0);
            let outcome = crate::Outcome::new().status(&json!({"replicas": replicas}));
            Ok(match view.config_json()["children"].as_str() {
                Some("alone") => outcome.leave_children_alone(),
                _ => outcome.children((0..replicas).map(|index| {
                    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c-{index}")}})
                })),
            })
        }
    }

    #[test]
    fn each_choice_about_children_crosses_the_wire() {
        let answer = |children: &str, replicas: u64| {
            reconcile::<Chooser>(WorldView {
                config: json!({"children": children, "replicas": replicas}).to_string(),
                ..wire_view()
            })
        };
        assert_eq!(answer("set", 2).unwrap().children.map(|set| set.len()), Some(2));
        // Scaling to zero: the empty set, so the host deletes the children.
        assert_eq!(answer("set", 0).unwrap().children, Some(Vec::new()));
        assert_eq!(answer("alone", 0).unwrap().children, None);
    }

    #[test]
    fn empty_config_text_reads_as_empty_object() {
        let view = parse_view(WorldView {
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
        assert!(
            error.starts_with("world view: child #0 is not a Kubernetes object: "),
            "{error}"
        );
        let error = reconcile::<Echo>(WorldView {
            primary: "nope".into(),
            ..wire_view()
        })
        .unwrap_err();
        assert!(
            error.starts_with("world view: primary is not a Kubernetes object: "),
            "{error}"
        );
    }
}
