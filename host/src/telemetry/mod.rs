//! Telemetry: Prometheus metrics, liveness and readiness, and the HTTP server that exposes them.
//!
//! [`Metrics`] owns the registry every part of the host records into; [`Health`] holds the flags the probes
//! read; [`server`] serves `/metrics`, `/healthz` and `/readyz`.

mod health;
mod metrics;
pub mod plugin_status;
pub mod server;

pub use health::{Health, NotReady, Readiness};
pub use metrics::{DURATION_BUCKETS_SECONDS, Metrics, REASON_MEMORY_EXHAUSTED, REASON_TIMEOUT};
pub use server::{MetricsServer, OPENMETRICS_CONTENT_TYPE, router, serve};
