//! Controller runtime: shared informer caches, the workqueue, world-view assembly, dependency tracking from
//! reads, and one controller per plugin.
//!
//! Data flow: watch events → [`cache`] → subscribers enqueue keys in the [`workqueue`] → [`controller`] workers
//! build the world view, call the plugin, and hand its outcome to [`crate::apply`].

pub mod cache;
pub mod controller;
mod dependencies;
pub mod manager;
mod reader;
pub mod workqueue;

pub use cache::{Caches, KindCache, ObjectKey};
pub use controller::{Controller, ControllerOptions, Logic, Version};
pub use manager::{Manager, UpdateError, UpdateResult};
