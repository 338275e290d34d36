//! Kubernetes Events on primaries: plugin events and host transitions, aggregated into series by the kube
//! recorder and rate-limited per object so a flapping plugin cannot flood the API server.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::{Event as KubeEvent, EventType as KubeEventType, Recorder, Reporter};

use crate::plugin::{Event, EventType};

/// Events allowed per object in a burst.
const BURST: f64 = 25.0;
/// One more event per object is allowed every this long once the burst is spent.
const REFILL_EVERY: Duration = Duration::from_secs(10);

/// Publishes events for one plugin's primaries.
#[derive(Clone)]
pub struct EventSink {
    recorder: Recorder,
    plugin: String,
    buckets: std::sync::Arc<Mutex<HashMap<String, (f64, Instant)>>>,
}

impl std::fmt::Debug for EventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSink")
            .field("plugin", &self.plugin)
            .finish_non_exhaustive()
    }
}

impl EventSink {
    /// A sink reporting as `wasm-reconciler/<plugin>` from `instance` (the pod name, or the host name).
    pub fn new(client: Client, plugin: &str, instance: Option<String>) -> Self {
        let reporter = Reporter {
            controller: format!("wasm-reconciler/{plugin}"),
            instance,
        };
        Self {
            recorder: Recorder::new(client, reporter),
            plugin: plugin.to_owned(),
            buckets: Default::default(),
        }
    }

    /// Records `event` on the object; failures are logged, never fatal. `action` names what the host did.
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
        if let Err(error) = self.recorder.publish(&kube_event, regarding).await {
            tracing::warn!(plugin = %self.plugin, key, reason = %event.reason, error = %crate::error_chain(&error), "could not record event");
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
