//! Tests that need what only a real control plane has — authorization (RBAC), ServiceAccount tokens — and so run on
//! one whatever `E2E_SERVER` says. `make test` runs this module in its pass against the real control plane only.

mod plugin_identity;
mod rbac;
