//! One running controller per plugin, and the [`Manager`] that runs them: watch events feed a controller's
//! workqueue; a worker takes a key and drives one reconcile — world view from the caches → plugin call (off the
//! async runtime, inside a `reconcile` span) → the applier, which owns every write — and hands the result back
//! to the queue and the metrics.

mod identity;
pub mod manager;
pub mod pins;
pub mod preview;
pub mod rollout;

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant, SystemTime};

use futures::FutureExt as _;
use serde_json::Value;
use tracing::Instrument as _;

pub use self::identity::Impersonation;
pub use self::manager::Manager;
use crate::apply::{Applier, Apply, CallError, PluginCall};
use crate::lease::{Fence, Ticket};
use crate::plugin::{ClusterReader, ControllerSpec, Gvk, NativePlugin, Outcome, Plugin, ReconcileError, WorldView};
use crate::runtime::fingerprint::{self, Fingerprint};
use crate::runtime::workqueue::Item;
use crate::runtime::{
    CacheChange, CacheReader, CacheSync, CachedObject, Caches, Completion, Dependencies, KindCache, ObjectKey,
    QueueConfig, QueueMetrics, Read, Source, Subscription, WorkQueue, world_view,
};
use crate::shard::{ShardLabels, Standing};
use crate::telemetry::{Metrics, traces};

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

    /// One reconcile; blocking (CPU-bound): call it off the async runtime.
    pub fn call(&self, view: WorldView, reader: Arc<dyn ClusterReader>) -> Result<Outcome, ReconcileError> {
        match self {
            Self::Wasm(plugin) => plugin.reconcile(view, reader),
            Self::Native(plugin) => plugin.reconcile(view, reader),
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
    /// Configuration handed to the plugin, as JSON text.
    pub config: Arc<str>,
}

impl Version {
    /// A version running `logic` with `config`.
    pub fn new(logic: Logic, config: &Value) -> Self {
        Self {
            logic,
            config: config.to_string().into(),
        }
    }

    /// Whether a call may be skipped when it would be given what the last successful one was: the logic is a pure
    /// function of its view, reads and configuration (a component importing no outbound HTTP, variables, clock or
    /// call-to-call randomness, see [`Capabilities::is_pure`](crate::plugin::Capabilities::is_pure); or native
    /// logic). A plugin that acts outside the cluster, reads Secrets, reads the time or draws random numbers is
    /// always called: a resync of an unchanged world may be exactly when it must act.
    fn skippable(&self) -> bool {
        match &self.logic {
            Logic::Wasm(plugin) => plugin.capabilities().is_pure(),
            Logic::Native(_) => true,
        }
    }

    /// The logic (by digest) and configuration, as part of a view's fingerprint.
    fn fingerprint(&self) -> Fingerprint {
        fingerprint::version(self.logic.digest(), &self.config)
    }
}

/// What a primary's last successful call was given, when nothing was left pending after it (no requeue asked, not
/// deleting): the next call given the same is skipped, with its writes, since a pure plugin would answer the same
/// and the host already wrote that answer.
#[derive(Debug)]
struct Clean {
    /// The world view, and the version it was given to.
    view: Fingerprint,
    /// Each read, with its answer.
    reads: Vec<(Read, Fingerprint)>,
}

/// How a controller runs.
#[derive(Clone)]
pub struct ControllerOptions {
    /// Concurrent reconciles.
    pub concurrency: usize,
    /// Only reconcile primaries in these namespaces (all when `None`).
    pub namespaces: Option<Vec<String>>,
    /// Resync period overriding the plugin's own.
    pub resync: Option<Duration>,
    /// Call the plugin on every reconcile, never skipping a call given what the last successful one was (see
    /// [`Clean`]).
    pub always_call: bool,
    /// The reporting instance for events (pod or host name).
    pub instance: Option<String>,
    /// Sharded mode: this replica's labels. The primary and owned kinds are then watched for this replica's share
    /// only, only primaries assigned here are reconciled, drains are acknowledged, and children get their owner's
    /// shard label.
    pub shard: Option<ShardLabels>,
    /// Checked before every write: the role (leader, shard member) this controller writes in.
    pub fence: Fence,
    /// Sharded mode: the client drains are acknowledged with, the host's own (the shard labels are the sharder's,
    /// not the plugin's, even when the plugin acts as a ServiceAccount). `None`: the caches' client.
    pub drain_client: Option<kube::Client>,
    /// Benchmarks only: queue what a relist, a dependency fan-out or a reload surfaces as direct changes (high
    /// priority), as the host did before they were queued low; measures what the priorities are worth.
    #[doc(hidden)]
    pub bulk_as_changes: bool,
}

impl std::fmt::Debug for ControllerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerOptions")
            .field("concurrency", &self.concurrency)
            .field("namespaces", &self.namespaces)
            .field("resync", &self.resync)
            .field("always_call", &self.always_call)
            .field("instance", &self.instance)
            .field("shard", &self.shard)
            .finish_non_exhaustive()
    }
}

impl Default for ControllerOptions {
    fn default() -> Self {
        Self {
            concurrency: 4,
            namespaces: None,
            resync: None,
            always_call: false,
            instance: None,
            shard: None,
            fence: Fence::always_open(),
            drain_client: None,
            bulk_as_changes: false,
        }
    }
}

/// Why a controller could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A kind it needs is not served and did not become served in time.
    #[error(transparent)]
    Cache(#[from] crate::runtime::cache::CacheError),
}

/// Shared state of a running controller.
struct Shared {
    name: String,
    version: RwLock<Arc<Version>>,
    /// A rollout's new version and the share of the primaries it serves (see [`rollout`]).
    canary: RwLock<Option<Arc<rollout::Canary>>>,
    spec: ControllerSpec,
    options: ControllerOptions,
    primary: Arc<KindCache>,
    /// Caches of the owned kinds, in declaration order: where children are found.
    owned: Vec<Arc<KindCache>>,
    /// Caches of every declared kind (primary, owned, read): what the plugin may read.
    caches: HashMap<Gvk, Arc<KindCache>>,
    queue: WorkQueue<ObjectKey>,
    dependencies: Dependencies,
    applier: Arc<dyn Apply>,
    metrics: Option<Metrics>,
    /// Sharded mode: the client drains are acknowledged with.
    drains: Option<kube::Client>,
    /// Sharded mode: reads of kinds cached only for this replica's share, answered from whole caches.
    whole_reads: Option<WholeReads>,
    /// Per primary, what its last successful call was given (see [`Clean`]).
    clean: std::sync::Mutex<HashMap<ObjectKey, Arc<Clean>>>,
    /// `reconcile_skipped_total` of the plugin.
    skipped: Option<prometheus_client::metrics::counter::Counter>,
}

/// Sharded mode caches a plugin's primary and owned kinds for this replica's share only, but `host::get` and
/// `host::list` must answer as with one replica. Reads of such a kind (one the plugin does not also declare in
/// `reads`, which is cached whole anyway) are answered from a whole cache of it, started on the first read: that
/// reconcile's outcome is discarded (nothing is written) and every primary is reconciled again once the cache has
/// synced. Plugins that never read their own kinds never pay for a whole cache.
struct WholeReads {
    caches: Caches,
    namespaces: Option<Vec<String>>,
    kinds: std::sync::Mutex<HashMap<Gvk, WholeRead>>,
}

enum WholeRead {
    NotStarted,
    Loading,
    /// Loaded; the subscription routes its changes to the reads that depend on them while it is held.
    Ready {
        cache: Arc<KindCache>,
        _routing: Subscription,
    },
}

impl WholeReads {
    /// The kinds still loading, for messages.
    fn loading(&self) -> String {
        let kinds = self.kinds.lock().unwrap_or_else(PoisonError::into_inner);
        let loading: Vec<String> = kinds
            .iter()
            .filter(|(_, read)| !matches!(read, WholeRead::Ready { .. }))
            .map(|(gvk, _)| gvk.to_string())
            .collect();
        loading.join(", ")
    }
}

/// A running controller. Stop it with [`Controller::stop`].
pub struct Controller {
    shared: Arc<Shared>,
    _subscriptions: Vec<Subscription>,
    workers: Vec<tokio::task::JoinHandle<()>>,
    resync: Option<tokio::task::JoinHandle<()>>,
    /// Re-reconciles everything when a cache the API server refused becomes watchable.
    healers: Vec<tokio::task::JoinHandle<()>>,
}

impl Controller {
    /// The primaries in the controller's cache: those it reconciles (in sharded mode, this replica's share).
    pub fn objects(&self) -> usize {
        self.shared.primary.len()
    }
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
                // A kind the plugin also reads stays whole: reads see every object, not this replica's share.
                let selector = options
                    .shard
                    .as_ref()
                    .filter(|_| !spec.reads.contains(gvk))
                    .map(ShardLabels::selector);
                kind_caches.insert(
                    gvk.clone(),
                    caches
                        .get_or_start_selected(gvk, options.namespaces.as_deref(), selector.as_deref())
                        .await?,
                );
            }
        }
        // Without its primaries there is nothing to reconcile; a kind the host may not watch otherwise fails each
        // reconcile visibly (`Forbidden`) until RBAC grants it.
        for (gvk, cache) in &kind_caches {
            if !cache.is_synced() {
                tracing::info!(plugin = name, kind = %gvk, "waiting for cache to sync");
            }
            if *gvk == spec.primary {
                cache.wait_synced().await;
            } else {
                cache.wait_settled().await;
            }
        }
        let owned = spec
            .owns
            .iter()
            .map(|gvk| (gvk.clone(), kind_caches[gvk].clone()))
            .collect();
        let applier = Applier::new(
            name,
            &spec,
            caches.client().clone(),
            kind_caches[&spec.primary].clone(),
            owned,
            options.instance.clone(),
        )
        .with_shard_label(options.shard.as_ref().map(|shard| shard.shard_key.clone()))
        .with_fence(options.fence.clone());
        let drains = options
            .shard
            .is_some()
            .then(|| options.drain_client.clone().unwrap_or_else(|| caches.client().clone()));
        let whole_reads = options.shard.as_ref().map(|_| WholeReads {
            caches: caches.clone(),
            namespaces: options.namespaces.clone(),
            kinds: std::sync::Mutex::new(
                kind_caches
                    .iter()
                    .filter(|(_, cache)| cache.selector().is_some())
                    .map(|(gvk, _)| (gvk.clone(), WholeRead::NotStarted))
                    .collect(),
            ),
        });
        Ok(Self::with_applier(
            name,
            version,
            kind_caches,
            Arc::new(applier),
            options,
            metrics,
            (drains, whole_reads),
        ))
    }

    /// Starts the workers on synced `caches` (every kind the plugin declares), writing through `applier`; in
    /// sharded mode drains are acknowledged with the client of `sharded`, and reads of kinds cached for the share
    /// only are answered by its [`WholeReads`].
    fn with_applier(
        name: &str,
        version: Version,
        caches: HashMap<Gvk, Arc<KindCache>>,
        applier: Arc<dyn Apply>,
        options: ControllerOptions,
        metrics: Option<Metrics>,
        sharded: (Option<kube::Client>, Option<WholeReads>),
    ) -> Self {
        let (drains, whole_reads) = sharded;
        let spec = version.logic.spec().clone();
        let queue_metrics = metrics
            .as_ref()
            .map_or_else(QueueMetrics::default, |metrics| metrics.queue_metrics(name));
        let skipped = metrics.as_ref().map(|metrics| metrics.skipped_counter(name));
        let shared = Arc::new(Shared {
            name: name.to_owned(),
            version: RwLock::new(Arc::new(version)),
            canary: RwLock::default(),
            primary: caches[&spec.primary].clone(),
            owned: spec.owns.iter().map(|gvk| caches[gvk].clone()).collect(),
            caches,
            spec,
            options,
            queue: WorkQueue::with_metrics(QueueConfig::default(), queue_metrics),
            dependencies: Dependencies::default(),
            applier,
            metrics,
            drains,
            whole_reads,
            clean: std::sync::Mutex::default(),
            skipped,
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
        // What the first list holds: every primary, in bulk.
        shared.enqueue_all(Source::Relist);
        let healers = shared
            .caches
            .values()
            .map(|cache| tokio::spawn(reconcile_all_when_healed(Arc::downgrade(&shared), cache.watch_sync())))
            .collect();
        let workers = (0..shared.options.concurrency.max(1))
            .map(|worker| tokio::spawn(run_worker(shared.clone(), worker)))
            .collect();
        let resync = shared
            .options
            .resync
            .or(shared.spec.resync_period())
            .map(|every| tokio::spawn(run_resync(Arc::downgrade(&shared), every)));
        tracing::info!(
            plugin = name,
            primary = %shared.spec.primary,
            objects = shared.primary.len(),
            concurrency = shared.options.concurrency,
            "controller started"
        );
        Self {
            shared,
            _subscriptions: subscriptions,
            workers,
            resync,
            healers,
        }
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
    /// reconciled again, since logic or configuration changed: at low priority, behind direct changes, but without
    /// waiting for a failed primary's backoff.
    pub fn swap(&self, version: Version) {
        *self.shared.version.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(version);
        // A canary still running is over: the new version serves every primary.
        self.shared
            .canary
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        self.shared.enqueue_all(Source::Reload);
    }

    /// Reconciles every primary again, as the resync period does (a call whose input did not change is skipped).
    pub fn resync(&self) {
        self.shared.enqueue_all(Source::Resync);
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
        for healer in self.healers.drain(..) {
            healer.abort();
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
        for healer in self.healers.drain(..) {
            healer.abort();
        }
    }
}

/// Takes keys off the queue until it shuts down; each reconcile runs inside a `reconcile` span naming the plugin,
/// the object, the attempt and what queued it, which every log line of the reconcile inherits.
async fn run_worker(shared: Arc<Shared>, worker: usize) {
    while let Some(item) = shared.queue.next().await {
        let handed_out = traces::enabled().then(SystemTime::now);
        let span = tracing::info_span!(
            "reconcile",
            plugin = %shared.name,
            object = %item.key,
            attempt = item.attempt,
            trigger = item.source.as_str(),
            shard = tracing::field::Empty,
        );
        if let Some(handed_out) = handed_out {
            let primary = &shared.spec.primary;
            let (namespace, name) = (item.key.namespace.as_deref(), &*item.key.name);
            traces::describe_object(&span, &primary.api_version(), &primary.kind, namespace, name);
            traces::record_queue_wait(&span, handed_out, item.waited);
        }
        let started = Instant::now();
        let Some(completion) = shared.reconcile(&item).instrument(span.clone()).await else {
            // Skipped: nothing the plugin is given changed since its last successful call.
            if let Some(skipped) = &shared.skipped {
                skipped.inc();
            }
            traces::record_outcome(&span, "skipped", None);
            shared.queue.done(&item.key, Completion::DONE);
            continue;
        };
        let reason = match completion {
            Completion::Deferred { reason, .. } => Some(reason),
            _ => completion.reason(),
        };
        traces::record_outcome(&span, completion.result(), reason);
        let elapsed = started.elapsed();
        span.in_scope(|| {
            tracing::debug!(
                result = completion.result(),
                reason = completion.reason(),
                elapsed_ms = elapsed.as_millis() as u64,
                "reconciled"
            );
        });
        if let Some(metrics) = &shared.metrics {
            metrics.record_reconcile(&shared.name, &completion, elapsed);
        }
        shared.queue.done(&item.key, completion);
    }
    tracing::debug!(plugin = %shared.name, worker, "worker stopped");
}

/// Reconciles every primary again whenever a cache the API server had refused syncs: its list is news to every
/// reconcile, so backoff waits are cut short (at low priority, as for any relist) and reconciles that failed with
/// `Forbidden` go through once RBAC grants the kind.
async fn reconcile_all_when_healed(shared: std::sync::Weak<Shared>, mut sync: tokio::sync::watch::Receiver<CacheSync>) {
    let mut refused = matches!(*sync.borrow_and_update(), CacheSync::Forbidden(_));
    while sync.changed().await.is_ok() {
        let state = sync.borrow_and_update().clone();
        match state {
            CacheSync::Forbidden(_) => refused = true,
            CacheSync::Synced if refused => {
                refused = false;
                let Some(shared) = shared.upgrade() else { return };
                shared.enqueue_all(Source::Relist);
            }
            CacheSync::Synced | CacheSync::Pending => {}
        }
    }
}

async fn run_resync(shared: std::sync::Weak<Shared>, every: Duration) {
    let mut ticker = tokio::time::interval(every);
    ticker.tick().await;
    loop {
        ticker.tick().await;
        let Some(shared) = shared.upgrade() else { return };
        shared.enqueue_all(Source::Resync);
    }
}

impl Shared {
    fn wants(&self, key: &ObjectKey) -> bool {
        match (&self.options.namespaces, &key.namespace) {
            (Some(allowed), Some(namespace)) => allowed.iter().any(|n| **n == **namespace),
            _ => true,
        }
    }

    fn enqueue_all(&self, source: Source) {
        for object in self.primary.list(None) {
            if self.wants(&object.key) {
                self.enqueue(object.key.clone(), source);
            }
        }
    }

    /// Adds a key to the queue (see [`ControllerOptions::bulk_as_changes`] for the one exception to `source`).
    fn enqueue(&self, key: ObjectKey, source: Source) {
        let source = if self.options.bulk_as_changes && source.cuts_backoff() {
            Source::Change
        } else {
            source
        };
        self.queue.add(key, source);
    }

    /// Routes a cache change to the primaries it concerns: the primary itself (unless the change is this
    /// controller's own write and carries nothing new), the owner of a changed child, and every primary whose
    /// last reconcile read the changed object.
    ///
    /// Priorities: a watch event of a primary, or of a child (someone edited or deleted what the primary
    /// controls), is a direct change and goes first. The same changes surfaced by a re-list arrive in bulk, up to
    /// every object of the kind at once, and queue low, as does the fan-out of a read object's change to every
    /// primary that read it — one shared Secret can reach all of them.
    fn on_change(&self, change: &CacheChange, is_primary: bool, is_owned: bool) {
        let direct = if change.relisted {
            Source::Relist
        } else {
            Source::Change
        };
        if is_primary && change.seen_by != Some(self.applier.writer_id()) && self.wants(change.key()) {
            self.enqueue(change.key().clone(), direct);
        }
        if is_owned {
            for object in [&change.old, &change.new].into_iter().flatten() {
                if let Some(owner) = self.owner_key(object)
                    && self.wants(&owner)
                {
                    self.enqueue(owner, direct);
                }
            }
        }
        for primary in self.dependencies.affected_by(change) {
            self.enqueue(primary, Source::FanOut);
        }
    }

    /// The primary a child's controller ownerReference points to, if it is of our primary kind.
    fn owner_key(&self, child: &CachedObject) -> Option<ObjectKey> {
        let owner = child.meta.controller.as_ref()?;
        let owner_group = owner.api_version.rsplit_once('/').map_or("", |(group, _)| group);
        if *owner.kind != *self.spec.primary.kind || owner_group != self.spec.primary.group {
            return None;
        }
        let namespace = if self.primary.namespaced() {
            child.key.namespace.as_deref()
        } else {
            None
        };
        Some(ObjectKey::new(namespace, &owner.name))
    }

    /// One reconcile: the primary from the cache, handed to the applier with the plugin call; `None` when it was
    /// skipped (see [`Clean`]).
    async fn reconcile(self: &Arc<Self>, item: &Item<ObjectKey>) -> Option<Completion> {
        let Some(primary) = self.primary.get(&item.key) else {
            self.forget(&item.key);
            return Some(Completion::DONE);
        };
        if let Some(shard) = &self.options.shard {
            match shard.standing(&primary) {
                // The span names the replica only for reconciles that go ahead.
                Standing::Mine => {
                    tracing::Span::current().record("shard", shard.identity.as_str());
                }
                Standing::NotMine => {
                    self.forget(&item.key);
                    return Some(Completion::DONE);
                }
                // Acknowledged from the primary's own queue slot: no reconcile of it is in flight here.
                Standing::Draining => return Some(self.acknowledge_drain(shard, &primary).await),
            }
        }
        // The canary's version for a primary in its share, else the serving one.
        let canary = self.canary().filter(|canary| canary.serves(&primary));
        let version = match &canary {
            Some(canary) => canary.version.clone(),
            None => self.version.read().unwrap_or_else(PoisonError::into_inner).clone(),
        };
        let attempt = item.attempt;
        if self.unchanged(&primary, &version, attempt) {
            tracing::debug!(
                "skipped: the plugin's view, reads and configuration are those of its last successful call"
            );
            return None;
        }
        let clean: Arc<std::sync::Mutex<Option<Clean>>> = Arc::default();
        let called = clean.clone();
        let call: PluginCall<'_> = Box::new(move |primary, deleting, ticket| {
            self.call(primary, version, deleting, attempt, ticket, called).boxed()
        });
        let completion = self.applier.reconcile(primary, call).await;
        if let (Some(canary), Completion::Failure { reason }) = (&canary, &completion) {
            canary.failed(&item.key, reason);
        }
        let clean = clean.lock().unwrap_or_else(PoisonError::into_inner).take();
        let mut records = self.clean.lock().unwrap_or_else(PoisonError::into_inner);
        match (&completion, clean) {
            (Completion::Success { requeue_after: None }, Some(clean)) => {
                records.insert(item.key.clone(), Arc::new(clean));
            }
            _ => {
                records.remove(&item.key);
            }
        }
        Some(completion)
    }

    /// Whether the plugin would be given what its last successful call for `primary` was given, with nothing
    /// pending: the same view (the primary and its children, the version and configuration), every read answering
    /// as it did, not deleting, its finalizer in place, every kind watchable.
    fn unchanged(&self, primary: &CachedObject, version: &Version, attempt: u32) -> bool {
        if self.options.always_call
            || !version.skippable()
            || primary.meta.deleting
            || self
                .spec
                .finalizer
                .as_deref()
                .is_some_and(|finalizer| !primary.meta.finalizers.iter().any(|f| **f == *finalizer))
        {
            return false;
        }
        let Some(clean) = self
            .clean
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&primary.key)
            .cloned()
        else {
            return false;
        };
        if self
            .caches
            .values()
            .any(|cache| matches!(cache.sync_state(), CacheSync::Forbidden(_)))
        {
            return false;
        }
        let children = world_view::children(primary, &self.owned);
        if clean.view != fingerprint::view(primary, &children, version.fingerprint(), attempt) {
            return false;
        }
        let (caches, pending) = self.read_caches();
        clean.reads.iter().all(|(read, _)| !pending.contains(read.gvk()))
            && fingerprint::reads_unchanged(&clean.reads, &caches)
    }

    fn forget(&self, key: &ObjectKey) {
        self.clean.lock().unwrap_or_else(PoisonError::into_inner).remove(key);
        self.queue.forget(key);
        self.dependencies.remove(key);
        self.applier.forget(key);
    }

    /// Lets a primary go to another replica: removes its shard and drain labels; the sharder then assigns it.
    async fn acknowledge_drain(&self, shard: &ShardLabels, primary: &CachedObject) -> Completion {
        let Some(client) = &self.drains else {
            return Completion::DONE;
        };
        if let Err(fenced) = self.options.fence.check() {
            tracing::info!(reason = %fenced, "drain not acknowledged");
            return Completion::Deferred {
                after: Duration::from_secs(1),
                reason: "Fenced",
            };
        }
        let resource = self.primary.resource();
        let api = match (&primary.key.namespace, self.primary.namespaced()) {
            (Some(namespace), true) => kube::Api::namespaced_with(client.clone(), namespace, resource),
            _ => kube::Api::all_with(client.clone(), resource),
        };
        match crate::shard::acknowledge_drain(&api, shard, primary).await {
            Ok(written) => {
                tracing::info!("drained; handed over to the sharder");
                // No longer in this replica's share: the cache lets it go now, not when the watch says so.
                self.primary.record_write(written, None);
                self.forget(&primary.key);
                Completion::DONE
            }
            Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => {
                // Gone or changed: the watch brings the new state, which decides again.
                Completion::DONE
            }
            Err(error) => {
                tracing::warn!(error = %crate::error_chain(&error), "could not acknowledge the drain; retrying");
                Completion::Failure { reason: "DrainFailed" }
            }
        }
    }

    /// Calls the plugin on the world view of `primary`, off the async runtime, and records what it read. The plugin
    /// is not called while the host may not watch a kind it declares: its view would be incomplete.
    async fn call(
        self: &Arc<Self>,
        primary: Arc<CachedObject>,
        version: Arc<Version>,
        deleting: bool,
        attempt: u32,
        ticket: Ticket,
        clean: Arc<std::sync::Mutex<Option<Clean>>>,
    ) -> Result<Outcome, CallError> {
        if let Some(message) = self.caches.values().find_map(|cache| match cache.sync_state() {
            CacheSync::Forbidden(message) => Some(message),
            CacheSync::Pending | CacheSync::Synced => None,
        }) {
            return Err(CallError::Forbidden(message));
        }
        let assembling =
            tracing::info_span!(target: crate::TRACE_ONLY_TARGET, "view.assemble", children = tracing::field::Empty);
        let (view, view_fingerprint) = assembling.in_scope(|| {
            // The fingerprint is of the very objects the view is made of.
            let children = world_view::children(&primary, &self.owned);
            assembling.record("children", children.len() as i64);
            let view_fingerprint = fingerprint::view(&primary, &children, version.fingerprint(), attempt);
            let view = world_view::of(&primary, &children, &version.config, deleting, attempt);
            (view, view_fingerprint)
        });
        drop(assembling);
        let skippable = version.skippable() && !deleting;
        let reader = Arc::new(self.reader(ticket));
        let call_reader: Arc<dyn ClusterReader> = reader.clone();
        let span = tracing::Span::current();
        let result = tokio::task::spawn_blocking(move || span.in_scope(|| version.logic.call(view, call_reader)))
            .await
            .unwrap_or_else(|join| {
                Err(ReconcileError::Trap {
                    message: format!("the reconcile task failed: {join}"),
                })
            });
        let reads = reader.take_reads();
        self.dependencies
            .record(&primary.key, reads.iter().map(|(read, _)| read.clone()).collect());
        if reader.incomplete() {
            return Err(CallError::Incomplete(
                self.whole_reads.as_ref().map(WholeReads::loading).unwrap_or_default(),
            ));
        }
        let outcome = result?;
        if skippable && outcome.requeue_after.is_none() {
            *clean.lock().unwrap_or_else(PoisonError::into_inner) = Some(Clean {
                view: view_fingerprint,
                reads,
            });
        }
        Ok(outcome)
    }

    /// The reader of one reconcile: the caches of the declared kinds; in sharded mode the whole caches of the kinds
    /// cached for the share only, once loaded, and a request to load the others when they are read.
    fn reader(self: &Arc<Self>, ticket: Ticket) -> CacheReader {
        if self.whole_reads.is_none() {
            return CacheReader::new(self.caches.clone()).with_ticket(ticket);
        }
        let (caches, pending) = self.read_caches();
        let weak = Arc::downgrade(self);
        let runtime = tokio::runtime::Handle::current();
        let on_pending: crate::runtime::OnPending = Arc::new(move |gvk: &Gvk| {
            if let Some(shared) = weak.upgrade() {
                shared.load_whole(&runtime, gvk);
            }
        });
        CacheReader::new(caches)
            .with_ticket(ticket)
            .pending(pending, on_pending)
    }

    /// The caches reads are answered from, and the kinds whose whole cache is not loaded yet (sharded mode).
    fn read_caches(&self) -> (HashMap<Gvk, Arc<KindCache>>, std::collections::HashSet<Gvk>) {
        let mut caches = self.caches.clone();
        let mut pending = std::collections::HashSet::new();
        let Some(whole_reads) = &self.whole_reads else {
            return (caches, pending);
        };
        for (gvk, read) in whole_reads.kinds.lock().unwrap_or_else(PoisonError::into_inner).iter() {
            match read {
                WholeRead::Ready { cache, .. } => {
                    caches.insert(gvk.clone(), cache.clone());
                }
                WholeRead::NotStarted | WholeRead::Loading => {
                    pending.insert(gvk.clone());
                }
            }
        }
        (caches, pending)
    }

    /// Starts loading the whole cache of `gvk` unless it is loading or loaded; once synced, its changes reach the
    /// reads that depend on them and every primary is reconciled again.
    fn load_whole(self: &Arc<Self>, runtime: &tokio::runtime::Handle, gvk: &Gvk) {
        let Some(whole_reads) = &self.whole_reads else { return };
        {
            let mut kinds = whole_reads.kinds.lock().unwrap_or_else(PoisonError::into_inner);
            match kinds.get_mut(gvk) {
                Some(read @ WholeRead::NotStarted) => *read = WholeRead::Loading,
                _ => return,
            }
        }
        tracing::info!(plugin = %self.name, kind = %gvk, "the plugin reads a kind this replica caches only its share of; loading all of it");
        let weak = Arc::downgrade(self);
        let gvk = gvk.clone();
        let caches = whole_reads.caches.clone();
        let namespaces = whole_reads.namespaces.clone();
        runtime.spawn(async move {
            let cache = loop {
                match caches.get_or_start(&gvk, namespaces.as_deref()).await {
                    Ok(cache) => break cache,
                    Err(error) => {
                        tracing::warn!(kind = %gvk, error = %crate::error_chain(&error), "could not load the kind; retrying");
                        tokio::time::sleep(Duration::from_secs(2)).await;
                    }
                }
            };
            cache.wait_synced().await;
            let Some(shared) = weak.upgrade() else { return };
            let routing = Arc::downgrade(&shared);
            let subscription = cache.subscribe(move |change| {
                if let Some(shared) = routing.upgrade() {
                    for primary in shared.dependencies.affected_by(change) {
                        shared.enqueue(primary, Source::FanOut);
                    }
                }
            });
            if let Some(whole_reads) = &shared.whole_reads {
                whole_reads
                    .kinds
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(
                        gvk.clone(),
                        WholeRead::Ready {
                            cache: cache.clone(),
                            _routing: subscription,
                        },
                    );
            }
            tracing::info!(plugin = %shared.name, kind = %gvk, objects = cache.len(), "loaded all of the kind for reads");
            shared.enqueue_all(Source::Relist);
        });
    }
}

#[cfg(test)]
mod tests;
