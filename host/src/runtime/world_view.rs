//! The world view of one reconcile, assembled from the caches: the primary, the children it controls, the plugin
//! configuration — JSON text straight from the cache, encoded once per change rather than once per reconcile.

use std::sync::Arc;

use super::cache::{CachedObject, KindCache};
use crate::plugin::WorldView;

/// The children of `primary`: the objects of the `owned` caches whose controller ownerReference has its uid, cache
/// by cache, each sorted by key.
pub fn children(primary: &CachedObject, owned: &[Arc<KindCache>]) -> Vec<Arc<CachedObject>> {
    owned
        .iter()
        .flat_map(|cache| cache.controlled_by(&primary.meta.uid))
        .collect()
}

/// The view of `primary` with its `children` (see [`children`]).
pub fn of(
    primary: &CachedObject,
    children: &[Arc<CachedObject>],
    config: &str,
    deleting: bool,
    attempt: u32,
) -> WorldView {
    WorldView {
        primary: primary.json.to_string(),
        children: children.iter().map(|child| child.json.to_string()).collect(),
        config: config.to_owned(),
        deleting,
        attempt,
    }
}

/// The view of `primary`: its children are the objects of the `owned` caches whose controller ownerReference
/// has its uid.
pub fn assemble(
    primary: &CachedObject,
    owned: &[Arc<KindCache>],
    config: &str,
    deleting: bool,
    attempt: u32,
) -> WorldView {
    of(primary, &children(primary, owned), config, deleting, attempt)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::plugin::Gvk;

    #[test]
    fn children_are_the_objects_the_primary_controls() {
        let sets = KindCache::detached(Gvk::new("ex.io", "v1", "Set"), true, None);
        let config_maps = KindCache::detached(Gvk::new("", "v1", "ConfigMap"), true, None);
        sets.insert_json(json!({"apiVersion": "ex.io/v1", "kind": "Set",
            "metadata": {"name": "s", "namespace": "ns", "uid": "u-s", "resourceVersion": "1"}}));
        let child = |name: &str, owner: &str| {
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns",
                "uid": format!("u-{name}"), "resourceVersion": "2",
                "ownerReferences": [{"apiVersion": "ex.io/v1", "kind": "Set", "name": "s", "uid": owner, "controller": true}]}})
        };
        config_maps.insert_json(child("mine", "u-s"));
        config_maps.insert_json(child("theirs", "u-other"));
        let primary = sets.get(&crate::runtime::ObjectKey::new(Some("ns"), "s")).unwrap();

        let view = assemble(&primary, &[config_maps], "{\"a\":1}", true, 3);
        let children: Vec<Value> = view.children.iter().map(|c| serde_json::from_str(c).unwrap()).collect();
        assert_eq!(children.len(), 1);
        assert_eq!(children[0]["metadata"]["name"], "mine");
        assert_eq!(
            serde_json::from_str::<Value>(&view.primary).unwrap()["metadata"]["name"],
            "s"
        );
        assert_eq!(view.config, "{\"a\":1}");
        assert!(view.deleting);
        assert_eq!(view.attempt, 3);
    }
}
