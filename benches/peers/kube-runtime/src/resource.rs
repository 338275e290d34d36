//! The `ConfigMapSet` custom resource as this controller reads and writes it.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use serde::{Deserialize, Serialize};

/// Label put on every child, naming its set.
pub const SET_LABEL: &str = "examples.wasm-reconciler.io/configmapset";
/// Finalizer that drains children before the set goes away.
pub const FINALIZER: &str = "examples.wasm-reconciler.io/drain";

/// Keeps `replicas` ConfigMaps named `<set>-<index>` built from `template`, creating and deleting at most
/// `burst` of them per reconcile. The CRD is `plugins/configmapset/crd.yaml`.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "examples.wasm-reconciler.io",
    version = "v1alpha1",
    kind = "ConfigMapSet",
    namespaced,
    status = "ConfigMapSetStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMapSetSpec {
    /// How many ConfigMaps to keep.
    pub replicas: i32,
    /// What every ConfigMap holds.
    #[serde(default)]
    pub template: ConfigMapTemplate,
    /// At most this many ConfigMaps are created, and at most this many deleted, per reconcile.
    #[serde(default = "default_burst")]
    pub burst: i32,
}

/// The ConfigMap every replica is built from.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct ConfigMapTemplate {
    /// Labels and annotations of every replica.
    #[serde(default)]
    pub metadata: TemplateMetadata,
    /// Data of every replica.
    #[serde(default)]
    pub data: BTreeMap<String, String>,
}

/// Labels and annotations of the template.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct TemplateMetadata {
    /// Labels of every replica (the set label is added to them).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Annotations of every replica.
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

/// Observed state of a `ConfigMapSet`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMapSetStatus {
    /// ConfigMaps of this set observed.
    #[serde(default)]
    pub replicas: i32,
    /// Observed ConfigMaps whose labels, annotations and data match the template.
    #[serde(default)]
    pub ready_replicas: i32,
    /// Generation of the spec the status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready`, `Progressing` and `Reconciled`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

fn default_burst() -> i32 {
    10
}
