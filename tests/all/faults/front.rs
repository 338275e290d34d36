//! The fault front: a loopback HTTP server a host process talks to instead of the API server, forwarding every
//! request through a `kube::Client` (admin credentials, or a host's own ServiceAccount) and streaming watches back.
//! Because every read and write of the host passes through it, it can
//!
//! - record every write ([`WriteLog`]) with its identity, body, answer and time;
//! - kill the host right before or right after a chosen write ([`Front::arm_crash`]): after, the API server has
//!   processed the write and the host never sees the answer;
//! - hold watch events of a resource (a lagging watch), hide every state but the last of one object, end every watch
//!   with 410 Gone (a relist), hold list requests (a gap nothing observes), or deliver a list late, after writes
//!   made meanwhile ([`Gate`]);
//! - check each write against what it delivered to the host ([`View`]): the oracles of stale views.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use futures::StreamExt as _;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

use super::request::{
    ObjectKey, ResourcePath, WriteId, action, identified_object, is_bookkeeping, is_event, is_watch, query_value,
};

/// Largest request or list body the front reads (plugin ConfigMaps are not sent through it).
const MAX_BODY: usize = 16 * 1024 * 1024;

/// When a crash happens relative to its write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CrashWhen {
    /// The host is killed as the write arrives; it never reaches the API server.
    Before,
    /// The write is forwarded and answered; the host is killed before it sees the answer.
    After,
}

/// One write a host sent, as the front saw it.
#[derive(Debug, Clone)]
pub struct Write {
    /// Which host (its identity) sent it.
    pub host: String,
    /// Which run of that host: 0, then 1 after the first restart, …
    pub incarnation: u32,
    pub id: WriteId,
    /// The JSON body (`null` when there was none).
    pub body: Value,
    /// The HTTP status of the answer; 0 when the write was not forwarded (the host died first, or was dead).
    pub status: u16,
    /// The answer's JSON body.
    pub response: Value,
    /// When the front received it.
    pub at: Instant,
}

/// Every write of the hosts of one plan, in the order the front received them. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct WriteLog(Arc<Mutex<Vec<Write>>>);

impl WriteLog {
    /// Everything so far.
    pub fn writes(&self) -> Vec<Write> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// When the latest write of a reconcile arrived (Lease renewals are the hosts' bookkeeping, not reconciles').
    pub fn last_write(&self) -> Option<Instant> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .rev()
            .find(|w| !super::request::is_bookkeeping_resource(&w.id.resource))
            .map(|w| w.at)
    }

    fn push(&self, write: Write) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).push(write);
    }
}

/// What the front does to reads, changed by the plan while the host runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Gate {
    /// Watch events of these resources are held back, in order, until the resource leaves the set (a watch that
    /// lags behind the API server).
    pub held_resources: BTreeSet<String>,
    /// Watch events of these objects are held back; when one leaves the set, only its latest event is delivered:
    /// the states in between are never observed.
    pub hidden_objects: BTreeSet<ObjectKey>,
    /// Raised to end every open watch with 410 Gone: the host lists again.
    pub expiry: u64,
    /// While set, list requests wait: nothing the API server does meanwhile is observed.
    pub lists_held: bool,
    /// Lists of these resources are read from the API server at once but answered only when the resource leaves
    /// the set: a relist that arrives after writes made meanwhile, older than them.
    pub lists_late: BTreeSet<String>,
    /// Every write's answer is held this long after the API server gave it: the watch events of the write reach
    /// the host first.
    pub slow_answers: Option<std::time::Duration>,
}

/// What the front has delivered to the current run of its host, and what that host wrote itself: the host's view
/// can hold nothing else.
#[derive(Debug, Default)]
struct View {
    /// The uids of each object delivered so far (lists, watch events, single reads, the host's own writes).
    uids: HashMap<ObjectKey, HashSet<String>>,
    /// Per object, what the host's own latest successful write answered: uid, resourceVersion, generation.
    own: HashMap<ObjectKey, (String, u64, i64)>,
    /// uids the host deleted itself.
    deleted: HashSet<String>,
    /// Per primary uid, the highest `observedGeneration` the host wrote.
    observed: HashMap<String, i64>,
}

impl View {
    fn deliver(&mut self, key: ObjectKey, object: &Value) {
        if let Some(uid) = object["metadata"]["uid"].as_str() {
            self.uids.entry(key).or_default().insert(uid.to_owned());
        }
    }
}

/// Which write a crash is armed for: given its identity and JSON body.
type CrashPoint = Box<dyn Fn(&WriteId, &Value) -> bool + Send>;

struct CrashArm {
    at: CrashPoint,
    when: CrashWhen,
    kill: Box<dyn FnOnce() + Send>,
}

/// Shared state of a front.
struct FrontState {
    upstream: kube::Client,
    host: String,
    incarnation: AtomicU32,
    /// The host was killed: nothing more of its current run is forwarded.
    severed: AtomicBool,
    log: WriteLog,
    occurrences: Mutex<HashMap<(String, String, String), u32>>,
    /// Generated Event names → `<regarding>:<reason>`.
    event_names: Mutex<HashMap<String, String>>,
    crash: Mutex<Option<CrashArm>>,
    crashed: watch::Sender<bool>,
    gate: watch::Sender<Gate>,
    /// How many list answers the gate has held back so far (`lists_late`).
    late_lists: watch::Sender<usize>,
    view: Mutex<View>,
    violations: Mutex<Vec<String>>,
}

impl FrontState {
    fn violation(&self, text: String) {
        self.violations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(text);
    }

    fn view(&self) -> std::sync::MutexGuard<'_, View> {
        self.view.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Kills the host (once): nothing more of this run is forwarded.
    fn fire(&self, arm: CrashArm) {
        self.severed.store(true, Ordering::SeqCst);
        (arm.kill)();
        self.crashed.send_replace(true);
    }
}

/// A front serving one host, until dropped.
pub struct Front {
    /// A kubeconfig pointing at the front (plain HTTP on loopback, no credentials).
    pub kubeconfig: PathBuf,
    state: Arc<FrontState>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Front {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Front {
    /// Serves host `host` on a loopback port, forwarding with `upstream`; writes are recorded in `log`; the
    /// kubeconfig goes to `dir/<host>.kubeconfig`.
    pub async fn start(upstream: kube::Client, host: &str, log: WriteLog, dir: &Path) -> anyhow::Result<Self> {
        let state = Arc::new(FrontState {
            upstream,
            host: host.to_owned(),
            incarnation: AtomicU32::new(0),
            severed: AtomicBool::new(false),
            log,
            occurrences: Mutex::default(),
            event_names: Mutex::default(),
            crash: Mutex::new(None),
            crashed: watch::channel(false).0,
            gate: watch::channel(Gate::default()).0,
            late_lists: watch::channel(0).0,
            view: Mutex::default(),
            violations: Mutex::default(),
        });
        let router = axum::Router::new().fallback(forward).with_state(state.clone());
        let listener = tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).await?;
        let url = format!("http://{}", listener.local_addr()?);
        let task = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, router).await {
                eprintln!("the fault front stopped: {error}");
            }
        });
        let kubeconfig = dir.join(format!("{host}.kubeconfig"));
        wasm_reconciler_apiserver::write_kubeconfig(&kubeconfig, &url, None)?;
        Ok(Self {
            kubeconfig,
            state,
            task,
        })
    }

    /// Kills the host with `kill` right before or right after the first of its writes that `at` picks (given the
    /// write's identity and body).
    pub fn arm_crash(
        &self,
        at: impl Fn(&WriteId, &Value) -> bool + Send + 'static,
        when: CrashWhen,
        kill: impl FnOnce() + Send + 'static,
    ) {
        *self.state.crash.lock().unwrap_or_else(PoisonError::into_inner) = Some(CrashArm {
            at: Box::new(at),
            when,
            kill: Box::new(kill),
        });
    }

    /// Whether the armed crash has happened.
    pub fn crashed(&self) -> watch::Receiver<bool> {
        self.state.crashed.subscribe()
    }

    /// A new run of the host is about to start: forward again, and forget what the dead run was shown.
    pub fn revive(&self) {
        *self.state.view() = View::default();
        self.state.incarnation.fetch_add(1, Ordering::SeqCst);
        self.state.severed.store(false, Ordering::SeqCst);
    }

    /// Refuses everything from now on (the host was killed by the plan, not at a write).
    pub fn sever(&self) {
        self.state.severed.store(true, Ordering::SeqCst);
    }

    /// Changes what the front does to reads.
    pub fn gate(&self, change: impl FnOnce(&mut Gate)) {
        self.state.gate.send_modify(change);
    }

    /// Waits until the front holds back a list answer (the gate's `lists_late`): the relist has been read.
    pub async fn wait_late_list(&self) {
        let mut late = self.state.late_lists.subscribe();
        let _ = late.wait_for(|held| *held > 0).await;
    }

    /// The oracle violations seen so far, each a sentence naming the write.
    pub fn violations(&self) -> Vec<String> {
        self.state
            .violations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

fn respond(status: StatusCode, body: Bytes, content_type: Option<HeaderValue>) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    if let Some(content_type) = content_type {
        response.headers_mut().insert(header::CONTENT_TYPE, content_type);
    }
    response
}

fn unavailable() -> Response {
    let status = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 503,
        "reason": "ServiceUnavailable", "message": "the host behind this front was killed"});
    respond(
        StatusCode::SERVICE_UNAVAILABLE,
        Bytes::from(status.to_string()),
        Some(HeaderValue::from_static("application/json")),
    )
}

async fn forward(State(state): State<Arc<FrontState>>, request: Request) -> Response {
    if state.severed.load(Ordering::SeqCst) {
        return unavailable();
    }
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, MAX_BODY).await else {
        return respond(StatusCode::PAYLOAD_TOO_LARGE, Bytes::new(), None);
    };
    let Some(resource) = ResourcePath::parse(parts.uri.path()) else {
        return relay(&state, &parts, body).await;
    };
    let query = parts.uri.query().unwrap_or_default().to_owned();
    match parts.method.as_str() {
        "GET" if is_watch(&query) => watch(&state, &parts, resource, body).await,
        "GET" => read(&state, &parts, resource, &query, body).await,
        "POST" | "PUT" | "PATCH" | "DELETE" => write(&state, &parts, resource, body).await,
        _ => relay(&state, &parts, body).await,
    }
}

/// Forwards a request that is neither a read nor a write of an object (discovery, `/version`) as it is.
async fn relay(state: &FrontState, parts: &axum::http::request::Parts, body: Bytes) -> Response {
    match send(state, parts, body).await {
        Ok(upstream) => {
            let (parts, body) = upstream.into_parts();
            match body.collect_bytes().await {
                Ok(bytes) => respond(parts.status, bytes, parts.headers.get(header::CONTENT_TYPE).cloned()),
                Err(error) => bad_gateway(&error),
            }
        }
        Err(error) => bad_gateway(&error),
    }
}

fn bad_gateway(error: &kube::Error) -> Response {
    let status = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 502,
        "reason": "BadGateway", "message": format!("the fault front could not reach the API server: {error}")});
    respond(
        StatusCode::BAD_GATEWAY,
        Bytes::from(status.to_string()),
        Some(HeaderValue::from_static("application/json")),
    )
}

/// Sends a request upstream with the original method, path, query and content headers.
async fn send(
    state: &FrontState,
    parts: &axum::http::request::Parts,
    body: Bytes,
) -> Result<axum::http::Response<kube::client::Body>, kube::Error> {
    let mut builder = axum::http::Request::builder()
        .method(parts.method.clone())
        .uri(parts.uri.path_and_query().map_or("/", |p| p.as_str()));
    for name in [header::CONTENT_TYPE, header::ACCEPT] {
        if let Some(value) = parts.headers.get(&name) {
            builder = builder.header(name, value);
        }
    }
    let request = builder
        .body(kube::client::Body::from(body.to_vec()))
        .expect("a request from valid parts");
    state.upstream.send(request).await
}

/// A GET of one object or a list: held while the gate holds lists, answered late when it says so, and recorded as
/// delivered to the host.
async fn read(
    state: &FrontState,
    parts: &axum::http::request::Parts,
    resource: ResourcePath,
    query: &str,
    body: Bytes,
) -> Response {
    let list = resource.name.is_none();
    if list {
        let mut gate = state.gate.subscribe();
        let _ = gate.wait_for(|gate| !gate.lists_held).await;
        if query_value(query, "resourceVersion") == Some("0") {
            state.violation(format!(
                "listed {} from a cache that may be stale (resourceVersion=0): a relist could go back in time",
                resource.resource
            ));
        }
    }
    let upstream = match send(state, parts, body).await {
        Ok(upstream) => upstream,
        Err(error) => return bad_gateway(&error),
    };
    let (response_parts, response_body) = upstream.into_parts();
    let bytes = match response_body.collect_bytes().await {
        Ok(bytes) => bytes,
        Err(error) => return bad_gateway(&error),
    };
    if list && state.gate.borrow().lists_late.contains(&resource.resource) {
        state.late_lists.send_modify(|held| *held += 1);
        let mut gate = state.gate.subscribe();
        let _ = gate
            .wait_for(|gate| !gate.lists_late.contains(&resource.resource))
            .await;
    }
    if state.severed.load(Ordering::SeqCst) {
        return unavailable();
    }
    if response_parts.status.is_success() {
        deliver_read(state, &resource, &bytes);
    }
    respond(
        response_parts.status,
        bytes,
        response_parts.headers.get(header::CONTENT_TYPE).cloned(),
    )
}

/// Records what a successful read delivered to the host: one object, or a list's items.
fn deliver_read(state: &FrontState, resource: &ResourcePath, bytes: &Bytes) {
    let Ok(value) = serde_json::from_slice::<Value>(bytes) else {
        return;
    };
    let mut view = state.view();
    match (&resource.name, &resource.subresource) {
        (Some(_), None) => {
            if let Some(key) = resource.object_key() {
                view.deliver(key, &value);
            }
        }
        (Some(_), Some(_)) => {}
        (None, _) => {
            for item in value["items"].as_array().into_iter().flatten() {
                view.deliver(key_of(&resource.resource, item), item);
            }
        }
    }
}

fn key_of(resource: &str, object: &Value) -> ObjectKey {
    ObjectKey {
        resource: resource.to_owned(),
        namespace: object["metadata"]["namespace"].as_str().map(str::to_owned),
        name: object["metadata"]["name"].as_str().unwrap_or_default().to_owned(),
    }
}

/// A write: identified, checked against what the host was shown, crashed at where the plan says, forwarded and
/// recorded.
async fn write(
    state: &Arc<FrontState>,
    parts: &axum::http::request::Parts,
    resource: ResourcePath,
    body: Bytes,
) -> Response {
    let method = parts.method.as_str();
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let json_body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let action = action(method, content_type, &resource);
    let object = {
        let names = state.event_names.lock().unwrap_or_else(PoisonError::into_inner);
        identified_object(&resource, &json_body, &|name| names.get(name).cloned())
    };
    let occurrence = {
        let mut occurrences = state.occurrences.lock().unwrap_or_else(PoisonError::into_inner);
        let count = occurrences
            .entry((action.clone(), resource.resource.clone(), object.clone()))
            .or_default();
        *count += 1;
        *count
    };
    let id = WriteId {
        action,
        resource: resource.resource.clone(),
        object,
        occurrence,
    };
    let key = resource.object_key();
    let checked = !is_bookkeeping(&resource) && !is_event(&resource);
    if checked && let Some(key) = &key {
        check_guard(state, &id, key, &json_body);
    }
    let arm = {
        let mut crash = state.crash.lock().unwrap_or_else(PoisonError::into_inner);
        if crash.as_ref().is_some_and(|arm| (arm.at)(&id, &json_body)) {
            crash.take()
        } else {
            None
        }
    };
    let record = |status: u16, response: Value| Write {
        host: state.host.clone(),
        incarnation: state.incarnation.load(Ordering::SeqCst),
        id: id.clone(),
        body: json_body.clone(),
        status,
        response,
        at: Instant::now(),
    };
    let arm = match arm {
        Some(arm) if arm.when == CrashWhen::Before => {
            state.log.push(record(0, Value::Null));
            state.fire(arm);
            return unavailable();
        }
        arm => arm,
    };
    let (status, bytes, content) = match send(state, parts, body).await {
        Ok(upstream) => {
            let (parts, body) = upstream.into_parts();
            match body.collect_bytes().await {
                Ok(bytes) => (parts.status, bytes, parts.headers.get(header::CONTENT_TYPE).cloned()),
                Err(error) => return bad_gateway(&error),
            }
        }
        Err(error) => return bad_gateway(&error),
    };
    let response: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    state.log.push(record(status.as_u16(), response.clone()));
    let slow = state.gate.borrow().slow_answers;
    if let Some(delay) = slow {
        tokio::time::sleep(delay).await;
    }
    if status.is_success() {
        if is_event(&resource) && resource.name.is_none() {
            if let Some(name) = response["metadata"]["name"].as_str() {
                state
                    .event_names
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(name.to_owned(), id.object.clone());
            }
        } else if checked && let Some(key) = &key {
            check_answer(state, &id, key, &json_body, status.as_u16(), &response);
        }
    }
    if let Some(arm) = arm {
        state.fire(arm);
        return unavailable();
    }
    if state.severed.load(Ordering::SeqCst) {
        return unavailable();
    }
    respond(status, bytes, content)
}

/// What a write presumes of its object: the uid and resourceVersion it is conditioned on, and whether it is guarded
/// as the host promises (docs/architecture.md): a delete of a child names both; an apply names both (a child in the
/// view) or neither (a create, checked on the answer); other writes name at least one.
fn presumed(id: &WriteId, body: &Value) -> (Option<String>, Option<u64>, bool) {
    let text = |value: &Value| value.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
    let number = |value: &Value| text(value).and_then(|s| s.parse::<u64>().ok());
    match id.action.as_str() {
        "delete" => {
            let uid = text(&body["preconditions"]["uid"]);
            let version = number(&body["preconditions"]["resourceVersion"]);
            let guarded = uid.is_some() && version.is_some();
            (uid, version, guarded)
        }
        "json-patch" => {
            let tests: Vec<&Value> = body
                .as_array()
                .into_iter()
                .flatten()
                .filter(|op| op["op"] == "test")
                .collect();
            let at = |path: &str| tests.iter().find(|op| op["path"] == path).map(|op| &op["value"]);
            let uid = at("/metadata/uid").and_then(text);
            let version = at("/metadata/resourceVersion").and_then(number);
            let guarded = uid.is_some() || version.is_some();
            (uid, version, guarded)
        }
        // An apply without a uid is a create: whether it created is checked on the answer.
        "apply" => {
            let uid = text(&body["metadata"]["uid"]);
            let version = number(&body["metadata"]["resourceVersion"]);
            let guarded = uid.is_some() == version.is_some();
            (uid, version, guarded)
        }
        _ => {
            let uid = text(&body["metadata"]["uid"]);
            let version = number(&body["metadata"]["resourceVersion"]);
            let guarded = uid.is_some() || version.is_some();
            (uid, version, guarded)
        }
    }
}

/// Before a write is sent: it carries a uid or resourceVersion precondition (or, for an apply, creates); the uid it
/// presumes was shown to the host and is not one it deleted itself; the version it presumes, and the generation a
/// status write says it observed, are not older than what the host's own last write of the object answered.
fn check_guard(state: &FrontState, id: &WriteId, key: &ObjectKey, body: &Value) {
    let (uid, version, guarded) = presumed(id, body);
    let mut found = Vec::new();
    if !guarded {
        found.push(match (&uid, version) {
            (Some(_), None) => "presumes a uid without the resourceVersion the view saw".to_owned(),
            (None, Some(_)) => "presumes a resourceVersion without the uid the view saw".to_owned(),
            _ => "carries no uid or resourceVersion precondition".to_owned(),
        });
    }
    {
        let mut view = state.view();
        if let Some(uid) = &uid {
            if view.deleted.contains(uid) {
                found.push(format!("presumes uid {uid}, which this host deleted itself"));
            } else if !view.uids.get(key).is_some_and(|uids| uids.contains(uid)) {
                found.push(format!("presumes uid {uid}, which was never in this host's view"));
            }
        }
        let own = view.own.get(key).cloned();
        if let (Some(version), Some((own_uid, own_version, _))) = (version, &own)
            && uid.as_ref().is_none_or(|uid| uid == own_uid)
            && version < *own_version
        {
            found.push(format!(
                "presumes resourceVersion {version}, older than {own_version} its own last write answered"
            ));
        }
        if id.action.starts_with("status/")
            && let Some(observed) = body["status"]["observedGeneration"].as_i64()
        {
            let target = uid.clone().or_else(|| own.as_ref().map(|(uid, _, _)| uid.clone()));
            if let Some((own_uid, _, generation)) = &own
                && target.as_ref() == Some(own_uid)
                && observed < *generation
            {
                found.push(format!(
                    "reports observedGeneration {observed}, older than generation {generation} its own last write answered"
                ));
            }
            if let Some(target) = target {
                let highest = view.observed.entry(target).or_insert(observed);
                if observed < *highest {
                    found.push(format!(
                        "reports observedGeneration {observed} after it had reported {highest}"
                    ));
                }
                *highest = (*highest).max(observed);
            }
        }
    }
    for problem in found {
        state.violation(format!("{} (host {}): {id} on {key} {problem}", state.host, state.host));
    }
}

/// After a successful write: an apply that presumed no uid must have created its object; what the host wrote
/// becomes part of what it knows.
fn check_answer(state: &FrontState, id: &WriteId, key: &ObjectKey, body: &Value, status: u16, response: &Value) {
    let (uid, _, _) = presumed(id, body);
    let answered_uid = response["metadata"]["uid"].as_str().map(str::to_owned);
    if id.action == "apply" && uid.is_none() && status != 201 {
        state.violation(format!(
            "{}: {id} on {key} applied without a uid precondition and updated an existing object (uid {}) rather \
             than creating it",
            state.host,
            answered_uid.as_deref().unwrap_or("?")
        ));
    }
    let mut view = state.view();
    if id.action == "delete" {
        let still_there = response["metadata"]["deletionTimestamp"].is_string()
            && response["metadata"]["finalizers"]
                .as_array()
                .is_some_and(|f| !f.is_empty());
        if let Some(uid) = uid.or(answered_uid)
            && !still_there
        {
            view.deleted.insert(uid);
            view.own.remove(key);
        }
        return;
    }
    let Some(answered_uid) = answered_uid else { return };
    // An object whose last finalizer this write removed while it was being deleted is gone.
    let gone = response["metadata"]["deletionTimestamp"].is_string()
        && response["metadata"]["finalizers"]
            .as_array()
            .is_none_or(|finalizers| finalizers.is_empty());
    if gone {
        view.deleted.insert(answered_uid);
        view.own.remove(key);
        return;
    }
    let version = response["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or_default();
    let generation = response["metadata"]["generation"].as_i64().unwrap_or_default();
    view.uids.entry(key.clone()).or_default().insert(answered_uid.clone());
    view.own.insert(key.clone(), (answered_uid, version, generation));
}

/// A watch: streamed through the gate, which may hold events back, hide intermediate states, or end it with 410.
async fn watch(
    state: &Arc<FrontState>,
    parts: &axum::http::request::Parts,
    resource: ResourcePath,
    body: Bytes,
) -> Response {
    let gate = state.gate.subscribe();
    let epoch = gate.borrow().expiry;
    let upstream = match send(state, parts, body).await {
        Ok(upstream) => upstream,
        Err(error) => return bad_gateway(&error),
    };
    let (response_parts, response_body) = upstream.into_parts();
    if !response_parts.status.is_success() {
        return match response_body.collect_bytes().await {
            Ok(bytes) => respond(
                response_parts.status,
                bytes,
                response_parts.headers.get(header::CONTENT_TYPE).cloned(),
            ),
            Err(error) => bad_gateway(&error),
        };
    }
    let (sender, receiver) = mpsc::channel::<Bytes>(64);
    let pump = WatchPump {
        state: state.clone(),
        resource: resource.resource,
        sender,
        held: Vec::new(),
        epoch,
    };
    tokio::spawn(pump.run(Body::new(response_body), gate));
    let stream = futures::stream::unfold(receiver, |mut receiver| async move {
        receiver
            .recv()
            .await
            .map(|bytes| (Ok::<_, Infallible>(bytes), receiver))
    });
    let mut response = Response::new(Body::from_stream(stream));
    if let Some(content_type) = response_parts.headers.get(header::CONTENT_TYPE) {
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, content_type.clone());
    }
    response
}

/// One watch event held back by the gate.
struct Held {
    key: ObjectKey,
    /// Held because its object is hidden: when released, only the latest of its object is delivered.
    hidden: bool,
    object: Value,
    line: Bytes,
}

/// Moves one watch's events from the API server to the host through the gate.
struct WatchPump {
    state: Arc<FrontState>,
    resource: String,
    sender: mpsc::Sender<Bytes>,
    held: Vec<Held>,
    epoch: u64,
}

impl WatchPump {
    async fn run(mut self, body: Body, mut gate: watch::Receiver<Gate>) {
        let mut data = body.into_data_stream();
        let mut partial: Vec<u8> = Vec::new();
        loop {
            tokio::select! {
                chunk = data.next() => {
                    let Some(Ok(chunk)) = chunk else { break };
                    partial.extend_from_slice(&chunk);
                    while let Some(end) = partial.iter().position(|b| *b == b'\n') {
                        let line: Vec<u8> = partial.drain(..=end).collect();
                        let current = gate.borrow().clone();
                        if !self.pass(Bytes::from(line), &current).await {
                            return;
                        }
                    }
                }
                changed = gate.changed() => {
                    if changed.is_err() {
                        break;
                    }
                    let current = gate.borrow_and_update().clone();
                    if current.expiry != self.epoch {
                        let expired = json!({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1",
                            "metadata": {}, "status": "Failure", "reason": "Expired", "code": 410,
                            "message": "too old resource version (a fault plan ended this watch)"}});
                        let _ = self.sender.send(Bytes::from(format!("{expired}\n"))).await;
                        return;
                    }
                    if !self.release(&current, false).await {
                        return;
                    }
                }
                () = self.sender.closed() => return,
            }
        }
        // The API server ended the watch: what was held is delivered first, so no event is lost to a re-watch that
        // resumes after events the host was already sent.
        let _ = self.release(&Gate::default(), true).await;
    }

    /// Delivers or holds one line; false when the host is gone.
    async fn pass(&mut self, line: Bytes, gate: &Gate) -> bool {
        let Ok(event) = serde_json::from_slice::<Value>(&line) else {
            return self.sender.send(line).await.is_ok();
        };
        match event["type"].as_str() {
            // A bookmark would move the host's resume point past what is held.
            Some("BOOKMARK") if !self.held.is_empty() => return true,
            Some("BOOKMARK" | "ERROR") | None => return self.sender.send(line).await.is_ok(),
            Some(_) => {}
        }
        let key = key_of(&self.resource, &event["object"]);
        let hidden = gate.hidden_objects.contains(&key);
        if hidden || gate.held_resources.contains(&self.resource) || self.held.iter().any(|h| h.key == key) {
            self.held.push(Held {
                key,
                hidden,
                object: event["object"].clone(),
                line,
            });
            return true;
        }
        self.deliver(&key, &event["object"], line).await
    }

    async fn deliver(&self, key: &ObjectKey, object: &Value, line: Bytes) -> bool {
        self.state.view().deliver(key.clone(), object);
        self.sender.send(line).await.is_ok()
    }

    /// Delivers what `gate` no longer holds (everything when `all`), in order; of a hidden object only its latest
    /// event.
    async fn release(&mut self, gate: &Gate, all: bool) -> bool {
        let mut blocked: HashSet<ObjectKey> = HashSet::new();
        let mut kept = Vec::new();
        let mut released = Vec::new();
        for held in std::mem::take(&mut self.held) {
            let still = !all
                && (blocked.contains(&held.key)
                    || gate.held_resources.contains(&self.resource)
                    || gate.hidden_objects.contains(&held.key));
            if still {
                blocked.insert(held.key.clone());
                kept.push(held);
            } else {
                released.push(held);
            }
        }
        self.held = kept;
        let mut latest_hidden: HashMap<ObjectKey, usize> = HashMap::new();
        for (index, held) in released.iter().enumerate() {
            if held.hidden {
                latest_hidden.insert(held.key.clone(), index);
            }
        }
        for (index, held) in released.into_iter().enumerate() {
            if held.hidden && latest_hidden.get(&held.key) != Some(&index) {
                continue;
            }
            if !self.deliver(&held.key, &held.object, held.line).await {
                return false;
            }
        }
        true
    }
}
