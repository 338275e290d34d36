//! The plugin contract (`wit/reconciler.wit`) as plain Rust records: the one definition the host and the guest SDK
//! share, so the two cannot disagree on a shape.
//!
//! Objects cross the boundary as JSON text; the envelope is typed. [`WorldView`] and [`Outcome`] are the wire
//! records exactly as the WIT declares them (JSON as `String`); [`Gvk`], [`Condition`], [`Event`] and
//! [`ControllerSpec`] are used as they are on both sides. The WebAssembly bindings each side generates are
//! converted to and from these records in one place per side (`host/src/plugin/bindings.rs`,
//! `guest-sdk/src/component.rs`).

#![warn(missing_docs)]

mod condition;
mod controller_spec;
mod event;
mod gvk;
pub mod json;
mod records;

pub use condition::{Condition, ConditionStatus};
pub use controller_spec::ControllerSpec;
pub use event::{Event, EventType};
pub use gvk::Gvk;
pub use json::ChildSummary;
pub use records::{Outcome, WorldView};

/// The WIT package of the contract.
pub const WIT_PACKAGE: &str = "wasm-reconciler:plugin";
/// The contract version this crate describes (the WIT package version).
pub const WIT_VERSION: &str = "0.1.0";
/// The condition type the host reserves for its own verdict on every reconcile; plugins cannot set it.
pub const RECONCILED_CONDITION: &str = "Reconciled";
