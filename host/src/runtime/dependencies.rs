//! Dependency tracking from reads: which primaries read which objects (or absent names, or lists), so that a
//! later change to any of them re-queues exactly those primaries.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, PoisonError};

use wasm_reconciler_apiserver::selector::LabelSelector;

use super::cache::{CacheChange, ObjectKey};
use crate::plugin::Gvk;

/// One thing a reconcile read.
#[derive(Debug, Clone)]
pub enum Read {
    /// `get` of one name (present or not).
    Get {
        /// Kind read.
        gvk: Gvk,
        /// Key read.
        key: ObjectKey,
    },
    /// `list` of a kind, optionally in one namespace, with a selector.
    List {
        /// Kind listed.
        gvk: Gvk,
        /// Namespace, or all.
        namespace: Option<String>,
        /// The selector (empty matches everything).
        selector: LabelSelector,
    },
}

impl Read {
    /// The kind read.
    pub fn gvk(&self) -> &Gvk {
        match self {
            Self::Get { gvk, .. } | Self::List { gvk, .. } => gvk,
        }
    }
}

/// The namespace (or all) and selector of one `list`.
type ListedScope = (Option<String>, LabelSelector);

#[derive(Debug, Default)]
struct Index {
    /// (kind, key) → primaries that got it.
    gets: HashMap<(Gvk, ObjectKey), HashSet<ObjectKey>>,
    /// kind → primaries that listed it, with namespace and selector.
    lists: HashMap<Gvk, HashMap<ObjectKey, Vec<ListedScope>>>,
    /// primary → what it read last time, to drop stale entries.
    reads_of: HashMap<ObjectKey, Vec<Read>>,
}

/// The dependency index of one controller.
#[derive(Debug, Default)]
pub struct Dependencies {
    index: Mutex<Index>,
}

impl Dependencies {
    /// Replaces what `primary` depends on with `reads` (the reads of its latest reconcile).
    pub fn record(&self, primary: &ObjectKey, reads: Vec<Read>) {
        let mut index = self.index.lock().unwrap_or_else(PoisonError::into_inner);
        Self::remove_locked(&mut index, primary);
        for read in &reads {
            match read {
                Read::Get { gvk, key } => {
                    index
                        .gets
                        .entry((gvk.clone(), key.clone()))
                        .or_default()
                        .insert(primary.clone());
                }
                Read::List {
                    gvk,
                    namespace,
                    selector,
                } => index
                    .lists
                    .entry(gvk.clone())
                    .or_default()
                    .entry(primary.clone())
                    .or_default()
                    .push((namespace.clone(), selector.clone())),
            }
        }
        if !reads.is_empty() {
            index.reads_of.insert(primary.clone(), reads);
        }
    }

    /// Forgets a primary (it was deleted).
    pub fn remove(&self, primary: &ObjectKey) {
        Self::remove_locked(&mut self.index.lock().unwrap_or_else(PoisonError::into_inner), primary);
    }

    fn remove_locked(index: &mut Index, primary: &ObjectKey) {
        for read in index.reads_of.remove(primary).unwrap_or_default() {
            match read {
                Read::Get { gvk, key } => {
                    let entry = (gvk, key);
                    if let Some(primaries) = index.gets.get_mut(&entry) {
                        primaries.remove(primary);
                        if primaries.is_empty() {
                            index.gets.remove(&entry);
                        }
                    }
                }
                Read::List { gvk, .. } => {
                    if let Some(listers) = index.lists.get_mut(&gvk) {
                        listers.remove(primary);
                        if listers.is_empty() {
                            index.lists.remove(&gvk);
                        }
                    }
                }
            }
        }
    }

    /// Primaries whose reads are affected by `change`.
    pub fn affected_by(&self, change: &CacheChange) -> Vec<ObjectKey> {
        let index = self.index.lock().unwrap_or_else(PoisonError::into_inner);
        let key = change.key();
        let mut affected: HashSet<ObjectKey> = index
            .gets
            .get(&(change.gvk.clone(), key.clone()))
            .cloned()
            .unwrap_or_default();
        if let Some(listers) = index.lists.get(&change.gvk) {
            for (primary, lists) in listers {
                let hit = lists.iter().any(|(namespace, selector)| {
                    let in_namespace = namespace.is_none() || namespace.as_deref() == key.namespace.as_deref();
                    in_namespace
                        && [&change.old, &change.new]
                            .into_iter()
                            .flatten()
                            .any(|object| object.selected_by(selector))
                });
                if hit {
                    affected.insert(primary.clone());
                }
            }
        }
        affected.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::runtime::cache::CachedObject;

    fn secret(name: &str, labels: serde_json::Value) -> Arc<CachedObject> {
        Arc::new(
            CachedObject::from_json(
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "ns", "uid": name, "labels": labels}}),
                &Gvk::new("", "v1", "Secret"),
            )
            .unwrap(),
        )
    }

    fn change(old: Option<Arc<CachedObject>>, new: Option<Arc<CachedObject>>) -> CacheChange {
        CacheChange {
            gvk: Gvk::new("", "v1", "Secret"),
            old,
            new,
            seen_by: None,
            relisted: false,
        }
    }

    fn primary(name: &str) -> ObjectKey {
        ObjectKey::new(Some("ns"), name)
    }

    #[test]
    fn a_get_of_an_absent_name_fires_when_it_appears() {
        let deps = Dependencies::default();
        deps.record(
            &primary("p"),
            vec![Read::Get {
                gvk: Gvk::new("", "v1", "Secret"),
                key: ObjectKey::new(Some("ns"), "s"),
            }],
        );
        assert_eq!(
            deps.affected_by(&change(None, Some(secret("s", json!({}))))),
            vec![primary("p")]
        );
        assert!(
            deps.affected_by(&change(None, Some(secret("other", json!({})))))
                .is_empty()
        );
    }

    #[test]
    fn lists_fire_when_a_matching_object_enters_or_leaves() {
        let deps = Dependencies::default();
        let read = Read::List {
            gvk: Gvk::new("", "v1", "Secret"),
            namespace: Some("ns".into()),
            selector: LabelSelector::parse("app=web").unwrap(),
        };
        deps.record(&primary("p"), vec![read]);
        assert_eq!(
            deps.affected_by(&change(None, Some(secret("s", json!({"app": "web"})))))
                .len(),
            1
        );
        assert!(
            deps.affected_by(&change(None, Some(secret("s", json!({"app": "db"})))))
                .is_empty()
        );
        let left = change(
            Some(secret("s", json!({"app": "web"}))),
            Some(secret("s", json!({"app": "db"}))),
        );
        assert_eq!(
            deps.affected_by(&left).len(),
            1,
            "an object leaving the selection matters too"
        );
    }

    #[test]
    fn new_reads_replace_old_ones_and_removal_forgets() {
        let deps = Dependencies::default();
        let get = |name: &str| Read::Get {
            gvk: Gvk::new("", "v1", "Secret"),
            key: ObjectKey::new(Some("ns"), name),
        };
        deps.record(&primary("p"), vec![get("a")]);
        deps.record(&primary("p"), vec![get("b")]);
        assert!(deps.affected_by(&change(None, Some(secret("a", json!({}))))).is_empty());
        assert_eq!(deps.affected_by(&change(None, Some(secret("b", json!({}))))).len(), 1);
        deps.remove(&primary("p"));
        assert!(deps.affected_by(&change(None, Some(secret("b", json!({}))))).is_empty());
    }
}
