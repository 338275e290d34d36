//! One running controller per plugin: watches feed its workqueue; workers build the world view, call the
//! plugin off the async runtime, and turn the outcome into API writes.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::{FutureExt as _, StreamExt as _};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{Api, DynamicObject};
use serde_json::Value;

use super::cache::{CacheChange, CachedObject, Caches, KindCache, ObjectKey, Subscription};
use super::dependencies::Dependencies;
use super::reader::CacheReader;
use super::workqueue::{Completion, Item, QueueConfig, Source, WorkQueue};
use crate::apply::children::{PreparedChild, PrimaryRef, ScopeError, is_subset, prepare_children};
use crate::apply::events::EventSink;
use crate::apply::status::{ReconciledState, desired_status, reconciled_condition};
use crate::apply::writer::{self, WriteError};
use crate::plugin::{
    CallLabels, ClusterReader, ControllerSpec, Event, EventType, Gvk, NativePlugin, Outcome, Plugin, ReconcileError,
    WorldView,
};
use crate::telemetry::{Metrics, ReconcileResult};

/// The reconcile logic a controller runs: a sandboxed wasm plugin, or native code linked into the host
/// (benchmarks only).
#[derive(Debug, Clone)]
pub enum Logic {
    /// A WebAssembly plugin.
    Wasm(Plugin),
    /// Native code through the same path.
    Native(NativePlugin),
}

impl Logic {
    /// What it reconciles.
    pub fn spec(&self) -> &ControllerSpec {
        match self {
            Self::Wasm(plugin) => plugin.spec(),
            Self::Native(plugin) => plugin.spec(),
        }
    }

    fn call(
        &self,
        view: &WorldView,
        reader: Arc<dyn ClusterReader>,
        labels: CallLabels,
    ) -> Result<Outcome, ReconcileError> {
        match self {
            Self::Wasm(plugin) => plugin.reconcile(view, reader, labels),
            Self::Native(plugin) => plugin.reconcile(view, reader, labels),
        }
    }

    /// The digest of the component, or `native`.
    pub fn digest(&self) -> &str {
        match self {
            Self::Wasm(plugin) => plugin.sha256(),
            Self::Native(_) => "native",
        }
    }
}

/// One version of a plugin: its logic and configuration.
#[derive(Debug, Clone)]
pub struct Version {
    /// The logic.
    pub logic: Logic,
    /// Configuration handed to the plugin.
    pub config: Arc<Value>,
}

/// How a controller runs.
#[derive(Debug, Clone)]
pub struct ControllerOptions {
    /// Concurrent reconciles.
    pub concurrency: usize,
    /// Only reconcile primaries in these namespaces (all when `None`).
    pub namespaces: Option<Vec<String>>,
    /// Resync period overriding the plugin's own.
    pub resync: Option<Duration>,
    /// The reporting instance for events (pod or host name).
    pub instance: Option<String>,
}

impl Default for ControllerOptions {
    fn default() -> Self {
        Self {
            concurrency: 4,
            namespaces: None,
            resync: None,
            instance: None,
        }
    }
}

/// Why a controller could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A kind it needs is not served and did not become served in time.
    #[error(transparent)]
    Cache(#[from] super::cache::CacheError),
}

/// Hash of the last object applied, per child (kind and key) of one primary.
type AppliedChildren = HashMap<(Gvk, ObjectKey), u64>;

/// Child writes (applies, deletions) of one reconcile in flight at once.
const CHILD_WRITES_IN_FLIGHT: usize = 8;

/// Shared state of a running controller.
struct Shared {
    /// Identifies this controller's own writes in cache changes ([`CacheChange::seen_by`]).
    id: u64,
    name: String,
    version: RwLock<Arc<Version>>,
    spec: ControllerSpec,
    options: ControllerOptions,
    field_manager: String,
    primary: Arc<KindCache>,
    /// Caches of every declared kind (primary, owned, read).
    caches: HashMap<Gvk, Arc<KindCache>>,
    queue: WorkQueue<ObjectKey>,
    dependencies: Dependencies,
    events: EventSink,
    /// Per primary, the hash of the last object applied per child, to skip no-op applies.
    last_applied: Mutex<HashMap<ObjectKey, AppliedChildren>>,
    client: kube::Client,
    metrics: Option<Metrics>,
}

/// A running controller. Stop it with [`Controller::stop`].
pub struct Controller {
    shared: Arc<Shared>,
    _subscriptions: Vec<Subscription>,
    workers: Vec<tokio::task::JoinHandle<()>>,
    resync: Option<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for Controller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.shared.name)
            .finish_non_exhaustive()
    }
}

impl Controller {
    /// Starts watching the plugin's kinds, waits for the caches to sync, then starts the workers.
    pub async fn start(
        name: &str,
        version: Version,
        caches: &Caches,
        options: ControllerOptions,
        metrics: Option<Metrics>,
    ) -> Result<Self, StartError> {
        let spec = version.logic.spec().clone();
        let mut kind_caches = HashMap::new();
        for gvk in std::iter::once(&spec.primary).chain(&spec.owns).chain(&spec.reads) {
            if !kind_caches.contains_key(gvk) {
                kind_caches.insert(
                    gvk.clone(),
                    caches.get_or_start(gvk, options.namespaces.as_deref()).await?,
                );
            }
        }
        for cache in kind_caches.values() {
            if !cache.is_synced() {
                tracing::info!(plugin = name, kind = %cache.gvk(), "waiting for cache to sync");
            }
            cache.wait_synced().await;
        }
        let primary = kind_caches[&spec.primary].clone();
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let shared = Arc::new(Shared {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            name: name.to_owned(),
            version: RwLock::new(Arc::new(version)),
            field_manager: format!("wasm-reconciler/{name}"),
            events: EventSink::new(caches.client().clone(), name, options.instance.clone()),
            spec,
            options,
            primary,
            caches: kind_caches,
            queue: WorkQueue::new(QueueConfig::default()),
            dependencies: Dependencies::default(),
            last_applied: Mutex::default(),
            client: caches.client().clone(),
            metrics,
        });

        let mut subscriptions = Vec::new();
        for (gvk, cache) in &shared.caches {
            let weak = Arc::downgrade(&shared);
            let is_primary = *gvk == shared.spec.primary;
            let is_owned = shared.spec.owns.contains(gvk);
            subscriptions.push(cache.subscribe(move |change| {
                if let Some(shared) = weak.upgrade() {
                    shared.on_change(change, is_primary, is_owned);
                }
            }));
        }
        for object in shared.primary.list(None) {
            if shared.wants(&object.key) {
                shared.queue.add(object.key.clone(), Source::Change);
            }
        }
        let workers = (0..shared.options.concurrency.max(1))
            .map(|worker| tokio::spawn(run_worker(shared.clone(), worker)))
            .collect();
        let resync = shared
            .options
            .resync
            .or(shared.spec.resync)
            .map(|every| tokio::spawn(run_resync(Arc::downgrade(&shared), every)));
        tracing::info!(
            plugin = name,
            primary = %shared.spec.primary,
            objects = shared.primary.len(),
            concurrency = shared.options.concurrency,
            "controller started"
        );
        Ok(Self {
            shared,
            _subscriptions: subscriptions,
            workers,
            resync,
        })
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// What the running version reconciles.
    pub fn spec(&self) -> &ControllerSpec {
        &self.shared.spec
    }

    /// Serves a new version from now on; reconciles in flight finish on the old one. Every primary is
    /// reconciled again, since logic or configuration changed.
    pub fn swap(&self, version: Version) {
        *self.shared.version.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(version);
        for object in self.shared.primary.list(None) {
            if self.shared.wants(&object.key) {
                self.shared.queue.add(object.key.clone(), Source::Change);
            }
        }
    }

    /// Keys waiting in the queue.
    pub fn queue_depth(&self) -> usize {
        self.shared.queue.len()
    }

    /// Stops the workers after their current reconcile and drops the watches this controller held.
    pub async fn stop(mut self) {
        self.shared.queue.shut_down();
        if let Some(resync) = self.resync.take() {
            resync.abort();
        }
        for task in std::mem::take(&mut self.workers) {
            if tokio::time::timeout(Duration::from_secs(30), task).await.is_err() {
                tracing::warn!(plugin = %self.shared.name, "a worker did not finish within 30s");
            }
        }
        tracing::info!(plugin = %self.shared.name, "controller stopped");
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        self.shared.queue.shut_down();
        if let Some(resync) = self.resync.take() {
            resync.abort();
        }
    }
}

async fn run_worker(shared: Arc<Shared>, worker: usize) {
    while let Some(item) = shared.queue.next().await {
        let key = item.key.clone();
        let completion = shared.reconcile(&item).await;
        shared.queue.done(&key, completion);
        if let Some(metrics) = &shared.metrics {
            metrics.set_queue_depth(&shared.name, shared.queue.len());
        }
    }
    tracing::debug!(plugin = %shared.name, worker, "worker stopped");
}

async fn run_resync(shared: std::sync::Weak<Shared>, every: Duration) {
    let mut ticker = tokio::time::interval(every);
    ticker.tick().await;
    loop {
        ticker.tick().await;
        let Some(shared) = shared.upgrade() else { return };
        for object in shared.primary.list(None) {
            if shared.wants(&object.key) {
                shared.queue.add(object.key.clone(), Source::Resync);
            }
        }
    }
}

/// What a reconcile ended with, before it becomes a queue completion.
enum Ended {
    Done {
        requeue_after: Option<Duration>,
    },
    /// Failed, with the reason reported on the object.
    Failed(&'static str),
    Conflict,
}

impl Shared {
    fn wants(&self, key: &ObjectKey) -> bool {
        match (&self.options.namespaces, &key.namespace) {
            (Some(allowed), Some(namespace)) => allowed.iter().any(|n| n == namespace),
            _ => true,
        }
    }

    fn on_change(&self, change: &CacheChange, is_primary: bool, is_owned: bool) {
        if is_primary && change.seen_by != Some(self.id) && self.wants(change.key()) {
            self.queue.add(change.key().clone(), Source::Change);
        }
        if is_owned {
            for object in [&change.old, &change.new].into_iter().flatten() {
                if let Some(owner) = self.owner_key(&object.value)
                    && self.wants(&owner)
                {
                    self.queue.add(owner, Source::Change);
                }
            }
        }
        for primary in self.dependencies.affected_by(change) {
            self.queue.add(primary, Source::Change);
        }
    }

    /// The primary a child's controller ownerReference points to, if it is of our primary kind.
    fn owner_key(&self, child: &Value) -> Option<ObjectKey> {
        let owner = child["metadata"]["ownerReferences"]
            .as_array()?
            .iter()
            .find(|owner| owner["controller"] == Value::Bool(true))?;
        let owner_group = owner["apiVersion"]
            .as_str()?
            .rsplit_once('/')
            .map_or("", |(group, _)| group);
        if owner["kind"] != self.spec.primary.kind.as_str() || owner_group != self.spec.primary.group {
            return None;
        }
        let namespace = if self.primary.namespaced() {
            child["metadata"]["namespace"].as_str()
        } else {
            None
        };
        Some(ObjectKey::new(namespace, owner["name"].as_str()?))
    }

    fn api_for(&self, gvk: &Gvk, namespace: Option<&str>) -> Api<DynamicObject> {
        let cache = &self.caches[gvk];
        let client = self.client.clone();
        match (cache.namespaced(), namespace) {
            (true, Some(namespace)) => Api::namespaced_with(client, namespace, cache.resource()),
            _ => Api::all_with(client, cache.resource()),
        }
    }

    async fn reconcile(self: &Arc<Self>, item: &Item<ObjectKey>) -> Completion {
        let started = Instant::now();
        let key = item.key.to_string();
        let ended = self.reconcile_key(item).await;
        let elapsed = started.elapsed();
        let (completion, result, reason) = match ended {
            Ended::Done { requeue_after } => (Completion::Success { requeue_after }, ReconcileResult::Success, None),
            Ended::Failed(reason) => (Completion::Failure, ReconcileResult::Error, Some(reason)),
            Ended::Conflict => (Completion::Conflict, ReconcileResult::Conflict, None),
        };
        tracing::debug!(plugin = %self.name, key, result = result.as_str(), reason, attempt = item.attempt, elapsed_ms = elapsed.as_millis() as u64, "reconciled");
        if let Some(metrics) = &self.metrics {
            metrics.record_reconcile(&self.name, result, reason, elapsed);
        }
        completion
    }

    async fn reconcile_key(self: &Arc<Self>, item: &Item<ObjectKey>) -> Ended {
        let key = item.key.to_string();
        let Some(cached) = self.primary.get(&item.key) else {
            self.queue.forget(&item.key);
            self.dependencies.remove(&item.key);
            self.last_applied
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&item.key);
            return Ended::Done { requeue_after: None };
        };
        let mut primary = cached.value.clone();
        let deleting = primary["metadata"]["deletionTimestamp"].is_string();
        let finalizer = self.spec.finalizer.clone();
        let has_finalizer = finalizer.as_ref().is_some_and(|f| has_finalizer(&primary, f));
        if deleting && !has_finalizer {
            // Nothing of ours holds the object: garbage collection takes the children.
            return Ended::Done { requeue_after: None };
        }
        if let (Some(finalizer), false, false) = (&finalizer, deleting, has_finalizer) {
            let api = self.api_for(&self.spec.primary, item.key.namespace.as_deref());
            match writer::add_finalizer(&api, &self.field_manager, &primary, finalizer).await {
                Ok(updated) => {
                    tracing::debug!(plugin = %self.name, key, finalizer, "finalizer added");
                    self.primary.record_write(updated.clone(), Some(self.id));
                    primary = updated;
                }
                Err(error) => return self.write_failed(&key, error),
            }
        }

        let version = self.version.read().unwrap_or_else(PoisonError::into_inner).clone();
        let uid = primary["metadata"]["uid"].as_str().unwrap_or_default().to_owned();
        let children: Vec<Value> = self
            .spec
            .owns
            .iter()
            .flat_map(|gvk| self.caches[gvk].controlled_by(&uid))
            .map(|child| child.value.clone())
            .collect();
        let view = WorldView {
            primary: primary.clone(),
            children,
            config: (*version.config).clone(),
            deleting,
            attempt: self.queue.attempts(&item.key),
        };
        let reader = Arc::new(CacheReader::new(self.caches.clone()));
        let labels = CallLabels {
            plugin: self.name.clone(),
            key: key.clone(),
        };
        let logic = version.logic.clone();
        let call_reader: Arc<dyn ClusterReader> = reader.clone();
        let result = tokio::task::spawn_blocking(move || logic.call(&view, call_reader, labels))
            .await
            .unwrap_or_else(|join| {
                Err(ReconcileError::Trap {
                    message: format!("the reconcile task failed: {join}"),
                })
            });
        self.dependencies.record(&item.key, reader.take_reads());

        let outcome = match result {
            Ok(outcome) => outcome,
            Err(error) => {
                tracing::warn!(plugin = %self.name, key, reason = error.reason(), attempt = item.attempt, error = %crate::error_chain(&error), "reconcile failed");
                let state = ReconciledState::failed(error.reason(), error.to_string());
                self.finish_failed(&primary, &key, state).await;
                return Ended::Failed(error.reason());
            }
        };
        self.apply_outcome(&item.key, &key, primary, outcome, deleting).await
    }

    async fn apply_outcome(
        self: &Arc<Self>,
        object_key: &ObjectKey,
        key: &str,
        primary: Value,
        outcome: Outcome,
        deleting: bool,
    ) -> Ended {
        let Some(primary_ref) = PrimaryRef::of(&primary) else {
            tracing::warn!(plugin = %self.name, key, "primary lacks apiVersion, kind, name or uid; skipping");
            return Ended::Done { requeue_after: None };
        };
        let prepared = match &outcome.children {
            None => None,
            Some(desired) => {
                match prepare_children(&primary_ref, &self.spec, desired, |gvk| {
                    self.caches.get(gvk).is_some_and(|c| c.namespaced())
                }) {
                    Ok(prepared) => Some(prepared),
                    Err(error) => return self.scope_denied(&primary, key, error).await,
                }
            }
        };
        if let Some(prepared) = &prepared
            && let Err(error) = self.write_children(object_key, key, primary_ref.uid, prepared).await
        {
            let ended = self.write_failed(key, error);
            if matches!(ended, Ended::Failed(_)) {
                let state = ReconciledState::failed("ApplyFailed", "writing children failed; see the host log");
                self.finish_failed(&primary, key, state).await;
            }
            return ended;
        }

        let previous = reconciled_condition(primary.get("status"));
        let generation = primary["metadata"]["generation"].as_i64();
        let status = desired_status(
            primary.get("status"),
            outcome.status.as_ref(),
            &outcome.conditions,
            &ReconciledState::succeeded(),
            generation,
            &now(),
        );
        if let Err(error) = self.write_status(object_key, &primary, status).await {
            return self.write_failed(key, error);
        }
        let reference = object_reference(&primary);
        for event in &outcome.events {
            self.events.publish(&reference, key, "Reconcile", event).await;
        }
        if let Some((false, reason)) = previous {
            let note = format!("reconciled successfully after failing with {reason}");
            self.events
                .publish(
                    &reference,
                    key,
                    "Reconcile",
                    &Event {
                        type_: EventType::Normal,
                        reason: "Reconciled".into(),
                        note,
                    },
                )
                .await;
        }

        if deleting
            && outcome.finalized
            && let Some(finalizer) = &self.spec.finalizer
        {
            let api = self.api_for(&self.spec.primary, object_key.namespace.as_deref());
            match writer::remove_finalizer(&api, &self.field_manager, &primary, finalizer).await {
                Ok(Some(updated)) => {
                    tracing::info!(plugin = %self.name, key, finalizer, "cleanup finished; finalizer removed");
                    self.primary.record_write(updated, None);
                }
                Ok(None) => {}
                Err(error) => return self.write_failed(key, error),
            }
        }
        Ended::Done {
            requeue_after: outcome.requeue_after,
        }
    }

    /// Applies the desired children that changed, then deletes owned children no longer desired. Writes of one
    /// reconcile run concurrently (at most [`CHILD_WRITES_IN_FLIGHT`]); every started write finishes and is folded
    /// into the cache, and the first failure is returned.
    async fn write_children(
        &self,
        primary_key: &ObjectKey,
        key: &str,
        primary_uid: &str,
        prepared: &[PreparedChild],
    ) -> Result<(), WriteError> {
        let desired: HashSet<(&Gvk, &str)> = prepared.iter().map(|c| (&c.gvk, c.name.as_str())).collect();
        let mut applies = Vec::new();
        for child in prepared {
            let child_key = ObjectKey::new(child.object["metadata"]["namespace"].as_str(), &child.name);
            let hash = hash_of(&child.object);
            if !self.applied_unchanged(primary_key, child, &child_key, hash) {
                applies.push(self.apply_child(primary_key, key, child, child_key, hash).boxed());
            }
        }
        all_succeed(applies).await?;

        let mut stale = Vec::new();
        for gvk in &self.spec.owns {
            for observed in self.caches[gvk].controlled_by(primary_uid) {
                let elsewhere = self.primary.namespaced() && observed.key.namespace != primary_key.namespace;
                if !elsewhere && !desired.contains(&(gvk, observed.key.name.as_str())) {
                    stale.push((gvk, observed));
                }
            }
        }
        let mut deletes = Vec::new();
        for (gvk, observed) in &stale {
            deletes.push(self.delete_child(primary_key, key, gvk, observed).boxed());
        }
        all_succeed(deletes).await
    }

    /// Whether `child` (of key `child_key`, hashing to `hash`) is exactly what was last applied for this primary
    /// and the cache still shows it so.
    fn applied_unchanged(
        &self,
        primary_key: &ObjectKey,
        child: &PreparedChild,
        child_key: &ObjectKey,
        hash: u64,
    ) -> bool {
        let applied_before = self
            .last_applied
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(primary_key)
            .and_then(|children| children.get(&(child.gvk.clone(), child_key.clone())))
            == Some(&hash);
        applied_before
            && self.caches[&child.gvk]
                .get(child_key)
                .is_some_and(|observed| is_subset(&child.object, &observed.value))
    }

    async fn apply_child(
        &self,
        primary_key: &ObjectKey,
        key: &str,
        child: &PreparedChild,
        child_key: ObjectKey,
        hash: u64,
    ) -> Result<(), WriteError> {
        let cache = &self.caches[&child.gvk];
        let created = cache.get(&child_key).is_none();
        let api = self.api_for(&child.gvk, child_key.namespace.as_deref());
        let written = writer::apply(&api, &self.field_manager, &child.name, &child.object).await?;
        tracing::debug!(plugin = %self.name, key, child = %child_key, kind = %child.gvk.kind, created, "child applied");
        self.last_applied
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(primary_key.clone())
            .or_default()
            .insert((child.gvk.clone(), child_key), hash);
        cache.record_write(written, None);
        Ok(())
    }

    async fn delete_child(
        &self,
        primary_key: &ObjectKey,
        key: &str,
        gvk: &Gvk,
        observed: &CachedObject,
    ) -> Result<(), WriteError> {
        let api = self.api_for(gvk, observed.key.namespace.as_deref());
        writer::delete(&api, &gvk.kind, &observed.key.name, &observed.uid).await?;
        tracing::debug!(plugin = %self.name, key, child = %observed.key, kind = %gvk.kind, "child deleted");
        if let Some(children) = self
            .last_applied
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_mut(primary_key)
        {
            children.remove(&(gvk.clone(), observed.key.clone()));
        }
        self.caches[gvk].record_delete(&observed.key, &observed.uid);
        Ok(())
    }

    async fn write_status(&self, object_key: &ObjectKey, primary: &Value, status: Value) -> Result<(), WriteError> {
        if primary.get("status") == Some(&status) {
            return Ok(());
        }
        let api = self.api_for(&self.spec.primary, object_key.namespace.as_deref());
        let name = primary["metadata"]["name"].as_str().unwrap_or_default();
        let written = writer::write_status(&api, &self.field_manager, name, &status).await?;
        let seen = same_but_status(&written, primary).then_some(self.id);
        self.primary.record_write(written, seen);
        Ok(())
    }

    /// Records a failed reconcile on the object: `Reconciled=False` and a Warning Event.
    async fn finish_failed(&self, primary: &Value, key: &str, state: ReconciledState) {
        let generation = primary["metadata"]["generation"].as_i64();
        let status = desired_status(primary.get("status"), None, &[], &state, generation, &now());
        let object_key = ObjectKey::of(primary).expect("cached objects have keys");
        if let Err(error) = self.write_status(&object_key, primary, status).await {
            tracing::debug!(plugin = %self.name, key, error = %crate::error_chain(&error), "could not record the failure in status");
        }
        let event = Event {
            type_: EventType::Warning,
            reason: state.reason.clone(),
            note: state.message.clone(),
        };
        self.events
            .publish(&object_reference(primary), key, "Reconcile", &event)
            .await;
    }

    async fn scope_denied(&self, primary: &Value, key: &str, error: ScopeError) -> Ended {
        tracing::warn!(plugin = %self.name, key, error = %error, "outcome refused: outside the plugin's scope");
        let state = ReconciledState::failed("ScopeDenied", format!("outcome refused, nothing was written: {error}"));
        self.finish_failed(primary, key, state).await;
        Ended::Failed("ScopeDenied")
    }

    fn write_failed(&self, key: &str, error: WriteError) -> Ended {
        match error {
            WriteError::Conflict { .. } => {
                tracing::debug!(plugin = %self.name, key, error = %crate::error_chain(&error), "conflict; re-queued");
                Ended::Conflict
            }
            WriteError::Api { .. } => {
                tracing::warn!(plugin = %self.name, key, error = %crate::error_chain(&error), "API write failed");
                Ended::Failed("ApplyFailed")
            }
        }
    }
}

fn has_finalizer(object: &Value, finalizer: &str) -> bool {
    object["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| f.iter().any(|f| f == finalizer))
}

/// Runs `writes` with at most [`CHILD_WRITES_IN_FLIGHT`] at a time, lets every one finish, and returns the first error.
async fn all_succeed(writes: Vec<BoxFuture<'_, Result<(), WriteError>>>) -> Result<(), WriteError> {
    let results: Vec<Result<(), WriteError>> = futures::stream::iter(writes)
        .buffer_unordered(CHILD_WRITES_IN_FLIGHT)
        .collect()
        .await;
    results.into_iter().collect()
}

/// Whether `written` (a status write's response) differs from `seen` (what the reconcile read) only in its status
/// and the bookkeeping the write itself changed.
fn same_but_status(written: &Value, seen: &Value) -> bool {
    fn essence(object: &Value) -> Value {
        let mut object = object.clone();
        if let Some(fields) = object.as_object_mut() {
            fields.remove("status");
        }
        if let Some(metadata) = object["metadata"].as_object_mut() {
            metadata.remove("resourceVersion");
            metadata.remove("managedFields");
        }
        object
    }
    essence(written) == essence(seen)
}

fn hash_of(value: &Value) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    value.to_string().hash(&mut hasher);
    hasher.finish()
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn object_reference(object: &Value) -> ObjectReference {
    let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str).map(str::to_owned);
    ObjectReference {
        api_version: text("/apiVersion"),
        kind: text("/kind"),
        name: text("/metadata/name"),
        namespace: text("/metadata/namespace"),
        uid: text("/metadata/uid"),
        resource_version: None,
        field_path: None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::same_but_status;

    #[test]
    fn a_status_write_response_is_told_apart_from_a_concurrent_edit() {
        let seen = json!({
            "metadata": {"name": "a", "generation": 1, "resourceVersion": "7"},
            "spec": {"note": "old"},
            "status": {"ready": false},
        });
        let mut own = seen.clone();
        own["metadata"]["resourceVersion"] = json!("9");
        own["metadata"]["managedFields"] = json!([{"manager": "wasm-reconciler/echo"}]);
        own["status"] = json!({"ready": true});
        assert!(same_but_status(&own, &seen), "only the status and bookkeeping changed");

        let mut edited = own.clone();
        edited["metadata"]["generation"] = json!(2);
        edited["spec"]["note"] = json!("new");
        assert!(!same_but_status(&edited, &seen), "a spec edit rode along");
        let mut labelled = own;
        labelled["metadata"]["labels"] = json!({"tier": "web"});
        assert!(!same_but_status(&labelled, &seen), "a metadata edit rode along");
    }
}
