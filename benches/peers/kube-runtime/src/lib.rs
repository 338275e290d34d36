//! The `configmapset` controller written directly with kube-runtime, as a peer of the wasm plugin.
//!
//! Same semantics as `plugins/configmapset`: ConfigMaps `<set>-0…<set>-(replicas-1)` kept equal to the template
//! with a controller ownerReference, slow start in bursts, status with `Ready`, `Progressing` and `Reconciled`,
//! events, and the `examples.wasm-reconciler.io/drain` finalizer draining children in bursts.

pub mod controller;
pub mod replicas;
pub mod resource;
pub mod status;
