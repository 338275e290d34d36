//! The host side of the `types` WIT interface: the generated records to and from the contract's records
//! (`wasm-reconciler-contract`), the host's only conversion between the two.

use super::bindings::v0_1::wasm_reconciler::plugin::types as generated;
use super::{Condition, ConditionStatus, ControllerSpec, Event, EventType, Gvk, WorldView};

impl generated::Host for super::call::CallState {}

/// A kind from its generated record.
pub(crate) fn gvk(gvk: generated::Gvk) -> Gvk {
    Gvk {
        group: gvk.group,
        version: gvk.version,
        kind: gvk.kind,
    }
}

/// A controller spec from its generated record, unchecked.
pub(crate) fn controller_spec(spec: generated::ControllerSpec) -> ControllerSpec {
    ControllerSpec {
        primary: gvk(spec.primary),
        owns: spec.owns.into_iter().map(gvk).collect(),
        reads: spec.reads.into_iter().map(gvk).collect(),
        finalizer: spec.finalizer,
        resync_seconds: spec.resync_seconds,
    }
}

/// A world view in generated form; the JSON texts move, nothing is copied.
pub(crate) fn world_view(view: WorldView) -> generated::WorldView {
    generated::WorldView {
        primary: view.primary,
        children: view.children,
        config: view.config,
        deleting: view.deleting,
        attempt: view.attempt,
    }
}

/// An outcome from its generated record, unchecked (see [`super::outcome::decode`]).
pub(crate) fn outcome(answer: generated::Outcome) -> wasm_reconciler_contract::Outcome {
    wasm_reconciler_contract::Outcome {
        children: answer.children,
        status: answer.status,
        conditions: answer.conditions.into_iter().map(condition).collect(),
        events: answer.events.into_iter().map(event).collect(),
        requeue_after_ms: answer.requeue_after_ms,
        finalized: answer.finalized,
    }
}

/// A condition from its generated record, unchecked.
pub(crate) fn condition(condition: generated::Condition) -> Condition {
    Condition {
        condition_type: condition.type_,
        status: match condition.status {
            generated::ConditionStatus::True => ConditionStatus::True,
            generated::ConditionStatus::False => ConditionStatus::False,
            generated::ConditionStatus::Unknown => ConditionStatus::Unknown,
        },
        reason: condition.reason,
        message: condition.message,
    }
}

/// An event from its generated record, unchecked.
pub(crate) fn event(event: generated::Event) -> Event {
    Event {
        event_type: match event.type_ {
            generated::EventType::Normal => EventType::Normal,
            generated::EventType::Warning => EventType::Warning,
        },
        reason: event.reason,
        note: event.note,
    }
}
