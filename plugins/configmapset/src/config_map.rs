//! A ConfigMap as this plugin reads and writes it: only the fields it manages.
//!
//! Deliberately not `k8s_openapi::api::core::v1::ConfigMap`: its metadata carries timestamps whose
//! (de)serialisation pulls a date-time library into the component, more than doubling its size, for
//! fields this plugin never touches. The metadata is the SDK's [`ObjectMeta`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use wasm_reconciler_sdk::ObjectMeta;

/// A core `v1` ConfigMap, reduced to name, labels, annotations and data.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMapObject {
    /// Always `v1`.
    pub api_version: String,
    /// Always `ConfigMap`.
    pub kind: String,
    /// Name, labels and annotations.
    pub metadata: ObjectMeta,
    /// Text entries.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub data: BTreeMap<String, String>,
    /// Binary entries, base64 text passed through unchanged.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub binary_data: BTreeMap<String, String>,
}

impl ConfigMapObject {
    /// A ConfigMap with `apiVersion: v1`, `kind: ConfigMap` and this name.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            api_version: "v1".to_owned(),
            kind: "ConfigMap".to_owned(),
            metadata: ObjectMeta::named(name),
            ..Self::default()
        }
    }
}
