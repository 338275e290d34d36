//! Plugin runtime: load, validate, compile, cache and call WebAssembly reconcilers under sandbox limits.
//!
//! Data flow: bytes → [`PluginEngine::load`] (header check, compile through the [`ArtifactCache`], contract
//! version check, `InstancePre` on the linker of that [`Contract`], `describe()`) → [`Plugin`] (with the
//! [`Grants`] of its settings) → [`Plugin::reconcile`] (fresh store with memory limit, deadline and, for contract
//! 0.2, checked outbound HTTP and variables per call) → checked [`Outcome`] or a typed [`ReconcileError`].
//!
//! The contract's records ([`Gvk`], [`ControllerSpec`], [`WorldView`], [`Condition`], [`Event`]) come from
//! `wasm-reconciler-contract`, the crate the guest SDK shares; [`Outcome`] is the host's checked form of the
//! plugin's answer.

mod artifact_cache;
mod bindings;
mod call;
mod contract;
mod engine;
mod grants;
mod host_api;
mod instance;
mod limits;
mod load;
mod native;
mod object_reader;
pub mod outbound;
mod outcome;
mod output;
mod secrets;
mod types;
mod variables;
mod view;

pub use artifact_cache::{ArtifactCache, ArtifactCacheError};
pub use call::ReconcileError;
pub use contract::{Capabilities, Contract};
pub use engine::{EngineError, PluginEngine};
pub use grants::Grants;
pub use host_api::{ClusterReader, NoReads};
pub use limits::Limits;
pub use load::{LoadError, Plugin};
pub use native::NativePlugin;
pub use object_reader::ObjectReader;
pub(crate) use object_reader::object_key;
pub use outbound::{HostPattern, Network, OutboundCounters, OutboundPolicy};
pub use outcome::Outcome;
pub use secrets::SecretVariables;
pub use variables::{FixedVariables, NoVariables, SecretKeyRef, VariableSource, is_variable_name};
pub(crate) use variables::{is_dns_label, is_dns_subdomain};
pub use wasm_reconciler_contract::{
    Condition, ConditionStatus, ControllerSpec, Event, EventType, Gvk, RECONCILED_CONDITION, WIT_PACKAGE, WIT_VERSION,
    WorldView,
};
