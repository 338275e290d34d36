//! From outcome to API writes. The [`Applier`] owns every write of a reconcile: the finalizer's steps, children by
//! server-side apply with ownership and pruning, status with merged conditions, events. The planning parts
//! ([`finalizer`], [`children`], [`status`]) are pure and tested with plain values; [`writer`] and [`events`] do
//! the I/O.
//!
//! The controller hands each reconcile to [`Apply::reconcile`] with the primary and a way to call the plugin;
//! the applier decides, from the finalizer's state, whether the plugin runs and what gets written, and answers
//! with the reconcile's one result, a [`Completion`].

pub mod children;
pub mod events;
pub mod finalizer;
pub mod status;
pub mod writer;

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use futures::{FutureExt as _, StreamExt as _};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{Api, DynamicObject};
use kube::{Resource as _, ResourceExt as _};
use serde_json::Value;
use tracing::Instrument as _;

use self::children::{PreparedChild, PrimaryRef, ScopeError, is_subset, prepare_children};
use self::events::EventSink;
pub use self::finalizer::FinalizerState;
use self::status::{ReconciledState, desired_status, reconciled_condition};
use self::writer::WriteError;
use crate::lease::{Fence, Ticket};
use crate::plugin::{ControllerSpec, Event, Gvk, Outcome, ReconcileError};
use crate::runtime::{CachedObject, Completion, KindCache, ObjectKey};

/// The plugin call of one reconcile, made only if the finalizer's state calls for it; its arguments are the primary
/// as it stands then (with the finalizer just added, say), `deleting`, and the reconcile's ticket (what the plugin
/// does outside the cluster, outbound requests, is fenced with it too).
pub type PluginCall<'a> =
    Box<dyn FnOnce(Arc<CachedObject>, bool, Ticket) -> BoxFuture<'a, Result<Outcome, CallError>> + Send + 'a>;

/// Why a reconcile's plugin call produced no outcome.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The plugin failed: its own error, a trap, a timeout, memory exhaustion, an invalid outcome.
    #[error(transparent)]
    Plugin(#[from] ReconcileError),
    /// The plugin was not called: the API server forbids the host to watch a kind the plugin declares, so its world
    /// view would be incomplete.
    #[error("{0}")]
    Forbidden(String),
    /// The plugin read a kind the host is still loading whole (sharded mode): its outcome is discarded, nothing is
    /// written, and the reconcile runs again once the kind is loaded.
    #[error("the plugin read {0}, which is still loading; its outcome was discarded")]
    Incomplete(String),
}

impl CallError {
    /// The CamelCase reason reported on the object's `Reconciled` condition.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Plugin(error) => error.reason(),
            Self::Forbidden(_) => "Forbidden",
            Self::Incomplete(_) => "ViewIncomplete",
        }
    }
}

/// What a controller hands each reconcile to. [`Applier`] is the real one; the controller's tests use a fake.
pub trait Apply: Send + Sync {
    /// Runs one reconcile of `primary`: decides from the finalizer's state whether `call` runs, writes what
    /// follows, and says how it ended.
    fn reconcile<'a>(&'a self, primary: Arc<CachedObject>, call: PluginCall<'a>) -> BoxFuture<'a, Completion>;

    /// Forgets what is remembered about a primary that is gone.
    fn forget(&self, primary: &ObjectKey);

    /// The id marking this applier's own writes in cache changes
    /// ([`CacheChange::seen_by`](crate::runtime::CacheChange::seen_by)).
    fn writer_id(&self) -> u64;
}

/// What the applier knew before the plugin was called.
#[derive(Debug)]
struct Before {
    /// The primary is known to exist: it is what the API server answered this reconcile's own write with (the
    /// finalizer just added), not only what the cache holds.
    confirmed: bool,
    /// Sharded mode: the children the caches held when the plugin was called, all of them in its view. A child
    /// handed over with its primary can reach this replica's cache after the view was assembled and before it is
    /// applied: found then, it was not in the view.
    viewed: Option<HashSet<(Gvk, ObjectKey)>>,
}

/// What one reconcile wrote.
#[derive(Debug, Default, Clone, Copy)]
struct Written {
    /// Children applied (created or changed).
    applied: usize,
    /// Children pruned.
    deleted: usize,
    /// Whether the status was written.
    status: bool,
    /// Children applied that existed but were not in the view: handed over with their primary by another replica,
    /// they had not reached this replica's cache yet.
    unseen: usize,
}

impl Written {
    fn changed_anything(self) -> bool {
        self.applied > 0 || self.deleted > 0 || self.status
    }
}

/// Hash of the last object applied, per child (kind and key) of one primary.
type AppliedChildren = HashMap<(Gvk, ObjectKey), u64>;

/// Child writes (applies, deletions) of one reconcile in flight at once.
const CHILD_WRITES_IN_FLIGHT: usize = 8;

/// A reconcile whose writes were fenced: tried again a little later, by whoever holds the role by then.
const FENCED: Completion = Completion::Deferred {
    after: std::time::Duration::from_secs(1),
    reason: "Fenced",
};

/// After a reconcile that met children missing from its view, when it is checked once more should the cache's news
/// of them not have queued it already.
const UNSEEN_CHILDREN_RECHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// Longest API error kept in a `Reconciled` condition message.
const MAX_FAILURE_MESSAGE: usize = 2048;

/// Every API write of one plugin's reconciles: its field manager, the caches it folds its writes into, the hashes of
/// what it last applied (to skip no-op applies), and its event sink.
pub struct Applier {
    plugin: String,
    field_manager: String,
    writer_id: u64,
    client: kube::Client,
    spec: ControllerSpec,
    primary: Arc<KindCache>,
    owned: HashMap<Gvk, Arc<KindCache>>,
    events: EventSink,
    /// Per primary, the hash of the last object applied per child.
    last_applied: Mutex<HashMap<ObjectKey, AppliedChildren>>,
    /// Sharded mode: the shard label key children copy from their primary.
    shard_label: Option<String>,
    /// Checked before every write, with the ticket of the reconcile the write belongs to.
    fence: Fence,
}

impl std::fmt::Debug for Applier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Applier")
            .field("plugin", &self.plugin)
            .field("writer_id", &self.writer_id)
            .finish_non_exhaustive()
    }
}

impl Apply for Applier {
    fn reconcile<'a>(&'a self, primary: Arc<CachedObject>, call: PluginCall<'a>) -> BoxFuture<'a, Completion> {
        self.run(primary, call).boxed()
    }

    fn forget(&self, primary: &ObjectKey) {
        self.last_applied
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(primary);
    }

    fn writer_id(&self) -> u64 {
        self.writer_id
    }
}

impl Applier {
    /// The applier of plugin `plugin`, writing as field manager `wasm-reconciler/<plugin>` with `client`. `primary`
    /// and `owned` are the caches of the spec's primary and owned kinds; `instance` names this host in events.
    /// Must be created on a tokio runtime (its event lanes run there).
    pub fn new(
        plugin: &str,
        spec: &ControllerSpec,
        client: kube::Client,
        primary: Arc<KindCache>,
        owned: HashMap<Gvk, Arc<KindCache>>,
        instance: Option<String>,
    ) -> Self {
        static NEXT_WRITER: AtomicU64 = AtomicU64::new(1);
        Self {
            plugin: plugin.to_owned(),
            field_manager: format!("wasm-reconciler/{plugin}"),
            writer_id: NEXT_WRITER.fetch_add(1, Ordering::Relaxed),
            events: EventSink::new(client.clone(), plugin, instance),
            client,
            spec: spec.clone(),
            primary,
            owned,
            last_applied: Mutex::default(),
            shard_label: None,
            fence: Fence::always_open(),
        }
    }

    /// Every write is sent only while `fence` allows it in the term its reconcile began in.
    pub fn with_fence(mut self, fence: Fence) -> Self {
        self.fence = fence;
        self
    }

    /// Sharded mode: children are applied with their primary's value of label `key`, so they follow it to its
    /// replica's share.
    pub fn with_shard_label(mut self, key: Option<String>) -> Self {
        self.shard_label = key;
        self
    }

    async fn run(&self, cached: Arc<CachedObject>, call: PluginCall<'_>) -> Completion {
        // The term this reconcile runs in: if the role is lost (or lost and taken again) meanwhile, nothing of it
        // is written.
        let ticket = &self.fence.ticket();
        if let Err(fenced) = ticket.check() {
            tracing::debug!(reason = %fenced, "not reconciling: fenced");
            return FENCED;
        }
        match FinalizerState::of(&cached.meta, self.spec.finalizer.as_deref()) {
            // Not being deleted and our finalizer is missing: add it before the plugin runs, so nothing the plugin
            // does escapes its cleanup, then go on as in `Apply` with the object the API server returned. The
            // write was guarded by the resourceVersion the plugin is about to see, so it carries nothing new: its
            // echo does not reconcile the object again.
            FinalizerState::Add => match self.add_finalizer(ticket, &cached).await {
                Ok(updated) => {
                    let before = self.before(&updated, true);
                    let result = call(updated.clone(), false, ticket.clone()).await;
                    self.apply_result(ticket, &updated.dynamic(), result, false, before)
                        .await
                }
                Err(error) => self.write_failed(error),
            },
            // Not being deleted, finalizer in place (or none declared): the plugin runs, its outcome is applied.
            FinalizerState::Apply => {
                let before = self.before(&cached, false);
                let result = call(cached.clone(), false, ticket.clone()).await;
                self.apply_result(ticket, &cached.dynamic(), result, false, before)
                    .await
            }
            // Being deleted and our finalizer still on: the plugin cleans up, its outcome is applied (a drain
            // deletes children in rounds), and once it answers `finalized` the finalizer is removed.
            FinalizerState::Cleanup => {
                let before = self.before(&cached, false);
                let result = call(cached.clone(), true, ticket.clone()).await;
                self.apply_result(ticket, &cached.dynamic(), result, true, before).await
            }
            // Being deleted without our finalizer: nothing of ours holds the object; garbage collection takes the
            // children.
            FinalizerState::Released => Completion::DONE,
        }
    }

    /// What is known of `primary` before its plugin is called (see [`Before`]).
    fn before(&self, primary: &CachedObject, confirmed: bool) -> Before {
        let viewed = self.shard_label.is_some().then(|| {
            self.owned
                .iter()
                .flat_map(|(gvk, cache)| {
                    cache
                        .controlled_by(&primary.meta.uid)
                        .into_iter()
                        .map(move |child| (gvk.clone(), child.key.clone()))
                })
                .collect()
        });
        Before { confirmed, viewed }
    }

    /// Adds the plugin's finalizer (state `Add`, so the spec declares one) and returns the updated primary, folded
    /// into the cache as this applier's own write.
    async fn add_finalizer(
        &self,
        ticket: &Ticket,
        cached: &Arc<CachedObject>,
    ) -> Result<Arc<CachedObject>, WriteError> {
        let primary = cached.dynamic();
        let finalizer = self.spec.finalizer.as_deref().unwrap_or_default();
        let api = self.primary_api(&primary);
        let adding = writer::add_finalizer(ticket, &api, &self.field_manager, &primary, finalizer);
        let updated = traced(step_span!("finalizer.add", finalizer), adding).await?;
        tracing::debug!(finalizer, "finalizer added");
        Ok(self
            .primary
            .record_write(updated, Some(self.writer_id))
            .unwrap_or_else(|| cached.clone()))
    }

    async fn apply_result(
        &self,
        ticket: &Ticket,
        primary: &DynamicObject,
        result: Result<Outcome, CallError>,
        deleting: bool,
        before: Before,
    ) -> Completion {
        match result {
            Ok(outcome) => self.apply_outcome(ticket, primary, outcome, deleting, before).await,
            Err(CallError::Incomplete(kind)) => {
                tracing::debug!(%kind, "outcome discarded: a read kind is still loading");
                Completion::Deferred {
                    after: std::time::Duration::from_secs(1),
                    reason: "ViewIncomplete",
                }
            }
            Err(error) => {
                let reason = error.reason();
                tracing::warn!(reason, error = %crate::error_chain(&error), "reconcile failed");
                self.record_failure(ticket, primary, ReconciledState::failed(reason, error.to_string()))
                    .await;
                Completion::Failure { reason }
            }
        }
    }

    /// Children first (nothing at all when one is out of scope), then the status, the events, and — for a
    /// deleting primary whose cleanup is done — the finalizer.
    async fn apply_outcome(
        &self,
        ticket: &Ticket,
        primary: &DynamicObject,
        outcome: Outcome,
        deleting: bool,
        before: Before,
    ) -> Completion {
        let Some(primary_ref) = PrimaryRef::of(primary, self.primary.resource()) else {
            tracing::warn!("primary lacks a name or uid; skipping");
            return Completion::DONE;
        };
        let mut written = Written::default();
        if let Some(desired) = &outcome.children {
            let mut prepared = match prepare_children(&primary_ref, &self.spec, desired, |gvk| {
                self.owned.get(gvk).is_some_and(|cache| cache.namespaced())
            }) {
                Ok(prepared) => prepared,
                Err(error) => return self.scope_denied(ticket, primary, error).await,
            };
            if let Some(key) = &self.shard_label
                && let Some(shard) = primary.metadata.labels.as_ref().and_then(|labels| labels.get(key))
            {
                for child in &mut prepared {
                    child.object["metadata"]["labels"][key.as_str()] = serde_json::json!(shard);
                }
            }
            match self.write_children(ticket, primary, &prepared, &before).await {
                Ok(children) => written = children,
                Err(error) => return self.children_failed(ticket, primary, error).await,
            }
        }
        if written.unseen > 0 {
            // The outcome was computed without children that exist: its status and events would report them
            // missing (a set Ready a moment ago flipping to not Ready on a handoff). The children are in the cache
            // now, which queued the primary again: that reconcile, from the whole view, reports.
            tracing::info!(
                applied = written.applied,
                unseen = written.unseen,
                "children handed over with the primary were not in the view yet; status and events left to the next reconcile"
            );
            return Completion::Success {
                requeue_after: Some(UNSEEN_CHILDREN_RECHECK),
            };
        }

        let previous = reconciled_condition(primary.data.get("status"));
        let status = desired_status(
            primary.data.get("status"),
            outcome.status.as_ref(),
            &outcome.conditions,
            &ReconciledState::succeeded(),
            primary.metadata.generation,
            &now(),
        );
        match self.write_status(ticket, primary, status).await {
            Ok(status) => written.status = status,
            Err(error) => return self.write_failed(error),
        }
        if written.changed_anything() {
            // One line per reconcile that changed the world (steady-state reconciles stay quiet): the span names the
            // plugin and the object.
            tracing::info!(
                applied = written.applied,
                deleted = written.deleted,
                status = written.status,
                generation = primary.metadata.generation,
                "reconciled"
            );
        }
        let reference = object_reference(primary, &self.primary);
        for event in &outcome.events {
            self.publish(ticket, &reference, event).await;
        }
        if let Some((false, reason)) = previous {
            let note = format!("reconciled successfully after failing with {reason}");
            self.publish(ticket, &reference, &Event::normal("Reconciled", note))
                .await;
        }

        if deleting
            && outcome.finalized
            && let Some(finalizer) = &self.spec.finalizer
        {
            let api = self.primary_api(primary);
            let removing = writer::remove_finalizer(ticket, &api, &self.field_manager, primary, finalizer);
            match traced(step_span!("finalizer.remove", finalizer = finalizer.as_str()), removing).await {
                Ok(Some(updated)) => {
                    tracing::info!(finalizer, "cleanup finished; finalizer removed");
                    if updated.finalizers().is_empty() {
                        // Its last finalizer gone, the object is deleted. A real API server answers with the object as
                        // it was last stored, at the resourceVersion the cache may already hold, so folding the answer
                        // in would change nothing: the cache would keep showing the finalizer, and a reconcile queued
                        // meanwhile would run the plugin's cleanup again.
                        self.primary
                            .record_delete(&key_of(primary), &primary.uid().unwrap_or_default());
                    } else {
                        self.primary.record_write(updated, None);
                    }
                }
                Ok(None) => {}
                Err(error) => return self.write_failed(error),
            }
        }
        Completion::Success {
            requeue_after: outcome.requeue_after,
        }
    }

    /// Applies the desired children that changed, then deletes owned children no longer desired. Writes of one
    /// reconcile run concurrently (at most [`CHILD_WRITES_IN_FLIGHT`]); every started write finishes and is folded
    /// into the cache, and the first failure is returned. Before a child the cache lacks is created, the primary
    /// is confirmed to exist (see [`Applier::confirm_primary`]) unless `before` already says so.
    async fn write_children(
        &self,
        ticket: &Ticket,
        primary: &DynamicObject,
        prepared: &[PreparedChild],
        before: &Before,
    ) -> Result<Written, WriteError> {
        let primary_key = key_of(primary);
        let creates = prepared.iter().any(|child| {
            let child_key = ObjectKey::new(child.object["metadata"]["namespace"].as_str(), &child.name);
            self.owned[&child.gvk].get(&child_key).is_none()
        });
        if creates && !before.confirmed {
            traced(step_span!("primary.confirm"), self.confirm_primary(primary)).await?;
        }
        let desired: HashSet<(&Gvk, &str)> = prepared.iter().map(|c| (&c.gvk, c.name.as_str())).collect();
        // Reconciled before (by this host or another replica): its children may exist outside this replica's share.
        let reconciled_before = primary.data["status"]["conditions"]
            .as_array()
            .is_some_and(|conditions| {
                conditions
                    .iter()
                    .any(|c| c["type"] == crate::plugin::RECONCILED_CONDITION)
            });
        let mut applies = Vec::new();
        for child in prepared {
            let child_key = ObjectKey::new(child.object["metadata"]["namespace"].as_str(), &child.name);
            let hash = hash_of(&child.object);
            if !self.applied_unchanged(&primary_key, child, &child_key, hash) {
                let span = step_span!(
                    "child.apply",
                    kind = %child.gvk,
                    namespace = child_key.namespace.as_deref(),
                    name = %child_key.name,
                );
                // Outside the view: a child that exists now but was not in the caches when the plugin was called.
                let unviewed = before
                    .viewed
                    .as_ref()
                    .is_some_and(|viewed| !viewed.contains(&(child.gvk.clone(), child_key.clone())));
                let target = (child_key, hash, reconciled_before, unviewed);
                applies.push(traced(span, self.apply_child(ticket, &primary_key, child, target)).boxed());
            }
        }
        let applied = applies.len();
        let unseen = all_succeed(applies).await?.into_iter().filter(|unseen| *unseen).count();

        let uid = primary.uid().unwrap_or_default();
        let mut deletes = Vec::new();
        for (gvk, cache) in &self.owned {
            for observed in cache.controlled_by(&uid) {
                let elsewhere = self.primary.namespaced() && observed.key.namespace != primary_key.namespace;
                if !elsewhere && !desired.contains(&(gvk, &*observed.key.name)) {
                    let span = step_span!(
                        "child.delete",
                        kind = %gvk,
                        namespace = observed.key.namespace.as_deref(),
                        name = %observed.key.name,
                    );
                    deletes.push(traced(span, self.delete_child(ticket, &primary_key, gvk, observed)).boxed());
                }
            }
        }
        let deleted = deletes.len();
        all_succeed(deletes).await?;
        Ok(Written {
            applied,
            deleted,
            status: false,
            unseen,
        })
    }

    /// Reads the primary from the API server (a consistent read) before children are created for it: `Ok` when it is
    /// still the object of the view. A primary without a finalizer can be gone while the cache still holds it: the
    /// garbage collector deletes its children once it is, and their deletions may be delivered before its own (they
    /// come through other watches). Creating those children again would make orphans the collector deletes once more.
    /// When the primary is gone or changed, that is folded into the cache and the reconcile runs again from there.
    async fn confirm_primary(&self, primary: &DynamicObject) -> Result<(), WriteError> {
        let name = primary.name_any();
        let current = self
            .primary_api(primary)
            .get_opt(&name)
            .await
            .map_err(|source| WriteError::Api {
                what: format!("reading {name} before creating its children"),
                source,
            })?;
        match current {
            Some(current)
                if current.uid() == primary.uid() && current.resource_version() == primary.resource_version() =>
            {
                Ok(())
            }
            Some(current) => {
                tracing::debug!("the primary changed since the view; reconciling it again");
                self.primary.record_write(current, None);
                Err(WriteError::Moved { what: name })
            }
            None => {
                tracing::debug!("the primary is gone; its children are not created again");
                self.primary
                    .record_delete(&key_of(primary), &primary.uid().unwrap_or_default());
                Err(WriteError::Moved { what: name })
            }
        }
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
            && self.owned[&child.gvk]
                .get(child_key)
                .is_some_and(|observed| is_subset(&child.object, &observed.value()))
    }

    /// Applies `child` (of key `child_key`, hashing to `hash`; `reconciled_before` when its primary was, `unviewed`
    /// when the caches lacked it as the plugin was called). True when the child existed without being in the view.
    async fn apply_child(
        &self,
        ticket: &Ticket,
        primary_key: &ObjectKey,
        child: &PreparedChild,
        (child_key, hash, reconciled_before, unviewed): (ObjectKey, u64, bool, bool),
    ) -> Result<bool, WriteError> {
        let cache = &self.owned[&child.gvk];
        let api = api_for(&self.client, cache, child_key.namespace.as_deref());
        let handed_over = cache.selector().is_some() && reconciled_before;
        let mut unseen = false;
        let observed = match cache.get(&child_key) {
            // The sharder labels a primary's children before the primary, but their watch events come on streams of
            // their own: a child can reach this replica's cache after the view was assembled, and be found here.
            Some(observed) => {
                unseen = handed_over && unviewed;
                Some(observed)
            }
            // A cache of this replica's share lacks the children of a primary handed over by another replica until
            // they are applied with this replica's label: read it, so the apply presumes the object it finds
            // rather than nothing. (A primary never reconciled has no children to find.)
            None if handed_over => {
                let found = read_child(&api, &child.name, &child.gvk).await?;
                unseen = found.is_some();
                found
            }
            None => None,
        };
        let created = observed.is_none();
        // A child in the view is applied to *that* object as the view saw it: its uid and resourceVersion ride along
        // as preconditions, so a child deleted or recreated since the view is refused (409/422), and so is one that
        // changed since — a write that left this replica late (it was frozen with the request still inside it) can
        // never put an older state back.
        let object = match &observed {
            Some(observed) => {
                let mut object = child.object.clone();
                object["metadata"]["uid"] = Value::from(&*observed.meta.uid);
                object["metadata"]["resourceVersion"] = Value::from(observed.meta.resource_version.to_string());
                std::borrow::Cow::Owned(object)
            }
            None => std::borrow::Cow::Borrowed(&child.object),
        };
        let written = match writer::apply(ticket, &api, &self.field_manager, &child.name, &object).await {
            Ok(written) => written,
            Err(error) => {
                if let (WriteError::Conflict { .. }, Some(observed)) = (&error, &observed) {
                    refresh(cache, &api, &child_key, &observed.meta.uid).await;
                }
                return Err(error);
            }
        };
        tracing::debug!(child = %child_key, kind = %child.gvk.kind, created, "child applied");
        self.last_applied
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(primary_key.clone())
            .or_default()
            .insert((child.gvk.clone(), child_key), hash);
        cache.record_write(written, None);
        Ok(unseen)
    }

    async fn delete_child(
        &self,
        ticket: &Ticket,
        primary_key: &ObjectKey,
        gvk: &Gvk,
        observed: Arc<CachedObject>,
    ) -> Result<(), WriteError> {
        let cache = &self.owned[gvk];
        let api = api_for(&self.client, cache, observed.key.namespace.as_deref());
        let version = observed.meta.resource_version.to_string();
        let seen = (&*observed.meta.uid, version.as_str());
        let remaining = writer::delete(ticket, &api, &gvk.kind, &observed.key.name, seen).await?;
        tracing::debug!(child = %observed.key, kind = %gvk.kind, "child deleted");
        if let Some(children) = self
            .last_applied
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_mut(primary_key)
        {
            children.remove(&(gvk.clone(), observed.key.clone()));
        }
        match remaining {
            // Still there until its finalizers are done: it is folded in as it is now, being deleted.
            Some(terminating) => {
                cache.record_write(terminating, None);
            }
            None => cache.record_delete(&observed.key, &observed.meta.uid),
        }
        Ok(())
    }

    /// Writes `status` unless it is what the primary already shows. The response is folded into the cache, marked
    /// as seen by this applier's controller only if nothing but the status changed.
    /// Writes `status` unless it is what the primary already shows; `true` when it was written.
    async fn write_status(&self, ticket: &Ticket, primary: &DynamicObject, status: Value) -> Result<bool, WriteError> {
        if status_unchanged(primary.data.get("status"), &status) {
            return Ok(false);
        }
        let api = self.primary_api(primary);
        let seen = primary
            .metadata
            .uid
            .as_deref()
            .zip(primary.metadata.resource_version.as_deref());
        let name = primary.name_any();
        let writing = writer::write_status(ticket, &api, &self.field_manager, &name, seen, &status);
        let written = match traced(step_span!("status.write"), writing).await {
            Ok(written) => written,
            Err(error) => {
                if let (WriteError::Conflict { .. }, Some((uid, _))) = (&error, seen) {
                    refresh(&self.primary, &api, &key_of(primary), uid).await;
                }
                return Err(error);
            }
        };
        let seen = same_but_status(&written, primary).then_some(self.writer_id);
        self.primary.record_write(written, seen);
        Ok(true)
    }

    /// Records a failed reconcile on the object: `Reconciled=False` and a Warning Event.
    async fn record_failure(&self, ticket: &Ticket, primary: &DynamicObject, state: ReconciledState) {
        let status = desired_status(
            primary.data.get("status"),
            None,
            &[],
            &state,
            primary.metadata.generation,
            &now(),
        );
        if let Err(error) = self.write_status(ticket, primary, status).await {
            tracing::debug!(error = %crate::error_chain(&error), "could not record the failure in status");
        }
        let event = Event::warning(state.reason.clone(), state.message.clone());
        self.publish(ticket, &object_reference(primary, &self.primary), &event)
            .await;
    }

    async fn scope_denied(&self, ticket: &Ticket, primary: &DynamicObject, error: ScopeError) -> Completion {
        tracing::warn!(error = %error, "outcome refused: outside the plugin's scope");
        let state = ReconciledState::failed("ScopeDenied", format!("outcome refused, nothing was written: {error}"));
        self.record_failure(ticket, primary, state).await;
        Completion::Failure { reason: "ScopeDenied" }
    }

    /// A child write failed: a conflict re-queues quietly; anything else is recorded on the object with the API
    /// server's answer.
    async fn children_failed(&self, ticket: &Ticket, primary: &DynamicObject, error: WriteError) -> Completion {
        if let Some(reason) = error.reason() {
            let message = truncate(&crate::error_chain(&error), MAX_FAILURE_MESSAGE);
            self.record_failure(ticket, primary, ReconciledState::failed(reason, message))
                .await;
        }
        self.write_failed(error)
    }

    fn write_failed(&self, error: WriteError) -> Completion {
        match error.reason() {
            None if matches!(error, WriteError::Fenced { .. }) => {
                tracing::info!(error = %crate::error_chain(&error), "fenced; re-queued");
                FENCED
            }
            None => {
                tracing::debug!(error = %crate::error_chain(&error), "conflict; re-queued");
                Completion::Conflict
            }
            Some(reason) => {
                tracing::warn!(reason, error = %crate::error_chain(&error), "API write failed");
                Completion::Failure { reason }
            }
        }
    }

    async fn publish(&self, ticket: &Ticket, regarding: &ObjectReference, event: &Event) {
        let key = match (&regarding.namespace, &regarding.name) {
            (Some(namespace), Some(name)) => format!("{namespace}/{name}"),
            (None, Some(name)) => name.clone(),
            _ => String::new(),
        };
        self.events.publish(ticket, regarding, &key, "Reconcile", event).await;
    }

    fn primary_api(&self, primary: &DynamicObject) -> Api<DynamicObject> {
        api_for(&self.client, &self.primary, primary.metadata.namespace.as_deref())
    }
}

/// A span of one step of a reconcile, for traces only ([`crate::TRACE_ONLY_TARGET`]), with the fields [`traced`]
/// records a failure in.
macro_rules! step_span {
    ($name:literal $(, $($field:tt)*)?) => {
        tracing::info_span!(
            target: crate::TRACE_ONLY_TARGET,
            $name,
            otel.status_code = tracing::field::Empty,
            error.type = tracing::field::Empty,
            $($($field)*)?
        )
    };
}
use step_span;

/// Runs `write` in `span` (a [`step_span!`]); a failed write marks the span: `error.type` always, an error status
/// when it failed the reconcile (a conflict or a fenced write does not).
async fn traced<T>(span: tracing::Span, write: impl Future<Output = Result<T, WriteError>>) -> Result<T, WriteError> {
    let result = write.instrument(span.clone()).await;
    if let Err(error) = &result {
        span.record("error.type", error.kind());
        if error.reason().is_some() {
            span.record("otel.status_code", "ERROR");
        }
    }
    result
}

/// The API of `cache`'s kind, in `namespace` when it is namespaced.
fn api_for(client: &kube::Client, cache: &KindCache, namespace: Option<&str>) -> Api<DynamicObject> {
    match (cache.namespaced(), namespace) {
        (true, Some(namespace)) => Api::namespaced_with(client.clone(), namespace, cache.resource()),
        _ => Api::all_with(client.clone(), cache.resource()),
    }
}

/// Runs `writes` with at most [`CHILD_WRITES_IN_FLIGHT`] at a time, lets every one finish, and returns the first error.
async fn all_succeed<T>(writes: Vec<BoxFuture<'_, Result<T, WriteError>>>) -> Result<Vec<T>, WriteError> {
    let results: Vec<Result<T, WriteError>> = futures::stream::iter(writes)
        .buffer_unordered(CHILD_WRITES_IN_FLIGHT)
        .collect()
        .await;
    results.into_iter().collect()
}

/// Whether `written` (a status write's response) differs from `seen` (what the reconcile read) only in its status
/// and the bookkeeping the write itself changed.
/// Whether writing `desired` as the merge patch of the status would leave `observed` as it is: a `null` in it
/// removes a field, so a status that asks to remove what is already absent is unchanged too.
fn status_unchanged(observed: Option<&Value>, desired: &Value) -> bool {
    let Some(observed) = observed else {
        return false;
    };
    if observed == desired {
        return true;
    }
    let mut merged = observed.clone();
    json_patch::merge(&mut merged, desired);
    merged == *observed
}

fn same_but_status(written: &DynamicObject, seen: &DynamicObject) -> bool {
    fn essence(object: &DynamicObject) -> (kube::api::ObjectMeta, Value) {
        let mut metadata = object.metadata.clone();
        metadata.resource_version = None;
        metadata.managed_fields = None;
        let mut data = object.data.clone();
        if let Some(fields) = data.as_object_mut() {
            fields.remove("status");
        }
        (metadata, data)
    }
    essence(written) == essence(seen)
}

/// A write was refused because its object moved on since the view (a failed uid or resourceVersion precondition):
/// the cache is behind the API server. The object is read once and folded in (or its deletion is), so the re-queued
/// reconcile works from what is stored even while the watch lags, instead of meeting the same conflict again.
/// The child `name` as the API server has it now, if it exists.
async fn read_child(api: &Api<DynamicObject>, name: &str, gvk: &Gvk) -> Result<Option<Arc<CachedObject>>, WriteError> {
    let current = api.get_opt(name).await.map_err(|source| WriteError::Api {
        what: format!("reading child {name} before applying it"),
        source,
    })?;
    Ok(current.and_then(|object| CachedObject::new(object, gvk)).map(Arc::new))
}

async fn refresh(cache: &KindCache, api: &Api<DynamicObject>, key: &ObjectKey, uid: &str) {
    match api.get_opt(&key.name).await {
        Ok(Some(current)) => {
            cache.record_write(current, None);
        }
        Ok(None) => cache.record_delete(key, uid),
        Err(error) => tracing::debug!(object = %key, error = %error, "could not read an object after a conflict"),
    }
}

fn key_of(object: &DynamicObject) -> ObjectKey {
    ObjectKey::new(object.metadata.namespace.as_deref(), &object.name_any())
}

fn hash_of(value: &Value) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    value.to_string().hash(&mut hasher);
    hasher.finish()
}

/// Now, to the second, as condition timestamps are written.
pub(crate) fn now() -> String {
    let now = k8s_openapi::jiff::Timestamp::now();
    k8s_openapi::jiff::Timestamp::from_second(now.as_second())
        .unwrap_or(now)
        .to_string()
}

/// The reference Events carry: the primary's kind, name, namespace and uid.
fn object_reference(primary: &DynamicObject, cache: &KindCache) -> ObjectReference {
    ObjectReference {
        resource_version: None,
        ..primary.object_ref(cache.resource())
    }
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut cut = max - 3;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}...", &text[..cut])
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn dynamic(value: Value) -> DynamicObject {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_status_that_only_removes_absent_fields_is_not_written_again() {
        let observed = json!({"ready": true, "conditions": [{"type": "Ready", "status": "True"}]});
        let with_null = json!({"ready": true, "listed": null, "conditions": [{"type": "Ready", "status": "True"}]});
        assert!(
            status_unchanged(Some(&observed), &with_null),
            "null for an absent field changes nothing"
        );
        assert!(status_unchanged(Some(&observed), &observed));
        let removing = json!({"ready": null, "conditions": [{"type": "Ready", "status": "True"}]});
        assert!(
            !status_unchanged(Some(&observed), &removing),
            "null for a present field removes it"
        );
        let changed = json!({"ready": false, "conditions": [{"type": "Ready", "status": "True"}]});
        assert!(!status_unchanged(Some(&observed), &changed));
        assert!(!status_unchanged(None, &json!({})), "a primary without status gets one");
    }

    #[test]
    fn a_status_write_response_is_told_apart_from_a_concurrent_edit() {
        let seen = json!({
            "apiVersion": "ex.io/v1", "kind": "Set",
            "metadata": {"name": "a", "generation": 1, "resourceVersion": "7"},
            "spec": {"note": "old"},
            "status": {"ready": false},
        });
        let mut own = seen.clone();
        own["metadata"]["resourceVersion"] = json!("9");
        own["metadata"]["managedFields"] = json!([{"manager": "wasm-reconciler/echo"}]);
        own["status"] = json!({"ready": true});
        assert!(
            same_but_status(&dynamic(own.clone()), &dynamic(seen.clone())),
            "only the status and bookkeeping changed"
        );

        let mut edited = own.clone();
        edited["metadata"]["generation"] = json!(2);
        edited["spec"]["note"] = json!("new");
        assert!(
            !same_but_status(&dynamic(edited), &dynamic(seen.clone())),
            "a spec edit rode along"
        );
        let mut labelled = own;
        labelled["metadata"]["labels"] = json!({"tier": "web"});
        assert!(
            !same_but_status(&dynamic(labelled), &dynamic(seen)),
            "a metadata edit rode along"
        );
    }

    #[test]
    fn timestamps_are_whole_seconds_in_utc() {
        let now = now();
        assert!(now.ends_with('Z'), "{now}");
        assert!(!now.contains('.'), "{now}");
        assert_eq!(now.len(), "2026-01-01T00:00:00Z".len(), "{now}");
    }

    #[test]
    fn long_failure_messages_are_cut() {
        assert_eq!(truncate("short", 10), "short");
        let long = "é".repeat(100);
        let cut = truncate(&long, 11);
        assert!(cut.len() <= 11 && cut.ends_with("..."), "{cut}");
    }
}
