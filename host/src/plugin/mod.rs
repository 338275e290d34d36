//! Plugin runtime: load, validate, compile, cache and call WebAssembly reconcilers under sandbox limits.
//!
//! Data flow: bytes → [`PluginEngine::load`] (header check, compile through the [`ArtifactCache`], contract
//! version check, `InstancePre`, `describe()`) → [`Plugin`] → [`Plugin::reconcile`] (fresh store with memory
//! limit and deadline per call) → checked [`Outcome`] or a typed [`ReconcileError`].

mod artifact_cache;
mod bindings;
mod call;
pub mod contract;
mod engine;
mod host_api;
mod limits;
mod load;
mod native;
mod object_reader;
mod outcome;
mod output;

pub use artifact_cache::{ArtifactCache, ArtifactCacheError};
pub use call::{CallLabels, ReconcileError};
pub use contract::{Condition, ConditionStatus, ControllerSpec, Event, EventType, Gvk, Outcome, WorldView};
pub use engine::{EngineError, PluginEngine};
pub use host_api::{ClusterReader, NoReads};
pub use limits::Limits;
pub use load::{LoadError, Plugin, WIT_PACKAGE, WIT_VERSION};
pub use native::NativePlugin;
pub use object_reader::ObjectReader;
pub(crate) use object_reader::object_key;
pub use outcome::RECONCILED_CONDITION;
