//! End-to-end tests: the embedded API server over HTTP, the host, and the real example plugins, driven through
//! the `kube` client and `kubectl` as a user would.

mod configmapset;
mod harness;
