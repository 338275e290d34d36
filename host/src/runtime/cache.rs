//! Shared informer caches: one watch per kind, shared by every controller that needs that kind.
//!
//! A controller restricted to some namespaces gets caches that watch only those namespaces (one watch per
//! namespace), shared by every controller with the same namespaces: a namespaced plugin needs no cluster-wide
//! list or watch permission. Cluster-scoped kinds are always watched whole.
//!
//! Each object is held once: as the JSON text plugins receive (`managedFields` stripped, serialised once per
//! change, not once per reconcile), with the metadata the host decides on read out of it, typed ([`Meta`]). The
//! host's own writes are folded in as soon as the API server answers, so the next reconcile sees them before the
//! watch delivers them; the watch event that follows carries the same resourceVersion and is then ignored.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, TypeMeta};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event as WatchEvent, watcher};
use serde_json::Value;
use tokio::sync::watch;

use crate::plugin::Gvk;

/// Errors of the cache layer.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// The API server does not serve the kind (yet).
    #[error("the API server does not serve {gvk}")]
    NotServed {
        /// The kind.
        gvk: Gvk,
        /// The cause.
        #[source]
        source: kube::Error,
    },
}

/// Result alias for this module.
pub type Result<T, E = CacheError> = std::result::Result<T, E>;

/// `namespace/name`, or `name` for cluster-scoped objects.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// Namespace; `None` for cluster-scoped objects. Shared by every key of the namespace.
    pub namespace: Option<Arc<str>>,
    /// Name.
    pub name: Box<str>,
}

impl ObjectKey {
    /// A key.
    pub fn new(namespace: Option<&str>, name: &str) -> Self {
        Self {
            namespace: namespace.map(intern),
            name: name.into(),
        }
    }
}

/// One shared copy of a string that many cached objects repeat (namespaces, owner kinds and apiVersions, label keys).
/// The set only grows; it holds what the cluster's objects name, which is small next to the objects.
fn intern(text: &str) -> Arc<str> {
    static INTERNED: std::sync::OnceLock<Mutex<HashSet<Arc<str>>>> = std::sync::OnceLock::new();
    let mut interned = INTERNED
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(shared) = interned.get(text) {
        return shared.clone();
    }
    let shared: Arc<str> = text.into();
    interned.insert(shared.clone());
    shared
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{namespace}/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// A `metadata.resourceVersion`, as the cache orders versions of one object.
///
/// Since Kubernetes 1.35, resourceVersions of one resource type compare as integers: a larger number is a newer
/// version (KEP-5504, "comparable resource version", a conformance requirement). The cache relies on that, and
/// only within one kind, to keep a write it folded in from being replaced by an older watch event. A version that
/// is not an integer (a server predating the rule, an aggregated API) is compared for equality only: whether it
/// is newer is unknown, and the incoming version is taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceVersion {
    /// A decimal integer, ordered.
    Integer(u64),
    /// Anything else, unordered.
    Opaque(Box<str>),
}

impl std::fmt::Display for ResourceVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Integer(number) => write!(f, "{number}"),
            Self::Opaque(text) => f.write_str(text),
        }
    }
}

impl ResourceVersion {
    /// Reads a resourceVersion.
    pub fn parse(text: &str) -> Self {
        match text.parse() {
            Ok(number) if text.bytes().all(|b| b.is_ascii_digit()) => Self::Integer(number),
            _ => Self::Opaque(text.into()),
        }
    }

    /// Whether `self` is known to be older than `other` (both of the same object's kind).
    pub fn is_older_than(&self, other: &Self) -> bool {
        matches!((self, other), (Self::Integer(mine), Self::Integer(theirs)) if mine < theirs)
    }
}

/// The metadata of a cached object that host decisions read, typed and compact: a cache holds one per object.
#[derive(Debug, Clone, PartialEq)]
pub struct Meta {
    /// `metadata.uid`.
    pub uid: Box<str>,
    /// `metadata.resourceVersion`.
    pub resource_version: ResourceVersion,
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// `metadata.finalizers`.
    pub finalizers: Box<[Box<str>]>,
    /// `metadata.labels`, for label selectors.
    pub labels: Labels,
    /// The ownerReference with `controller: true`, if any.
    pub controller: Option<ControllerRef>,
}

/// An object's labels, sorted by key; keys are shared between objects.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Labels(Box<[(Arc<str>, Box<str>)]>);

impl Labels {
    fn new(labels: BTreeMap<String, String>) -> Self {
        Self(
            labels
                .into_iter()
                .map(|(key, value)| (intern(&key), value.into()))
                .collect(),
        )
    }

    /// The value of label `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .binary_search_by(|(probe, _)| (**probe).cmp(key))
            .ok()
            .map(|index| &*self.0[index].1)
    }
}

/// The ownerReference with `controller: true`: who the object belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerRef {
    /// The owner's `apiVersion` (shared).
    pub api_version: Arc<str>,
    /// The owner's kind (shared).
    pub kind: Arc<str>,
    /// The owner's name.
    pub name: Box<str>,
    /// The owner's uid.
    pub uid: Box<str>,
}

impl ControllerRef {
    fn of(owner: &OwnerReference) -> Self {
        Self {
            api_version: intern(&owner.api_version),
            kind: intern(&owner.kind),
            name: owner.name.as_str().into(),
            uid: owner.uid.as_str().into(),
        }
    }
}

/// One cached object: its JSON text and its typed metadata.
#[derive(Debug)]
pub struct CachedObject {
    /// Its key.
    pub key: ObjectKey,
    /// What the host reads of its metadata.
    pub meta: Meta,
    /// The object without `managedFields`, as JSON text: what plugins receive.
    pub json: Arc<str>,
}

impl CachedObject {
    /// Wraps an object read from (or written to) the API server as a `gvk`; `None` without a name.
    pub fn new(mut object: DynamicObject, gvk: &Gvk) -> Option<Self> {
        let metadata = &mut object.metadata;
        metadata.managed_fields = None;
        let key = ObjectKey::new(metadata.namespace.as_deref(), metadata.name.as_deref()?);
        let meta = Meta {
            uid: metadata.uid.as_deref().unwrap_or_default().into(),
            resource_version: ResourceVersion::parse(metadata.resource_version.as_deref().unwrap_or_default()),
            generation: metadata.generation,
            deleting: metadata.deletion_timestamp.is_some(),
            finalizers: metadata
                .finalizers
                .iter()
                .flatten()
                .map(|f| f.as_str().into())
                .collect(),
            labels: Labels::new(metadata.labels.clone().unwrap_or_default()),
            controller: metadata
                .owner_references
                .iter()
                .flatten()
                .find(|owner| owner.controller == Some(true))
                .map(ControllerRef::of),
        };
        // List items come without apiVersion and kind; plugins always see both.
        object.types.get_or_insert_with(|| TypeMeta {
            api_version: gvk.api_version(),
            kind: gvk.kind.clone(),
        });
        let json = serde_json::to_string(&object).ok()?.into();
        Some(Self { key, meta, json })
    }

    /// Wraps a JSON object of kind `gvk` (fixtures, tests); `None` when it is not an object with a name.
    pub fn from_json(value: Value, gvk: &Gvk) -> Option<Self> {
        Self::new(serde_json::from_value(value).ok()?, gvk)
    }

    /// The object, parsed.
    pub fn value(&self) -> Value {
        serde_json::from_str(&self.json).expect("cached objects are serialised JSON")
    }

    /// The object, parsed with typed metadata.
    pub fn dynamic(&self) -> DynamicObject {
        serde_json::from_str(&self.json).expect("cached objects are serialised objects")
    }

    /// Whether a label selector selects this object.
    pub fn selected_by(&self, selector: &wasm_reconciler_apiserver::selector::LabelSelector) -> bool {
        selector.matches_with(|key| self.meta.labels.get(key))
    }

    /// True when `self` may replace `other` in the cache: not known to be older, and another incarnation of the
    /// name or another version. Integer resourceVersions order every object of a kind (KEP-5504), so an older
    /// incarnation never replaces a newer one (a relist read before a child was created again, say).
    fn supersedes(&self, other: &CachedObject) -> bool {
        !self.meta.resource_version.is_older_than(&other.meta.resource_version)
            && (self.meta.uid != other.meta.uid || self.meta.resource_version != other.meta.resource_version)
    }
}

/// A change seen by a cache, delivered to subscribers.
#[derive(Debug, Clone)]
pub struct CacheChange {
    /// The kind.
    pub gvk: Gvk,
    /// The object before, if it was cached.
    pub old: Option<Arc<CachedObject>>,
    /// The object after; `None` when it was deleted.
    pub new: Option<Arc<CachedObject>>,
    /// Set to a writer's id when the change is that writer's own write and carries nothing the writer has not
    /// already seen (see [`KindCache::record_write`]): that writer need not react to it; everyone else does.
    pub seen_by: Option<u64>,
    /// The change came from a (re)list, not a watch event or a write: the watch was down or expired (410 Gone)
    /// and the list showed the difference, in bulk and in no particular order.
    pub relisted: bool,
}

impl CacheChange {
    /// The key of the changed object.
    pub fn key(&self) -> &ObjectKey {
        &self
            .new
            .as_ref()
            .or(self.old.as_ref())
            .expect("a change has an old or a new object")
            .key
    }
}

type Subscriber = Arc<dyn Fn(&CacheChange) + Send + Sync>;

#[derive(Default)]
struct CacheState {
    objects: HashMap<ObjectKey, Arc<CachedObject>>,
    by_controller: HashMap<String, HashSet<ObjectKey>>,
    /// Objects recently deleted from the API server. A deleted uid never comes back, so nothing older than the
    /// deletion may bring one back into the cache: not a write the host folds in after the deletion's watch event
    /// overtook its response, not a watch event older than the host's own delete, not a relist that was read
    /// before the deletion.
    tombstones: HashMap<ObjectKey, Tombstone>,
}

/// A deleted object's uid, and the version its deletion was seen at.
#[derive(Debug)]
struct Tombstone {
    uid: Box<str>,
    /// The resourceVersion of the watch event that removed it; `None` for the host's own delete. A later version
    /// of the same uid proves the object was not deleted after all: a label-selected watch reports an object that
    /// leaves the selection as deleted, as the watcher last saw it (so still matching) at the new version, and the
    /// object may be labelled back.
    at: Option<ResourceVersion>,
    when: std::time::Instant,
}

/// Why an object leaves the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Removal {
    /// It left this cache's view only (a write labelled it for another share, a relist no longer shows it).
    LeftView,
    /// It was deleted, as a watch event at this version reported (or the host's own delete, without one): its uid
    /// is buried.
    Deleted(Option<ResourceVersion>),
}

/// Tombstones kept before old ones are purged, and how old they must be to go.
const TOMBSTONES_KEPT: usize = 4096;
const TOMBSTONE_AGE: std::time::Duration = std::time::Duration::from_secs(60);

/// The uid of an object's controller, if it has one.
fn controller_uid(object: &CachedObject) -> Option<&str> {
    object.meta.controller.as_ref().map(|owner| &*owner.uid)
}

impl CacheState {
    fn insert(&mut self, object: Arc<CachedObject>) -> Option<Arc<CachedObject>> {
        self.tombstones.remove(&object.key);
        let old = self.objects.insert(object.key.clone(), object.clone());
        if let Some(old_owner) = old.as_deref().and_then(controller_uid)
            && Some(old_owner) != controller_uid(&object)
        {
            let old_owner = old_owner.to_owned();
            self.unindex(&old_owner, &object.key);
        }
        if let Some(owner) = controller_uid(&object) {
            self.by_controller
                .entry(owner.into())
                .or_default()
                .insert(object.key.clone());
        }
        old
    }

    /// Removes the object of `key`; a deletion buries its uid.
    fn remove(&mut self, key: &ObjectKey, removal: Removal) -> Option<Arc<CachedObject>> {
        let old = self.objects.remove(key)?;
        if let Some(owner) = controller_uid(&old) {
            self.unindex(owner, key);
        }
        if let Removal::Deleted(at) = removal {
            if self.tombstones.len() >= TOMBSTONES_KEPT {
                self.tombstones
                    .retain(|_, tombstone| tombstone.when.elapsed() < TOMBSTONE_AGE);
            }
            let tombstone = Tombstone {
                uid: old.meta.uid.clone(),
                at,
                when: std::time::Instant::now(),
            };
            self.tombstones.insert(key.clone(), tombstone);
        }
        Some(old)
    }

    /// Whether `object` was deleted since it was written: a tombstone of its uid that it is not known to be newer
    /// than.
    fn is_buried(&self, object: &CachedObject) -> bool {
        self.tombstones.get(&object.key).is_some_and(|tombstone| {
            *tombstone.uid == *object.meta.uid
                && tombstone
                    .at
                    .as_ref()
                    .is_none_or(|at| !at.is_older_than(&object.meta.resource_version))
        })
    }

    fn unindex(&mut self, owner: &str, key: &ObjectKey) {
        if let Some(keys) = self.by_controller.get_mut(owner) {
            keys.remove(key);
            if keys.is_empty() {
                self.by_controller.remove(owner);
            }
        }
    }
}

/// Where a cache stands: still listing, in step with the API server, or refused by it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheSync {
    /// The first list has not come back yet.
    Pending,
    /// Every watch has listed; changes stream in.
    Synced,
    /// The API server forbids listing or watching the kind (HTTP 403): the message says what is missing. The
    /// watch keeps retrying with backoff, so granting the permission heals it.
    Forbidden(String),
}

/// Which namespaces a cache watches: `None` for all.
pub type Namespaces = Option<BTreeSet<String>>;

/// The cache of one kind, fed by a watch on all namespaces or by one watch per namespace of its scope.
pub struct KindCache {
    gvk: Gvk,
    resource: ApiResource,
    namespaced: bool,
    namespaces: Namespaces,
    /// The label selector its watches use (sharded mode: this replica's share), if any.
    selector: Option<Selector>,
    state: RwLock<CacheState>,
    sync: watch::Sender<CacheSync>,
    subscribers: RwLock<Vec<(u64, Subscriber)>>,
    next_subscriber: AtomicU64,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl std::fmt::Debug for KindCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KindCache")
            .field("gvk", &self.gvk)
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

impl Drop for KindCache {
    fn drop(&mut self) {
        if let Some(task) = self.task.get_mut().unwrap_or_else(PoisonError::into_inner).take() {
            task.abort();
        }
    }
}

impl KindCache {
    /// The kind.
    pub fn gvk(&self) -> &Gvk {
        &self.gvk
    }

    /// How the API server serves the kind.
    pub fn resource(&self) -> &ApiResource {
        &self.resource
    }

    /// Whether the kind is namespaced.
    pub fn namespaced(&self) -> bool {
        self.namespaced
    }

    /// The namespaces watched; `None` when all are (always for cluster-scoped kinds).
    pub fn namespaces(&self) -> Option<&BTreeSet<String>> {
        self.namespaces.as_ref()
    }

    /// The label selector the watches use, as sent to the API server.
    pub fn selector(&self) -> Option<&str> {
        self.selector.as_ref().map(|selector| &*selector.text)
    }

    /// Whether objects of `namespace` are watched (`None`: cluster-scoped objects, or every namespace).
    pub fn watches(&self, namespace: Option<&str>) -> bool {
        match (&self.namespaces, namespace) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(watched), Some(namespace)) => watched.contains(namespace),
        }
    }

    /// Number of cached objects.
    pub fn len(&self) -> usize {
        self.read().objects.len()
    }

    /// True when nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, CacheState> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, CacheState> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// One object.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<CachedObject>> {
        self.read().objects.get(key).cloned()
    }

    /// Every object, or those of one namespace.
    pub fn list(&self, namespace: Option<&str>) -> Vec<Arc<CachedObject>> {
        self.read()
            .objects
            .values()
            .filter(|object| namespace.is_none() || object.key.namespace.as_deref() == namespace)
            .cloned()
            .collect()
    }

    /// Objects whose controller ownerReference has this uid, sorted by key.
    pub fn controlled_by(&self, owner_uid: &str) -> Vec<Arc<CachedObject>> {
        let state = self.read();
        let mut children: Vec<_> = state
            .by_controller
            .get(owner_uid)
            .into_iter()
            .flatten()
            .filter_map(|key| state.objects.get(key).cloned())
            .collect();
        children.sort_by(|a, b| a.key.cmp(&b.key));
        children
    }

    /// Folds in an object the host just wrote, ahead of the watch, and tells subscribers of it.
    ///
    /// `seen_by` names the writer when the written object holds nothing that writer has not already seen (a
    /// status it wrote itself, say). The response of a write can also carry someone else's concurrent change (a
    /// spec edit made while a reconcile ran); the watch event of that change is older than the folded-in object
    /// and will be dropped, so the writer must not be marked as having seen it.
    ///
    /// Returns the written object as the cache holds it (`None` only for an object without a name), whether or not
    /// the cache already had something newer.
    pub fn record_write(&self, object: DynamicObject, seen_by: Option<u64>) -> Option<Arc<CachedObject>> {
        let object = Arc::new(CachedObject::new(object, &self.gvk)?);
        if !self.watches(object.key.namespace.as_deref()) {
            return Some(object);
        }
        if let Some(selector) = &self.selector
            && !object.selected_by(&selector.parsed)
        {
            // The write took the object out of this cache's share, as the watch will report.
            self.remove_matching(&object.key, &object.meta.uid, Removal::LeftView);
            return Some(object);
        }
        let old = {
            let mut state = self.write();
            let stale = match state.objects.get(&object.key) {
                Some(cached) => !object.supersedes(cached),
                None => state.is_buried(&object),
            };
            if stale {
                return Some(object);
            }
            state.insert(object.clone())
        };
        self.publish(&CacheChange {
            gvk: self.gvk.clone(),
            old,
            new: Some(object.clone()),
            seen_by,
            relisted: false,
        });
        Some(object)
    }

    /// Folds in a deletion the host just made (or found already made): the object of `key` with `uid` is gone.
    pub fn record_delete(&self, key: &ObjectKey, uid: &str) {
        self.remove_matching(key, uid, Removal::Deleted(None));
    }

    /// Removes the object of `key` if it is the incarnation `uid`, for the reason `removal` gives.
    fn remove_matching(&self, key: &ObjectKey, uid: &str, removal: Removal) {
        let old = {
            let mut state = self.write();
            if state.objects.get(key).is_none_or(|cached| *cached.meta.uid != *uid) {
                return;
            }
            state.remove(key, removal)
        };
        self.publish(&CacheChange {
            gvk: self.gvk.clone(),
            old,
            new: None,
            seen_by: None,
            relisted: false,
        });
    }

    /// Waits until the first list has been received.
    pub async fn wait_synced(&self) {
        let mut sync = self.sync.subscribe();
        // The sender lives as long as `self`, so this cannot fail while we hold `&self`.
        let _ = sync.wait_for(|sync| *sync == CacheSync::Synced).await;
    }

    /// Waits until the first list has been received or the API server has refused it.
    pub async fn wait_settled(&self) {
        let mut sync = self.sync.subscribe();
        let _ = sync.wait_for(|sync| *sync != CacheSync::Pending).await;
    }

    /// Whether the first list has been received.
    pub fn is_synced(&self) -> bool {
        *self.sync.borrow() == CacheSync::Synced
    }

    /// Where the cache stands.
    pub fn sync_state(&self) -> CacheSync {
        self.sync.borrow().clone()
    }

    /// Follows where the cache stands.
    pub fn watch_sync(&self) -> watch::Receiver<CacheSync> {
        self.sync.subscribe()
    }

    /// Calls `subscriber` for every change until the returned subscription is dropped.
    pub fn subscribe(self: &Arc<Self>, subscriber: impl Fn(&CacheChange) + Send + Sync + 'static) -> Subscription {
        let id = self.next_subscriber.fetch_add(1, Ordering::Relaxed);
        self.subscribers
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push((id, Arc::new(subscriber)));
        Subscription {
            cache: Arc::downgrade(self),
            id,
        }
    }

    fn publish(&self, change: &CacheChange) {
        let subscribers: Vec<Subscriber> = self
            .subscribers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(_, s)| s.clone())
            .collect();
        for subscriber in subscribers {
            subscriber(change);
        }
    }

    fn apply_watched(&self, object: DynamicObject) {
        let Some(object) = CachedObject::new(object, &self.gvk) else {
            return;
        };
        let object = Arc::new(object);
        let old = {
            let mut state = self.write();
            let stale = match state.objects.get(&object.key) {
                Some(cached) => !object.supersedes(cached),
                // An event older than the object's deletion (the host's own delete, folded in ahead of the watch).
                None => state.is_buried(&object),
            };
            if stale {
                return;
            }
            state.insert(object.clone())
        };
        self.publish(&CacheChange {
            gvk: self.gvk.clone(),
            old,
            new: Some(object),
            seen_by: None,
            relisted: false,
        });
    }

    fn delete_watched(&self, object: &DynamicObject) {
        let Some(name) = object.metadata.name.as_deref() else {
            return;
        };
        let key = ObjectKey::new(object.metadata.namespace.as_deref(), name);
        let uid = object.metadata.uid.as_deref().unwrap_or_default();
        // The event cannot tell a deletion from an object leaving a label selection (both report it as the watcher
        // last saw it): its uid is buried as of this version, and a later version of it is believed. Without
        // ordered versions a label-selected cache buries nothing, so that an object labelled back is seen again.
        let at = ResourceVersion::parse(object.metadata.resource_version.as_deref().unwrap_or_default());
        let removal = match (&self.selector, at) {
            (Some(_), ResourceVersion::Opaque(_)) => Removal::LeftView,
            (_, at) => Removal::Deleted(Some(at)),
        };
        let old = {
            let mut state = self.write();
            // The deletion of an earlier incarnation says nothing about the one cached now (the host may have
            // created it again, and folded that in, before this event arrived).
            if state.objects.get(&key).is_some_and(|cached| *cached.meta.uid != *uid) {
                return;
            }
            state.remove(&key, removal)
        };
        if old.is_some() {
            self.publish(&CacheChange {
                gvk: self.gvk.clone(),
                old,
                new: None,
                seen_by: None,
                relisted: false,
            });
        }
    }

    /// Replaces the contents after a (re)list of `within` (one namespace of the scope, or everything when
    /// `None`), telling subscribers what changed.
    fn replace_all(&self, fresh: Vec<Arc<CachedObject>>, within: Option<&str>) {
        let mut changes = Vec::new();
        {
            let mut state = self.write();
            let listed_keys: HashSet<ObjectKey> = fresh.iter().map(|o| o.key.clone()).collect();
            let vanished: Vec<ObjectKey> = state
                .objects
                .keys()
                .filter(|key| within.is_none_or(|namespace| key.namespace.as_deref() == Some(namespace)))
                .filter(|key| !listed_keys.contains(*key))
                .cloned()
                .collect();
            for key in vanished {
                // Gone from the list: deleted, or out of the share; nothing older than the list can follow it.
                let old = state.remove(&key, Removal::LeftView);
                changes.push(CacheChange {
                    gvk: self.gvk.clone(),
                    old,
                    new: None,
                    seen_by: None,
                    relisted: true,
                });
            }
            for object in fresh {
                // A list can be older than what the cache holds: the host's own writes are folded in as they are
                // answered, also while a relist is on its way. It never takes an object back to an older version,
                // nor brings back one the cache saw deleted.
                let stale = match state.objects.get(&object.key) {
                    Some(cached) => !object.supersedes(cached),
                    None => state.is_buried(&object),
                };
                if !stale {
                    let old = state.insert(object.clone());
                    changes.push(CacheChange {
                        gvk: self.gvk.clone(),
                        old,
                        new: Some(object),
                        seen_by: None,
                        relisted: true,
                    });
                }
            }
        }
        for change in &changes {
            self.publish(change);
        }
    }

    fn mark_synced(&self) {
        self.sync.send_replace(CacheSync::Synced);
    }

    /// Marks the cache refused by the API server (a 403 on list or watch); returns whether that is news.
    fn mark_forbidden(&self, message: String) -> bool {
        let forbidden = CacheSync::Forbidden(message);
        self.sync.send_if_modified(|sync| {
            let changed = *sync != forbidden;
            *sync = forbidden.clone();
            changed
        })
    }
}

/// Keeps a subscriber registered; dropping it unsubscribes.
#[derive(Debug)]
pub struct Subscription {
    cache: Weak<KindCache>,
    id: u64,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(cache) = self.cache.upgrade() {
            cache
                .subscribers
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .retain(|(id, _)| *id != self.id);
        }
    }
}

/// Every cache of the process, started on first use and stopped when no controller holds it any more.
#[derive(Clone)]
pub struct Caches {
    client: Client,
    /// Who the watches are made as, in messages: `the host's ServiceAccount` or the plugin's account.
    account: Arc<str>,
    caches: Arc<Mutex<HashMap<CacheScope, Weak<KindCache>>>>,
}

/// What a cache is for: a kind, watched in some namespaces or all, with or without a label selector.
type CacheScope = (Gvk, Namespaces, Option<String>);

/// A label selector of a cache's watches: its text for the API server, parsed for the host's own writes.
#[derive(Debug)]
struct Selector {
    text: Box<str>,
    parsed: wasm_reconciler_apiserver::selector::LabelSelector,
}

impl std::fmt::Debug for Caches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caches")
            .field("alive", &self.alive().len())
            .finish_non_exhaustive()
    }
}

impl Caches {
    /// No caches yet; they start on demand.
    pub fn new(client: Client) -> Self {
        Self {
            client,
            account: "the host's ServiceAccount".into(),
            caches: Arc::default(),
        }
    }

    /// Caches whose client acts as ServiceAccount `account` (`namespace/name`): messages about refused watches say
    /// to grant that account.
    pub fn acting_as(mut self, account: &str) -> Self {
        self.account = format!("ServiceAccount {account}").into();
        self
    }

    /// The client the caches watch with.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Caches that are alive, with their kinds.
    pub fn alive(&self) -> Vec<Arc<KindCache>> {
        self.caches
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .filter_map(Weak::upgrade)
            .collect()
    }

    /// The cache of `gvk` watching `namespaces` (all when `None`; cluster-scoped kinds are always watched
    /// whole), starting its watch if no one holds it. Fails when the API server does not serve the kind; callers
    /// retry (a CRD may be installed later).
    pub async fn get_or_start(&self, gvk: &Gvk, namespaces: Option<&[String]>) -> Result<Arc<KindCache>> {
        self.get_or_start_selected(gvk, namespaces, None).await
    }

    /// Like [`Caches::get_or_start`], the watches listing only objects that `selector` (a label selector such as
    /// `shard.wasm-reconciler.io/ring=host-a`) selects; a selector the host cannot parse panics, since the host
    /// builds them.
    pub async fn get_or_start_selected(
        &self,
        gvk: &Gvk,
        namespaces: Option<&[String]>,
        selector: Option<&str>,
    ) -> Result<Arc<KindCache>> {
        let requested: Namespaces = namespaces.map(|namespaces| namespaces.iter().cloned().collect());
        let selector = selector.map(str::to_owned);
        if let Some(cache) = self.alive_cache(gvk, &requested, &selector) {
            return Ok(cache);
        }
        let kube_gvk = GroupVersionKind::gvk(&gvk.group, &gvk.version, &gvk.kind);
        let (resource, capabilities) =
            kube::discovery::pinned_kind(&self.client, &kube_gvk)
                .await
                .map_err(|source| CacheError::NotServed {
                    gvk: gvk.clone(),
                    source,
                })?;
        let namespaced = capabilities.scope == kube::discovery::Scope::Namespaced;
        let scope = if namespaced { requested } else { None };

        let mut caches = self.caches.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (gvk.clone(), scope.clone(), selector.clone());
        if let Some(cache) = caches.get(&key).and_then(Weak::upgrade) {
            return Ok(cache);
        }
        let (sync, _) = watch::channel(CacheSync::Pending);
        let cache = Arc::new(KindCache {
            gvk: gvk.clone(),
            resource: resource.clone(),
            namespaced,
            namespaces: scope.clone(),
            selector: selector.as_deref().map(|text| Selector {
                text: text.into(),
                parsed: wasm_reconciler_apiserver::selector::LabelSelector::parse(text)
                    .expect("the host builds valid label selectors"),
            }),
            state: RwLock::default(),
            sync,
            subscribers: RwLock::default(),
            next_subscriber: AtomicU64::new(0),
            task: Mutex::new(None),
        });
        let task = tokio::spawn(run_watch(
            (self.client.clone(), self.account.clone()),
            resource,
            gvk.clone(),
            (scope.clone(), selector.clone()),
            Arc::downgrade(&cache),
        ));
        *cache.task.lock().unwrap_or_else(PoisonError::into_inner) = Some(task);
        caches.insert(key, Arc::downgrade(&cache));
        caches.retain(|_, cache| cache.strong_count() > 0);
        match &scope {
            None => tracing::info!(kind = %gvk, selector, "watching"),
            Some(namespaces) => tracing::info!(kind = %gvk, ?namespaces, selector, "watching"),
        }
        Ok(cache)
    }

    /// A running cache of `gvk` for `namespaces` and `selector`, also when the kind turns out to be
    /// cluster-scoped.
    fn alive_cache(&self, gvk: &Gvk, namespaces: &Namespaces, selector: &Option<String>) -> Option<Arc<KindCache>> {
        let caches = self.caches.lock().unwrap_or_else(PoisonError::into_inner);
        caches
            .get(&(gvk.clone(), namespaces.clone(), selector.clone()))
            .and_then(Weak::upgrade)
            .or_else(|| {
                caches
                    .get(&(gvk.clone(), None, selector.clone()))
                    .and_then(Weak::upgrade)
                    .filter(|cache| !cache.namespaced)
            })
    }
}

/// Feeds a cache from its watches until the cache is dropped: one on all namespaces, or one per namespace of
/// its scope. The kube watcher re-lists on 410 Gone, uses bookmarks, and backs off on errors; a re-list of one
/// namespace replaces only that namespace's objects. The cache is synced once every watch has listed.
async fn run_watch(
    (client, account): (Client, Arc<str>),
    resource: ApiResource,
    gvk: Gvk,
    (scope, selector): (Namespaces, Option<String>),
    cache: Weak<KindCache>,
) {
    let config = match &selector {
        Some(selector) => watcher::Config::default().labels(selector),
        None => watcher::Config::default(),
    };
    let watches: Vec<(Option<String>, Api<DynamicObject>)> = match &scope {
        None => vec![(None, Api::all_with(client, &resource))],
        Some(namespaces) => namespaces
            .iter()
            .map(|namespace| {
                (
                    Some(namespace.clone()),
                    Api::namespaced_with(client.clone(), namespace, &resource),
                )
            })
            .collect(),
    };
    let mut unsynced: HashSet<Option<String>> = watches.iter().map(|(namespace, _)| namespace.clone()).collect();
    let mut stream = futures::stream::select_all(watches.into_iter().map(|(namespace, api)| {
        watcher(api, config.clone())
            .default_backoff()
            .map(move |event| (namespace.clone(), event))
            .boxed()
    }));
    // A (re)list's objects, made compact as they arrive: the parsed pages never pile up.
    let mut buffers: HashMap<Option<String>, Vec<Arc<CachedObject>>> = HashMap::new();
    let mut failures = 0u32;
    while let Some((namespace, event)) = stream.next().await {
        let Some(cache) = cache.upgrade() else { return };
        match event {
            Ok(event) => {
                failures = 0;
                match event {
                    WatchEvent::Init => buffers.entry(namespace).or_default().clear(),
                    WatchEvent::InitApply(object) => {
                        if let Some(object) = CachedObject::new(object, &gvk) {
                            buffers.entry(namespace).or_default().push(Arc::new(object));
                        }
                    }
                    WatchEvent::InitDone => {
                        let listed = buffers.remove(&namespace).unwrap_or_default();
                        let count = listed.len();
                        cache.replace_all(listed, namespace.as_deref());
                        let first_sync = unsynced.remove(&namespace);
                        if unsynced.is_empty() && !cache.is_synced() {
                            if let CacheSync::Forbidden(_) = cache.sync_state() {
                                tracing::info!(kind = %gvk, "the API server allows watching the kind again");
                            }
                            cache.mark_synced();
                            tracing::info!(kind = %gvk, objects = cache.len(), "cache synced");
                        } else if !first_sync {
                            tracing::debug!(kind = %gvk, namespace, objects = count, "cache re-listed");
                        }
                    }
                    WatchEvent::Apply(object) => cache.apply_watched(object),
                    WatchEvent::Delete(object) => cache.delete_watched(&object),
                }
            }
            Err(error) => {
                failures += 1;
                if let Some(message) = forbidden(&error) {
                    let scope = namespace
                        .as_deref()
                        .map_or_else(|| "cluster-wide".to_owned(), |n| format!("in namespace {n}"));
                    let message = format!("the API server forbids listing and watching {gvk} {scope}: {message}");
                    if cache.mark_forbidden(message.clone()) {
                        tracing::warn!(kind = %gvk, namespace, "{message}; grant {account} get, list and watch on it (see docs/deploy.md)");
                    }
                    continue;
                }
                let level_warn = failures == 1 || failures.is_power_of_two();
                if level_warn {
                    tracing::warn!(kind = %gvk, namespace, failures, error = %crate::error_chain(&error), "watch failed; retrying with backoff");
                } else {
                    tracing::debug!(kind = %gvk, namespace, failures, error = %crate::error_chain(&error), "watch failed; retrying with backoff");
                }
            }
        }
    }
    // The watcher streams only end when their API is gone; give the runtime a moment before anyone retries.
    tokio::time::sleep(Duration::from_millis(10)).await;
}

/// The API server's message when a list or watch was refused for lack of permission (HTTP 403).
fn forbidden(error: &watcher::Error) -> Option<String> {
    let status = match error {
        watcher::Error::InitialListFailed(kube::Error::Api(status))
        | watcher::Error::WatchStartFailed(kube::Error::Api(status))
        | watcher::Error::WatchFailed(kube::Error::Api(status)) => status,
        watcher::Error::WatchError(status) => status,
        _ => return None,
    };
    (status.code == 403).then(|| status.message.clone())
}

#[cfg(test)]
impl KindCache {
    /// A cache of `gvk` that no watch feeds, synced and empty: for tests of the code around caches.
    pub(crate) fn detached(gvk: Gvk, namespaced: bool, namespaces: Namespaces) -> Arc<Self> {
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(&gvk.group, &gvk.version, &gvk.kind));
        Arc::new(KindCache {
            gvk,
            resource,
            namespaced,
            namespaces,
            selector: None,
            state: RwLock::default(),
            sync: watch::channel(CacheSync::Synced).0,
            subscribers: RwLock::default(),
            next_subscriber: AtomicU64::new(0),
            task: Mutex::new(None),
        })
    }

    /// Marks the cache refused by the API server, as a 403 on its watch would.
    pub(crate) fn forbid(&self, message: &str) {
        self.mark_forbidden(message.to_owned());
    }

    /// Marks the cache synced, as a list that came back would.
    pub(crate) fn heal(&self) {
        self.mark_synced();
    }

    /// Folds in a JSON object as if watched.
    pub(crate) fn insert_json(&self, object: Value) {
        self.apply_watched(serde_json::from_value(object).expect("a Kubernetes object"));
    }

    /// Replaces the contents with JSON objects as if re-listed.
    pub(crate) fn relist_json(&self, objects: Vec<Value>) {
        let objects = objects
            .into_iter()
            .map(|object| Arc::new(CachedObject::from_json(object, &self.gvk).expect("a Kubernetes object")))
            .collect();
        self.replace_all(objects, None);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn config_map_kind() -> Gvk {
        Gvk::new("", "v1", "ConfigMap")
    }

    fn object(name: &str, rv: &str, owner: Option<&str>) -> Value {
        let mut value = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"), "resourceVersion": rv,
                         "managedFields": [{"manager": "x"}]}
        });
        if let Some(owner) = owner {
            value["metadata"]["ownerReferences"] =
                json!([{"uid": owner, "controller": true, "name": "p", "kind": "P", "apiVersion": "v1"}]);
        }
        value
    }

    fn cached(value: Value) -> CachedObject {
        CachedObject::from_json(value, &config_map_kind()).unwrap()
    }

    #[test]
    fn cached_objects_drop_managed_fields_and_read_their_metadata() {
        let cached = cached(object("a", "7", Some("owner-1")));
        assert!(cached.value()["metadata"].get("managedFields").is_none());
        assert!(!cached.json.contains("managedFields"));
        assert_eq!(cached.meta.resource_version, ResourceVersion::Integer(7));
        assert_eq!(cached.meta.controller.as_ref().map(|o| &*o.uid), Some("owner-1"));
        assert_eq!(cached.key.to_string(), "ns/a");
        assert_eq!(&*cached.meta.uid, "uid-a");
        assert!(!cached.meta.deleting);
    }

    #[test]
    fn list_items_get_their_kind() {
        let bare = json!({"metadata": {"name": "a", "namespace": "ns", "resourceVersion": "1"}, "data": {"k": "v"}});
        let cached = cached(bare);
        assert_eq!(cached.value()["apiVersion"], "v1");
        assert_eq!(cached.value()["kind"], "ConfigMap");
        assert_eq!(cached.value()["data"]["k"], "v");
    }

    #[test]
    fn integer_resource_versions_are_ordered() {
        // Kubernetes 1.35 (KEP-5504): resourceVersions of one resource type compare as integers.
        let newer = cached(object("a", "9", None));
        let older = cached(object("a", "8", None));
        assert!(newer.supersedes(&older));
        assert!(!older.supersedes(&newer));
        assert!(!newer.supersedes(&cached(object("a", "9", None))));
        assert!(ResourceVersion::parse("10").is_older_than(&ResourceVersion::parse("11")));
        assert!(!ResourceVersion::parse("10").is_older_than(&ResourceVersion::parse("9")));
    }

    #[test]
    fn opaque_resource_versions_are_only_told_apart() {
        assert_eq!(ResourceVersion::parse("a7f"), ResourceVersion::Opaque("a7f".into()));
        assert_eq!(ResourceVersion::parse("+7"), ResourceVersion::Opaque("+7".into()));
        assert!(!ResourceVersion::parse("a7f").is_older_than(&ResourceVersion::parse("b00")));
        assert!(!ResourceVersion::parse("3").is_older_than(&ResourceVersion::parse("b00")));
        let first = cached(object("a", "x1", None));
        let second = cached(object("a", "x0", None));
        assert!(second.supersedes(&first), "an unordered version that differs is taken");
        assert!(
            !first.supersedes(&cached(object("a", "x1", None))),
            "the same version is not"
        );
        let mut recreated = object("a", "x0", None);
        recreated["metadata"]["uid"] = json!("uid-other");
        assert!(
            cached(recreated).supersedes(&cached(object("a", "x1", None))),
            "a new incarnation always is"
        );
    }

    fn in_namespace(namespace: &str, name: &str, rv: &str) -> Value {
        let mut value = object(name, rv, None);
        value["metadata"]["namespace"] = json!(namespace);
        value
    }

    fn dynamic(value: Value) -> DynamicObject {
        serde_json::from_value(value).unwrap()
    }

    fn listed(value: Value) -> Arc<CachedObject> {
        Arc::new(cached(value))
    }

    #[test]
    fn a_relist_of_one_namespace_replaces_only_that_namespace() {
        let cache = KindCache::detached(config_map_kind(), true, Some(["a".to_owned(), "b".to_owned()].into()));
        cache.replace_all(
            vec![listed(in_namespace("a", "x", "1")), listed(in_namespace("a", "y", "2"))],
            Some("a"),
        );
        cache.replace_all(vec![listed(in_namespace("b", "z", "3"))], Some("b"));
        assert_eq!(cache.len(), 3);
        // `y` went while namespace a's watch was down; b's object stays.
        cache.replace_all(vec![listed(in_namespace("a", "x", "1"))], Some("a"));
        let mut keys: Vec<String> = cache.list(None).iter().map(|o| o.key.to_string()).collect();
        keys.sort();
        assert_eq!(keys, ["a/x", "b/z"]);
    }

    #[test]
    fn a_relist_reports_only_what_changed_and_says_it_was_a_relist() {
        let cache = KindCache::detached(config_map_kind(), true, None);
        let seen: Arc<Mutex<Vec<(String, bool)>>> = Arc::default();
        let record = seen.clone();
        let _subscription = cache.subscribe(move |change| {
            record.lock().unwrap().push((change.key().to_string(), change.relisted));
        });
        cache.apply_watched(dynamic(in_namespace("a", "same", "1")));
        cache.apply_watched(dynamic(in_namespace("a", "edited", "2")));
        cache.apply_watched(dynamic(in_namespace("a", "gone", "3")));
        cache.replace_all(
            vec![
                listed(in_namespace("a", "same", "1")),
                listed(in_namespace("a", "edited", "4")),
            ],
            None,
        );
        cache.record_write(dynamic(in_namespace("a", "edited", "5")), None);
        assert_eq!(
            *seen.lock().unwrap(),
            [
                ("a/same".to_owned(), false),
                ("a/edited".to_owned(), false),
                ("a/gone".to_owned(), false),
                ("a/gone".to_owned(), true),
                ("a/edited".to_owned(), true),
                ("a/edited".to_owned(), false),
            ],
            "an unchanged object is not reported"
        );
    }

    #[test]
    fn a_write_overtaken_by_its_deletion_does_not_bring_the_object_back() {
        let cache = KindCache::detached(config_map_kind(), true, None);
        cache.apply_watched(dynamic(in_namespace("a", "x", "1")));
        // The watch reports the deletion before the host folds in its last write's response (say, removing the
        // finalizer that let the object go).
        cache.delete_watched(&dynamic(in_namespace("a", "x", "2")));
        cache.record_write(dynamic(in_namespace("a", "x", "2")), None);
        assert!(cache.is_empty(), "a deleted object came back");
        // A new object of that name is another incarnation, and the watch is believed about it.
        let incarnation = |rv: &str| {
            let mut recreated = in_namespace("a", "x", rv);
            recreated["metadata"]["uid"] = json!("uid-new");
            dynamic(recreated)
        };
        cache.record_write(incarnation("3"), None);
        assert_eq!(cache.len(), 1);
        cache.delete_watched(&incarnation("4"));
        assert!(cache.is_empty());
        let mut again = in_namespace("a", "x", "5");
        again["metadata"]["uid"] = json!("uid-third");
        cache.apply_watched(dynamic(again));
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn nothing_older_than_the_hosts_own_delete_brings_an_object_back() {
        let cache = KindCache::detached(config_map_kind(), true, None);
        cache.apply_watched(dynamic(in_namespace("a", "x", "1")));
        cache.apply_watched(dynamic(in_namespace("a", "y", "2")));
        // The host deletes x and folds that in; the watch still has x's last change on its way, and a relist read
        // before the deletion still lists it.
        cache.record_delete(&ObjectKey::new(Some("a"), "x"), "uid-x");
        cache.apply_watched(dynamic(in_namespace("a", "x", "3")));
        assert_eq!(cache.len(), 1, "a watch event older than the delete brought it back");
        cache.replace_all(
            vec![listed(in_namespace("a", "x", "3")), listed(in_namespace("a", "y", "2"))],
            None,
        );
        assert!(
            cache.get(&ObjectKey::new(Some("a"), "x")).is_none(),
            "a relist older than the delete brought it back"
        );
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn a_relist_never_takes_an_object_back_to_an_older_version() {
        let cache = KindCache::detached(config_map_kind(), true, None);
        cache.apply_watched(dynamic(in_namespace("a", "x", "5")));
        // The host's write is answered while a relist, read before it, is on its way.
        cache.record_write(dynamic(in_namespace("a", "x", "7")), None);
        cache.replace_all(vec![listed(in_namespace("a", "x", "5"))], None);
        let cached = cache.get(&ObjectKey::new(Some("a"), "x")).expect("still cached");
        assert_eq!(cached.meta.resource_version, ResourceVersion::Integer(7));
        // Nor to an older incarnation: the child deleted by someone and created again by the host.
        let mut recreated = in_namespace("a", "x", "9");
        recreated["metadata"]["uid"] = json!("uid-new");
        cache.record_write(dynamic(recreated), None);
        cache.replace_all(vec![listed(in_namespace("a", "x", "7"))], None);
        cache.apply_watched(dynamic(in_namespace("a", "x", "8")));
        assert_eq!(
            &*cache.get(&ObjectKey::new(Some("a"), "x")).unwrap().meta.uid,
            "uid-new"
        );
        // The old incarnation's deletion, delivered late, leaves the new one alone.
        cache.delete_watched(&dynamic(in_namespace("a", "x", "8")));
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn an_object_that_left_the_share_can_come_back() {
        let mut cache = KindCache::detached(config_map_kind(), true, None);
        Arc::get_mut(&mut cache).expect("not shared yet").selector = Some(Selector {
            text: "shard=a".into(),
            parsed: wasm_reconciler_apiserver::selector::LabelSelector::parse("shard=a").unwrap(),
        });
        let labelled_json = |rv: &str, shard: &str| {
            let mut object = in_namespace("n", "x", rv);
            object["metadata"]["labels"] = json!({"shard": shard});
            object
        };
        let labelled = |rv: &str, shard: &str| dynamic(labelled_json(rv, shard));
        cache.apply_watched(labelled("1", "a"));
        // Drained: the host's own write releases it, and the watch reports it as deleted, as the watcher last saw
        // it (still labelled for this share) at the new version, as both API servers do.
        cache.record_write(labelled("2", "b"), None);
        cache.delete_watched(&labelled("2", "a"));
        assert!(cache.is_empty());
        // Moved back: labelled for this share again.
        cache.apply_watched(labelled("3", "a"));
        assert_eq!(cache.len(), 1, "an object that only left the share was buried");
        // Moved away by someone else (the sharder), then back, the host writing it before the watch says so.
        cache.delete_watched(&labelled("4", "a"));
        assert!(cache.is_empty());
        cache.record_write(labelled("5", "a"), None);
        assert_eq!(
            cache.len(),
            1,
            "a write newer than the object's leaving was not folded in"
        );
        // What is not newer than its leaving stays out: a relist or watch event read before it.
        cache.delete_watched(&labelled("6", "a"));
        cache.apply_watched(labelled("5", "a"));
        cache.replace_all(vec![listed(labelled_json("6", "a"))], None);
        assert!(
            cache.is_empty(),
            "a version older than the object's leaving brought it back"
        );
    }

    #[test]
    fn a_write_that_takes_an_object_out_of_a_selected_share_removes_it() {
        let mut cache = KindCache::detached(config_map_kind(), true, None);
        Arc::get_mut(&mut cache).expect("not shared yet").selector = Some(Selector {
            text: "shard=a".into(),
            parsed: wasm_reconciler_apiserver::selector::LabelSelector::parse("shard=a").unwrap(),
        });
        let mut mine = in_namespace("n", "x", "1");
        mine["metadata"]["labels"] = json!({"shard": "a"});
        cache.record_write(dynamic(mine), None);
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.selector(), Some("shard=a"));
        let released = in_namespace("n", "x", "2");
        cache.record_write(dynamic(released), None);
        assert!(cache.is_empty(), "an object labelled for another share left the cache");
    }

    #[test]
    fn a_scoped_cache_ignores_writes_outside_its_namespaces() {
        let cache = KindCache::detached(config_map_kind(), true, Some(["a".to_owned()].into()));
        assert!(cache.watches(Some("a")));
        assert!(!cache.watches(Some("b")));
        cache.record_write(dynamic(in_namespace("b", "x", "1")), None);
        cache.record_write(dynamic(in_namespace("a", "x", "1")), None);
        assert_eq!(cache.list(None).len(), 1);
        assert!(KindCache::detached(config_map_kind(), true, None).watches(Some("b")));
    }

    #[test]
    fn controller_index_follows_ownership_changes() {
        let mut state = CacheState::default();
        state.insert(Arc::new(cached(object("a", "1", Some("o1")))));
        state.insert(Arc::new(cached(object("b", "2", Some("o1")))));
        assert_eq!(state.by_controller["o1"].len(), 2);
        state.insert(Arc::new(cached(object("a", "3", Some("o2")))));
        assert_eq!(state.by_controller["o1"].len(), 1);
        assert_eq!(state.by_controller["o2"].len(), 1);
        state.remove(&ObjectKey::new(Some("ns"), "b"), Removal::Deleted(None));
        assert!(!state.by_controller.contains_key("o1"));
    }

    #[tokio::test]
    async fn a_refused_watch_settles_the_cache_without_syncing_it() {
        let cache = KindCache::detached(config_map_kind(), true, None);
        cache.sync.send_replace(CacheSync::Pending);
        assert!(
            cache.mark_forbidden("configmaps is forbidden".into()),
            "news the first time"
        );
        assert!(
            !cache.mark_forbidden("configmaps is forbidden".into()),
            "not news again"
        );
        cache.wait_settled().await;
        assert!(!cache.is_synced());
        assert_eq!(
            cache.sync_state(),
            CacheSync::Forbidden("configmaps is forbidden".into())
        );
        cache.mark_synced();
        assert!(cache.is_synced(), "a later list heals it");
    }

    #[test]
    fn only_permission_errors_count_as_forbidden() {
        let status = |code: u16| {
            kube::Error::Api(
                kube::core::Status::failure("configmaps is forbidden: User cannot list", "Forbidden")
                    .with_code(code)
                    .boxed(),
            )
        };
        assert_eq!(
            forbidden(&watcher::Error::InitialListFailed(status(403))).as_deref(),
            Some("configmaps is forbidden: User cannot list")
        );
        assert_eq!(forbidden(&watcher::Error::InitialListFailed(status(500))), None);
        assert_eq!(forbidden(&watcher::Error::NoResourceVersion), None);
    }

    #[test]
    fn repeated_strings_are_held_once() {
        let a = ObjectKey::new(Some("team-a"), "x");
        let b = ObjectKey::new(Some("team-a"), "y");
        assert!(Arc::ptr_eq(
            a.namespace.as_ref().unwrap(),
            b.namespace.as_ref().unwrap()
        ));
        let first = cached(object("a", "1", Some("o1")));
        let second = cached(object("b", "1", Some("o2")));
        let (first, second) = (first.meta.controller.unwrap(), second.meta.controller.unwrap());
        assert!(Arc::ptr_eq(&first.kind, &second.kind));
        assert_eq!((&*first.uid, &*second.uid), ("o1", "o2"));
    }

    #[test]
    fn labels_are_found_by_key() {
        let labels = Labels::new([("b".to_owned(), "2".to_owned()), ("a".to_owned(), "1".to_owned())].into());
        assert_eq!(labels.get("a"), Some("1"));
        assert_eq!(labels.get("b"), Some("2"));
        assert_eq!(labels.get("c"), None);
        assert_eq!(Labels::default().get("a"), None);
    }

    #[test]
    fn label_selectors_read_the_typed_labels() {
        let mut labelled = object("a", "1", None);
        labelled["metadata"]["labels"] = json!({"tier": "web"});
        let labelled = cached(labelled);
        let selector = |text: &str| wasm_reconciler_apiserver::selector::LabelSelector::parse(text).unwrap();
        assert!(labelled.selected_by(&selector("tier=web")));
        assert!(labelled.selected_by(&selector("")));
        assert!(!labelled.selected_by(&selector("tier in (db)")));
    }
}
