//! A counting HTTP reverse proxy between a contender and the API server: every request is classified (verb and
//! resource), counted, and forwarded with the driver's kube client, which adds the upstream's TLS and
//! credentials. The same proxy stands in front of every contender, so their requests are counted alike.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use http::header::{self, HeaderName};
use http::{Method, StatusCode, Uri};
use http_body_util::BodyExt;

/// Errors of the proxy.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// The listening socket could not be opened.
    #[error("binding the proxy on 127.0.0.1")]
    Bind(#[source] std::io::Error),
}

/// Headers that describe one connection, not the request: never forwarded.
const HOP_BY_HOP: [HeaderName; 6] = [
    header::CONNECTION,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
    header::TE,
    header::TRAILER,
    header::HOST,
];

/// What a request did, as counted: a verb (`get`, `list`, `watch`, `create`, `update`, `patch`, `apply`,
/// `delete`, `deletecollection`, `discovery`, `other`) and a resource (`configmaps`, `configmapsets/status`,
/// `events.events.k8s.io`, …).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestKey {
    /// The verb.
    pub verb: &'static str,
    /// The resource, with its subresource after a `/` and its group (core and our CRD's group left out).
    pub resource: String,
}

impl RequestKey {
    /// Whether the request changes something.
    pub fn is_write(&self) -> bool {
        matches!(
            self.verb,
            "create" | "update" | "patch" | "apply" | "delete" | "deletecollection"
        )
    }
}

impl std::fmt::Display for RequestKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.verb, self.resource)
    }
}

/// Counts of requests by key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts(pub BTreeMap<RequestKey, u64>);

impl Counts {
    /// All requests.
    pub fn total(&self) -> u64 {
        self.0.values().sum()
    }

    /// Requests that change something.
    pub fn writes(&self) -> u64 {
        self.0.iter().filter(|(key, _)| key.is_write()).map(|(_, n)| n).sum()
    }

    /// What was counted since `earlier`.
    pub fn since(&self, earlier: &Counts) -> Counts {
        Counts(
            self.0
                .iter()
                .map(|(key, n)| (key.clone(), n - earlier.0.get(key).copied().unwrap_or(0)))
                .filter(|(_, n)| *n > 0)
                .collect(),
        )
    }
}

/// What the proxy has seen: counts, requests under way and when the last one started or finished.
#[derive(Debug)]
pub struct RequestLog {
    state: Mutex<LogState>,
}

#[derive(Debug)]
struct LogState {
    counts: Counts,
    /// The namespace whose named requests are traced, when tracing.
    traced_namespace: Option<String>,
    /// Named requests in `traced_namespace`, in the order they started.
    trace: Vec<Traced>,
    /// Requests other than watches whose response has not finished.
    in_flight: u64,
    /// Start or end of the latest request other than a watch (a watch's start counts too).
    last_activity: Instant,
}

/// One request about a named object of the traced namespace (watches and lists name no object).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Traced {
    /// The object's name from the path (`set-00001`, `set-00001-2`, …).
    pub name: String,
    /// When it reached the proxy.
    pub start: Instant,
    /// When its response was finished, or `None` while under way.
    pub end: Option<Instant>,
    /// The `fieldManager` it wrote under, if it named one.
    pub manager: Option<String>,
}

impl RequestLog {
    fn new(traced_namespace: Option<String>) -> Self {
        Self {
            state: Mutex::new(LogState {
                counts: Counts::default(),
                traced_namespace,
                trace: Vec::new(),
                in_flight: 0,
                last_activity: Instant::now(),
            }),
        }
    }

    /// The counts so far.
    pub fn counts(&self) -> Counts {
        self.lock().counts.clone()
    }

    /// Whether the contender has opened a watch on each of `resources`.
    pub fn watches(&self, resources: &[&str]) -> bool {
        let state = self.lock();
        resources.iter().all(|resource| {
            state
                .counts
                .0
                .iter()
                .any(|(key, n)| key.verb == "watch" && key.resource == *resource && *n > 0)
        })
    }

    /// How long no request has started or finished, or `None` while one is under way.
    pub fn quiet_for(&self) -> Option<Duration> {
        let state = self.lock();
        (state.in_flight == 0).then(|| state.last_activity.elapsed())
    }

    /// The traced requests so far.
    pub fn trace(&self) -> Vec<Traced> {
        self.lock().trace.clone()
    }

    fn begin(self: &Arc<Self>, key: RequestKey, uri: &Uri) -> Activity {
        let watch = key.verb == "watch";
        let now = Instant::now();
        let mut state = self.lock();
        let traced = state
            .traced_namespace
            .as_deref()
            .and_then(|namespace| named_in(uri.path(), namespace))
            .filter(|_| !watch)
            .map(str::to_owned);
        let trace_index = traced.map(|name| {
            let manager = uri.query().and_then(|query| {
                query
                    .split('&')
                    .find_map(|pair| pair.strip_prefix("fieldManager="))
                    .map(str::to_owned)
            });
            state.trace.push(Traced {
                name,
                start: now,
                end: None,
                manager,
            });
            state.trace.len() - 1
        });
        *state.counts.0.entry(key).or_default() += 1;
        state.last_activity = now;
        if !watch {
            state.in_flight += 1;
        }
        Activity {
            log: Arc::clone(self),
            watch,
            trace_index,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LogState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A request under way; its end is recorded when the response body is finished or dropped.
struct Activity {
    log: Arc<RequestLog>,
    watch: bool,
    trace_index: Option<usize>,
}

impl Drop for Activity {
    fn drop(&mut self) {
        if !self.watch {
            let now = Instant::now();
            let mut state = self.log.lock();
            state.in_flight -= 1;
            state.last_activity = now;
            if let Some(traced) = self.trace_index.and_then(|index| state.trace.get_mut(index)) {
                traced.end = Some(now);
            }
        }
    }
}

/// The object a request path names in `namespace` (`/api/v1/namespaces/<namespace>/configmaps/<name>[/…]`).
fn named_in<'p>(path: &'p str, namespace: &str) -> Option<&'p str> {
    let mut segments = path.split('/').filter(|s| !s.is_empty());
    segments.find(|s| *s == "namespaces")?;
    (segments.next()? == namespace).then_some(())?;
    segments.next()?;
    segments.next()
}

/// A running proxy.
#[derive(Debug)]
pub struct Proxy {
    addr: SocketAddr,
    log: Arc<RequestLog>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Clone)]
struct ProxyState {
    upstream: kube::Client,
    log: Arc<RequestLog>,
}

impl Proxy {
    /// Listens on a free port of 127.0.0.1 and forwards to `upstream`.
    pub async fn start(upstream: kube::Client) -> Result<Self, ProxyError> {
        Self::start_tracing(upstream, None).await
    }

    /// As [`Proxy::start`], also keeping the time of every request about a named object in `traced_namespace`.
    pub async fn start_tracing(upstream: kube::Client, traced_namespace: Option<String>) -> Result<Self, ProxyError> {
        let listener = tokio::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))
            .await
            .map_err(ProxyError::Bind)?;
        let addr = listener.local_addr().map_err(ProxyError::Bind)?;
        let log = Arc::new(RequestLog::new(traced_namespace));
        let app = Router::new().fallback(forward).with_state(ProxyState {
            upstream,
            log: Arc::clone(&log),
        });
        let task = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, app).await {
                tracing::error!(%error, "the counting proxy stopped");
            }
        });
        Ok(Self { addr, log, task })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// What it has seen.
    pub fn log(&self) -> &Arc<RequestLog> {
        &self.log
    }

    /// Stops serving; open connections are cut.
    pub fn stop(self) {
        self.task.abort();
    }
}

async fn forward(State(state): State<ProxyState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let key = classify(
        &parts.method,
        &parts.uri,
        parts.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()),
    );
    let activity = state.log.begin(key, &parts.uri);
    let body = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(error) => return (StatusCode::BAD_REQUEST, format!("reading the request body: {error}")).into_response(),
    };
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut upstream = http::Request::builder().method(parts.method.clone()).uri(path);
    for (name, value) in &parts.headers {
        if !HOP_BY_HOP.contains(name) && name != header::AUTHORIZATION && name != header::CONTENT_LENGTH {
            upstream = upstream.header(name, value);
        }
    }
    let upstream = match upstream.body(kube::client::Body::from(body)) {
        Ok(request) => request,
        Err(error) => return (StatusCode::BAD_REQUEST, format!("rebuilding the request: {error}")).into_response(),
    };
    match state.upstream.send(upstream).await {
        Ok(response) => {
            let (mut head, body) = response.into_parts();
            for name in &HOP_BY_HOP {
                head.headers.remove(name);
            }
            let stream = body.into_data_stream().map(move |chunk| {
                // Keeps the request counted as under way until its body is done.
                let _under_way = &activity;
                chunk
            });
            Response::from_parts(head, Body::from_stream(stream))
        }
        Err(error) => (
            StatusCode::BAD_GATEWAY,
            format!("the API server did not answer: {error}"),
        )
            .into_response(),
    }
}

/// Classifies a Kubernetes API request.
pub fn classify(method: &Method, uri: &Uri, content_type: Option<&str>) -> RequestKey {
    let segments: Vec<&str> = uri.path().split('/').filter(|s| !s.is_empty()).collect();
    let watch_param = uri
        .query()
        .is_some_and(|query| query.split('&').any(|pair| pair == "watch=true" || pair == "watch=1"));
    let (group, rest) = match segments.as_slice() {
        ["api", _version, rest @ ..] => ("", rest),
        ["apis", group, _version, rest @ ..] => (*group, rest),
        _ => {
            return RequestKey {
                verb: if method == Method::GET { "discovery" } else { "other" },
                resource: segments.first().map_or_else(|| "/".to_owned(), |s| format!("/{s}")),
            };
        }
    };
    let (legacy_watch, rest) = match rest {
        ["watch", rest @ ..] => (true, rest),
        rest => (false, rest),
    };
    let rest = match rest {
        ["namespaces", _namespace, resource, rest @ ..] => {
            let mut all = vec![*resource];
            all.extend_from_slice(rest);
            all
        }
        rest => rest.to_vec(),
    };
    let Some(plural) = rest.first() else {
        return RequestKey {
            verb: "discovery",
            resource: if group.is_empty() {
                "/api".to_owned()
            } else {
                format!("/apis/{group}")
            },
        };
    };
    let named = rest.len() >= 2;
    let subresource = rest.get(2);
    let mut resource = (*plural).to_owned();
    if !group.is_empty() && group != "examples.wasm-reconciler.io" {
        resource = format!("{resource}.{group}");
    }
    if let Some(subresource) = subresource {
        resource = format!("{resource}/{subresource}");
    }
    let verb = match *method {
        Method::GET if legacy_watch || watch_param => "watch",
        Method::GET if named => "get",
        Method::GET => "list",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH if content_type.is_some_and(|t| t.starts_with("application/apply-patch")) => "apply",
        Method::PATCH => "patch",
        Method::DELETE if named => "delete",
        Method::DELETE => "deletecollection",
        _ => "other",
    };
    RequestKey { verb, resource }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(method: Method, uri: &str, content_type: Option<&str>) -> String {
        classify(&method, &uri.parse().unwrap(), content_type).to_string()
    }

    #[test]
    fn requests_are_classified_by_verb_and_resource() {
        let sets = "/apis/examples.wasm-reconciler.io/v1alpha1";
        assert_eq!(
            key(
                Method::GET,
                &format!("{sets}/configmapsets?watch=true&resourceVersion=5"),
                None
            ),
            "watch configmapsets"
        );
        assert_eq!(
            key(Method::GET, "/api/v1/configmaps?limit=500", None),
            "list configmaps"
        );
        assert_eq!(key(Method::GET, "/api/v1/watch/configmaps", None), "watch configmaps");
        assert_eq!(
            key(
                Method::PATCH,
                &format!("{sets}/namespaces/a/configmapsets/s/status"),
                Some("application/merge-patch+json")
            ),
            "patch configmapsets/status"
        );
        assert_eq!(
            key(
                Method::PATCH,
                "/api/v1/namespaces/a/configmaps/s-0?fieldManager=m&force=true",
                Some("application/apply-patch+yaml")
            ),
            "apply configmaps"
        );
        assert_eq!(
            key(Method::PUT, &format!("{sets}/namespaces/a/configmapsets/s"), None),
            "update configmapsets"
        );
        assert_eq!(
            key(Method::DELETE, "/api/v1/namespaces/a/configmaps/s-2", None),
            "delete configmaps"
        );
        assert_eq!(
            key(Method::POST, "/apis/events.k8s.io/v1/namespaces/a/events", None),
            "create events.events.k8s.io"
        );
        assert_eq!(key(Method::POST, "/api/v1/namespaces/a/events", None), "create events");
        assert_eq!(
            key(Method::GET, "/apis/examples.wasm-reconciler.io/v1alpha1", None),
            "discovery /apis/examples.wasm-reconciler.io"
        );
        assert_eq!(key(Method::GET, "/version", None), "discovery /version");
        assert_eq!(key(Method::GET, "/api/v1/namespaces/a", None), "get namespaces");
    }

    #[tokio::test]
    async fn requests_are_forwarded_counted_and_finished() {
        // The upstream answers every request with its method and path.
        let upstream =
            Router::new().fallback(|request: Request| async move { format!("{} {}", request.method(), request.uri()) });
        let proxy = Proxy::start_tracing(kube::Client::new(upstream, "default"), Some("a".to_owned()))
            .await
            .unwrap();
        let client = kube::Client::try_from(kube::Config::new(proxy.url().parse().unwrap())).unwrap();
        let request = http::Request::get("/api/v1/namespaces/a/configmaps/x")
            .body(Vec::new())
            .unwrap();
        let answer = client.request_text(request).await.unwrap();
        assert_eq!(answer, "GET /api/v1/namespaces/a/configmaps/x");
        let elsewhere = http::Request::patch("/api/v1/namespaces/b/configmaps/y?fieldManager=m")
            .body(Vec::new())
            .unwrap();
        client.request_text(elsewhere).await.unwrap();
        let status = http::Request::patch("/apis/g/v1/namespaces/a/sets/s/status?fieldManager=m&force=true")
            .body(Vec::new())
            .unwrap();
        client.request_text(status).await.unwrap();
        let trace = proxy.log().trace();
        let traced: Vec<(&str, Option<&str>, bool)> = trace
            .iter()
            .map(|t| (t.name.as_str(), t.manager.as_deref(), t.end.is_some()))
            .collect();
        assert_eq!(
            traced,
            vec![("x", None, true), ("s", Some("m"), true)],
            "only named requests in the traced namespace, finished"
        );
        let counts = proxy.log().counts();
        let get = RequestKey {
            verb: "get",
            resource: "configmaps".to_owned(),
        };
        assert_eq!((counts.total(), counts.0.get(&get).copied()), (3, Some(1)));
        assert!(proxy.log().quiet_for().is_some(), "the request is finished");
        assert!(!proxy.log().watches(&["configmaps"]));
        proxy.stop();
    }

    #[test]
    fn counts_subtract_and_split_writes() {
        let write = RequestKey {
            verb: "apply",
            resource: "configmaps".to_owned(),
        };
        let read = RequestKey {
            verb: "get",
            resource: "configmaps".to_owned(),
        };
        let before = Counts([(write.clone(), 2)].into_iter().collect());
        let after = Counts([(write.clone(), 5), (read.clone(), 1)].into_iter().collect());
        let delta = after.since(&before);
        assert_eq!((delta.total(), delta.writes()), (4, 3));
        assert!(!delta.0.contains_key(&RequestKey {
            verb: "list",
            resource: "x".to_owned()
        }));
    }
}
