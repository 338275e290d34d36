//! Tests that need what only the embedded API server offers — fault injection (conflicts, server errors, dropped
//! and paused watches, latency), a restart on another port, a recording front — and so run on it whatever
//! `E2E_SERVER` says, and tests that need no API server at all (`plugin check`), which one pass is enough for.
//! `make test` skips this module in its pass against the real control plane.

mod plugin_check;
mod rbac_coverage;
mod resilience;
mod watched_namespaces;
