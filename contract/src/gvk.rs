//! Kubernetes group/version/kind identifiers.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A Kubernetes group/version/kind (`record gvk`), e.g. `apps/v1/Deployment` or `v1/ConfigMap` (core group: empty
/// `group`).
///
/// ```
/// use wasm_reconciler_contract::Gvk;
///
/// let deployment = Gvk::new("apps", "v1", "Deployment");
/// assert_eq!(deployment.api_version(), "apps/v1");
/// assert_eq!(deployment.to_string(), "apps/v1/Deployment");
/// assert_eq!(Gvk::new("", "v1", "ConfigMap").api_version(), "v1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Gvk {
    /// API group; empty for the core group.
    pub group: String,
    /// API version within the group, e.g. `v1` or `v1alpha1`.
    pub version: String,
    /// Kind, e.g. `ConfigMap`.
    pub kind: String,
}

impl Gvk {
    /// Builds a group/version/kind from its parts. Use `""` as `group` for the core group.
    pub fn new(group: impl Into<String>, version: impl Into<String>, kind: impl Into<String>) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }

    /// The group/version/kind of a k8s-openapi resource type.
    #[cfg(feature = "k8s-openapi")]
    pub fn of<K: k8s_openapi::Resource>() -> Self {
        Self::new(K::GROUP, K::VERSION, K::KIND)
    }

    /// Parses an object's `apiVersion` (`apps/v1` or `v1`) together with its `kind`.
    ///
    /// ```
    /// use wasm_reconciler_contract::Gvk;
    ///
    /// assert_eq!(Gvk::from_api_version("apps/v1", "Deployment"), Gvk::new("apps", "v1", "Deployment"));
    /// assert_eq!(Gvk::from_api_version("v1", "Service"), Gvk::new("", "v1", "Service"));
    /// ```
    pub fn from_api_version(api_version: &str, kind: impl Into<String>) -> Self {
        match api_version.split_once('/') {
            Some((group, version)) => Self::new(group, version, kind),
            None => Self::new("", api_version, kind),
        }
    }

    /// The kind of a JSON object from its `apiVersion` and `kind`; `None` when either is missing or empty.
    pub fn of_object(object: &Value) -> Option<Self> {
        let api_version = object.get("apiVersion")?.as_str()?;
        let kind = object.get("kind")?.as_str()?;
        let gvk = Self::from_api_version(api_version, kind);
        (!gvk.version.is_empty() && !gvk.kind.is_empty()).then_some(gvk)
    }

    /// The `apiVersion` objects of this kind carry: `group/version`, or just `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Whether a JSON object's `apiVersion` and `kind` name this group/version/kind.
    pub fn matches(&self, object: &Value) -> bool {
        Self::of_object(object).is_some_and(|gvk| gvk == *self)
    }

    /// Whether an `apiVersion` (`apps/v1` or `v1`) and a `kind` name this group/version/kind; the same
    /// answer as [`matches`](Self::matches) on an object carrying them, without building a `Gvk`.
    ///
    /// ```
    /// use wasm_reconciler_contract::Gvk;
    ///
    /// assert!(Gvk::new("apps", "v1", "Deployment").is("apps/v1", "Deployment"));
    /// assert!(Gvk::new("", "v1", "ConfigMap").is("v1", "ConfigMap"));
    /// assert!(!Gvk::new("", "v1", "ConfigMap").is("v1", "Secret"));
    /// ```
    pub fn is(&self, api_version: &str, kind: &str) -> bool {
        let version_matches = match api_version.split_once('/') {
            Some((group, version)) => group == self.group && version == self.version,
            None => self.group.is_empty() && api_version == self.version,
        };
        version_matches && kind == self.kind
    }
}

impl fmt::Display for Gvk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.api_version(), self.kind)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn displays_api_version_and_kind() {
        assert_eq!(Gvk::new("apps", "v1", "Deployment").to_string(), "apps/v1/Deployment");
        assert_eq!(Gvk::new("", "v1", "Service").to_string(), "v1/Service");
    }

    #[test]
    fn of_object_splits_api_version() {
        assert_eq!(
            Gvk::of_object(&json!({"apiVersion": "apps/v1", "kind": "Deployment"})),
            Some(Gvk::new("apps", "v1", "Deployment"))
        );
        assert_eq!(
            Gvk::of_object(&json!({"apiVersion": "v1", "kind": "ConfigMap"})),
            Some(Gvk::new("", "v1", "ConfigMap"))
        );
        assert_eq!(Gvk::of_object(&json!({"apiVersion": "apps/", "kind": "X"})), None);
        assert_eq!(Gvk::of_object(&json!({"apiVersion": "v1", "kind": ""})), None);
        assert_eq!(Gvk::of_object(&json!({"kind": "X"})), None);
    }

    #[test]
    fn matches_objects_by_api_version_and_kind() {
        let gvk = Gvk::new("apps", "v1", "Deployment");
        assert!(gvk.matches(&json!({"apiVersion": "apps/v1", "kind": "Deployment"})));
        assert!(!gvk.matches(&json!({"apiVersion": "apps/v1beta1", "kind": "Deployment"})));
        assert!(!gvk.matches(&json!({"apiVersion": "apps/v1", "kind": "StatefulSet"})));
        assert!(!gvk.matches(&json!({"kind": "Deployment"})));
    }

    #[cfg(feature = "k8s-openapi")]
    #[test]
    fn of_core_kind_has_empty_group() {
        use k8s_openapi::api::core::v1::ConfigMap;
        assert_eq!(Gvk::of::<ConfigMap>(), Gvk::new("", "v1", "ConfigMap"));
    }
}
