//! OpenTelemetry traces over OTLP (http/protobuf): off unless an OTLP endpoint is configured, with the standard
//! `OTEL_*` environment variables; one trace per reconcile.
//!
//! [`Settings::from_env`] decides, from the environment alone, whether traces are exported. [`Traces::start`] builds
//! the SDK's tracer provider (batch span processor, OTLP exporter, resource) — the SDK reads the variables it
//! knows itself: endpoint, headers, timeout and compression of the exporter, `OTEL_SERVICE_NAME` and
//! `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER` and its argument, `OTEL_BSP_*`. [`Traces::layer`] is the
//! `tracing` layer that turns the host's spans into OpenTelemetry spans, [`Traces::shutdown`] flushes what is
//! still queued.
//!
//! Which spans exist: a `reconcile` span per reconcile (the one log lines carry), and under it spans with the target
//! [`crate::TRACE_ONLY_TARGET`] for its steps, which log lines leave out. The attributes only traces carry (the
//! object's kind, namespace and name, the outcome) and the `queue.wait` span, which starts before the reconcile does,
//! are added here by the controller, and only when traces are on ([`enabled`]).

use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use opentelemetry::KeyValue;
use opentelemetry::trace::{Span as _, SpanKind, Status, Tracer as _, TracerProvider as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The service name spans are reported under unless `OTEL_SERVICE_NAME` or `OTEL_RESOURCE_ATTRIBUTES` names one.
pub const DEFAULT_SERVICE_NAME: &str = "wasm-reconciler";

/// The only OTLP protocol this host speaks.
const HTTP_PROTOBUF: &str = "http/protobuf";

/// How long shutting down may wait for the last spans to be sent.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// The tracer of the running process, set by [`Traces::start`]: its presence is what [`enabled`] reports.
static TRACER: OnceLock<SdkTracer> = OnceLock::new();

/// Why traces could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TracesError {
    /// A protocol other than http/protobuf was asked for.
    #[error(
        "{variable}={value} is not supported: this host exports traces over OTLP http/protobuf only (the collector's port 4318); unset it or set it to http/protobuf"
    )]
    UnsupportedProtocol {
        /// The variable that asked for it.
        variable: &'static str,
        /// Its value.
        value: String,
    },
    /// The exporter could not be built (an invalid endpoint or header, say).
    #[error("cannot export traces over OTLP")]
    Exporter(#[source] opentelemetry_otlp::ExporterBuildError),
}

/// A local `Result` of this module.
pub type Result<T, E = TracesError> = std::result::Result<T, E>;

/// What the environment asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settings {
    /// No traces, and why (for a debug line).
    Off(&'static str),
    /// Export over OTLP.
    Export {
        /// Neither `OTEL_SERVICE_NAME` nor `service.name` in `OTEL_RESOURCE_ATTRIBUTES` names the service: it is
        /// [`DEFAULT_SERVICE_NAME`].
        default_service_name: bool,
    },
}

impl Settings {
    /// The settings of this process's environment.
    pub fn from_process_env() -> Result<Self> {
        Self::from_env(|name| std::env::var(name).ok())
    }

    /// The settings `var` (an environment lookup) gives. Traces are exported only when an OTLP endpoint is set
    /// (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`; the OpenTelemetry default of
    /// localhost is not assumed, so a host without them sends nothing), unless `OTEL_SDK_DISABLED=true` or
    /// `OTEL_TRACES_EXPORTER` does not name `otlp`.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let set = |name: &str| {
            var(name)
                .map(|value| value.trim().to_owned())
                .filter(|value| !value.is_empty())
        };
        if set("OTEL_SDK_DISABLED").is_some_and(|value| value.eq_ignore_ascii_case("true")) {
            return Ok(Self::Off("OTEL_SDK_DISABLED=true"));
        }
        if let Some(exporters) = set("OTEL_TRACES_EXPORTER")
            && !exporters.split(',').any(|exporter| exporter.trim() == "otlp")
        {
            return Ok(Self::Off("OTEL_TRACES_EXPORTER does not name otlp"));
        }
        if set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_none() && set("OTEL_EXPORTER_OTLP_ENDPOINT").is_none() {
            return Ok(Self::Off("no OTLP endpoint is set"));
        }
        // The signal's own variable wins over the general one, as in the SDK.
        for variable in ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"] {
            if let Some(value) = set(variable) {
                if value != HTTP_PROTOBUF {
                    return Err(TracesError::UnsupportedProtocol { variable, value });
                }
                break;
            }
        }
        let names_service = set("OTEL_SERVICE_NAME").is_some()
            || set("OTEL_RESOURCE_ATTRIBUTES").is_some_and(|attributes| {
                attributes.split(',').any(|pair| {
                    pair.split_once('=')
                        .is_some_and(|(key, _)| key.trim() == "service.name")
                })
            });
        Ok(Self::Export {
            default_service_name: !names_service,
        })
    }
}

/// The OpenTelemetry pipeline of the process: started once, shut down (flushed) on the way out.
#[derive(Debug)]
pub struct Traces {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
}

impl Traces {
    /// Starts exporting when `settings` ask for it; `None` when they do not.
    pub fn start(settings: &Settings) -> Result<Option<Self>> {
        let Settings::Export { default_service_name } = settings else {
            return Ok(None);
        };
        // reqwest's TLS (an https endpoint) needs the process-wide crypto provider.
        crate::install_crypto_provider();
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .build()
            .map_err(TracesError::Exporter)?;
        let mut resource =
            Resource::builder().with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
        if *default_service_name {
            resource = resource.with_service_name(DEFAULT_SERVICE_NAME);
        }
        // The batch processor runs on a thread of its own and reads `OTEL_BSP_*`; the sampler comes from
        // `OTEL_TRACES_SAMPLER` (parent-based always-on by default).
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource.build())
            .build();
        let tracer = provider.tracer("wasm-reconciler");
        let _ = TRACER.set(tracer.clone());
        Ok(Some(Self { provider, tracer }))
    }

    /// The `tracing` layer that makes OpenTelemetry spans of the host's spans. Without source locations, thread
    /// names and targets: they would cost allocations per span and say nothing the span names do not.
    pub fn layer<S>(&self) -> tracing_opentelemetry::OpenTelemetryLayer<S, SdkTracer>
    where
        S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    {
        tracing_opentelemetry::layer()
            .with_tracer(self.tracer.clone())
            .with_location(false)
            .with_threads(false)
            .with_target(false)
    }

    /// Sends what is still queued and stops the exporter (waits up to 5 s).
    pub fn shutdown(self) {
        if let Err(error) = self.provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT) {
            tracing::warn!(error = %error, "traces: the last spans may not have been sent");
        }
    }
}

/// Whether traces are exported: the attributes and spans only traces carry are made only then.
pub fn enabled() -> bool {
    TRACER.get().is_some()
}

/// What the traces of a reconcile say about its primary, on its `reconcile` span: `object.kind`,
/// `object.api_version`, `object.namespace` (when namespaced) and `object.name`. Nothing when traces are off.
pub fn describe_object(reconcile: &tracing::Span, api_version: &str, kind: &str, namespace: Option<&str>, name: &str) {
    if !enabled() {
        return;
    }
    reconcile.set_attribute("object.kind", kind.to_owned());
    reconcile.set_attribute("object.api_version", api_version.to_owned());
    if let Some(namespace) = namespace {
        reconcile.set_attribute("object.namespace", namespace.to_owned());
    }
    reconcile.set_attribute("object.name", name.to_owned());
}

/// The `queue.wait` span of a reconcile: from when its key became ready to `handed_out`, `waited` earlier than
/// that, a child of the reconcile though it starts before it. Nothing when traces are off.
pub fn record_queue_wait(reconcile: &tracing::Span, handed_out: SystemTime, waited: Duration) {
    let Some(tracer) = TRACER.get() else { return };
    let parent = reconcile.context();
    let mut span = tracer
        .span_builder("queue.wait")
        .with_kind(SpanKind::Internal)
        .with_start_time(handed_out.checked_sub(waited).unwrap_or(handed_out))
        .start_with_context(tracer, &parent);
    span.end_with_timestamp(handed_out);
}

/// How a reconcile ended, on its `reconcile` span: `outcome` (`success`, `error`, `conflict`, `deferred` — the
/// `result` label of `wasm_reconciler_reconcile_total` — or `skipped`), `outcome.reason` when there is one, and an
/// error status on an error. Nothing when traces are off.
pub fn record_outcome(reconcile: &tracing::Span, outcome: &'static str, reason: Option<&'static str>) {
    if !enabled() {
        return;
    }
    reconcile.set_attribute("outcome", outcome);
    if let Some(reason) = reason {
        reconcile.set_attribute("outcome.reason", reason);
    }
    if outcome == "error" {
        reconcile.set_status(Status::error(reason.unwrap_or("error")));
    }
}

/// A filter for the traces layer: the host's own spans and its log events of INFO and above (recorded as span
/// events of the span they happen in), whatever `RUST_LOG` says; nothing of other crates.
pub fn filter() -> tracing_subscriber::filter::Targets {
    tracing_subscriber::filter::Targets::new().with_target("wasm_reconciler", tracing::Level::INFO)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> Result<Settings> {
        let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        Settings::from_env(|name| {
            pairs
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.clone())
        })
    }

    const ENDPOINT: (&str, &str) = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318");

    #[test]
    fn off_without_an_endpoint() {
        assert_eq!(settings(&[]).unwrap(), Settings::Off("no OTLP endpoint is set"));
        assert_eq!(
            settings(&[("OTEL_SERVICE_NAME", "x"), ("OTEL_EXPORTER_OTLP_ENDPOINT", " ")]).unwrap(),
            Settings::Off("no OTLP endpoint is set")
        );
    }

    #[test]
    fn either_endpoint_turns_them_on() {
        let on = Settings::Export {
            default_service_name: true,
        };
        assert_eq!(settings(&[ENDPOINT]).unwrap(), on);
        assert_eq!(
            settings(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://collector:4318/v1/traces")]).unwrap(),
            on
        );
    }

    #[test]
    fn disabled_sdk_and_other_exporters_turn_them_off() {
        assert_eq!(
            settings(&[ENDPOINT, ("OTEL_SDK_DISABLED", "TRUE")]).unwrap(),
            Settings::Off("OTEL_SDK_DISABLED=true")
        );
        assert!(matches!(
            settings(&[ENDPOINT, ("OTEL_SDK_DISABLED", "false")]).unwrap(),
            Settings::Export { .. }
        ));
        assert_eq!(
            settings(&[ENDPOINT, ("OTEL_TRACES_EXPORTER", "none")]).unwrap(),
            Settings::Off("OTEL_TRACES_EXPORTER does not name otlp")
        );
        assert!(matches!(
            settings(&[ENDPOINT, ("OTEL_TRACES_EXPORTER", "console, otlp")]).unwrap(),
            Settings::Export { .. }
        ));
    }

    #[test]
    fn only_http_protobuf_is_spoken_and_the_signal_variable_wins() {
        assert!(matches!(
            settings(&[ENDPOINT, ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")]).unwrap(),
            Settings::Export { .. }
        ));
        let error = settings(&[ENDPOINT, ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported"),
            "{error}"
        );
        assert!(matches!(
            settings(&[
                ENDPOINT,
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
            ])
            .unwrap(),
            Settings::Export { .. }
        ));
        assert!(matches!(
            settings(&[ENDPOINT, ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json")]),
            Err(TracesError::UnsupportedProtocol {
                variable: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
                ..
            })
        ));
    }

    #[test]
    fn the_service_is_named_unless_the_environment_names_it() {
        let named = Settings::Export {
            default_service_name: false,
        };
        assert_eq!(
            settings(&[ENDPOINT, ("OTEL_SERVICE_NAME", "reconciler-a")]).unwrap(),
            named
        );
        assert_eq!(
            settings(&[ENDPOINT, ("OTEL_RESOURCE_ATTRIBUTES", "k8s.pod.name=p, service.name=b")]).unwrap(),
            named
        );
        assert_eq!(
            settings(&[ENDPOINT, ("OTEL_RESOURCE_ATTRIBUTES", "k8s.pod.name=p")]).unwrap(),
            Settings::Export {
                default_service_name: true
            }
        );
    }
}
