//! End-to-end tests: the embedded API server over HTTP, the host, and the real example plugins, driven through
//! the `kube` client and `kubectl` as a user would.

mod audit_log;
mod configmap_delivery;
mod configmapset;
mod configmapset_lifecycle;
mod dependencies;
mod deploy;
mod differential;
mod dnsrecord;
mod echo_kind;
mod embedded_only;
mod failures;
mod fencing;
mod harness;
mod host_process;
mod in_pod;
mod journal;
mod kinds;
mod leader;
mod mirror;
mod plugin_configmaps;
mod polyglot;
mod powerdns;
mod rbac_grants;
mod real_only;
mod reconcile_audit;
mod registry;
mod registry_delivery;
mod request_info;
mod request_recorder;
mod scope;
mod sharding;
mod sharding_reads;
mod telemetry_probe;
mod through_kubectl;
mod webapp;
