//! Telemetry: Prometheus metrics, liveness and readiness, the HTTP server that exposes them, and traces.
//!
//! [`Metrics`] owns the registry every part of the host records into; [`Health`] holds the flags the probes
//! read; [`server`] serves `/metrics`, `/healthz` and `/readyz`; [`traces`] exports spans over OTLP when asked to.

mod health;
mod metrics;
pub mod plugin_status;
pub mod server;
pub mod traces;

pub use health::{Health, NotReady, Readiness};
pub use metrics::{DURATION_BUCKETS_SECONDS, Metrics, REASON_MEMORY_EXHAUSTED, REASON_TIMEOUT};
pub use server::{MetricsServer, OPENMETRICS_CONTENT_TYPE, router, serve};
