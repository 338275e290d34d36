//! Watch streams: initial events, resume from history, selector transitions, bookmarks, timeouts,
//! 410 Gone as an ERROR event, and dropping on fault injection.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderValue, header};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use super::encode::content_type;
use super::handlers::selection;
use super::request::{Query, Representation};
use crate::cluster::Cluster;
use crate::error::{ApiError, ApiResult};
use crate::object;
use crate::registry::{ResourceInfo, conversion};
use crate::storage::{EventType, Expired, Subscription, WatchEvent, WatchFrom};
use crate::table::{self, IncludeObject};

/// Longest watch when the client sets no timeout (kube-apiserver's default minimum request timeout).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);
/// How long before a watch's timeout its pre-timeout bookmark goes out.
const PRE_TIMEOUT_BOOKMARK: Duration = Duration::from_secs(2);

struct WatchState {
    cluster: Arc<Cluster>,
    info: Arc<ResourceInfo>,
    namespace: Option<String>,
    name: Option<String>,
    filter: Box<dyn Fn(&Value) -> bool + Send + Sync>,
    representation: Representation,
    include: IncludeObject,
    headers_sent: bool,
    last_revision: u64,
    sender: mpsc::Sender<Result<Bytes, std::convert::Infallible>>,
}

/// Start a watch response.
pub fn serve(
    cluster: Arc<Cluster>,
    info: Arc<ResourceInfo>,
    namespace: Option<String>,
    name: Option<String>,
    query: Query,
    representation: Representation,
    listener: Option<tokio_util::sync::CancellationToken>,
) -> ApiResult<Response> {
    let filter = selection(&info, &query)?;
    let version = query.get("resourceVersion").unwrap_or("").to_string();
    let bookmarks = query.flag("allowWatchBookmarks");
    let mut send_initial = query.get("sendInitialEvents").map(|v| v == "true");
    let version_match = query.get("resourceVersionMatch").unwrap_or("");
    // A watch from "now" (no resourceVersion, or "0") streams the current state first, as a watch list does.
    if send_initial.is_none() && version_match.is_empty() && (version.is_empty() || version == "0") {
        send_initial = Some(true);
    } else if send_initial.is_some() && version_match != "NotOlderThan" {
        return Err(ApiError::invalid_fields(
            "meta.k8s.io",
            "ListOptions",
            "",
            &[crate::error::FieldViolation::forbidden(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            )],
        ));
    }
    let from = match (version.as_str(), send_initial) {
        (_, Some(true)) => WatchFrom::Now { initial: true },
        ("", Some(false)) => WatchFrom::Now { initial: false },
        ("" | "0", _) => WatchFrom::Now { initial: true },
        (text, _) => WatchFrom::Revision(
            text.parse()
                .map_err(|_| ApiError::new(500, "", super::handlers::invalid_resource_version(text)))?,
        ),
    };
    let timeout = query
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_TIMEOUT);
    let include = IncludeObject::parse(query.get("includeObject"));
    let subscription = cluster.store.watch(&info.storage, from);
    let (sender, receiver) = mpsc::channel(256);
    let mut state = WatchState {
        cluster: cluster.clone(),
        info: info.clone(),
        namespace,
        name,
        filter,
        representation: representation.clone(),
        include,
        headers_sent: false,
        last_revision: 0,
        sender,
    };
    tokio::spawn(async move {
        match subscription {
            Ok(subscription) => {
                // The end of the initial events is marked only for clients that take bookmarks.
                let initial_end = send_initial == Some(true) && bookmarks;
                let listener = listener.unwrap_or_default();
                tokio::select! {
                    _ = state.run(subscription, bookmarks, initial_end, timeout) => {}
                    _ = listener.cancelled() => {}
                }
            }
            Err(expired) => {
                state.send_expired(expired).await;
            }
        }
    });
    let mut response = Response::new(Body::from_stream(ReceiverStream::new(receiver)));
    let content_type = match &representation {
        Representation::AggregatedDiscovery(_) => "application/json".to_string(),
        other => content_type(other),
    };
    if let Ok(value) = HeaderValue::from_str(&content_type) {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache, private"));
    Ok(response)
}

impl WatchState {
    fn in_scope(&self, object: &Value) -> bool {
        if let Some(namespace) = &self.namespace
            && object::namespace(object) != namespace
        {
            return false;
        }
        if let Some(name) = &self.name
            && object::name(object) != name
        {
            return false;
        }
        (self.filter)(object)
    }

    async fn send_line(&mut self, event_type: &str, object: Value) -> bool {
        let mut line = serde_json::to_vec(&json!({"type": event_type, "object": object})).unwrap_or_default();
        line.push(b'\n');
        self.sender.send(Ok(Bytes::from(line))).await.is_ok()
    }

    fn render(&mut self, stored: &Value) -> Value {
        match &self.representation {
            Representation::Table(api_version) => {
                let with_headers = !self.headers_sent;
                self.headers_sent = true;
                table::table(
                    &self.info,
                    &[Arc::new(stored.clone())],
                    json!({"resourceVersion": object::resource_version(stored)}),
                    self.include,
                    with_headers,
                    api_version,
                )
            }
            Representation::PartialMetadata => table::partial_metadata(stored),
            _ => conversion::to_served(&self.info, stored.clone()),
        }
    }

    /// Send one stored event, translating selector transitions; false once the client is gone.
    async fn deliver(&mut self, event: &WatchEvent) -> bool {
        self.cluster.faults.watch_delivery_allowed().await;
        self.last_revision = self.last_revision.max(event.revision);
        let now = self.in_scope(&event.object);
        let before = event.previous.as_ref().is_some_and(|p| self.in_scope(p));
        let event_type = match event.event_type {
            EventType::Added if now => "ADDED",
            EventType::Modified if now && before => "MODIFIED",
            EventType::Modified if now => "ADDED",
            EventType::Modified if before => {
                // An object leaving the selection is deleted as the watcher last saw it, at the new version.
                let Some(previous) = &event.previous else { return true };
                let mut last_seen = (**previous).clone();
                object::metadata_mut(&mut last_seen)
                    .insert("resourceVersion".into(), json!(event.revision.to_string()));
                let rendered = self.render(&last_seen);
                return self.send_line("DELETED", rendered).await;
            }
            EventType::Deleted if now || before => "DELETED",
            _ => return true,
        };
        if self.representation == Representation::Json && !conversion::changes_on_serving(&self.info) {
            let object = event.encoded_object();
            let mut line = Vec::with_capacity(object.len() + 32);
            line.extend_from_slice(b"{\"type\":\"");
            line.extend_from_slice(event_type.as_bytes());
            line.extend_from_slice(b"\",\"object\":");
            line.extend_from_slice(object);
            line.extend_from_slice(b"}\n");
            return self.sender.send(Ok(Bytes::from(line))).await.is_ok();
        }
        let rendered = self.render(&event.object);
        self.send_line(event_type, rendered).await
    }

    async fn send_bookmark(&mut self, revision: u64, initial_end: bool) -> bool {
        let mut metadata = json!({"resourceVersion": revision.to_string()});
        if initial_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let bookmark = json!({
            "kind": self.info.kind,
            "apiVersion": self.info.api_version(),
            "metadata": metadata,
        });
        self.send_line("BOOKMARK", bookmark).await
    }

    async fn send_expired(&mut self, expired: Expired) {
        let status = ApiError::expired(format!(
            "too old resource version: {} ({})",
            expired.requested, expired.oldest
        ))
        .status();
        self.send_line("ERROR", status).await;
    }

    async fn run(&mut self, subscription: Subscription, bookmarks: bool, initial_end: bool, timeout: Duration) {
        let Subscription {
            backlog,
            mut receiver,
            revision,
        } = subscription;
        for event in &backlog {
            if !self.deliver(event).await {
                return;
            }
        }
        self.last_revision = self.last_revision.max(revision);
        if initial_end && !self.send_bookmark(revision, true).await {
            return;
        }
        let mut drops = self.cluster.faults.watch_drops();
        drops.borrow_and_update();
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        // As kube-apiserver's watch cache does, a client that takes bookmarks gets one 2 s before its timeout, so
        // that it resumes from a recent resourceVersion; a watch of 2 s or less gets none.
        let pre_timeout = timeout.checked_sub(PRE_TIMEOUT_BOOKMARK).filter(|left| !left.is_zero());
        let mut pre_timeout_pending = bookmarks && pre_timeout.is_some();
        let pre_timeout = tokio::time::sleep(pre_timeout.unwrap_or(timeout));
        tokio::pin!(pre_timeout);
        let interval = self.cluster.settings.bookmark_interval;
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
        let sender = self.sender.clone();
        loop {
            tokio::select! {
                _ = sender.closed() => return,
                _ = &mut deadline => return,
                changed = drops.changed() => {
                    if changed.is_ok() {
                        tracing::debug!(resource = %self.info.plural, "dropping watch (fault injection)");
                    }
                    return;
                }
                _ = &mut pre_timeout, if pre_timeout_pending => {
                    pre_timeout_pending = false;
                    match self.drain_then_revision(&mut receiver).await {
                        Some(revision) => {
                            if !self.send_bookmark(revision, false).await {
                                return;
                            }
                        }
                        None => return,
                    }
                }
                _ = ticker.tick(), if bookmarks => {
                    match self.drain_then_revision(&mut receiver).await {
                        Some(revision) => {
                            if !self.send_bookmark(revision, false).await {
                                return;
                            }
                        }
                        None => return,
                    }
                }
                received = receiver.recv() => match received {
                    Ok(event) => {
                        if !self.deliver(&event).await {
                            return;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        match self.cluster.store.watch(&self.info.storage, WatchFrom::Revision(self.last_revision)) {
                            Ok(resumed) => {
                                receiver = resumed.receiver;
                                for event in &resumed.backlog {
                                    if !self.deliver(event).await {
                                        return;
                                    }
                                }
                            }
                            Err(expired) => {
                                self.send_expired(expired).await;
                                return;
                            }
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                },
            }
        }
    }

    /// Deliver every event already sent up to the current revision, then return that revision.
    async fn drain_then_revision(&mut self, receiver: &mut broadcast::Receiver<Arc<WatchEvent>>) -> Option<u64> {
        let revision = self.cluster.store.revision();
        loop {
            match receiver.try_recv() {
                Ok(event) => {
                    if !self.deliver(&event).await {
                        return None;
                    }
                }
                Err(broadcast::error::TryRecvError::Empty) => break,
                Err(broadcast::error::TryRecvError::Lagged(_)) => {
                    match self
                        .cluster
                        .store
                        .watch(&self.info.storage, WatchFrom::Revision(self.last_revision))
                    {
                        Ok(resumed) => {
                            *receiver = resumed.receiver;
                            for event in &resumed.backlog {
                                if !self.deliver(event).await {
                                    return None;
                                }
                            }
                        }
                        Err(expired) => {
                            self.send_expired(expired).await;
                            return None;
                        }
                    }
                }
                Err(broadcast::error::TryRecvError::Closed) => return None,
            }
        }
        self.last_revision = self.last_revision.max(revision);
        Some(self.last_revision)
    }
}
