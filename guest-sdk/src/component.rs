//! The WebAssembly side of the contract: the generated binding records to and from the contract's records.
//!
//! [`export_reconciler!`](crate::export_reconciler) implements the generated `Guest` trait with
//! [`describe`] and [`reconcile`] here, which go through [`wire::describe`] and [`wire::reconcile`]: the
//! same code a natively linked host runs. This is the SDK's only conversion between generated bindings and
//! `wasm-reconciler-contract`.

use std::mem::ManuallyDrop;
use std::rc::Rc;

use crate::bindings::wasm_reconciler::plugin::types;
use crate::bindings_v0_3::exports::wasm_reconciler::plugin0_3_0::controller as controller_v0_3;
use crate::bindings_v0_3::wasm_reconciler::plugin0_3_0::view as lent_view;
use crate::outcome::DesiredChild;
use crate::world_view::LentChildren;
use crate::{Condition, ConditionStatus, ControllerSpec, Event, EventType, Gvk, Reconciler, wire};
use wasm_reconciler_contract::ChildSummary;

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

/// `reconcile` for the component export of contract 0.3: the view stays the host's; the SDK's [`crate::WorldView`]
/// reads its children through it when the plugin asks, and children made from bases go back as bases and patches.
pub fn reconcile_v0_3<T: Reconciler>(view: &lent_view::WorldView) -> Result<controller_v0_3::Outcome, String> {
    // SAFETY: the handle is the host's loan of the view for this call. It is never dropped from here (so the loan is
    // not ended twice), and the host traps, rather than misreads, any use of it after the call returns.
    #[allow(unsafe_code)]
    let lent = HostView(ManuallyDrop::new(unsafe {
        lent_view::WorldView::from_handle(view.handle())
    }));
    let sdk_view = crate::WorldView::from_lent(
        view.primary(),
        Rc::new(lent),
        view.config(),
        view.deleting(),
        view.attempt(),
    )
    .map_err(|error| error.to_string())?;
    let outcome = T::reconcile(sdk_view).map_err(|error| error.to_string())?;
    let parts = outcome.into_parts().map_err(|error| error.to_string())?;
    Ok(controller_v0_3::Outcome {
        children: parts.children.map(|children| {
            children
                .into_iter()
                .map(|child| match child {
                    DesiredChild::Whole(text) => controller_v0_3::Child::Object(text),
                    DesiredChild::Patched { base, patch } => {
                        controller_v0_3::Child::Patched(controller_v0_3::Patched {
                            base: u32::try_from(base).unwrap_or(u32::MAX),
                            merge_patch: patch,
                        })
                    }
                })
                .collect()
        }),
        bases: parts.bases,
        status: parts.status,
        conditions: parts.conditions.into_iter().map(condition_to_bindgen).collect(),
        events: parts.events.into_iter().map(event_to_bindgen).collect(),
        requeue_after_ms: parts.requeue_after_ms,
        finalized: parts.finalized,
    })
}

/// The view the host lends for one call.
struct HostView(ManuallyDrop<lent_view::WorldView>);

impl LentChildren for HostView {
    fn child(&self, index: usize) -> Option<String> {
        self.0.child(u32::try_from(index).ok()?)
    }

    fn summaries(&self, expected: Option<&str>) -> Result<Vec<ChildSummary>, String> {
        Ok(self
            .0
            .children(expected)?
            .into_iter()
            .map(|summary| ChildSummary {
                api_version: summary.api_version,
                kind: summary.kind,
                name: summary.name,
                contains: summary.contains,
            })
            .collect())
    }
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
