//! What the host observes and schedules: shared informer caches, the workqueue, world-view assembly and dependency
//! tracking from reads.
//!
//! Data flow: watch events → [`cache`] → subscribers (controllers) enqueue keys in a [`workqueue`] → a worker
//! assembles the [`world_view`] from the caches, serves the plugin's reads through a [`CacheReader`] and records
//! them in the controller's [`Dependencies`].

pub mod cache;
mod dependencies;
pub mod fingerprint;
mod reader;
pub mod workqueue;
pub mod world_view;

pub use cache::{
    CacheChange, CacheSync, CachedObject, Caches, KindCache, Meta, ObjectKey, ResourceVersion, Subscription,
};
pub use dependencies::{Dependencies, Read};
pub use reader::{CacheReader, OnPending};
pub use workqueue::{Completion, QueueConfig, QueueMetrics, Source, WorkQueue};
