//! The WebAssembly side of the contract: generated binding types to and from [`wire`] types.
//!
//! [`export_reconciler!`](crate::export_reconciler) implements the generated `Guest` trait with
//! [`describe`] and [`reconcile`] here, which go through [`wire::describe`] and [`wire::reconcile`]: the
//! same code a natively linked host runs.

use crate::bindings::wasm_reconciler::plugin::types;
use crate::{Reconciler, wire};

/// Fails to compile, at the exported type, unless it implements [`Reconciler`].
pub fn assert_reconciler<T: Reconciler>() {}

/// `describe` for the component export.
pub fn describe<T: Reconciler>() -> types::ControllerSpec {
    spec_to_bindgen(wire::describe::<T>())
}

/// `reconcile` for the component export.
pub fn reconcile<T: Reconciler>(view: types::WorldView) -> Result<types::Outcome, String> {
    wire::reconcile::<T>(view_from_bindgen(view)).map(outcome_to_bindgen)
}

/// A kind, in binding form.
pub fn gvk_to_bindgen(gvk: wire::Gvk) -> types::Gvk {
    types::Gvk {
        group: gvk.group,
        version: gvk.version,
        kind: gvk.kind,
    }
}

/// A controller spec, in binding form.
pub fn spec_to_bindgen(spec: wire::ControllerSpec) -> types::ControllerSpec {
    types::ControllerSpec {
        primary: gvk_to_bindgen(spec.primary),
        owns: spec.owns.into_iter().map(gvk_to_bindgen).collect(),
        reads: spec.reads.into_iter().map(gvk_to_bindgen).collect(),
        finalizer: spec.finalizer,
        resync_seconds: spec.resync_seconds,
    }
}

/// A world view, from binding form.
pub fn view_from_bindgen(view: types::WorldView) -> wire::WorldView {
    wire::WorldView {
        primary: view.primary,
        children: view.children,
        config: view.config,
        deleting: view.deleting,
        attempt: view.attempt,
    }
}

/// An outcome, in binding form.
pub fn outcome_to_bindgen(outcome: wire::Outcome) -> types::Outcome {
    types::Outcome {
        children: outcome.children,
        status: outcome.status,
        conditions: outcome
            .conditions
            .into_iter()
            .map(|condition| types::Condition {
                type_: condition.condition_type,
                status: match condition.status {
                    wire::ConditionStatus::True => types::ConditionStatus::True,
                    wire::ConditionStatus::False => types::ConditionStatus::False,
                    wire::ConditionStatus::Unknown => types::ConditionStatus::Unknown,
                },
                reason: condition.reason,
                message: condition.message,
            })
            .collect(),
        events: outcome
            .events
            .into_iter()
            .map(|event| types::Event {
                type_: match event.event_type {
                    wire::EventType::Normal => types::EventType::Normal,
                    wire::EventType::Warning => types::EventType::Warning,
                },
                reason: event.reason,
                note: event.note,
            })
            .collect(),
        requeue_after_ms: outcome.requeue_after_ms,
        finalized: outcome.finalized,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Condition, ControllerSpec, Error, Event, Gvk, Outcome, WorldView};

    struct Sample;

    impl Reconciler for Sample {
        fn describe() -> ControllerSpec {
            ControllerSpec::new(Gvk::new("example.com", "v1", "Widget"))
                .owns(Gvk::new("apps", "v1", "Deployment"))
                .finalizer("example.com/f")
        }

        fn reconcile(view: WorldView) -> Result<Outcome, Error> {
            Ok(Outcome::new()
                .condition(Condition::status_false("Ready", "NotYet", view.name()))
                .event(Event::normal("Seen", "n"))
                .requeue_after(std::time::Duration::from_secs(1)))
        }
    }

    #[test]
    fn describe_fills_binding_records() {
        let spec = describe::<Sample>();
        assert_eq!(spec.primary.kind, "Widget");
        assert_eq!(spec.owns[0].group, "apps");
        assert!(spec.reads.is_empty());
        assert_eq!(spec.finalizer.as_deref(), Some("example.com/f"));
        assert_eq!(spec.resync_seconds, None);
    }

    #[test]
    fn reconcile_maps_enums_and_options() {
        let view = types::WorldView {
            primary: r#"{"metadata":{"name":"w"}}"#.into(),
            children: Vec::new(),
            config: "{}".into(),
            deleting: false,
            attempt: 0,
        };
        let outcome = reconcile::<Sample>(view).unwrap();
        assert_eq!(outcome.children, None);
        assert_eq!(outcome.conditions[0].type_, "Ready");
        assert!(matches!(outcome.conditions[0].status, types::ConditionStatus::False));
        assert_eq!(outcome.conditions[0].message, "w");
        assert!(matches!(outcome.events[0].type_, types::EventType::Normal));
        assert_eq!(outcome.requeue_after_ms, Some(1000));
        assert!(!outcome.finalized);
    }
}
