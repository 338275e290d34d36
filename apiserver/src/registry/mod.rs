//! What the server serves: built-in kinds plus the kinds established CRDs define, and the lookups over them.

pub mod builtin;
pub mod conversion;
pub mod crd;
pub mod defaults;
pub mod discovery;
pub mod openapi_schemas;
pub mod validation;

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::error::Subject;
use builtin::{BUILTIN_GROUP_ORDER, BUILTIN_KINDS};

/// Identifies one store of objects: `"/configmaps"`, `"apps/deployments"`, `"example.com/widgets"`.
pub type StorageId = Arc<str>;

/// A printer column of a CRD version (`additionalPrinterColumns`).
#[derive(Debug, Clone)]
pub struct PrinterColumn {
    /// Column header.
    pub name: String,
    /// OpenAPI type: string, integer, number, boolean, date.
    pub column_type: String,
    /// OpenAPI format, if any.
    pub format: String,
    /// Description shown by `kubectl explain`-like tools.
    pub description: String,
    /// 0 = always shown, >0 = only with `-o wide`.
    pub priority: i64,
    /// Simple JSONPath to the value.
    pub json_path: String,
}

/// The CRD-specific part of a served custom resource version.
#[derive(Debug)]
pub struct CustomVersion {
    /// Name of the defining CRD (`widgets.example.com`).
    pub crd_name: String,
    /// The version's `openAPIV3Schema`, if any.
    pub schema: Option<Value>,
    /// The compiled structural schema (pruning, defaulting, validation).
    pub structural: Option<crate::schema::Structural>,
    /// `additionalPrinterColumns`.
    pub printer_columns: Vec<PrinterColumn>,
}

/// One served resource at one version.
#[derive(Debug)]
pub struct ResourceInfo {
    /// API group ("" for core).
    pub group: String,
    /// Served version.
    pub version: String,
    /// Plural resource name.
    pub plural: String,
    /// Singular resource name.
    pub singular: String,
    /// Kind.
    pub kind: String,
    /// Kind of lists.
    pub list_kind: String,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Short names.
    pub short_names: Vec<String>,
    /// Categories.
    pub categories: Vec<String>,
    /// Whether `/status` exists (and the main resource ignores status changes).
    pub status_subresource: bool,
    /// Whether `metadata.generation` is maintained.
    pub generation: bool,
    /// The store the objects live in.
    pub storage: StorageId,
    /// `apiVersion` of stored objects.
    pub storage_api_version: String,
    /// Set for custom resources.
    pub custom: Option<Arc<CustomVersion>>,
    /// Merge semantics of the kind's fields (strategic merge patch, server-side apply).
    pub field_type: Arc<crate::patch::FieldType>,
    /// The `/scale` subresource, when the kind has one.
    pub scale: Option<ScalePaths>,
}

/// Where a scalable kind keeps what its `/scale` subresource shows (JSON paths such as `.spec.replicas`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalePaths {
    /// `specReplicasPath`.
    pub spec_replicas: String,
    /// `statusReplicasPath`.
    pub status_replicas: String,
    /// `labelSelectorPath` of a CRD; None for built-in kinds, whose selector is `spec.selector` as a label selector.
    pub label_selector: Option<String>,
}

impl ScalePaths {
    /// The paths of the built-in scalable kinds (Deployment, ReplicaSet, StatefulSet).
    pub fn builtin() -> Self {
        ScalePaths {
            spec_replicas: ".spec.replicas".into(),
            status_replicas: ".status.replicas".into(),
            label_selector: None,
        }
    }
}

impl ResourceInfo {
    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The subject of an error about object `name`.
    pub fn subject<'a>(&'a self, name: &'a str) -> Subject<'a> {
        Subject {
            group: &self.group,
            resource: &self.plural,
            name,
        }
    }

    /// Whether strategic merge patch applies (built-in kinds only).
    pub fn is_builtin(&self) -> bool {
        self.custom.is_none()
    }

    fn from_builtin(kind: &builtin::BuiltinKind) -> Self {
        let storage: StorageId = match kind.shared_storage {
            Some((group, plural)) => format!("{group}/{plural}").into(),
            None => format!("{}/{}", kind.group, kind.plural).into(),
        };
        let storage_api_version = match kind.shared_storage {
            Some(("", _)) => "v1".to_string(),
            Some((group, _)) => format!("{group}/v1"),
            None if kind.group.is_empty() => kind.version.to_string(),
            None => format!("{}/{}", kind.group, kind.version),
        };
        let served_api_version = if kind.group.is_empty() {
            kind.version.to_string()
        } else {
            format!("{}/{}", kind.group, kind.version)
        };
        ResourceInfo {
            group: kind.group.to_string(),
            version: kind.version.to_string(),
            plural: kind.plural.to_string(),
            singular: kind.kind.to_lowercase(),
            kind: kind.kind.to_string(),
            list_kind: format!("{}List", kind.kind),
            namespaced: kind.namespaced,
            short_names: kind.short_names.iter().map(|s| s.to_string()).collect(),
            categories: kind.categories.iter().map(|s| s.to_string()).collect(),
            status_subresource: kind.status,
            generation: kind.generation,
            storage,
            // Patches, applies and managedFields work on objects in the served version's fields.
            field_type: Arc::new(crate::patch::builtin(&served_api_version, kind.kind)),
            storage_api_version,
            custom: None,
            scale: matches!(
                (kind.group, kind.kind),
                ("apps", "Deployment" | "ReplicaSet" | "StatefulSet")
            )
            .then(ScalePaths::builtin),
        }
    }
}

/// An API group and its versions, preferred first.
#[derive(Debug, Clone)]
pub struct GroupInfo {
    /// Group name.
    pub name: String,
    /// Versions by priority.
    pub versions: Vec<String>,
}

/// A snapshot of everything served; rebuilt whenever a CRD changes.
#[derive(Debug, Default)]
pub struct Registry {
    resources: Vec<Arc<ResourceInfo>>,
    index: HashMap<(String, String, String), Arc<ResourceInfo>>,
    groups: Vec<GroupInfo>,
}

impl Registry {
    /// Build from the built-in kinds and the given CRD objects (only established ones are served).
    pub fn build<'a>(crds: impl IntoIterator<Item = &'a Value>) -> Registry {
        let mut resources: Vec<Arc<ResourceInfo>> = BUILTIN_KINDS
            .iter()
            .map(|kind| Arc::new(ResourceInfo::from_builtin(kind)))
            .collect();
        let mut custom_groups: Vec<String> = Vec::new();
        for crd_object in crds {
            if !crd::is_established(crd_object) {
                continue;
            }
            for info in crd::served_resources(crd_object) {
                if BUILTIN_GROUP_ORDER.contains(&info.group.as_str()) || info.group.is_empty() {
                    continue;
                }
                if !custom_groups.contains(&info.group) {
                    custom_groups.push(info.group.clone());
                }
                resources.push(Arc::new(info));
            }
        }
        custom_groups.sort();
        let mut groups = Vec::new();
        for name in BUILTIN_GROUP_ORDER.iter().map(|g| g.to_string()).chain(custom_groups) {
            let mut versions: Vec<String> = Vec::new();
            for info in resources.iter().filter(|r| r.group == name) {
                if !versions.contains(&info.version) {
                    versions.push(info.version.clone());
                }
            }
            versions.sort_by(|a, b| compare_versions(a, b));
            if !versions.is_empty() {
                groups.push(GroupInfo { name, versions });
            }
        }
        let index = resources
            .iter()
            .map(|r| ((r.group.clone(), r.version.clone(), r.plural.clone()), r.clone()))
            .collect();
        Registry {
            resources,
            index,
            groups,
        }
    }

    /// The resource served at `/apis/{group}/{version}/{plural}`.
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
        self.index
            .get(&(group.to_string(), version.to_string(), plural.to_string()))
            .cloned()
    }

    /// Every served resource.
    pub fn resources(&self) -> &[Arc<ResourceInfo>] {
        &self.resources
    }

    /// Resources of one group version.
    pub fn resources_in<'a>(
        &'a self,
        group: &'a str,
        version: &'a str,
    ) -> impl Iterator<Item = &'a Arc<ResourceInfo>> + 'a {
        self.resources
            .iter()
            .filter(move |r| r.group == group && r.version == version)
    }

    /// Named groups (not core), in discovery order.
    pub fn groups(&self) -> &[GroupInfo] {
        &self.groups
    }

    /// One group by name.
    pub fn group(&self, name: &str) -> Option<&GroupInfo> {
        self.groups.iter().find(|g| g.name == name)
    }

    /// The preferred-version resource for each distinct store (used by GC and namespace cleanup).
    pub fn storage_resources(&self) -> Vec<Arc<ResourceInfo>> {
        let mut seen: Vec<StorageId> = Vec::new();
        let mut out = Vec::new();
        for info in &self.resources {
            if seen.contains(&info.storage) {
                continue;
            }
            seen.push(info.storage.clone());
            out.push(info.clone());
        }
        out
    }

    /// The resource for a kind at an apiVersion (`apps/v1`, `Deployment`).
    pub fn by_kind(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceInfo>> {
        let (group, version) = split_api_version(api_version);
        self.resources
            .iter()
            .find(|r| r.group == group && r.version == version && r.kind == kind)
            .cloned()
    }
}

/// `apps/v1` → (`apps`, `v1`); `v1` → (``, `v1`).
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((group, version)) => (group, version),
        None => ("", api_version),
    }
}

/// Kubernetes version priority: GA before beta before alpha, higher numbers first, others alphabetically last.
pub fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    fn rank(v: &str) -> Option<(u8, u64, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        let major: u64 = digits.parse().ok()?;
        let tail = &rest[digits.len()..];
        if tail.is_empty() {
            return Some((3, major, 0));
        }
        let (level, minor) = if let Some(n) = tail.strip_prefix("beta") {
            (2, n)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (1, n)
        } else {
            return None;
        };
        Some((level, major, minor.parse().ok()?))
    }
    match (rank(a), rank(b)) {
        (Some(x), Some(y)) => y.cmp(&x),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

impl CustomVersion {
    /// Compile the per-version schema pieces of a CRD version.
    pub fn new(crd_name: String, schema: Option<Value>, printer_columns: Vec<PrinterColumn>) -> Self {
        let structural = schema
            .as_ref()
            .and_then(|s| crate::schema::Structural::from_openapi_v3(s).ok());
        CustomVersion {
            crd_name,
            schema,
            structural,
            printer_columns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_priority_matches_kubernetes() {
        let mut versions = vec!["v1alpha1", "v2beta1", "v1", "v10", "foo", "v2", "v1beta2"];
        versions.sort_by(|a, b| compare_versions(a, b));
        assert_eq!(versions, ["v10", "v2", "v1", "v2beta1", "v1beta2", "v1alpha1", "foo"]);
    }

    #[test]
    fn builtin_lookup_and_groups() {
        let registry = Registry::build([]);
        let deploy = registry.lookup("apps", "v1", "deployments").unwrap();
        assert_eq!(deploy.kind, "Deployment");
        assert!(deploy.status_subresource);
        assert_eq!(registry.groups()[0].name, "apps");
        let new_events = registry.lookup("events.k8s.io", "v1", "events").unwrap();
        let core_events = registry.lookup("", "v1", "events").unwrap();
        assert_eq!(new_events.storage, core_events.storage);
    }
}
