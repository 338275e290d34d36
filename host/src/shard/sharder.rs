//! The sharder role: assigns every primary of the plugins' kinds to a live replica and keeps children with their
//! owner. One replica runs it at a time (it holds the sharder Lease); any replica can take over, since all the
//! state lives in labels and Leases.
//!
//! It watches the membership Leases of its ring and the metadata (only) of the primary and owned kinds, keeping a
//! compact entry per object. A pass, run after changes and at least every [`FULL_PASS`] (so objects created while
//! no sharder ran, or writes that failed, are caught up), decides per primary:
//!
//! | primary's shard label | action |
//! |---|---|
//! | the ring's choice | none (a stale drain request is withdrawn) |
//! | another live replica | ask it to drain (once); it answers by removing the labels |
//! | none, or a replica whose Lease expired | label the children for the ring's choice, then the primary |
//!
//! and labels every child whose controller is a known primary with its owner's shard. Writes are merge patches
//! carrying the resourceVersion the sharder saw, so a change it has not seen yet fails them harmlessly.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DynamicObject, Patch};
use kube::core::{GroupVersionKind, PartialObjectMeta};
use kube::discovery::ApiResource;
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher::{self, Event};
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

use super::membership::is_live;
use super::ring::Ring;
use super::{DRAIN_LABEL_PREFIX, RING_LABEL, SHARD_LABEL_PREFIX, Sharding, patch_params};
use crate::lease::{Fence, Ticket};
use crate::plugin::Gvk;
use crate::runtime::ObjectKey;
use crate::telemetry::Metrics;

/// Longest time between two passes, changes or not.
pub const FULL_PASS: Duration = Duration::from_secs(10);
/// How often liveness of the members is re-checked (a Lease expires without any event).
const TICK: Duration = Duration::from_millis(500);
/// Label writes in flight at once.
const WRITES_IN_FLIGHT: usize = 16;

/// What one plugin asks to be sharded: its primary kind, the kinds it owns, and the namespaces it serves.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ShardedKinds {
    /// The primary kind.
    pub primary: Gvk,
    /// Kinds of its children.
    pub owns: Vec<Gvk>,
    /// Namespaces served; `None` for all.
    pub namespaces: Option<Vec<String>>,
}

/// Why a primary was (re)assigned, as counted in `wasm_reconciler_shard_moves_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MoveReason {
    /// It had no shard yet.
    Unassigned,
    /// Its replica's Lease expired or was released.
    ReplicaGone,
    /// Its replica drained it for another (a replica joined).
    Drained,
}

impl MoveReason {
    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unassigned => "unassigned",
            Self::ReplicaGone => "replica_gone",
            Self::Drained => "drained",
        }
    }
}

/// What the sharder knows of one replica's membership Lease. A replica is judged on the sharder's own clock, as
/// Kubernetes leader election judges a leader: live until a whole lease duration has passed since the sharder last
/// saw its Lease renewed. Neither clock skew nor a watch that delivers late can make a live replica look gone
/// before its own deadline (it stops a quarter of a duration after its last renewal was sent; the sharder's count
/// starts no earlier than that renewal arrived).
#[derive(Debug, Clone)]
struct Member {
    holder: Option<String>,
    renewed: Option<Timestamp>,
    duration: Duration,
    /// When the sharder saw the holder or the renewal time change.
    changed_at: tokio::time::Instant,
}

impl Member {
    /// `previous`, updated with `lease` as received at `received`.
    fn observe(previous: Option<Member>, lease: &Lease, received: tokio::time::Instant) -> Member {
        let spec = lease.spec.as_ref();
        let holder = spec.and_then(|s| s.holder_identity.clone()).filter(|h| !h.is_empty());
        let renewed = spec.and_then(|s| s.renew_time.as_ref()).map(|t| t.0);
        let duration = Duration::from_secs(
            spec.and_then(|s| s.lease_duration_seconds)
                .and_then(|s| u64::try_from(s).ok())
                .unwrap_or(15),
        );
        let changed_at = match previous {
            Some(previous) if previous.holder == holder && previous.renewed == renewed => previous.changed_at,
            Some(_) => received,
            // First sight (a sharder just started): a Lease its own timestamps show long expired is gone now;
            // any other gets a whole duration from now.
            None if is_live(lease, Timestamp::now()) => received,
            None => received.checked_sub(duration).unwrap_or(received),
        };
        Member {
            holder,
            renewed,
            duration,
            changed_at,
        }
    }

    fn is_live(&self, now: tokio::time::Instant) -> bool {
        self.holder.is_some() && now.saturating_duration_since(self.changed_at) < self.duration
    }
}

/// What the sharder knows of one object.
#[derive(Debug, Clone)]
struct Entry {
    uid: Box<str>,
    resource_version: Box<str>,
    shard: Option<Box<str>>,
    draining: bool,
    /// uid of its controller.
    controller: Option<Box<str>>,
}

/// The objects of one kind, as its metadata watch reported them.
#[derive(Debug)]
struct Store {
    resource: ApiResource,
    namespaced: bool,
    objects: HashMap<ObjectKey, Entry>,
    /// (Re)lists in progress, per watch (namespace, or `None` for all), swapped in when they complete.
    listing: HashMap<Option<String>, HashMap<ObjectKey, Entry>>,
    /// Watches that have not listed yet.
    unsynced: HashSet<Option<String>>,
    synced: bool,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Store {
    fn drop(&mut self) {
        self.task.abort();
    }
}

enum Message {
    /// A membership Lease event, and when the watch received it.
    Lease(Box<Event<Lease>>, tokio::time::Instant),
    /// An object event of a kind (from the watch of one namespace, or of all), already made compact: events queue
    /// while a pass writes, and full metadata (managedFields and all) would pile up.
    Object(Gvk, Option<String>, Event<(ObjectKey, Entry)>),
}

/// One label write.
#[derive(Debug, Clone)]
struct Write {
    gvk: Gvk,
    key: ObjectKey,
    resource_version: Box<str>,
    labels: Value,
    /// Counted as a move of a primary when it succeeds.
    counts_as: Option<MoveReason>,
    /// Asks the primary's replica to drain it.
    requests_drain: bool,
}

/// The sharder's state between passes.
struct Sharder {
    client: kube::Client,
    ring_name: String,
    shard_key: String,
    drain_key: String,
    metrics: Option<Metrics>,
    members: HashMap<String, Member>,
    stores: BTreeMap<Gvk, Store>,
    kinds: Vec<ShardedKinds>,
    /// Writes sent whose watch event has not arrived yet: (kind, key) → the resourceVersion written against.
    pending: HashMap<(Gvk, ObjectKey), Box<str>>,
    /// Primaries asked to drain and not yet reassigned: their next assignment counts as a drained move.
    drain_requested: HashSet<(Gvk, ObjectKey)>,
    tx: mpsc::UnboundedSender<Message>,
    last_live: Vec<String>,
    /// The sharder term this runs in: no label is written once it may have ended.
    ticket: Ticket,
}

/// Runs the sharder until `stop` turns true. `kinds` lists what the plugins ask to shard; the sharder follows it as
/// plugins come and go.
pub async fn run(
    client: kube::Client,
    sharding: Sharding,
    mut kinds: watch::Receiver<Vec<ShardedKinds>>,
    metrics: Option<Metrics>,
    fence: Fence,
    mut stop: watch::Receiver<bool>,
) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let leases: Api<Lease> = Api::namespaced(client.clone(), &sharding.namespace);
    let lease_config = watcher::Config::default().labels(&format!("{RING_LABEL}={}", sharding.ring));
    let lease_task = tokio::spawn({
        let tx = tx.clone();
        async move {
            let mut events = std::pin::pin!(watcher::watcher(leases, lease_config).default_backoff());
            while let Some(event) = events.next().await {
                match event {
                    Ok(event) => {
                        if tx
                            .send(Message::Lease(Box::new(event), tokio::time::Instant::now()))
                            .is_err()
                        {
                            return;
                        }
                    }
                    Err(error) => {
                        tracing::warn!(error = %crate::error_chain(&error), "watching the membership Leases failed; retrying")
                    }
                }
            }
        }
    });
    let mut sharder = Sharder {
        client,
        shard_key: format!("{SHARD_LABEL_PREFIX}{}", sharding.ring),
        drain_key: format!("{DRAIN_LABEL_PREFIX}{}", sharding.ring),
        ring_name: sharding.ring,
        metrics,
        members: HashMap::new(),
        stores: BTreeMap::new(),
        kinds: Vec::new(),
        pending: HashMap::new(),
        drain_requested: HashSet::new(),
        tx,
        last_live: Vec::new(),
        ticket: fence.ticket(),
    };
    tracing::info!(ring = %sharder.ring_name, "sharder started");
    let mut ticker = tokio::time::interval(TICK);
    let mut dirty = true;
    let mut last_pass = tokio::time::Instant::now();
    let wanted = kinds.borrow_and_update().clone();
    sharder.follow_kinds(wanted).await;
    loop {
        tokio::select! {
            () = turned_true(&mut stop) => break,
            changed = kinds.changed() => {
                if changed.is_err() { break }
                let wanted = kinds.borrow_and_update().clone();
                sharder.follow_kinds(wanted).await;
                dirty = true;
            }
            Some(message) = rx.recv() => {
                dirty |= sharder.absorb(message);
                while let Ok(message) = rx.try_recv() {
                    dirty |= sharder.absorb(message);
                }
            }
            _ = ticker.tick() => {
                // Lease events that queued while a pass was writing count before anyone is judged gone.
                while let Ok(message) = rx.try_recv() {
                    dirty |= sharder.absorb(message);
                }
                if sharder.kinds.iter().any(|k| !sharder.stores.contains_key(&k.primary)) {
                    // A kind whose discovery failed: try again.
                    sharder.follow_kinds(sharder.kinds.clone()).await;
                }
                let live = sharder.live();
                if live != sharder.last_live {
                    tracing::info!(ring = %sharder.ring_name, replicas = ?live, "live replicas changed");
                    sharder.last_live = live;
                    dirty = true;
                }
                if dirty || last_pass.elapsed() >= FULL_PASS {
                    sharder.pass().await;
                    dirty = false;
                    last_pass = tokio::time::Instant::now();
                }
            }
        }
    }
    lease_task.abort();
    tracing::info!(ring = %sharder.ring_name, "sharder stopped");
}

impl Sharder {
    /// Starts watching the kinds `wanted` names that are not watched yet, and stops watching the others.
    async fn follow_kinds(&mut self, wanted: Vec<ShardedKinds>) {
        let mut gvks: BTreeMap<Gvk, Option<BTreeSet<String>>> = BTreeMap::new();
        for kinds in &wanted {
            for gvk in std::iter::once(&kinds.primary).chain(&kinds.owns) {
                let namespaces = kinds
                    .namespaces
                    .as_ref()
                    .map(|n| n.iter().cloned().collect::<BTreeSet<_>>());
                gvks.entry(gvk.clone())
                    .and_modify(|all| match (all.as_mut(), &namespaces) {
                        (Some(all), Some(more)) => all.extend(more.iter().cloned()),
                        _ => *all = None,
                    })
                    .or_insert(namespaces);
            }
        }
        self.kinds = wanted;
        self.stores.retain(|gvk, _| gvks.contains_key(gvk));
        for (gvk, namespaces) in gvks {
            if self.stores.contains_key(&gvk) {
                continue;
            }
            let kube_gvk = GroupVersionKind::gvk(&gvk.group, &gvk.version, &gvk.kind);
            let (resource, capabilities) = match kube::discovery::pinned_kind(&self.client, &kube_gvk).await {
                Ok(found) => found,
                Err(error) => {
                    tracing::debug!(kind = %gvk, error = %crate::error_chain(&error), "kind not served yet");
                    continue;
                }
            };
            let namespaced = capabilities.scope == kube::discovery::Scope::Namespaced;
            let namespaces = if namespaced { namespaces } else { None };
            let unsynced = match &namespaces {
                None => HashSet::from([None]),
                Some(namespaces) => namespaces.iter().cloned().map(Some).collect(),
            };
            let labels = (self.shard_key.clone(), self.drain_key.clone());
            let task = spawn_watch(
                self.client.clone(),
                &resource,
                gvk.clone(),
                namespaces,
                labels,
                self.tx.clone(),
            );
            tracing::info!(kind = %gvk, "sharder watching metadata");
            self.stores.insert(
                gvk,
                Store {
                    resource,
                    namespaced,
                    objects: HashMap::new(),
                    listing: HashMap::new(),
                    unsynced,
                    synced: false,
                    task,
                },
            );
        }
    }

    /// Folds in one watch event; true when it may change an assignment.
    fn absorb(&mut self, message: Message) -> bool {
        match message {
            Message::Lease(event, received) => {
                match *event {
                    Event::Apply(lease) | Event::InitApply(lease) => {
                        if let Some(member) = lease_member(&lease, &self.ring_name) {
                            let seen = Member::observe(self.members.remove(&member), &lease, received);
                            self.members.insert(member, seen);
                        }
                    }
                    Event::Delete(lease) => {
                        if let Some(holder) = lease_member(&lease, &self.ring_name) {
                            self.members.remove(&holder);
                        }
                    }
                    Event::Init => self.members.clear(),
                    Event::InitDone => {}
                }
                true
            }
            Message::Object(gvk, namespace, event) => {
                let Some(store) = self.stores.get_mut(&gvk) else {
                    return false;
                };
                match event {
                    Event::Init => {
                        store.listing.insert(namespace, HashMap::new());
                    }
                    Event::InitApply((key, entry)) => {
                        if let Some(listing) = store.listing.get_mut(&namespace) {
                            listing.insert(key, entry);
                        }
                    }
                    Event::InitDone => {
                        if let Some(listing) = store.listing.remove(&namespace) {
                            match &namespace {
                                None => store.objects = listing,
                                Some(namespace) => {
                                    store
                                        .objects
                                        .retain(|key, _| key.namespace.as_deref() != Some(namespace.as_str()));
                                    store.objects.extend(listing);
                                }
                            }
                        }
                        store.unsynced.remove(&namespace);
                        if !store.synced && store.unsynced.is_empty() {
                            tracing::info!(kind = %gvk, objects = store.objects.len(), "sharder listed");
                            store.synced = true;
                        }
                    }
                    Event::Apply((key, entry)) => {
                        store.objects.insert(key, entry);
                    }
                    Event::Delete((key, _)) => {
                        store.objects.remove(&key);
                    }
                }
                true
            }
        }
    }

    /// The replicas whose membership Lease is live now, sorted.
    fn live(&self) -> Vec<String> {
        let now = tokio::time::Instant::now();
        let mut live: Vec<String> = self
            .members
            .iter()
            .filter(|(_, member)| member.is_live(now))
            .map(|(member, _)| member.clone())
            .collect();
        live.sort();
        live
    }

    /// Decides every assignment and writes what changed: children before their owners.
    async fn pass(&mut self) {
        if self.stores.values().any(|store| !store.synced) {
            return;
        }
        let live = self.live();
        if live.is_empty() {
            return;
        }
        let ring = Ring::new(&live);
        let primaries: HashSet<&Gvk> = self.kinds.iter().map(|k| &k.primary).collect();
        let mut owners: HashMap<&str, &str> = HashMap::new();
        let mut counts: BTreeMap<&str, usize> = live.iter().map(|m| (m.as_str(), 0)).collect();
        let mut children = Vec::new();
        let mut owner_writes = Vec::new();
        for (gvk, store) in self.stores.iter().filter(|(gvk, _)| primaries.contains(gvk)) {
            for (key, entry) in &store.objects {
                let choice = ring
                    .owner(&format!("{}/{}/{key}", gvk.group, gvk.kind))
                    .expect("the ring has members");
                let write = |labels: Value, counts_as| Write {
                    gvk: gvk.clone(),
                    key: key.clone(),
                    resource_version: entry.resource_version.clone(),
                    labels,
                    counts_as,
                    requests_drain: false,
                };
                match entry.shard.as_deref() {
                    Some(shard) if shard == choice => {
                        owners.insert(&entry.uid, choice);
                        *counts.entry(choice).or_default() += 1;
                        if entry.draining {
                            owner_writes.push(write(json!({self.drain_key.as_str(): null}), None));
                        }
                    }
                    Some(shard) if live.iter().any(|m| m == shard) => {
                        owners.insert(&entry.uid, shard);
                        *counts.entry(shard).or_default() += 1;
                        if !entry.draining {
                            owner_writes.push(Write {
                                requests_drain: true,
                                ..write(json!({self.drain_key.as_str(): "true"}), None)
                            });
                        }
                    }
                    gone => {
                        owners.insert(&entry.uid, choice);
                        *counts.entry(choice).or_default() += 1;
                        let reason = match gone {
                            None if self.drain_requested.contains(&(gvk.clone(), key.clone())) => MoveReason::Drained,
                            None => MoveReason::Unassigned,
                            Some(_) => MoveReason::ReplicaGone,
                        };
                        owner_writes.push(write(
                            json!({self.shard_key.as_str(): choice, self.drain_key.as_str(): null}),
                            Some(reason),
                        ));
                    }
                }
            }
        }
        for kinds in &self.kinds {
            for gvk in &kinds.owns {
                if primaries.contains(gvk) {
                    // A kind that is also a primary is placed by its own hash.
                    continue;
                }
                let Some(store) = self.stores.get(gvk) else { continue };
                for (key, entry) in &store.objects {
                    let Some(owner_shard) = entry.controller.as_deref().and_then(|uid| owners.get(uid)) else {
                        continue;
                    };
                    if entry.shard.as_deref() != Some(*owner_shard) {
                        children.push(Write {
                            gvk: gvk.clone(),
                            key: key.clone(),
                            resource_version: entry.resource_version.clone(),
                            labels: json!({self.shard_key.as_str(): *owner_shard}),
                            counts_as: None,
                            requests_drain: false,
                        });
                    }
                }
            }
        }
        if let Some(metrics) = &self.metrics {
            metrics.set_shard_objects(counts.iter().map(|(shard, count)| (*shard, *count)));
        }
        children.dedup_by(|a, b| a.gvk == b.gvk && a.key == b.key);
        self.write_all(children).await;
        self.write_all(owner_writes).await;
    }

    /// Sends `writes` (skipping those already sent against the same version), at most [`WRITES_IN_FLIGHT`] at once.
    async fn write_all(&mut self, writes: Vec<Write>) {
        let writes: Vec<Write> = writes
            .into_iter()
            .filter(|write| self.pending.get(&(write.gvk.clone(), write.key.clone())) != Some(&write.resource_version))
            .collect();
        if writes.is_empty() {
            return;
        }
        if let Err(fenced) = self.ticket.check() {
            tracing::warn!(writes = writes.len(), reason = %fenced, "sharder writes not sent");
            return;
        }
        tracing::debug!(writes = writes.len(), "sharder writing labels");
        let results: Vec<(Write, Result<(), kube::Error>)> = futures::stream::iter(writes)
            .map(|write| {
                let api = self.api(&write);
                let ticket = self.ticket.clone();
                async move {
                    if let Err(fenced) = ticket.check() {
                        return (write, Err(kube::Error::Service(Box::new(fenced))));
                    }
                    let patch = json!({
                        "metadata": {"resourceVersion": &*write.resource_version, "labels": write.labels},
                    });
                    let result = api
                        .patch(&write.key.name, &patch_params(), &Patch::Merge(&patch))
                        .await
                        .map(drop);
                    (write, result)
                }
            })
            .buffer_unordered(WRITES_IN_FLIGHT)
            .collect()
            .await;
        for (write, result) in results {
            let id = (write.gvk.clone(), write.key.clone());
            match result {
                Ok(()) => {
                    if write.requests_drain {
                        self.drain_requested.insert(id.clone());
                    }
                    if let Some(reason) = write.counts_as {
                        self.drain_requested.remove(&id);
                        if let Some(metrics) = &self.metrics {
                            metrics.record_shard_move(reason.as_str());
                        }
                    }
                    self.pending.insert(id, write.resource_version.clone());
                    tracing::debug!(kind = %write.gvk, object = %write.key, labels = %write.labels, "labels written");
                }
                Err(kube::Error::Api(status)) if status.code == 409 || status.code == 404 => {
                    self.pending.remove(&id);
                    tracing::debug!(kind = %write.gvk, object = %write.key, "changed meanwhile; deciding again on the next pass");
                }
                Err(error) => {
                    self.pending.remove(&id);
                    tracing::warn!(kind = %write.gvk, object = %write.key, error = %crate::error_chain(&error), "could not write shard labels");
                }
            }
        }
        // Forget writes whose effect the watch has shown (the version moved on), keeping the map small.
        let stores = &self.stores;
        self.drain_requested
            .retain(|(gvk, key)| stores.get(gvk).is_some_and(|store| store.objects.contains_key(key)));
        self.pending.retain(|(gvk, key), version| {
            stores
                .get(gvk)
                .and_then(|store| store.objects.get(key))
                .is_some_and(|entry| entry.resource_version == *version)
        });
    }

    fn api(&self, write: &Write) -> Api<DynamicObject> {
        let store = &self.stores[&write.gvk];
        match (&write.key.namespace, store.namespaced) {
            (Some(namespace), true) => Api::namespaced_with(self.client.clone(), namespace, &store.resource),
            _ => Api::all_with(self.client.clone(), &store.resource),
        }
    }
}

/// Resolves once `flag` is true (or its sender is gone), holding no borrow of it afterwards.
pub(crate) async fn turned_true(flag: &mut watch::Receiver<bool>) {
    let _ = flag.wait_for(|value| *value).await;
}

/// The replica a membership Lease of `ring` belongs to: the name after `<ring>-shard-`.
fn lease_member(lease: &Lease, ring: &str) -> Option<String> {
    let name = lease.metadata.name.as_deref()?;
    name.strip_prefix(&format!("{ring}-shard-")).map(str::to_owned)
}

/// The sharder's entry for an object's metadata; `None` without a name or uid.
fn entry_of(meta: &PartialObjectMeta<DynamicObject>, shard_key: &str, drain_key: &str) -> Option<(ObjectKey, Entry)> {
    let metadata = &meta.metadata;
    let labels = metadata.labels.as_ref();
    Some((
        ObjectKey::new(metadata.namespace.as_deref(), metadata.name.as_deref()?),
        Entry {
            uid: metadata.uid.as_deref()?.into(),
            resource_version: metadata.resource_version.as_deref().unwrap_or_default().into(),
            shard: labels.and_then(|l| l.get(shard_key)).map(|s| s.as_str().into()),
            draining: labels.is_some_and(|l| l.contains_key(drain_key)),
            controller: metadata
                .owner_references
                .iter()
                .flatten()
                .find(|o| o.controller == Some(true))
                .map(|o| o.uid.as_str().into()),
        },
    ))
}

/// Streams the metadata of `resource` into the sharder: one watch on all namespaces, or one per namespace.
fn spawn_watch(
    client: kube::Client,
    resource: &ApiResource,
    gvk: Gvk,
    namespaces: Option<BTreeSet<String>>,
    (shard_key, drain_key): (String, String),
    tx: mpsc::UnboundedSender<Message>,
) -> tokio::task::JoinHandle<()> {
    let apis: Vec<(Option<String>, Api<PartialObjectMeta<DynamicObject>>)> = match namespaces {
        None => vec![(None, Api::all_with(client, resource))],
        Some(namespaces) => namespaces
            .iter()
            .map(|namespace| {
                (
                    Some(namespace.clone()),
                    Api::namespaced_with(client.clone(), namespace, resource),
                )
            })
            .collect(),
    };
    tokio::spawn(async move {
        let streams = apis.into_iter().map(|(namespace, api)| {
            watcher::watcher(api, watcher::Config::default())
                .default_backoff()
                .map(move |event| (namespace.clone(), event))
                .boxed()
        });
        let mut events = futures::stream::select_all(streams);
        while let Some((namespace, event)) = events.next().await {
            match event {
                Ok(event) => {
                    let compact = match event {
                        Event::Init => Event::Init,
                        Event::InitDone => Event::InitDone,
                        Event::InitApply(meta) => match entry_of(&meta, &shard_key, &drain_key) {
                            Some(entry) => Event::InitApply(entry),
                            None => continue,
                        },
                        Event::Apply(meta) => match entry_of(&meta, &shard_key, &drain_key) {
                            Some(entry) => Event::Apply(entry),
                            None => continue,
                        },
                        Event::Delete(meta) => match entry_of(&meta, &shard_key, &drain_key) {
                            Some(entry) => Event::Delete(entry),
                            None => continue,
                        },
                    };
                    if tx.send(Message::Object(gvk.clone(), namespace, compact)).is_err() {
                        return;
                    }
                }
                Err(error) => {
                    tracing::warn!(kind = %gvk, error = %crate::error_chain(&error), "sharder watch failed; retrying")
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(holder: Option<&str>, renewed: Timestamp) -> Lease {
        Lease {
            metadata: Default::default(),
            spec: Some(k8s_openapi::api::coordination::v1::LeaseSpec {
                holder_identity: holder.map(str::to_owned),
                renew_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(renewed)),
                lease_duration_seconds: Some(10),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn a_member_is_live_until_a_duration_passes_on_the_sharders_clock_without_a_renewal() {
        let start = tokio::time::Instant::now();
        let now = Timestamp::now();
        let seen = Member::observe(None, &lease(Some("a"), now), start);
        assert!(seen.is_live(start + Duration::from_secs(9)));
        assert!(!seen.is_live(start + Duration::from_secs(10)));
        // The same renewal seen again (a re-list) does not extend it; a new renewal does.
        let again = Member::observe(
            Some(seen.clone()),
            &lease(Some("a"), now),
            start + Duration::from_secs(5),
        );
        assert!(!again.is_live(start + Duration::from_secs(10)));
        let renewed = Member::observe(
            Some(seen),
            &lease(Some("a"), now + k8s_openapi::jiff::SignedDuration::from_secs(2)),
            start + Duration::from_secs(5),
        );
        assert!(renewed.is_live(start + Duration::from_secs(14)));
        // Whatever its renewal time says (another clock, a late watch), the member is judged by when the sharder
        // saw it change.
        let skewed = Member::observe(
            None,
            &lease(Some("a"), now - k8s_openapi::jiff::SignedDuration::from_secs(8)),
            start,
        );
        assert!(skewed.is_live(start + Duration::from_secs(9)));
    }

    #[test]
    fn released_and_long_expired_leases_are_not_live() {
        let start = tokio::time::Instant::now() + Duration::from_secs(60);
        let now = Timestamp::now();
        assert!(!Member::observe(None, &lease(None, now), start).is_live(start));
        let stale = lease(Some("a"), now - k8s_openapi::jiff::SignedDuration::from_secs(3600));
        assert!(
            !Member::observe(None, &stale, start).is_live(start),
            "a Lease expired long ago is gone at first sight"
        );
    }

    #[test]
    fn membership_leases_name_their_replica() {
        let mut lease = Lease::default();
        lease.metadata.name = Some("wasm-reconciler-shard-host-a".into());
        assert_eq!(lease_member(&lease, "wasm-reconciler").as_deref(), Some("host-a"));
        lease.metadata.name = Some("wasm-reconciler-sharder".into());
        assert_eq!(lease_member(&lease, "wasm-reconciler"), None);
    }
}
