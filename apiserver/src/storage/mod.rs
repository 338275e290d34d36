//! Object storage: one monotonic resourceVersion, in-memory maps, optional durable redb backing,
//! and a bounded per-resource event history that watches resume from.

mod durable;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::broadcast;

use crate::error::{ApiError, ApiResult};
use crate::object;
use crate::registry::StorageId;
use durable::Durable;
pub use durable::StorageError;

/// Capacity of each resource's live event channel before a slow watcher has to resume from history.
const CHANNEL_CAPACITY: usize = 4096;

/// Where an object lives.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectKey {
    /// Store of its resource.
    pub storage: StorageId,
    /// Namespace ("" for cluster-scoped).
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl ObjectKey {
    /// Build a key.
    pub fn new(storage: &StorageId, namespace: &str, name: &str) -> Self {
        ObjectKey {
            storage: storage.clone(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }
}

/// Type of a watch event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Object created.
    Added,
    /// Object changed.
    Modified,
    /// Object removed.
    Deleted,
}

impl EventType {
    /// `ADDED`, `MODIFIED`, `DELETED`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change to one object.
#[derive(Debug)]
pub struct WatchEvent {
    /// What happened.
    pub event_type: EventType,
    /// resourceVersion of the change.
    pub revision: u64,
    /// Object after the change (for deletions: its last state, at the deletion's revision).
    pub object: Arc<Value>,
    /// Object before the change, when there was one.
    pub previous: Option<Arc<Value>>,
    /// The object's JSON, encoded once for all watchers that serve the stored form.
    pub encoded: std::sync::OnceLock<bytes::Bytes>,
}

impl WatchEvent {
    fn new(event_type: EventType, revision: u64, object: Arc<Value>, previous: Option<Arc<Value>>) -> Self {
        WatchEvent {
            event_type,
            revision,
            object,
            previous,
            encoded: std::sync::OnceLock::new(),
        }
    }

    /// The object's JSON (stored form), encoded on first use.
    pub fn encoded_object(&self) -> &bytes::Bytes {
        self.encoded
            .get_or_init(|| bytes::Bytes::from(serde_json::to_vec(self.object.as_ref()).unwrap_or_default()))
    }
}

/// What a write decided, given the current object.
#[derive(Debug)]
pub enum Change {
    /// Store a new object (there was none).
    Create(Value),
    /// Replace the current object.
    Update(Value),
    /// Remove the object; the value is its final state.
    Delete(Value),
    /// Nothing to write; answer with this object.
    Unchanged(Arc<Value>),
}

/// Result of a write.
#[derive(Debug, Clone)]
pub struct Written {
    /// The stored (or, for dry runs, the would-be) object.
    pub object: Arc<Value>,
    /// The event the write produced (None when unchanged).
    pub event: Option<EventType>,
}

/// A page of a list.
#[derive(Debug)]
pub struct ListPage {
    /// Matching objects in key order.
    pub items: Vec<Arc<Value>>,
    /// resourceVersion of the list.
    pub revision: u64,
    /// Key of the last item when more remain.
    pub next: Option<(String, String)>,
    /// How many matching items remain after this page.
    pub remaining: usize,
}

/// Where a watch starts.
#[derive(Debug, Clone, Copy)]
pub enum WatchFrom {
    /// Now; with `initial`, first a synthetic ADDED event for every existing object.
    Now {
        /// Whether to send the current state first.
        initial: bool,
    },
    /// After this resourceVersion.
    Revision(u64),
}

/// A started watch: events to send first, then the live channel.
#[derive(Debug)]
pub struct Subscription {
    /// Events to deliver before reading the channel.
    pub backlog: Vec<Arc<WatchEvent>>,
    /// Live events.
    pub receiver: broadcast::Receiver<Arc<WatchEvent>>,
    /// Revision the watch is consistent with after the backlog.
    pub revision: u64,
}

/// A watch asked for history that is no longer retained.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("too old resource version: {requested} ({oldest})")]
pub struct Expired {
    /// Requested resourceVersion.
    pub requested: u64,
    /// Oldest resourceVersion still retained.
    pub oldest: u64,
}

/// Where an object sits among its resource's objects: ordered as etcd orders keys (`namespace/name`, byte by byte),
/// so that lists come out in the order a real API server gives them (`a-b/x` before `a/y`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Slot {
    namespace: String,
    name: String,
}

impl Slot {
    fn new(namespace: &str, name: &str) -> Self {
        Slot {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }

    fn key_bytes(&self) -> impl Iterator<Item = u8> + '_ {
        self.namespace
            .bytes()
            .chain(std::iter::once(b'/'))
            .chain(self.name.bytes())
    }
}

impl Ord for Slot {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key_bytes().cmp(other.key_bytes())
    }
}

impl PartialOrd for Slot {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

#[derive(Debug)]
struct Resource {
    objects: BTreeMap<Slot, Arc<Value>>,
    history: VecDeque<Arc<WatchEvent>>,
    compacted: u64,
    sender: broadcast::Sender<Arc<WatchEvent>>,
}

impl Resource {
    fn new(compacted: u64) -> Self {
        Resource {
            objects: BTreeMap::new(),
            history: VecDeque::new(),
            compacted,
            sender: broadcast::channel(CHANNEL_CAPACITY).0,
        }
    }
}

#[derive(Debug)]
struct State {
    revision: u64,
    startup_revision: u64,
    resources: HashMap<StorageId, Resource>,
    uids: HashMap<String, ObjectKey>,
}

impl State {
    fn resource(&mut self, storage: &StorageId) -> &mut Resource {
        let startup = self.startup_revision;
        self.resources
            .entry(storage.clone())
            .or_insert_with(|| Resource::new(startup))
    }
}

/// The object store.
#[derive(Debug)]
pub struct Store {
    state: Mutex<State>,
    durable: Option<Durable>,
    history_limit: usize,
}

impl Store {
    /// An empty in-memory store.
    pub fn in_memory(history_limit: usize) -> Self {
        Store {
            state: Mutex::new(State {
                revision: 0,
                startup_revision: 0,
                resources: HashMap::new(),
                uids: HashMap::new(),
            }),
            durable: None,
            history_limit: history_limit.max(1),
        }
    }

    /// A durable store in `dir` (created if needed), loaded into memory.
    pub fn open(dir: &Path, history_limit: usize) -> Result<Self, StorageError> {
        let (durable, objects, revision) = Durable::open(dir)?;
        let store = Store::in_memory(history_limit);
        {
            let mut state = store.state.lock();
            state.revision = revision;
            state.startup_revision = revision;
            for (key, value) in objects {
                let uid = object::uid(&value).to_string();
                if !uid.is_empty() {
                    state.uids.insert(uid, key.clone());
                }
                state
                    .resource(&key.storage)
                    .objects
                    .insert(Slot::new(&key.namespace, &key.name), Arc::new(value));
            }
        }
        tracing::info!(dir = %dir.display(), revision, "loaded durable store");
        Ok(Store {
            durable: Some(durable),
            ..store
        })
    }

    /// Whether writes are durable.
    pub fn is_durable(&self) -> bool {
        self.durable.is_some()
    }

    /// The current resourceVersion.
    pub fn revision(&self) -> u64 {
        self.state.lock().revision
    }

    /// One object.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<Value>> {
        let state = self.state.lock();
        state
            .resources
            .get(&key.storage)?
            .objects
            .get(&Slot::new(&key.namespace, &key.name))
            .cloned()
    }

    /// Where the object with this uid lives.
    pub fn key_of_uid(&self, uid: &str) -> Option<ObjectKey> {
        self.state.lock().uids.get(uid).cloned()
    }

    /// Whether an object with this uid exists.
    pub fn uid_exists(&self, uid: &str) -> bool {
        self.state.lock().uids.contains_key(uid)
    }

    /// Stores that currently hold objects.
    pub fn storages(&self) -> Vec<StorageId> {
        let state = self.state.lock();
        state
            .resources
            .iter()
            .filter(|(_, r)| !r.objects.is_empty())
            .map(|(s, _)| s.clone())
            .collect()
    }

    /// List objects of a store (optionally one namespace), after a key, up to `limit` matches.
    pub fn list(
        &self,
        storage: &StorageId,
        namespace: Option<&str>,
        after: Option<&(String, String)>,
        limit: Option<usize>,
        filter: &dyn Fn(&Value) -> bool,
    ) -> ListPage {
        let state = self.state.lock();
        let revision = state.revision;
        let mut page = ListPage {
            items: Vec::new(),
            revision,
            next: None,
            remaining: 0,
        };
        let Some(resource) = state.resources.get(storage) else {
            return page;
        };
        use std::ops::Bound;
        let lower = match (after, namespace) {
            (Some((ns, name)), _) => Bound::Excluded(Slot::new(ns, name)),
            (None, Some(ns)) => Bound::Included(Slot::new(ns, "")),
            (None, None) => Bound::Unbounded,
        };
        for (Slot { namespace: ns, name }, value) in resource.objects.range((lower, Bound::Unbounded)) {
            if let Some(wanted) = namespace
                && ns != wanted
            {
                break;
            }
            if !filter(value) {
                continue;
            }
            if limit.is_some_and(|limit| page.items.len() >= limit) {
                if page.next.is_none() {
                    let last = page.items.last().expect("limit > 0");
                    page.next = Some((object::namespace(last).to_string(), object::name(last).to_string()));
                }
                page.remaining += 1;
                continue;
            }
            page.items.push(value.clone());
            let _ = name;
        }
        page
    }

    /// Write one object atomically: `decide` sees the current object and the revision the write will get.
    pub fn write<F>(&self, key: &ObjectKey, dry_run: bool, decide: F) -> ApiResult<Written>
    where
        F: FnOnce(Option<&Arc<Value>>, u64) -> ApiResult<Change>,
    {
        self.write_locked(key, dry_run, |current, next| decide(current, next).map(Some))
            .map(|written| written.expect("decide always decides"))
    }

    /// Compare-and-swap: store `change` only if the object is still `seen` (the same stored
    /// version, or still absent). Returns None when another write came first; the caller
    /// recomputes from the new state. Lets expensive patches run outside the store lock.
    pub fn swap(
        &self,
        key: &ObjectKey,
        dry_run: bool,
        seen: Option<&Arc<Value>>,
        change: Change,
    ) -> ApiResult<Option<Written>> {
        self.write_locked(key, dry_run, |current, _| {
            let unchanged = match (current, seen) {
                (None, None) => true,
                (Some(current), Some(seen)) => Arc::ptr_eq(current, seen),
                _ => false,
            };
            Ok(unchanged.then_some(change))
        })
    }

    fn write_locked<F>(&self, key: &ObjectKey, dry_run: bool, decide: F) -> ApiResult<Option<Written>>
    where
        F: FnOnce(Option<&Arc<Value>>, u64) -> ApiResult<Option<Change>>,
    {
        let mut state = self.state.lock();
        let next = state.revision + 1;
        let slot = Slot::new(&key.namespace, &key.name);
        let current = state
            .resources
            .get(&key.storage)
            .and_then(|r| r.objects.get(&slot))
            .cloned();
        let Some(change) = decide(current.as_ref(), next)? else {
            return Ok(None);
        };
        let (mut object, event_type) = match change {
            Change::Unchanged(object) => {
                return Ok(Some(Written { object, event: None }));
            }
            Change::Create(object) => (object, EventType::Added),
            Change::Update(object) => (object, EventType::Modified),
            Change::Delete(object) => (object, EventType::Deleted),
        };
        if dry_run {
            return Ok(Some(Written {
                object: Arc::new(object),
                event: None,
            }));
        }
        object::metadata_mut(&mut object).insert("resourceVersion".into(), Value::String(next.to_string()));
        if let Some(durable) = &self.durable {
            let result = match event_type {
                EventType::Deleted => durable.delete(key, next),
                _ => durable.put(key, &object, next),
            };
            result.map_err(|e| ApiError::internal(format!("storage write failed: {e}")))?;
        }
        let object = Arc::new(object);
        state.revision = next;
        let uid = object::uid(&object).to_string();
        match event_type {
            EventType::Deleted => {
                state.uids.remove(&uid);
            }
            _ => {
                if !uid.is_empty() {
                    state.uids.insert(uid, key.clone());
                }
            }
        }
        let history_limit = self.history_limit;
        let resource = state.resource(&key.storage);
        match event_type {
            EventType::Deleted => {
                resource.objects.remove(&slot);
            }
            _ => {
                resource.objects.insert(slot, object.clone());
            }
        }
        let event = Arc::new(WatchEvent::new(event_type, next, object.clone(), current));
        resource.history.push_back(event.clone());
        while resource.history.len() > history_limit {
            if let Some(evicted) = resource.history.pop_front() {
                resource.compacted = evicted.revision;
            }
        }
        let _ = resource.sender.send(event);
        Ok(Some(Written {
            object,
            event: Some(event_type),
        }))
    }

    /// Start (or resume) a watch on a store.
    pub fn watch(&self, storage: &StorageId, from: WatchFrom) -> Result<Subscription, Expired> {
        let mut state = self.state.lock();
        let revision = state.revision;
        let resource = state.resource(storage);
        let backlog = match from {
            WatchFrom::Now { initial: false } => Vec::new(),
            WatchFrom::Now { initial: true } => resource
                .objects
                .values()
                .map(|object| {
                    Arc::new(WatchEvent::new(
                        EventType::Added,
                        object::resource_version(object).parse().unwrap_or(0),
                        object.clone(),
                        None,
                    ))
                })
                .collect(),
            WatchFrom::Revision(requested) => {
                if requested < resource.compacted {
                    return Err(Expired {
                        requested,
                        oldest: resource.compacted + 1,
                    });
                }
                resource
                    .history
                    .iter()
                    .filter(|e| e.revision > requested)
                    .cloned()
                    .collect()
            }
        };
        Ok(Subscription {
            backlog,
            receiver: resource.sender.subscribe(),
            revision,
        })
    }

    /// Starts the history of a resource that is served from now on (a new custom resource type): like a real
    /// server's watch cache, which starts when the resource is first served, it holds nothing older, so a watch
    /// from an earlier resourceVersion is answered with 410 Gone. A resource that already has objects or history
    /// is left alone.
    pub fn start_history(&self, storage: &StorageId) {
        let mut state = self.state.lock();
        let revision = state.revision;
        let resource = state.resource(storage);
        if resource.objects.is_empty() && resource.history.is_empty() {
            resource.compacted = revision;
        }
    }

    /// Forget all retained history: every watch resuming from an older resourceVersion gets 410 Gone.
    /// The compaction takes a resourceVersion of its own, so even an up-to-date watcher must relist.
    pub fn compact(&self) {
        let mut state = self.state.lock();
        let revision = state.revision + 1;
        if let Some(durable) = &self.durable
            && let Err(error) = durable.set_revision(revision)
        {
            tracing::error!(%error, "cannot persist compaction revision");
            return;
        }
        state.revision = revision;
        state.startup_revision = revision;
        for resource in state.resources.values_mut() {
            resource.history.clear();
            resource.compacted = revision;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new(&StorageId::from("/configmaps"), "default", name)
    }

    fn create(store: &Store, name: &str) -> Arc<Value> {
        store
            .write(&key(name), false, |_, _| {
                Ok(Change::Create(
                    json!({"metadata": {"name": name, "namespace": "default", "uid": name}}),
                ))
            })
            .unwrap()
            .object
    }

    #[test]
    fn revisions_are_monotonic_and_stamped() {
        let store = Store::in_memory(10);
        let a = create(&store, "a");
        let b = create(&store, "b");
        assert_eq!(object::resource_version(&a), "1");
        assert_eq!(object::resource_version(&b), "2");
        assert_eq!(store.revision(), 2);
        assert!(store.uid_exists("a"));
    }

    #[test]
    fn lists_in_etcd_key_order() {
        let store = Store::in_memory(10);
        for (namespace, name) in [("a", "y"), ("a-b", "x"), ("a", "b")] {
            store
                .write(
                    &ObjectKey::new(&StorageId::from("/configmaps"), namespace, name),
                    false,
                    |_, _| {
                        Ok(Change::Create(
                            json!({"metadata": {"name": name, "namespace": namespace}}),
                        ))
                    },
                )
                .unwrap();
        }
        let page = store.list(&StorageId::from("/configmaps"), None, None, None, &|_| true);
        let keys: Vec<String> = page
            .items
            .iter()
            .map(|o| format!("{}/{}", object::namespace(o), object::name(o)))
            .collect();
        assert_eq!(keys, ["a-b/x", "a/b", "a/y"]);
        let in_a = store.list(&StorageId::from("/configmaps"), Some("a"), None, None, &|_| true);
        assert_eq!(in_a.items.len(), 2);
    }

    #[test]
    fn list_pages_by_key() {
        let store = Store::in_memory(10);
        for name in ["a", "b", "c"] {
            create(&store, name);
        }
        let storage = StorageId::from("/configmaps");
        let page = store.list(&storage, Some("default"), None, Some(2), &|_| true);
        assert_eq!(page.items.len(), 2);
        assert_eq!(page.remaining, 1);
        let next = page.next.unwrap();
        let rest = store.list(&storage, Some("default"), Some(&next), Some(2), &|_| true);
        assert_eq!(rest.items.len(), 1);
        assert!(rest.next.is_none());
    }

    #[test]
    fn watch_expires_once_history_is_evicted() {
        let store = Store::in_memory(2);
        for name in ["a", "b", "c"] {
            create(&store, name);
        }
        let storage = StorageId::from("/configmaps");
        assert!(store.watch(&storage, WatchFrom::Revision(0)).is_err());
        let resumed = store.watch(&storage, WatchFrom::Revision(1)).unwrap();
        assert_eq!(resumed.backlog.len(), 2);
    }

    #[test]
    fn history_of_a_new_resource_starts_when_it_is_served() {
        let store = Store::in_memory(10);
        create(&store, "a");
        create(&store, "b");
        let widgets = StorageId::from("example.com/widgets");
        store.start_history(&widgets);
        let expired = store.watch(&widgets, WatchFrom::Revision(1)).unwrap_err();
        assert_eq!((expired.requested, expired.oldest), (1, 3));
        assert!(store.watch(&widgets, WatchFrom::Revision(2)).is_ok());
    }

    #[test]
    fn durable_store_survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path(), 10).unwrap();
            create(&store, "a");
            store
                .write(&key("a"), false, |current, _| {
                    Ok(Change::Delete((**current.unwrap()).clone()))
                })
                .unwrap();
            create(&store, "b");
        }
        let store = Store::open(dir.path(), 10).unwrap();
        assert_eq!(store.revision(), 3);
        assert!(store.get(&key("a")).is_none());
        assert_eq!(object::resource_version(&store.get(&key("b")).unwrap()), "3");
    }
}
