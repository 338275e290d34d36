//! Sending one allowed request: resolve its host, refuse blocked addresses, connect to an address that was
//! checked (never resolving again), TLS for `https`, HTTP/1.1, and a response body cut at the size limit.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::future::Either;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt as _;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, WasiBody};

use super::{Destination, Host, OutboundPolicy, Scheme};

/// What happened to a request the allowlist let through.
pub(crate) enum Sent {
    /// A response arrived; the future drives the rest of the connection (the body).
    Response(http::Response<WasiBody>, ConnectionDriver),
    /// An address the host resolved to is in a blocked network: nothing was sent.
    Blocked {
        /// The address.
        address: std::net::IpAddr,
        /// The network that holds it.
        network: String,
    },
    /// The request failed after it was allowed.
    Failed(Error),
}

/// The rest of a connection's work once the response headers are in.
pub(crate) type ConnectionDriver = Box<dyn Future<Output = Result<(), Error>> + Send>;

/// How one request may use the network.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestLimits {
    /// From the start of the request to its response headers.
    pub(crate) timeout: Duration,
    /// Largest response body accepted.
    pub(crate) max_response_bytes: usize,
}

/// Sends `request` to `destination`, which the allowlist already let through, within the request timeout (name
/// resolution, connection, TLS, up to the response headers).
pub(crate) async fn send(
    policy: Arc<OutboundPolicy>,
    destination: Destination,
    request: http::Request<WasiBody>,
    limits: RequestLimits,
) -> Sent {
    match tokio::time::timeout(limits.timeout, send_checked(&policy, &destination, request, limits)).await {
        Ok(sent) => sent,
        Err(_) => Sent::Failed(Error::ConnectionReadTimeout),
    }
}

async fn send_checked(
    policy: &OutboundPolicy,
    destination: &Destination,
    mut request: http::Request<WasiBody>,
    limits: RequestLimits,
) -> Sent {
    let addresses = match resolve(destination).await {
        Ok(addresses) => addresses,
        Err(error) => return Sent::Failed(error),
    };
    if let Some((address, network)) = addresses.iter().find_map(|address| {
        policy
            .blocking(address.ip())
            .map(|network| (address.ip(), network.to_string()))
    }) {
        return Sent::Blocked { address, network };
    }
    // On the wire the request line carries only the path; the Host header (set from the URL) names the host.
    let path = request
        .uri()
        .path_and_query()
        .map_or_else(|| "/".to_owned(), |path| path.as_str().to_owned());
    *request.uri_mut() = match http::Uri::builder().path_and_query(path).build() {
        Ok(uri) => uri,
        Err(_) => return Sent::Failed(Error::HttpRequestUriInvalid),
    };
    match exchange(destination, &addresses, request, limits.max_response_bytes).await {
        Ok((response, driver)) => Sent::Response(response, driver),
        Err(error) => Sent::Failed(error),
    }
}

/// The addresses to try: the literal address, or what the name resolves to.
async fn resolve(destination: &Destination) -> Result<Vec<SocketAddr>, Error> {
    match &destination.host {
        Host::Address(address) => Ok(vec![SocketAddr::new(*address, destination.port)]),
        Host::Name(name) => {
            let found = tokio::net::lookup_host((name.as_str(), destination.port))
                .await
                .map_err(|error| Error::DnsError {
                    rcode: Some(error.to_string()),
                    info_code: None,
                })?;
            let addresses: Vec<SocketAddr> = found
                .map(|address| SocketAddr::new(address.ip().to_canonical(), address.port()))
                .collect();
            if addresses.is_empty() {
                return Err(Error::DnsError {
                    rcode: Some(format!("{name} has no address")),
                    info_code: None,
                });
            }
            Ok(addresses)
        }
    }
}

async fn exchange(
    destination: &Destination,
    addresses: &[SocketAddr],
    request: http::Request<WasiBody>,
    max_response_bytes: usize,
) -> Result<(http::Response<WasiBody>, ConnectionDriver), Error> {
    let stream = connect_any(addresses).await?;
    match destination.scheme {
        Scheme::Http => handshake(stream, request, max_response_bytes).await,
        Scheme::Https => {
            let server_name = match &destination.host {
                Host::Name(name) => ServerName::try_from(name.clone()).map_err(|_| Error::TlsProtocolError)?,
                Host::Address(address) => ServerName::from(*address),
            };
            let stream = TlsConnector::from(tls_config())
                .connect(server_name, stream)
                .await
                .map_err(tls_error)?;
            handshake(stream, request, max_response_bytes).await
        }
    }
}

async fn connect_any(addresses: &[SocketAddr]) -> Result<TcpStream, Error> {
    let mut last = Error::ConnectionRefused;
    for address in addresses {
        match TcpStream::connect(address).await {
            Ok(stream) => return Ok(stream),
            Err(error) => last = connect_error(&error),
        }
    }
    Err(last)
}

fn connect_error(error: &std::io::Error) -> Error {
    use std::io::ErrorKind;
    match error.kind() {
        ErrorKind::ConnectionRefused => Error::ConnectionRefused,
        ErrorKind::TimedOut => Error::ConnectionTimeout,
        ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted => Error::ConnectionTerminated,
        ErrorKind::HostUnreachable | ErrorKind::NetworkUnreachable | ErrorKind::AddrNotAvailable => {
            Error::DestinationUnavailable
        }
        _ => Error::InternalError(Some(format!("connecting: {error}"))),
    }
}

fn tls_error(error: std::io::Error) -> Error {
    match error.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
        Some(rustls::Error::InvalidCertificate(_)) => Error::TlsCertificateError,
        Some(rustls::Error::AlertReceived(alert)) => Error::TlsAlertReceived {
            alert_id: Some(u8::from(*alert)),
            alert_message: Some(format!("{alert:?}")),
        },
        _ => Error::TlsProtocolError,
    }
}

/// TLS for outbound requests: the system's trusted roots (as `kube` uses them), HTTP/1.1.
fn tls_config() -> Arc<ClientConfig> {
    static CONFIG: OnceLock<Arc<ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = RootCertStore::empty();
            let native = rustls_native_certs::load_native_certs();
            let (added, ignored) = roots.add_parsable_certificates(native.certs);
            tracing::debug!(
                added,
                ignored,
                errors = native.errors.len(),
                "trusted roots loaded for outbound TLS"
            );
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map(|builder| builder.with_root_certificates(roots).with_no_client_auth());
            match config {
                Ok(mut config) => {
                    config.alpn_protocols = vec![b"http/1.1".to_vec()];
                    Arc::new(config)
                }
                // The ring provider supports the default protocol versions; this cannot fail.
                Err(error) => unreachable!("ring supports TLS 1.2 and 1.3: {error}"),
            }
        })
        .clone()
}

async fn handshake<S>(
    stream: S,
    request: http::Request<WasiBody>,
    max_response_bytes: usize,
) -> Result<(http::Response<WasiBody>, ConnectionDriver), Error>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(Error::Hyper)?;
    let send = Box::pin(sender.send_request(request));
    let connection = Box::pin(connection);
    // The connection must be driven for the response to arrive; once it has, the driver finishes the body.
    let (response, connection) = match futures::future::select(send, connection).await {
        Either::Left((response, connection)) => (response.map_err(Error::Hyper)?, connection),
        Either::Right((finished, send)) => {
            finished.map_err(Error::Hyper)?;
            // The connection ended cleanly before a response: the send reports why.
            let response = send.await.map_err(Error::Hyper)?;
            return Ok((limit_body(response, max_response_bytes)?, Box::new(async { Ok(()) })));
        }
    };
    let driver: ConnectionDriver = Box::new(async move { connection.await.map_err(Error::Hyper) });
    Ok((limit_body(response, max_response_bytes)?, driver))
}

fn limit_body(
    response: http::Response<hyper::body::Incoming>,
    max_bytes: usize,
) -> Result<http::Response<WasiBody>, Error> {
    let declared = response
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    let limit = u64::try_from(max_bytes).unwrap_or(u64::MAX);
    if declared.is_some_and(|length| length > limit) {
        return Err(Error::HttpResponseBodySize(declared));
    }
    Ok(response.map(|body| {
        LimitedBody {
            inner: body,
            left: limit,
            limit,
        }
        .boxed_unsync()
    }))
}

/// A response body that fails once more than `limit` bytes arrived.
struct LimitedBody {
    inner: hyper::body::Incoming,
    left: u64,
    limit: u64,
}

impl Body for LimitedBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    let size = u64::try_from(data.len()).unwrap_or(u64::MAX);
                    if size > self.left {
                        let limit = self.limit;
                        self.left = 0;
                        return Poll::Ready(Some(Err(Error::HttpResponseBodySize(Some(limit)))));
                    }
                    self.left -= size;
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(error))) => Poll::Ready(Some(Err(Error::Hyper(error)))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
