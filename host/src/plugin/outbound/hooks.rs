//! The `wasi:http` hooks of one call: every request a plugin sends is checked against its policy here, before
//! anything leaves the host, and counted by result.

use std::sync::Arc;
use std::time::Duration;

use tracing::Instrument as _;
use wasmtime_wasi_http::p2::bindings::http::types::ErrorCode;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use super::connect::{self, RequestLimits, Sent};
use super::{Destination, Host, IoClock, OutboundCounters, OutboundPolicy, Scheme};
use crate::plugin::ClusterReader;

/// A response future as `wasi:http` expects it from [`WasiHttpHooks::send_request`].
type ResponseFuture = Box<
    dyn Future<
            Output = Result<
                (
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = Result<(), Error>> + Send>,
                ),
                Error,
            >,
        > + Send,
>;

/// The outbound side of one call.
pub(crate) struct OutboundHooks {
    policy: Arc<OutboundPolicy>,
    counters: OutboundCounters,
    clock: IoClock,
    request_timeout: Duration,
    max_response_bytes: usize,
    /// Whether the reconcile may still act outside the cluster (the replica's fence).
    reader: Arc<dyn ClusterReader>,
    /// The span the call was made in (the reconcile's): a request is sent in it, so its log lines name the plugin
    /// and the object wherever the request is driven.
    caller: tracing::Span,
}

impl OutboundHooks {
    /// Hooks enforcing `policy`, counting into `counters`, with the call's I/O clock, made in the caller's span.
    pub(crate) fn new(
        policy: Arc<OutboundPolicy>,
        counters: OutboundCounters,
        clock: IoClock,
        request_timeout: Duration,
        max_response_bytes: usize,
        reader: Arc<dyn ClusterReader>,
    ) -> Self {
        Self {
            policy,
            counters,
            clock,
            request_timeout,
            max_response_bytes,
            reader,
            caller: tracing::Span::current(),
        }
    }

    fn deny(&self, destination: &Destination) -> ResponseFuture {
        self.counters.denied.inc();
        tracing::warn!(
            %destination,
            "outbound request denied: no entry of the plugin's allowedOutboundHosts matches it; nothing was sent"
        );
        Box::new(std::future::ready(Err(Error::HttpRequestDenied)))
    }

    /// The request's timeout: the plugin's setting, shortened by what is left of its budget and by the timeouts
    /// the plugin asked for itself.
    fn timeout(&self, options: Option<RequestOptions>) -> Duration {
        let asked = options.and_then(|options| {
            [options.connect_timeout, options.first_byte_timeout]
                .into_iter()
                .flatten()
                .reduce(|a, b| a + b)
        });
        let mut timeout = self.request_timeout.min(self.clock.remaining());
        if let Some(asked) = asked {
            timeout = timeout.min(asked);
        }
        timeout
    }
}

/// The scheme, host and port a request goes to, as the allowlist sees them.
fn destination_of(uri: &http::Uri) -> Option<Destination> {
    let scheme = match uri.scheme_str()? {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        _ => return None,
    };
    let host = Host::parse(uri.host()?)?;
    Some(Destination {
        scheme,
        host,
        port: uri.port_u16().unwrap_or_else(|| scheme.default_port()),
    })
}

impl WasiHttpHooks for OutboundHooks {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _response_errors: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> ResponseFuture {
        let Some(destination) = destination_of(request.uri()) else {
            self.counters.denied.inc();
            tracing::warn!(uri = %request.uri(), "outbound request denied: its URL names no http or https host");
            return Box::new(std::future::ready(Err(Error::HttpRequestUriInvalid)));
        };
        let Some(pattern) = self.policy.allowing(&destination) else {
            return self.deny(&destination);
        };
        if let Err(fenced) = self.reader.may_act() {
            self.counters.failed.inc();
            tracing::warn!(%destination, reason = %fenced, "outbound request not sent");
            return Box::new(std::future::ready(Err(Error::InternalError(Some(fenced)))));
        }
        if self.clock.remaining().is_zero() {
            self.counters.failed.inc();
            tracing::warn!(%destination, budget = ?self.clock.budget(), "outbound request not sent: the call's outbound budget is spent");
            return Box::new(std::future::ready(Err(Error::InternalError(Some(format!(
                "the plugin's outbound budget of {:?} is spent",
                self.clock.budget()
            ))))));
        }
        tracing::debug!(%destination, allowed_by = %pattern, "outbound request");
        let limits = RequestLimits {
            timeout: self.timeout(options),
            max_response_bytes: self.max_response_bytes,
        };
        let policy = self.policy.clone();
        let counters = self.counters.clone();
        let writes = !matches!(
            *request.method(),
            http::Method::GET | http::Method::HEAD | http::Method::OPTIONS
        );
        // For traces: the request, from sending it to its response's head, under the plugin call.
        let span = tracing::info_span!(
            target: crate::TRACE_ONLY_TARGET,
            "outbound.request",
            otel.kind = "client",
            http.request.method = %request.method(),
            server.address = %destination.host,
            server.port = i64::from(destination.port),
            url.scheme = destination.scheme.as_str(),
            http.response.status_code = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        let request_span = span.clone();
        let sending = async move {
            match connect::send(policy, destination.clone(), request, limits).await {
                Sent::Response(response, driver) => {
                    counters.sent.inc();
                    if writes && response.status().is_success() {
                        counters.writes.inc();
                    }
                    request_span.record("http.response.status_code", i64::from(response.status().as_u16()));
                    if response.status().is_server_error() {
                        request_span.record("otel.status_code", "ERROR");
                    }
                    tracing::debug!(%destination, status = response.status().as_u16(), "outbound response");
                    Ok((response, driver))
                }
                Sent::Blocked { address, network } => {
                    counters.denied.inc();
                    tracing::warn!(
                        %destination,
                        %address,
                        %network,
                        "outbound request denied: its host resolves to an address in blockedNetworks; nothing was sent"
                    );
                    Err(Error::HttpRequestDenied)
                }
                Sent::Failed(error) => {
                    counters.failed.inc();
                    request_span.record("otel.status_code", "ERROR");
                    tracing::debug!(%destination, %error, "outbound request failed");
                    Err(error)
                }
            }
        };
        Box::new(sending.instrument(span).instrument(self.caller.clone()))
    }

    fn p2_error_from_hyper(&mut self, error: &hyper::Error) -> ErrorCode {
        tracing::debug!(%error, "outbound HTTP protocol error");
        if error.is_timeout() {
            ErrorCode::HttpResponseTimeout
        } else if error.is_incomplete_message() {
            ErrorCode::HttpResponseIncomplete
        } else {
            ErrorCode::HttpProtocolError
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_take_the_default_port_of_their_scheme() {
        let uri: http::Uri = "https://api.example.com/zones?x=1".parse().unwrap();
        assert_eq!(destination_of(&uri).unwrap().to_string(), "https://api.example.com:443");
        let uri: http::Uri = "http://[::1]:8081/".parse().unwrap();
        assert_eq!(destination_of(&uri).unwrap().to_string(), "http://[::1]:8081");
        let uri: http::Uri = "ftp://example.com/".parse().unwrap();
        assert!(destination_of(&uri).is_none());
    }
}
