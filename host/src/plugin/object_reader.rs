//! A [`ClusterReader`] over a fixed set of objects: what `render` fixtures, plugin tests and benchmarks read from.

use serde_json::Value;
use wasm_reconciler_apiserver::selector::LabelSelector;

use super::Gvk;
use super::host_api::ClusterReader;

/// Serves `get` and `list` from objects held in memory. An object without a namespace is visible from every
/// namespace; the first of two objects with the same kind and key wins.
#[derive(Debug, Clone, Default)]
pub struct ObjectReader {
    objects: Vec<(Gvk, Value)>,
}

impl ObjectReader {
    /// Holds `objects`; each needs `apiVersion` and `kind`.
    pub fn new(objects: impl IntoIterator<Item = Value>) -> Result<Self, String> {
        let mut held: Vec<(Gvk, Value)> = Vec::new();
        for object in objects {
            let gvk = Gvk::of_object(&object)
                .ok_or_else(|| format!("object {:?} needs `apiVersion` and `kind`", object_key(&object)))?;
            let duplicate = held
                .iter()
                .any(|(other_gvk, other)| *other_gvk == gvk && object_key(other) == object_key(&object));
            if !duplicate {
                held.push((gvk, object));
            }
        }
        Ok(Self { objects: held })
    }

    fn in_namespace(object: &Value, namespace: Option<&str>) -> bool {
        match namespace {
            None => true,
            Some(namespace) => object
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .is_none_or(|ns| ns == namespace),
        }
    }
}

/// `namespace/name`, or `name` for cluster-scoped objects.
pub(crate) fn object_key(object: &Value) -> String {
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match object.pointer("/metadata/namespace").and_then(Value::as_str) {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name.to_string(),
    }
}

impl ClusterReader for ObjectReader {
    fn get(&self, kind: &Gvk, namespace: Option<&str>, name: &str) -> Result<Option<String>, String> {
        Ok(self
            .objects
            .iter()
            .find(|(gvk, object)| {
                gvk == kind
                    && object.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
                    && Self::in_namespace(object, namespace)
            })
            .map(|(_, object)| object.to_string()))
    }

    fn list(&self, kind: &Gvk, namespace: Option<&str>, label_selector: Option<&str>) -> Result<Vec<String>, String> {
        let selector = LabelSelector::parse(label_selector.unwrap_or_default()).map_err(|e| e.to_string())?;
        Ok(self
            .objects
            .iter()
            .filter(|(gvk, object)| gvk == kind && Self::in_namespace(object, namespace) && selector.matches(object))
            .map(|(_, object)| object.to_string())
            .collect())
    }
}
