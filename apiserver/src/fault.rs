//! Fault injection for tests of clients: failing writes, dropped or expired watches, added latency.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::watch;

use crate::cluster::Cluster;
use crate::error::{ApiError, Subject};

/// What an injected write failure looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteFault {
    /// 409 Conflict, as on a stale resourceVersion.
    Conflict,
    /// The given HTTP status (500, 503, 429, 504, ...) with the matching Status reason.
    Status(u16),
}

impl WriteFault {
    /// The error a faulted write answers with.
    pub(crate) fn to_error(self, subject: Subject<'_>) -> ApiError {
        match self {
            WriteFault::Conflict => ApiError::stale(subject),
            WriteFault::Status(429) => ApiError::new(
                429,
                "TooManyRequests",
                "the server has received too many requests and has asked us to try again later",
            )
            .with_details(serde_json::json!({"retryAfterSeconds": 1})),
            WriteFault::Status(503) => ApiError::new(
                503,
                "ServiceUnavailable",
                "the server is currently unable to handle the request",
            ),
            WriteFault::Status(504) => ApiError::new(
                504,
                "Timeout",
                "the server was unable to return a response in the time allotted, but may still be processing the request",
            ),
            WriteFault::Status(code) => {
                let mut error = ApiError::internal("injected fault");
                error.code = code;
                error
            }
        }
    }
}

/// Fault bookkeeping inside the server.
#[derive(Debug)]
pub struct FaultState {
    writes: Mutex<HashMap<String, (usize, WriteFault)>>,
    latency: Mutex<Duration>,
    watch_generation: watch::Sender<u64>,
    watches_paused: watch::Sender<bool>,
}

impl Default for FaultState {
    fn default() -> Self {
        FaultState {
            writes: Mutex::new(HashMap::new()),
            latency: Mutex::new(Duration::ZERO),
            watch_generation: watch::channel(0).0,
            watches_paused: watch::channel(false).0,
        }
    }
}

impl FaultState {
    /// Consume one pending fault for a write to `resource` (`configmaps`, `deployments.apps`).
    pub fn take_write_fault(&self, resource: &str) -> Option<WriteFault> {
        let mut writes = self.writes.lock();
        for key in [resource, "*"] {
            if let Some((remaining, fault)) = writes.get_mut(key) {
                let fault = *fault;
                *remaining -= 1;
                if *remaining == 0 {
                    writes.remove(key);
                }
                return Some(fault);
            }
        }
        None
    }

    /// Latency to add before each request.
    pub fn latency(&self) -> Duration {
        *self.latency.lock()
    }

    /// Changes whenever open watches must be dropped.
    pub fn watch_drops(&self) -> watch::Receiver<u64> {
        self.watch_generation.subscribe()
    }

    /// Returns once watch events may be delivered (at once unless [`Faults::pause_watches`] is in force).
    pub async fn watch_delivery_allowed(&self) {
        if !*self.watches_paused.borrow() {
            return;
        }
        let mut paused = self.watches_paused.subscribe();
        // The sender lives as long as `self`.
        let _ = paused.wait_for(|paused| !*paused).await;
    }
}

/// Handle for injecting faults into a running server.
#[derive(Debug, Clone)]
pub struct Faults {
    pub(crate) cluster: Arc<Cluster>,
}

impl Faults {
    /// Fail the next `count` writes (create, update, patch, delete) of `resource` — a plural such as
    /// `configmaps` or `deployments.apps`, or `*` for any — with `fault`.
    pub fn fail_writes(&self, resource: &str, count: usize, fault: WriteFault) {
        let mut writes = self.cluster.faults.writes.lock();
        if count == 0 {
            writes.remove(resource);
        } else {
            writes.insert(resource.to_string(), (count, fault));
        }
    }

    /// Delay every request by `latency`.
    pub fn set_latency(&self, latency: Duration) {
        *self.cluster.faults.latency.lock() = latency;
    }

    /// End every open watch stream now (clients see the connection close and must re-watch).
    pub fn drop_watches(&self) {
        self.cluster.faults.watch_generation.send_modify(|g| *g += 1);
    }

    /// Hold back every watch event (open and new watches) until [`Faults::resume_watches`]: a lagging watch, as
    /// when a client's informer falls behind. Requests are answered as usual meanwhile.
    pub fn pause_watches(&self) {
        self.cluster.faults.watches_paused.send_replace(true);
    }

    /// Deliver the watch events held back by [`Faults::pause_watches`], in order, and resume normal delivery.
    pub fn resume_watches(&self) {
        self.cluster.faults.watches_paused.send_replace(false);
    }

    /// Forget the watch history and drop open watches: resuming from any earlier resourceVersion
    /// answers 410 Gone, so clients must relist.
    pub fn expire_watches(&self) {
        self.cluster.store.compact();
        self.drop_watches();
    }

    /// Remove all pending faults and latency, and resume paused watches.
    pub fn clear(&self) {
        self.cluster.faults.writes.lock().clear();
        self.set_latency(Duration::ZERO);
        self.resume_watches();
    }
}
