//! Serves a plugin's `get` and `list` from the shared caches and records what it read.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use wasm_reconciler_apiserver::selector::LabelSelector;

use super::cache::{KindCache, ObjectKey};
use super::dependencies::Read;
use super::fingerprint::{self, Fingerprint};
use crate::lease::Ticket;
use crate::plugin::{ClusterReader, Gvk};

/// Called with a kind the reader could not answer for yet (see [`CacheReader::pending`]).
pub type OnPending = Arc<dyn Fn(&Gvk) + Send + Sync>;

/// Reads for one reconcile. Kinds are checked against the plugin's declarations before this is reached.
pub struct CacheReader {
    caches: HashMap<Gvk, Arc<KindCache>>,
    /// Each read, with the fingerprint of its answer.
    reads: Mutex<Vec<(Read, Fingerprint)>>,
    /// The reconcile's term: what the plugin does outside the cluster is allowed only while it allows writes.
    ticket: Option<Ticket>,
    /// Kinds whose whole cache is still loading (sharded mode: owned kinds hold only this replica's share), and whom
    /// to tell when a read of one arrives.
    pending: Option<(std::collections::HashSet<Gvk>, OnPending)>,
    /// Set when a read could not be answered: the reconcile's outcome must not be used.
    incomplete: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for CacheReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheReader")
            .field("kinds", &self.caches.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl CacheReader {
    /// A reader over the caches of the plugin's declared kinds.
    pub fn new(caches: HashMap<Gvk, Arc<KindCache>>) -> Self {
        Self {
            caches,
            reads: Mutex::default(),
            ticket: None,
            pending: None,
            incomplete: Default::default(),
        }
    }

    /// Reads of `kinds` cannot be answered yet: each asks `on_pending` for the kind and marks the reconcile
    /// incomplete, and the plugin gets an error rather than an answer that could be wrong ("not found" for an object
    /// that exists outside this replica's share). The controller discards such a reconcile and retries it.
    pub fn pending(mut self, kinds: std::collections::HashSet<Gvk>, on_pending: OnPending) -> Self {
        if !kinds.is_empty() {
            self.pending = Some((kinds, on_pending));
        }
        self
    }

    /// Whether a read went unanswered (see [`CacheReader::pending`]).
    pub fn incomplete(&self) -> bool {
        self.incomplete.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Refuses a read of a kind that is still loading.
    fn check_ready(&self, kind: &Gvk) -> Result<(), String> {
        match &self.pending {
            Some((kinds, on_pending)) if kinds.contains(kind) => {
                self.incomplete.store(true, std::sync::atomic::Ordering::Relaxed);
                on_pending(kind);
                Err(format!(
                    "the host is still loading every {kind} to answer reads of it; this reconcile is discarded and \
                     retried once they are loaded"
                ))
            }
            _ => Ok(()),
        }
    }

    /// Fences the plugin's effects outside the cluster with the reconcile's `ticket`.
    pub fn with_ticket(mut self, ticket: Ticket) -> Self {
        self.ticket = Some(ticket);
        self
    }

    /// What was read so far, each read with the fingerprint of what it answered.
    pub fn take_reads(&self) -> Vec<(Read, Fingerprint)> {
        std::mem::take(&mut *self.reads.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn cache(&self, kind: &Gvk) -> Result<&Arc<KindCache>, String> {
        self.caches
            .get(kind)
            .ok_or_else(|| format!("kind {kind} is not being watched by the host"))
    }

    /// Refuses a namespace the plugin's settings leave out: it is not watched, so absence would be a lie.
    fn check_watched(kind: &Gvk, cache: &KindCache, namespace: Option<&str>) -> Result<(), String> {
        match (namespace, cache.namespaces()) {
            (Some(namespace), Some(watched)) if !cache.watches(Some(namespace)) => Err(format!(
                "namespace {namespace} is not watched for this plugin: its settings limit {kind} to {}",
                watched.iter().cloned().collect::<Vec<_>>().join(", ")
            )),
            _ => Ok(()),
        }
    }

    fn record(&self, read: Read, answer: Fingerprint) {
        self.reads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((read, answer));
    }
}

impl ClusterReader for CacheReader {
    fn may_act(&self) -> Result<(), String> {
        match &self.ticket {
            Some(ticket) => ticket.check().map_err(|fenced| fenced.to_string()),
            None => Ok(()),
        }
    }

    fn get(&self, kind: &Gvk, namespace: Option<&str>, name: &str) -> Result<Option<String>, String> {
        self.check_ready(kind)?;
        let cache = self.cache(kind)?;
        let namespace = if cache.namespaced() { namespace } else { None };
        if cache.namespaced() && namespace.is_none() {
            return Err(format!("{kind} is namespaced: `get` needs a namespace"));
        }
        Self::check_watched(kind, cache, namespace)?;
        let key = ObjectKey::new(namespace, name);
        let found = cache.get(&key);
        let answer = fingerprint::got(found.as_deref());
        self.record(Read::Get { gvk: kind.clone(), key }, answer);
        Ok(found.map(|object| object.json.to_string()))
    }

    fn list(&self, kind: &Gvk, namespace: Option<&str>, label_selector: Option<&str>) -> Result<Vec<String>, String> {
        self.check_ready(kind)?;
        let cache = self.cache(kind)?;
        let selector = LabelSelector::parse(label_selector.unwrap_or_default())
            .map_err(|e| format!("label selector {:?}: {e}", label_selector.unwrap_or_default()))?;
        let namespace = if cache.namespaced() { namespace } else { None };
        Self::check_watched(kind, cache, namespace)?;
        let objects = fingerprint::list_of(cache, namespace, &selector);
        let answer = fingerprint::listed(&objects);
        self.record(
            Read::List {
                gvk: kind.clone(),
                namespace: namespace.map(str::to_owned),
                selector,
            },
            answer,
        );
        Ok(objects.iter().map(|object| object.json.to_string()).collect())
    }
}
