//! A small blocking HTTP client for plugins built against contract 0.2 (`export_reconciler!(T, contract = "0.2")`).
//!
//! Requests go out through `wasi:http/outgoing-handler`; the host sends one only when it matches an entry of the
//! plugin's `allowedOutboundHosts` setting, and answers anything else with [`HttpErrorKind::Denied`] without
//! sending it. Time spent waiting for responses counts against the plugin's outbound budget, not its deadline.
//!
//! ```no_run
//! use serde::Deserialize;
//! use wasm_reconciler_sdk::{http, variables};
//!
//! #[derive(Deserialize)]
//! struct Zone {
//!     serial: u64,
//! }
//!
//! # fn main() -> Result<(), wasm_reconciler_sdk::Error> {
//! let zone: Zone = http::Request::get("http://127.0.0.1:8081/api/v1/servers/localhost/zones/example.org.")
//!     .header("X-API-Key", &variables::get("api_key")?)
//!     .send()?
//!     .error_for_status()?
//!     .json()?;
//! # let _ = zone.serial;
//! # Ok(())
//! # }
//! ```
//!
//! Redirects are followed (up to [`Request::max_redirects`], 5 by default); each one is a new request the host
//! checks against the allowlist again. In a native build (unit tests) requests go to the installed
//! [`NativeHost`](crate::native::NativeHost).

use std::fmt;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::Error;

/// An HTTP method.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Method {
    /// `GET`
    Get,
    /// `HEAD`
    Head,
    /// `POST`
    Post,
    /// `PUT`
    Put,
    /// `PATCH`
    Patch,
    /// `DELETE`
    Delete,
    /// `OPTIONS`
    Options,
    /// Any other method, by name.
    Other(String),
}

impl Method {
    /// The method's name, `GET`.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Get => "GET",
            Self::Head => "HEAD",
            Self::Post => "POST",
            Self::Put => "PUT",
            Self::Patch => "PATCH",
            Self::Delete => "DELETE",
            Self::Options => "OPTIONS",
            Self::Other(name) => name,
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `http` or `https`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// Plain HTTP.
    Http,
    /// HTTP over TLS (the host does the TLS).
    Https,
}

/// A URL split the way `wasi:http` takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// `http` or `https`.
    pub scheme: Scheme,
    /// `host[:port]`.
    pub authority: String,
    /// The path and query, starting with `/`.
    pub path_with_query: String,
}

impl Url {
    /// Parses an absolute `http` or `https` URL; the fragment is dropped.
    ///
    /// ```
    /// use wasm_reconciler_sdk::http::{Scheme, Url};
    ///
    /// let url = Url::parse("https://api.example.com:8443/zones?rrsets=false#top").unwrap();
    /// assert_eq!(url.scheme, Scheme::Https);
    /// assert_eq!(url.authority, "api.example.com:8443");
    /// assert_eq!(url.path_with_query, "/zones?rrsets=false");
    /// assert!(Url::parse("ftp://example.com/").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Self, HttpError> {
        let invalid = |why: &str| HttpError::new(HttpErrorKind::InvalidUrl, format!("{text:?}: {why}"));
        let (scheme, rest) = text.split_once("://").ok_or_else(|| invalid("not an absolute URL"))?;
        let scheme = match scheme.to_ascii_lowercase().as_str() {
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            _ => return Err(invalid("only http and https URLs are supported")),
        };
        let rest = rest.split('#').next().unwrap_or_default();
        let split = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(split);
        if authority.is_empty() || authority.contains(char::is_whitespace) {
            return Err(invalid("no host"));
        }
        let path_with_query = match path {
            "" => "/".to_owned(),
            path if path.starts_with('?') => format!("/{path}"),
            path => path.to_owned(),
        };
        Ok(Self {
            scheme,
            authority: authority.to_owned(),
            path_with_query,
        })
    }

    /// Resolves a `Location` header against this URL: absolute, scheme-relative, absolute-path or relative.
    fn join(&self, location: &str) -> Result<Self, HttpError> {
        if location.contains("://") {
            return Self::parse(location);
        }
        let scheme = match self.scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
        };
        if let Some(rest) = location.strip_prefix("//") {
            return Self::parse(&format!("{scheme}://{rest}"));
        }
        let path = if location.starts_with('/') {
            location.to_owned()
        } else {
            let base = self.path_with_query.split('?').next().unwrap_or("/");
            let directory = &base[..base.rfind('/').map_or(0, |slash| slash + 1)];
            format!("{directory}{location}")
        };
        Self::parse(&format!("{scheme}://{}{path}", self.authority))
    }
}

impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = match self.scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
        };
        write!(f, "{scheme}://{}{}", self.authority, self.path_with_query)
    }
}

/// An HTTP request, built step by step and sent with [`Request::send`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The method.
    pub method: Method,
    /// The URL, as given (parsed when sent).
    pub url: String,
    /// Header fields, in order.
    pub headers: Vec<(String, String)>,
    /// The body (empty for none).
    pub body: Vec<u8>,
    /// Longest wait for the response headers; the host's `outboundTimeout` applies too.
    pub timeout: Option<Duration>,
    /// Redirects followed before giving up.
    pub max_redirects: u32,
}

impl Request {
    /// A request with no headers and no body.
    pub fn new(method: Method, url: impl Into<String>) -> Self {
        Self {
            method,
            url: url.into(),
            headers: Vec::new(),
            body: Vec::new(),
            timeout: None,
            max_redirects: 5,
        }
    }

    /// A `GET` request.
    pub fn get(url: impl Into<String>) -> Self {
        Self::new(Method::Get, url)
    }

    /// A `POST` request.
    pub fn post(url: impl Into<String>) -> Self {
        Self::new(Method::Post, url)
    }

    /// A `PUT` request.
    pub fn put(url: impl Into<String>) -> Self {
        Self::new(Method::Put, url)
    }

    /// A `PATCH` request.
    pub fn patch(url: impl Into<String>) -> Self {
        Self::new(Method::Patch, url)
    }

    /// A `DELETE` request.
    pub fn delete(url: impl Into<String>) -> Self {
        Self::new(Method::Delete, url)
    }

    /// Adds a header field.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// Sets a JSON body and `Content-Type: application/json`.
    pub fn json<T: Serialize + ?Sized>(self, value: &T) -> Result<Self, Error> {
        let body = serde_json::to_vec(value)?;
        Ok(self.header("Content-Type", "application/json").body(body))
    }

    /// Gives up waiting for the response headers after `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Follows at most `redirects` redirects (0: return the redirect response itself).
    pub fn max_redirects(mut self, redirects: u32) -> Self {
        self.max_redirects = redirects;
        self
    }

    /// Sends the request and reads the whole response, following redirects.
    pub fn send(self) -> Result<Response, HttpError> {
        let mut url = Url::parse(&self.url)?;
        let mut method = self.method.clone();
        let mut body = self.body.clone();
        let mut redirects = 0;
        loop {
            let exchange = Exchange {
                method: &method,
                url: &url,
                headers: &self.headers,
                body: &body,
                timeout: self.timeout,
            };
            let response = backend::send(&exchange).map_err(|error| error.during(&method, &url))?;
            let location = response.header("location").map(str::to_owned);
            let redirected = matches!(response.status, 301 | 302 | 303 | 307 | 308);
            match location {
                Some(location) if redirected && redirects < self.max_redirects => {
                    redirects += 1;
                    url = url.join(&location).map_err(|error| error.during(&method, &url))?;
                    // As browsers do: a 303, or a 301/302 answering a POST, is followed with a GET and no body.
                    if response.status == 303 || (matches!(response.status, 301 | 302) && method == Method::Post) {
                        method = Method::Get;
                        body.clear();
                    }
                }
                _ => return Ok(response),
            }
        }
    }
}

/// One request on the wire, as a backend sends it.
#[derive(Debug)]
pub(crate) struct Exchange<'a> {
    pub(crate) method: &'a Method,
    pub(crate) url: &'a Url,
    pub(crate) headers: &'a [(String, String)],
    pub(crate) body: &'a [u8],
    pub(crate) timeout: Option<Duration>,
}

/// A whole HTTP response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Header fields, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// A response with `status`, no headers and `body`; for native tests.
    pub fn new(status: u16, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// Adds a header field; for native tests.
    pub fn with_header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_ascii_lowercase(), value.into()));
        self
    }

    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(field, _)| field.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The body as UTF-8 text.
    pub fn text(&self) -> Result<&str, Error> {
        std::str::from_utf8(&self.body).map_err(|error| Error::from(error).context("reading the response body"))
    }

    /// The body parsed as JSON.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, Error> {
        serde_json::from_slice(&self.body).map_err(|error| Error::from(error).context("parsing the response body"))
    }

    /// The response itself when its status is 2xx; else an [`HttpErrorKind::Status`] error carrying the status
    /// and the start of the body.
    pub fn error_for_status(self) -> Result<Self, HttpError> {
        if self.is_success() {
            return Ok(self);
        }
        let text = String::from_utf8_lossy(&self.body);
        let excerpt: String = text.chars().take(200).collect();
        Err(HttpError::new(
            HttpErrorKind::Status(self.status),
            format!("the server answered {}: {}", self.status, excerpt.trim()),
        ))
    }
}

/// What went wrong with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpErrorKind {
    /// The host refused to send it: no entry of `allowedOutboundHosts` matches, or its host resolves to a blocked
    /// network. Nothing was sent.
    Denied,
    /// No response in time (the request's timeout, the host's `outboundTimeout` or the outbound budget).
    Timeout,
    /// The server could not be reached: connection refused or reset, unreachable.
    Connect,
    /// The host name did not resolve.
    Dns,
    /// TLS failed: untrusted certificate, handshake error.
    Tls,
    /// The response body is over the host's `maxResponseSize`.
    TooLarge,
    /// The URL is not an absolute `http` or `https` URL.
    InvalidUrl,
    /// The response had a non-2xx status ([`Response::error_for_status`]).
    Status(u16),
    /// Anything else: a protocol error, a header the host refuses, an internal error.
    Other,
}

/// A failed request: what kind of failure, and a message naming the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpError {
    kind: HttpErrorKind,
    message: String,
}

impl HttpError {
    /// An error of `kind` with `message`.
    pub fn new(kind: HttpErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// What kind of failure it is.
    pub fn kind(&self) -> HttpErrorKind {
        self.kind
    }

    /// Whether the host refused to send the request.
    pub fn is_denied(&self) -> bool {
        self.kind == HttpErrorKind::Denied
    }

    fn during(self, method: &Method, url: &Url) -> Self {
        Self {
            kind: self.kind,
            message: format!("{method} {url}: {}", self.message),
        }
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for HttpError {}

#[cfg(target_arch = "wasm32")]
mod backend {
    //! Requests through `wasi:http/outgoing-handler`.

    use wasip2::http::outgoing_handler;
    use wasip2::http::types::{
        ErrorCode, Fields, IncomingBody, Method as WasiMethod, OutgoingBody, OutgoingRequest, RequestOptions,
        Scheme as WasiScheme,
    };
    use wasip2::io::streams::StreamError;

    use super::{Exchange, HttpError, HttpErrorKind, Method, Response, Scheme};

    /// Largest write to the request body stream at once.
    const WRITE_CHUNK: usize = 4096;
    /// Largest read from the response body stream at once.
    const READ_CHUNK: u64 = 64 * 1024;

    pub(super) fn send(exchange: &Exchange<'_>) -> Result<Response, HttpError> {
        let mut fields: Vec<(String, Vec<u8>)> = exchange
            .headers
            .iter()
            .map(|(name, value)| (name.to_ascii_lowercase(), value.as_bytes().to_vec()))
            .collect();
        if !exchange.body.is_empty() && !fields.iter().any(|(name, _)| name == "content-length") {
            fields.push(("content-length".into(), exchange.body.len().to_string().into_bytes()));
        }
        let headers = Fields::from_list(&fields)
            .map_err(|error| HttpError::new(HttpErrorKind::Other, format!("a header is not allowed: {error:?}")))?;
        let request = OutgoingRequest::new(headers);
        let method = match exchange.method {
            Method::Get => WasiMethod::Get,
            Method::Head => WasiMethod::Head,
            Method::Post => WasiMethod::Post,
            Method::Put => WasiMethod::Put,
            Method::Patch => WasiMethod::Patch,
            Method::Delete => WasiMethod::Delete,
            Method::Options => WasiMethod::Options,
            Method::Other(name) => WasiMethod::Other(name.clone()),
        };
        let invalid = || HttpError::new(HttpErrorKind::InvalidUrl, "the host refused the URL's parts");
        request.set_method(&method).map_err(|()| invalid())?;
        let scheme = match exchange.url.scheme {
            Scheme::Http => WasiScheme::Http,
            Scheme::Https => WasiScheme::Https,
        };
        request.set_scheme(Some(&scheme)).map_err(|()| invalid())?;
        request
            .set_authority(Some(&exchange.url.authority))
            .map_err(|()| invalid())?;
        request
            .set_path_with_query(Some(&exchange.url.path_with_query))
            .map_err(|()| invalid())?;
        let body = request
            .body()
            .map_err(|()| HttpError::new(HttpErrorKind::Other, "the request body was taken twice"))?;
        let options = exchange.timeout.map(|timeout| {
            let options = RequestOptions::new();
            let nanos = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
            // A host that does not take a timeout keeps its own; the outbound timeout applies either way.
            let _ = options.set_connect_timeout(Some(nanos));
            let _ = options.set_first_byte_timeout(Some(nanos));
            options
        });
        let pending = outgoing_handler::handle(request, options).map_err(failure)?;
        // The body is written once the request is on its way, so a large body never waits for a reader.
        write_body(&body, exchange.body)?;
        OutgoingBody::finish(body, None).map_err(failure)?;
        pending.subscribe().block();
        let response = match pending.get() {
            Some(Ok(Ok(response))) => response,
            Some(Ok(Err(code))) => return Err(failure(code)),
            Some(Err(())) | None => {
                return Err(HttpError::new(HttpErrorKind::Other, "the response was already taken"));
            }
        };
        let status = response.status();
        let headers = response
            .headers()
            .entries()
            .into_iter()
            .map(|(name, value)| (name.to_ascii_lowercase(), String::from_utf8_lossy(&value).into_owned()))
            .collect();
        let incoming = response
            .consume()
            .map_err(|()| HttpError::new(HttpErrorKind::Other, "the response body was taken twice"))?;
        let body = read_body(&incoming)?;
        drop(IncomingBody::finish(incoming));
        Ok(Response { status, headers, body })
    }

    fn write_body(body: &OutgoingBody, bytes: &[u8]) -> Result<(), HttpError> {
        if bytes.is_empty() {
            return Ok(());
        }
        let stream = body
            .write()
            .map_err(|()| HttpError::new(HttpErrorKind::Other, "the request body stream was taken twice"))?;
        for chunk in bytes.chunks(WRITE_CHUNK) {
            stream
                .blocking_write_and_flush(chunk)
                .map_err(|error| stream_failure("writing the request body", error))?;
        }
        Ok(())
    }

    fn read_body(body: &IncomingBody) -> Result<Vec<u8>, HttpError> {
        let stream = body
            .stream()
            .map_err(|()| HttpError::new(HttpErrorKind::Other, "the response body stream was taken twice"))?;
        let mut bytes = Vec::new();
        loop {
            match stream.blocking_read(READ_CHUNK) {
                Ok(chunk) => bytes.extend_from_slice(&chunk),
                Err(StreamError::Closed) => return Ok(bytes),
                Err(error) => return Err(stream_failure("reading the response body", error)),
            }
        }
    }

    fn stream_failure(doing: &str, error: StreamError) -> HttpError {
        match error {
            StreamError::LastOperationFailed(error) => {
                // The host puts the response error (a body over the size limit, a reset) behind the stream error.
                match wasip2::http::types::http_error_code(&error) {
                    Some(code) => failure(code),
                    None => HttpError::new(HttpErrorKind::Other, format!("{doing}: {}", error.to_debug_string())),
                }
            }
            StreamError::Closed => HttpError::new(HttpErrorKind::Other, format!("{doing}: the stream closed")),
        }
    }

    fn failure(code: ErrorCode) -> HttpError {
        use HttpErrorKind::*;
        let (kind, message) = match &code {
            ErrorCode::HttpRequestDenied => (
                Denied,
                "denied by the host: the plugin's settings do not allow this destination (allowedOutboundHosts, \
                 blockedNetworks); nothing was sent"
                    .to_owned(),
            ),
            ErrorCode::ConnectionTimeout
            | ErrorCode::ConnectionReadTimeout
            | ErrorCode::ConnectionWriteTimeout
            | ErrorCode::HttpResponseTimeout
            | ErrorCode::DnsTimeout => (Timeout, format!("timed out ({code:?})")),
            ErrorCode::ConnectionRefused => (Connect, "connection refused".to_owned()),
            ErrorCode::ConnectionTerminated => (Connect, "the connection was closed".to_owned()),
            ErrorCode::DestinationUnavailable | ErrorCode::DestinationNotFound | ErrorCode::DestinationIpUnroutable => {
                (Connect, format!("the server is unreachable ({code:?})"))
            }
            ErrorCode::DnsError(payload) => (
                Dns,
                format!(
                    "the host name did not resolve: {}",
                    payload.rcode.as_deref().unwrap_or("no answer")
                ),
            ),
            ErrorCode::TlsProtocolError | ErrorCode::TlsCertificateError | ErrorCode::TlsAlertReceived(_) => {
                (Tls, format!("TLS failed ({code:?})"))
            }
            ErrorCode::HttpResponseBodySize(limit) => (
                TooLarge,
                match limit {
                    Some(limit) => format!("the response body is over the host's limit of {limit} bytes"),
                    None => "the response body is over the host's limit".to_owned(),
                },
            ),
            ErrorCode::HttpRequestUriInvalid => (InvalidUrl, "the host refused the URL".to_owned()),
            ErrorCode::InternalError(Some(message)) => (Other, message.clone()),
            other => (Other, format!("{other:?}")),
        };
        HttpError::new(kind, message)
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod backend {
    //! Requests through the installed [`NativeHost`](crate::native::NativeHost).

    use super::{Exchange, HttpError, Response};

    pub(super) fn send(exchange: &Exchange<'_>) -> Result<Response, HttpError> {
        crate::native::backend::http(exchange)
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::native::{NativeHost, with_host};

    #[test]
    fn relative_locations_resolve_against_the_request() {
        let base = Url::parse("http://a.test:8081/api/v1/zones/x?y=1").unwrap();
        assert_eq!(base.join("/other").unwrap().to_string(), "http://a.test:8081/other");
        assert_eq!(
            base.join("sibling").unwrap().to_string(),
            "http://a.test:8081/api/v1/zones/sibling"
        );
        assert_eq!(base.join("//b.test/p").unwrap().to_string(), "http://b.test/p");
        assert_eq!(base.join("https://c.test/q").unwrap().to_string(), "https://c.test/q");
        assert_eq!(Url::parse("http://h?x=1").unwrap().path_with_query, "/?x=1");
        assert_eq!(Url::parse("http://h").unwrap().path_with_query, "/");
        assert_eq!(Url::parse("nope").unwrap_err().kind(), HttpErrorKind::InvalidUrl);
    }

    /// Answers from a script: each request gets the next response, and is recorded.
    struct Scripted {
        responses: std::cell::RefCell<Vec<Response>>,
        seen: std::cell::RefCell<Vec<(String, String, Vec<u8>)>>,
    }

    impl NativeHost for Scripted {
        fn get(&self, _: &crate::Gvk, _: Option<&str>, _: &str) -> Result<Option<String>, String> {
            Ok(None)
        }
        fn list(&self, _: &crate::Gvk, _: Option<&str>, _: Option<&str>) -> Result<Vec<String>, String> {
            Ok(Vec::new())
        }
        fn http(&self, request: &Request) -> Result<Response, HttpError> {
            self.seen
                .borrow_mut()
                .push((request.method.to_string(), request.url.clone(), request.body.clone()));
            Ok(self.responses.borrow_mut().remove(0))
        }
    }

    #[test]
    fn redirects_are_followed_and_a_see_other_becomes_a_get() {
        let host = Scripted {
            responses: std::cell::RefCell::new(vec![
                Response::new(303, "").with_header("Location", "/done"),
                Response::new(200, r#"{"ok":true}"#),
            ]),
            seen: std::cell::RefCell::default(),
        };
        let response = with_host(&host, || {
            Request::post("http://api.test/create")
                .json(&serde_json::json!({"a": 1}))
                .unwrap()
                .send()
        })
        .unwrap();
        assert_eq!(response.json::<serde_json::Value>().unwrap()["ok"], true);
        let seen = host.seen.borrow();
        assert_eq!(seen[0].0, "POST");
        assert_eq!(seen[0].2, br#"{"a":1}"#);
        assert_eq!(
            (seen[1].0.as_str(), seen[1].1.as_str()),
            ("GET", "http://api.test/done")
        );
        assert!(seen[1].2.is_empty());
    }

    #[test]
    fn status_errors_carry_the_status_and_the_body() {
        let error = Response::new(422, "RRset example.org. IN A: Conflicts with pre-existing RRset")
            .error_for_status()
            .unwrap_err();
        assert_eq!(error.kind(), HttpErrorKind::Status(422));
        assert!(
            error.to_string().contains("answered 422: RRset example.org."),
            "{error}"
        );
        let error: Error = error.into();
        assert!(error.message().contains("422"));
    }

    #[test]
    fn without_http_a_native_host_refuses_requests() {
        let host = crate::native::MemoryHost::new();
        let error = with_host(&host, || Request::get("http://api.test/").send()).unwrap_err();
        assert_eq!(error.kind(), HttpErrorKind::Denied);
        assert!(error.to_string().starts_with("GET http://api.test/: "), "{error}");
    }
}
