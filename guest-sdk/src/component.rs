//! The WebAssembly side of the contract: the generated binding records to and from the contract's records.
//!
//! [`export_reconciler!`](crate::export_reconciler) implements the generated `Guest` trait with
//! [`describe`] and [`reconcile`] here, which go through [`wire::describe`] and [`wire::reconcile`]: the
//! same code a natively linked host runs. This is the SDK's only conversion between generated bindings and
//! `wasm-reconciler-contract`.

use crate::bindings::wasm_reconciler::plugin::types;
use crate::{Condition, ConditionStatus, ControllerSpec, Event, EventType, Gvk, Reconciler, wire};

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
pub fn gvk_to_bindgen(gvk: &Gvk) -> types::Gvk {
    types::Gvk {
        group: gvk.group.clone(),
        version: gvk.version.clone(),
        kind: gvk.kind.clone(),
    }
}

/// A controller spec, in binding form.
pub fn spec_to_bindgen(spec: ControllerSpec) -> types::ControllerSpec {
    types::ControllerSpec {
        primary: gvk_to_bindgen(&spec.primary),
        owns: spec.owns.iter().map(gvk_to_bindgen).collect(),
        reads: spec.reads.iter().map(gvk_to_bindgen).collect(),
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
        conditions: outcome.conditions.into_iter().map(condition_to_bindgen).collect(),
        events: outcome.events.into_iter().map(event_to_bindgen).collect(),
        requeue_after_ms: outcome.requeue_after_ms,
        finalized: outcome.finalized,
    }
}

fn condition_to_bindgen(condition: Condition) -> types::Condition {
    types::Condition {
        type_: condition.condition_type,
        status: match condition.status {
            ConditionStatus::True => types::ConditionStatus::True,
            ConditionStatus::False => types::ConditionStatus::False,
            ConditionStatus::Unknown => types::ConditionStatus::Unknown,
        },
        reason: condition.reason,
        message: condition.message,
    }
}

fn event_to_bindgen(event: Event) -> types::Event {
    types::Event {
        type_: match event.event_type {
            EventType::Normal => types::EventType::Normal,
            EventType::Warning => types::EventType::Warning,
        },
        reason: event.reason,
        note: event.note,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Error, Outcome, WorldView};

    struct Sample;

    impl Reconciler for Sample {
        fn describe() -> ControllerSpec {
            ControllerSpec::new(Gvk::new("example.com", "v1", "Widget"))
                .owns(Gvk::new("apps", "v1", "Deployment"))
                .finalizer("example.com/f")
        }

        fn reconcile(view: WorldView) -> Result<Outcome, Error> {
            Ok(Outcome::new()
                .leave_children_alone()
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
