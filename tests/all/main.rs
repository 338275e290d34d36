//! End-to-end tests: the embedded API server over HTTP, the host, and the real example plugins, driven through
//! the `kube` client and `kubectl` as a user would.

mod configmapset;
mod configmapset_lifecycle;
mod dependencies;
mod failures;
mod harness;
mod journal;
mod kinds;
mod resilience;
mod scope;
mod through_kubectl;
mod webapp;
