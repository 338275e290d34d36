//! Fingerprints of what one plugin call was given: its world view, and the answers to its reads. A contract 0.1
//! plugin is a pure function of them (and of its version and configuration), so a later call whose fingerprints are
//! equal would return the same outcome; the controller skips it (see `controller::Clean`).
//!
//! An object is fingerprinted by its identity in the API server — key, `metadata.uid`, `metadata.resourceVersion` —
//! not by its bytes: the API server gives every stored change a new resourceVersion, so two cached objects with the
//! same identity are the same bytes, and comparing identities costs nothing per byte.

use std::hash::{DefaultHasher, Hash as _, Hasher as _};
use std::sync::Arc;

use wasm_reconciler_apiserver::selector::LabelSelector;

#[cfg(test)]
use super::cache::ObjectKey;
use super::cache::{CachedObject, KindCache, ResourceVersion};
use super::dependencies::Read;
use crate::plugin::Gvk;

/// A 64-bit fingerprint.
pub type Fingerprint = u64;

fn object(hasher: &mut DefaultHasher, object: &CachedObject) {
    object.key.hash(hasher);
    object.meta.uid.hash(hasher);
    match &object.meta.resource_version {
        ResourceVersion::Integer(number) => {
            0u8.hash(hasher);
            number.hash(hasher);
        }
        ResourceVersion::Opaque(text) => {
            1u8.hash(hasher);
            text.hash(hasher);
        }
    }
}

/// The world view of `primary` with `children` (sorted by key, as [`KindCache::controlled_by`] returns them) under a
/// version whose logic and configuration fingerprint to `version`, on failed attempt `attempt`. The view's
/// `deleting` flag is not part of it: a deleting primary's call is never skipped.
pub fn view(primary: &CachedObject, children: &[Arc<CachedObject>], version: Fingerprint, attempt: u32) -> Fingerprint {
    let mut hasher = DefaultHasher::new();
    version.hash(&mut hasher);
    attempt.hash(&mut hasher);
    object(&mut hasher, primary);
    children.len().hash(&mut hasher);
    for child in children {
        object(&mut hasher, child);
    }
    hasher.finish()
}

/// The logic (by digest) and configuration (its JSON text) of a plugin version.
pub fn version(digest: &str, config: &str) -> Fingerprint {
    let mut hasher = DefaultHasher::new();
    digest.hash(&mut hasher);
    config.hash(&mut hasher);
    hasher.finish()
}

/// The answer to a `get`: the object found, or none.
pub fn got(found: Option<&CachedObject>) -> Fingerprint {
    let mut hasher = DefaultHasher::new();
    match found {
        Some(found) => {
            1u8.hash(&mut hasher);
            object(&mut hasher, found);
        }
        None => 0u8.hash(&mut hasher),
    }
    hasher.finish()
}

/// The answer to a `list`: its objects, sorted by key.
pub fn listed(objects: &[Arc<CachedObject>]) -> Fingerprint {
    let mut hasher = DefaultHasher::new();
    objects.len().hash(&mut hasher);
    for listed in objects {
        object(&mut hasher, listed);
    }
    hasher.finish()
}

/// The objects of `cache` a `list` in `namespace` (all when `None`) with `selector` answers with, sorted by key.
pub fn list_of(cache: &KindCache, namespace: Option<&str>, selector: &LabelSelector) -> Vec<Arc<CachedObject>> {
    let mut objects: Vec<_> = cache
        .list(namespace)
        .into_iter()
        .filter(|object| object.selected_by(selector))
        .collect();
    objects.sort_by(|a, b| a.key.cmp(&b.key));
    objects
}

/// What `read` would answer now from `caches`; `None` when its kind is not among them.
pub fn read_now(read: &Read, caches: &std::collections::HashMap<Gvk, Arc<KindCache>>) -> Option<Fingerprint> {
    match read {
        Read::Get { gvk, key } => Some(got(caches.get(gvk)?.get(key).as_deref())),
        Read::List {
            gvk,
            namespace,
            selector,
        } => Some(listed(&list_of(caches.get(gvk)?, namespace.as_deref(), selector))),
    }
}

/// Whether every read of `reads` would answer as it did (`reads` pairs each read with its answer's fingerprint).
pub fn reads_unchanged(reads: &[(Read, Fingerprint)], caches: &std::collections::HashMap<Gvk, Arc<KindCache>>) -> bool {
    reads
        .iter()
        .all(|(read, answered)| read_now(read, caches) == Some(*answered))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new(Some("ns"), name)
    }

    fn cache_with(objects: &[(&str, &str, &str)]) -> Arc<KindCache> {
        let cache = KindCache::detached(Gvk::new("", "v1", "ConfigMap"), true, None);
        for (name, uid, version) in objects {
            cache.insert_json(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": "ns", "uid": uid, "resourceVersion": version,
                    "labels": {"app": "x"}}}));
        }
        cache
    }

    #[test]
    fn a_view_changes_with_any_object_the_version_or_the_attempt() {
        let cache = cache_with(&[("p", "u-p", "1"), ("c", "u-c", "2")]);
        let primary = cache.get(&key("p")).unwrap();
        let children = vec![cache.get(&key("c")).unwrap()];
        let base = view(&primary, &children, 7, 0);
        assert_eq!(base, view(&primary, &children, 7, 0));
        assert_ne!(base, view(&primary, &children, 8, 0), "another version");
        assert_ne!(base, view(&primary, &children, 7, 1), "another attempt");
        assert_ne!(base, view(&primary, &[], 7, 0), "a child less");
        let newer = cache_with(&[("c", "u-c", "3")]);
        assert_ne!(
            base,
            view(&primary, &[newer.get(&key("c")).unwrap()], 7, 0),
            "a changed child"
        );
        let recreated = cache_with(&[("c", "u-other", "2")]);
        assert_ne!(
            base,
            view(&primary, &[recreated.get(&key("c")).unwrap()], 7, 0),
            "a recreated child"
        );
    }

    #[test]
    fn reads_answer_as_before_until_what_they_read_changes() {
        let config_maps = cache_with(&[("a", "u-a", "1"), ("b", "u-b", "2")]);
        let gvk = Gvk::new("", "v1", "ConfigMap");
        let caches = std::collections::HashMap::from([(gvk.clone(), config_maps.clone())]);
        let get = Read::Get {
            gvk: gvk.clone(),
            key: key("a"),
        };
        let missing = Read::Get {
            gvk: gvk.clone(),
            key: key("z"),
        };
        let list = Read::List {
            gvk: gvk.clone(),
            namespace: Some("ns".into()),
            selector: LabelSelector::parse("app=x").unwrap(),
        };
        let reads: Vec<(Read, Fingerprint)> = [get, missing, list]
            .into_iter()
            .map(|read| {
                let answered = read_now(&read, &caches).unwrap();
                (read, answered)
            })
            .collect();
        assert!(reads_unchanged(&reads, &caches));
        // A change to a listed object, the absent name appearing: each read answers otherwise.
        let changed = cache_with(&[("a", "u-a", "1"), ("b", "u-b", "5")]);
        assert!(!reads_unchanged(
            &reads,
            &std::collections::HashMap::from([(gvk.clone(), changed)])
        ));
        let appeared = cache_with(&[("a", "u-a", "1"), ("b", "u-b", "2"), ("z", "u-z", "9")]);
        assert!(!reads_unchanged(
            &reads,
            &std::collections::HashMap::from([(gvk.clone(), appeared)])
        ));
        assert!(
            !reads_unchanged(&reads, &std::collections::HashMap::new()),
            "the kind is gone"
        );
    }
}
