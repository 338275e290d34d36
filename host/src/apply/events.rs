//! Kubernetes Events on primaries: plugin events and host transitions, aggregated into series by the kube
//! recorder and rate-limited per object so a flapping plugin cannot flood the API server.
//!
//! Events are written off the reconcile's critical path, as client-go's broadcaster does: `publish` queues the
//! event on one of a few lanes, each a task writing its events in order. An object's events always take the same
//! lane, so they keep their order and aggregate into one series; a full lane makes `publish` wait.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::{Event as KubeEvent, EventType as KubeEventType, Recorder, Reporter};
use tokio::sync::mpsc;

use crate::plugin::{Event, EventType};

/// Events allowed per object in a burst.
const BURST: f64 = 25.0;
/// One more event per object is allowed every this long once the burst is spent.
const REFILL_EVERY: Duration = Duration::from_secs(10);
/// Tasks writing events concurrently, per sink.
const LANES: usize = 4;
/// Events waiting per lane before `publish` waits.
const LANE_CAPACITY: usize = 256;

/// An event on its way to the API server.
struct Pending {
    event: KubeEvent,
    regarding: ObjectReference,
    key: String,
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
        let reporter = Reporter {
            controller: format!("wasm-reconciler/{plugin}"),
            instance,
        };
        let recorder = Recorder::new(client, reporter);
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
    pub async fn publish(&self, regarding: &ObjectReference, key: &str, action: &str, event: &Event) {
        let uid = regarding.uid.clone().unwrap_or_else(|| key.to_owned());
        if !self.allow(&uid) {
            tracing::debug!(plugin = %self.plugin, key, reason = %event.reason, "event dropped by the rate limit");
            return;
        }
        let kube_event = KubeEvent {
            type_: match event.type_ {
                EventType::Normal => KubeEventType::Normal,
                EventType::Warning => KubeEventType::Warning,
            },
            reason: event.reason.clone(),
            note: Some(event.note.clone()),
            action: action.to_owned(),
            secondary: None,
        };
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        uid.hash(&mut hasher);
        let lane = &self.lanes[(hasher.finish() % LANES as u64) as usize];
        let pending = Pending {
            event: kube_event,
            regarding: regarding.clone(),
            key: key.to_owned(),
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
async fn write_events(recorder: Recorder, plugin: String, mut receiver: mpsc::Receiver<Pending>) {
    while let Some(Pending { event, regarding, key }) = receiver.recv().await {
        if let Err(error) = recorder.publish(&event, &regarding).await {
            tracing::warn!(plugin, key, reason = %event.reason, error = %crate::error_chain(&error), "could not record event");
        }
    }
}
