//! Object metadata as plugins write it on their children: name, namespace, labels and annotations.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The metadata a plugin writes on a child, or reads from an observed one: name, namespace, labels and
/// annotations. The host fills in the namespace (the primary's) and the ownerReference.
///
/// Use it in your own child types instead of k8s-openapi's `ObjectMeta` when component size matters: that
/// one carries timestamps whose (de)serialisation pulls a date-time library of about 180 KiB into the
/// component, for fields the host and the API server own anyway. Empty fields are left out of the JSON, so
/// under server-side apply the plugin claims only what it sets.
///
/// ```
/// use std::collections::BTreeMap;
/// use serde::Serialize;
/// use wasm_reconciler_sdk::{ObjectMeta, Outcome};
///
/// #[derive(Serialize)]
/// #[serde(rename_all = "camelCase")]
/// struct ConfigMap {
///     api_version: &'static str,
///     kind: &'static str,
///     metadata: ObjectMeta,
///     data: BTreeMap<String, String>,
/// }
///
/// let config_map = ConfigMap {
///     api_version: "v1",
///     kind: "ConfigMap",
///     metadata: ObjectMeta::named("app-config").label("app", "web"),
///     data: BTreeMap::from([("greeting".to_owned(), "hello".to_owned())]),
/// };
/// let outcome = Outcome::new().child(&config_map);
/// let child = &outcome.desired_children().unwrap()[0];
/// assert_eq!(child["metadata"], serde_json::json!({"name": "app-config", "labels": {"app": "web"}}));
/// ```
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct ObjectMeta {
    /// `metadata.name`; left out when empty (a pod template has none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// `metadata.namespace`; the host sets children's to the primary's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// `metadata.labels`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// `metadata.annotations`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl ObjectMeta {
    /// Metadata with this name and nothing else.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// Adds a label.
    pub fn label(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.labels.insert(key.into(), value.into());
        self
    }

    /// Adds an annotation.
    pub fn annotation(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.annotations.insert(key.into(), value.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn empty_fields_are_left_out() {
        assert_eq!(serde_json::to_value(ObjectMeta::default()).unwrap(), json!({}));
        let meta = ObjectMeta::named("a").annotation("k", "v");
        assert_eq!(
            serde_json::to_value(&meta).unwrap(),
            json!({"name": "a", "annotations": {"k": "v"}})
        );
    }

    #[test]
    fn reads_observed_metadata_ignoring_what_it_does_not_name() {
        let meta: ObjectMeta = serde_json::from_value(json!({
            "name": "a", "namespace": "ns", "uid": "u", "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": "web"},
        }))
        .unwrap();
        assert_eq!(
            meta,
            ObjectMeta {
                namespace: Some("ns".into()),
                ..ObjectMeta::named("a").label("app", "web")
            }
        );
    }
}
