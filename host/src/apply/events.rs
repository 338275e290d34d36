//! Kubernetes Events (`events.k8s.io/v1`) on primaries: plugin events and host transitions, rate-limited per
//! object so a flapping plugin cannot flood the API server.
//!
//! Repeats become series as client-go's events/v1 recorder makes them: an event identical to one recorded for the
//! same object in the last six minutes (same type, reason, action, reporter *and note*) bumps that Event's
//! `series.count` instead of creating another; an event with a new note is a new Event, so `kubectl describe`
//! always shows what the plugin last said.
//!
//! Events are written off the reconcile's critical path, as client-go's broadcaster does: `publish` queues the
//! event on one of a few lanes, each a task writing its events in order. An object's events always take the same
//! lane, so they keep their order and aggregate; a full lane makes `publish` wait.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as KubeEvent, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::sync::mpsc;
use tracing::Instrument as _;

use crate::lease::Ticket;
use crate::plugin::{Event, EventType};

/// Events allowed per object in a burst.
const BURST: f64 = 25.0;
/// One more event per object is allowed every this long once the burst is spent.
const REFILL_EVERY: Duration = Duration::from_secs(10);
/// Tasks writing events concurrently, per sink.
const LANES: usize = 4;
/// Events waiting per lane before `publish` waits.
const LANE_CAPACITY: usize = 256;
/// How long after its last occurrence an event can still grow its series (client-go's value).
const SERIES_WINDOW: Duration = Duration::from_secs(6 * 60);

/// An event on its way to the API server.
struct Pending {
    type_: EventType,
    reason: String,
    note: String,
    action: String,
    regarding: ObjectReference,
    /// The object's uid (its key when it has none): its rate-limit bucket, lane and series.
    uid: String,
    key: String,
    /// The reconcile's term: the event is written only if it still allows.
    ticket: Ticket,
    /// For traces: the `event.write` span, under the reconcile's, from the event's queueing to its write.
    span: tracing::Span,
}

/// Publishes events for one plugin's primaries.
#[derive(Clone)]
pub struct EventSink {
    lanes: Arc<Vec<mpsc::Sender<Pending>>>,
    plugin: String,
    buckets: Arc<Mutex<HashMap<String, (f64, Instant)>>>,
}

impl std::fmt::Debug for EventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSink")
            .field("plugin", &self.plugin)
            .finish_non_exhaustive()
    }
}

impl EventSink {
    /// A sink reporting as `wasm-reconciler/<plugin>` from `instance` (the pod name, or the host name). Its lanes
    /// run on the current tokio runtime until the sink and all its clones are dropped and their events written.
    pub fn new(client: Client, plugin: &str, instance: Option<String>) -> Self {
        let controller = format!("wasm-reconciler/{plugin}");
        let recorder = Arc::new(SeriesRecorder {
            client,
            instance: instance.unwrap_or_else(|| controller.clone()),
            controller,
            series: Mutex::default(),
        });
        let lanes = (0..LANES)
            .map(|_| {
                let (sender, receiver) = mpsc::channel(LANE_CAPACITY);
                tokio::spawn(write_events(recorder.clone(), plugin.to_owned(), receiver));
                sender
            })
            .collect();
        Self {
            lanes: Arc::new(lanes),
            plugin: plugin.to_owned(),
            buckets: Default::default(),
        }
    }

    /// Queues `event` for the object; failures are logged, never fatal. `action` names what the host did.
    pub async fn publish(&self, ticket: &Ticket, regarding: &ObjectReference, key: &str, action: &str, event: &Event) {
        let uid = regarding.uid.clone().unwrap_or_else(|| key.to_owned());
        if !self.allow(&uid) {
            tracing::debug!(plugin = %self.plugin, key, reason = %event.reason, "event dropped by the rate limit");
            return;
        }
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        uid.hash(&mut hasher);
        let lane = &self.lanes[(hasher.finish() % LANES as u64) as usize];
        let pending = Pending {
            type_: event.event_type,
            reason: event.reason.clone(),
            note: event.note.clone(),
            action: action.to_owned(),
            regarding: regarding.clone(),
            uid,
            key: key.to_owned(),
            ticket: ticket.clone(),
            span: tracing::info_span!(
                target: crate::TRACE_ONLY_TARGET,
                "event.write",
                reason = %event.reason,
                type = match event.event_type {
                    EventType::Normal => "Normal",
                    EventType::Warning => "Warning",
                },
                otel.status_code = tracing::field::Empty,
            ),
        };
        if lane.send(pending).await.is_err() {
            tracing::debug!(plugin = %self.plugin, key, reason = %event.reason, "event dropped: the runtime is shutting down");
        }
    }

    /// Token bucket per object.
    fn allow(&self, uid: &str) -> bool {
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        if buckets.len() > 10_000 {
            buckets.retain(|_, (_, last)| now.duration_since(*last) < REFILL_EVERY * 25);
        }
        let (tokens, last) = buckets.entry(uid.to_owned()).or_insert((BURST, now));
        *tokens = (*tokens + now.duration_since(*last).as_secs_f64() / REFILL_EVERY.as_secs_f64()).min(BURST);
        *last = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Writes a lane's events in order until every sender is gone.
async fn write_events(recorder: Arc<SeriesRecorder>, plugin: String, mut receiver: mpsc::Receiver<Pending>) {
    while let Some(pending) = receiver.recv().await {
        if let Err(fenced) = pending.ticket.check() {
            tracing::debug!(plugin, key = pending.key, reason = %pending.reason, why = %fenced, "event not written");
            continue;
        }
        if let Err(error) = recorder.record(&pending).instrument(pending.span.clone()).await {
            pending.span.record("otel.status_code", "ERROR");
            tracing::warn!(plugin, key = pending.key, reason = %pending.reason, error = %crate::error_chain(&error), "could not record event");
        }
    }
}

/// What makes two events one series: client-go's events/v1 isomorphism (the reporter is the recorder's own).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct SeriesKey {
    regarding: String,
    type_: &'static str,
    reason: String,
    action: String,
    note: String,
}

/// An Event already written, and how often it was seen.
#[derive(Debug)]
struct Series {
    namespace: String,
    name: String,
    count: i32,
    last_seen: Instant,
}

/// Recent series; ones past [`SERIES_WINDOW`] are swept out once a minute.
#[derive(Debug)]
struct SeriesCache {
    entries: HashMap<SeriesKey, Series>,
    swept: Instant,
}

impl Default for SeriesCache {
    fn default() -> Self {
        Self {
            entries: HashMap::new(),
            swept: Instant::now(),
        }
    }
}

/// Creates Events and grows their series.
struct SeriesRecorder {
    client: Client,
    controller: String,
    instance: String,
    series: Mutex<SeriesCache>,
}

impl SeriesRecorder {
    async fn record(&self, pending: &Pending) -> Result<(), kube::Error> {
        let type_ = match pending.type_ {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        };
        let regarding = &pending.regarding;
        let key = SeriesKey {
            regarding: pending.uid.clone(),
            type_,
            reason: pending.reason.clone(),
            action: pending.action.clone(),
            note: pending.note.clone(),
        };
        let repeat = {
            let mut cache = self.series.lock().unwrap_or_else(PoisonError::into_inner);
            if cache.swept.elapsed() > Duration::from_secs(60) {
                cache.entries.retain(|_, s| s.last_seen.elapsed() < SERIES_WINDOW);
                cache.swept = Instant::now();
            }
            cache
                .entries
                .get_mut(&key)
                .filter(|s| s.last_seen.elapsed() < SERIES_WINDOW)
                .map(|s| {
                    s.count += 1;
                    s.last_seen = Instant::now();
                    (s.namespace.clone(), s.name.clone(), s.count)
                })
        };
        let now = Timestamp::now();
        if let Some((namespace, name, count)) = repeat {
            let api: Api<KubeEvent> = Api::namespaced(self.client.clone(), &namespace);
            let series = EventSeries {
                count,
                last_observed_time: MicroTime(now),
            };
            match api
                .patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({ "series": series })),
                )
                .await
            {
                Ok(_) => return Ok(()),
                // The Event expired or was deleted: start over with a new one.
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(error) => return Err(error),
            }
        }

        // Cluster-scoped objects get their Events in `default`, as client-go and kube do.
        let namespace = regarding.namespace.clone().unwrap_or_else(|| "default".to_owned());
        let object_name = regarding.name.as_deref().unwrap_or(&self.controller);
        let event = KubeEvent {
            metadata: ObjectMeta {
                namespace: Some(namespace.clone()),
                name: Some(format!("{object_name}.{:x}", now.as_nanosecond())),
                ..ObjectMeta::default()
            },
            event_time: Some(MicroTime(now)),
            type_: Some(type_.to_owned()),
            reason: Some(pending.reason.clone()),
            note: Some(pending.note.clone()),
            action: Some(pending.action.clone()),
            regarding: Some(regarding.clone()),
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.instance.clone()),
            ..KubeEvent::default()
        };
        let api: Api<KubeEvent> = Api::namespaced(self.client.clone(), &namespace);
        let created = api.create(&PostParams::default(), &event).await?;
        self.series
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entries
            .insert(
                key,
                Series {
                    namespace,
                    name: created.metadata.name.unwrap_or_default(),
                    count: 1,
                    last_seen: Instant::now(),
                },
            );
        Ok(())
    }
}
