//! A journal of watch events on several kinds, merged in resourceVersion order (the API server has one global
//! counter), so a test can see what happened between two writes: how many children one reconcile created, whether a
//! name was ever added twice.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt as _;
use kube::api::{Api, DynamicObject, ListParams, WatchEvent, WatchParams};
use kube::discovery::ApiResource;
use serde_json::Value;

use crate::harness::wait_for;

/// What a watch event said happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// `ADDED`.
    Added,
    /// `MODIFIED`.
    Modified,
    /// `DELETED`.
    Deleted,
}

/// One watch event.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The object's resourceVersion in the event.
    pub resource_version: u64,
    /// What happened.
    pub action: Action,
    /// The object's kind.
    pub kind: String,
    /// The object's name.
    pub name: String,
    /// The object as delivered.
    pub object: Value,
}

#[derive(Debug, Default)]
struct Recorded {
    entries: Vec<Entry>,
    /// A watch answered 410 Gone: events may be missing.
    gap: bool,
}

/// Watches kinds in one namespace from the moment it starts, resuming after dropped connections.
#[derive(Debug)]
pub struct Journal {
    recorded: Arc<Mutex<Recorded>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Journal {
    /// Starts watching every kind of `resources` in `namespace` from now on.
    pub async fn start(client: &kube::Client, namespace: &str, resources: &[ApiResource]) -> anyhow::Result<Self> {
        let recorded = Arc::new(Mutex::new(Recorded::default()));
        let mut tasks = Vec::new();
        for resource in resources {
            let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, resource);
            let now = api.list(&ListParams::default()).await?.metadata.resource_version;
            let from = now.unwrap_or_else(|| "0".into());
            tasks.push(tokio::spawn(record(api, resource.kind.clone(), from, recorded.clone())));
        }
        Ok(Self { recorded, tasks })
    }

    /// Every entry so far, in resourceVersion order.
    pub fn entries(&self) -> Vec<Entry> {
        let recorded = self.recorded.lock().unwrap_or_else(PoisonError::into_inner);
        assert!(!recorded.gap, "the journal missed events: a watch expired (410 Gone)");
        let mut entries = recorded.entries.clone();
        entries.sort_by_key(|entry| entry.resource_version);
        entries
    }

    /// Waits until `done` holds for the entries so far; returns them.
    pub async fn wait_until(&self, what: &str, done: impl Fn(&[Entry]) -> bool) -> Vec<Entry> {
        wait_for(crate::kinds::CONVERGE, what, || {
            let entries = self.entries();
            let done = &done;
            async move { done(&entries).then_some(entries) }
        })
        .await
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

async fn record(api: Api<DynamicObject>, kind: String, from: String, recorded: Arc<Mutex<Recorded>>) {
    let mut resource_version = from;
    loop {
        let stream = match api.watch(&WatchParams::default().timeout(60), &resource_version).await {
            Ok(stream) => stream,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            let (action, object) = match event {
                Ok(WatchEvent::Added(object)) => (Action::Added, object),
                Ok(WatchEvent::Modified(object)) => (Action::Modified, object),
                Ok(WatchEvent::Deleted(object)) => (Action::Deleted, object),
                Ok(WatchEvent::Bookmark(bookmark)) => {
                    resource_version = bookmark.metadata.resource_version;
                    continue;
                }
                Ok(WatchEvent::Error(status)) => {
                    if status.code == 410 {
                        recorded.lock().unwrap_or_else(PoisonError::into_inner).gap = true;
                        return;
                    }
                    break;
                }
                Err(_) => break,
            };
            let version = object.metadata.resource_version.clone().unwrap_or_default();
            let entry = Entry {
                resource_version: version.parse().unwrap_or_default(),
                action,
                kind: kind.clone(),
                name: object.metadata.name.clone().unwrap_or_default(),
                object: serde_json::to_value(&object).unwrap_or(Value::Null),
            };
            resource_version = version;
            recorded
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entries
                .push(entry);
        }
    }
}

/// How many entries of `kind` with `action` there were per name.
pub fn count_per_name(entries: &[Entry], kind: &str, action: Action) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for entry in entries.iter().filter(|e| e.kind == kind && e.action == action) {
        *counts.entry(entry.name.clone()).or_default() += 1;
    }
    counts
}

/// The number of `child_kind` entries with `action` in each stretch between two consecutive entries of the
/// `parent_kind` object `parent` (the stretches before the first and after the last included), skipping empty
/// stretches.
pub fn bursts_between(
    entries: &[Entry],
    parent_kind: &str,
    parent: &str,
    child_kind: &str,
    action: Action,
) -> Vec<usize> {
    let mut bursts = Vec::new();
    let mut current = 0;
    for entry in entries {
        if entry.kind == parent_kind && entry.name == parent {
            if current > 0 {
                bursts.push(current);
            }
            current = 0;
        } else if entry.kind == child_kind && entry.action == action {
            current += 1;
        }
    }
    if current > 0 {
        bursts.push(current);
    }
    bursts
}
