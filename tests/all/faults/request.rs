//! What a request to the API server is about, read from its method, path, query, content type and body: the object
//! it names and, for a write, its identity (action, resource, name) — the same in every run of a story, whatever
//! the namespace and however concurrent writes interleave.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The object (or collection) a request path names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResourcePath {
    /// API group, empty for the core group.
    pub group: String,
    /// The plural resource, `configmaps`.
    pub resource: String,
    pub namespace: Option<String>,
    /// The object's name; `None` for a collection.
    pub name: Option<String>,
    /// `status`, `scale`, …
    pub subresource: Option<String>,
}

impl ResourcePath {
    /// Reads `/api/v1/…` and `/apis/<group>/<version>/…` paths; `None` for anything else (discovery, `/version`).
    pub fn parse(path: &str) -> Option<Self> {
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        let (group, rest) = match parts.as_slice() {
            ["api", _version, rest @ ..] => (String::new(), rest),
            ["apis", group, _version, rest @ ..] => ((*group).to_owned(), rest),
            _ => return None,
        };
        let (namespace, rest) = match rest {
            ["namespaces", namespace, rest @ ..] if !rest.is_empty() => (Some((*namespace).to_owned()), rest),
            _ => (None, rest),
        };
        let (resource, name, subresource) = match rest {
            [resource] => (*resource, None, None),
            [resource, name] => (*resource, Some(*name), None),
            [resource, name, subresource] => (*resource, Some(*name), Some(*subresource)),
            _ => return None,
        };
        Some(Self {
            group,
            resource: resource.to_owned(),
            namespace,
            name: name.map(str::to_owned),
            subresource: subresource.map(str::to_owned),
        })
    }

    /// The key of the object within its resource: `namespace/name`.
    pub fn object_key(&self) -> Option<ObjectKey> {
        Some(ObjectKey {
            resource: self.resource.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone()?,
        })
    }
}

/// One object of one resource.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ObjectKey {
    pub resource: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{} {namespace}/{}", self.resource, self.name),
            None => write!(f, "{} {}", self.resource, self.name),
        }
    }
}

/// Whether a GET is a watch.
pub fn is_watch(query: &str) -> bool {
    query.split('&').any(|pair| pair == "watch=true" || pair == "watch=1")
}

/// The value of one query parameter.
pub fn query_value<'a>(query: &'a str, key: &str) -> Option<&'a str> {
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='))
}

/// What a write does, as a word: `create`, `apply`, `merge-patch`, `json-patch`, `update`, `delete`, with `status/`
/// in front for the status subresource.
pub fn action(method: &str, content_type: &str, path: &ResourcePath) -> String {
    let verb = match method {
        "POST" => "create",
        "PUT" => "update",
        "DELETE" => "delete",
        "PATCH" if content_type.starts_with("application/apply-patch") => "apply",
        "PATCH" if content_type.starts_with("application/json-patch") => "json-patch",
        "PATCH" if content_type.starts_with("application/strategic-merge-patch") => "strategic-merge-patch",
        "PATCH" => "merge-patch",
        other => other,
    };
    match &path.subresource {
        Some(subresource) => format!("{subresource}/{verb}"),
        None => verb.to_owned(),
    }
}

/// A write as it can be named in any run of a story: what it does to which object (by name: every plan has a
/// namespace of its own), and which time it is that this host wrote it that way.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct WriteId {
    /// `apply`, `status/merge-patch`, `delete`, …
    pub action: String,
    /// The plural resource.
    pub resource: String,
    /// The object's name; for Events, `<regarding object>:<reason>` (their own names are generated).
    pub object: String,
    /// 1 for the first write of this action, resource and object, 2 for the second, …
    pub occurrence: u32,
}

impl std::fmt::Display for WriteId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} {} #{}",
            self.action, self.resource, self.object, self.occurrence
        )
    }
}

/// The resources whose writes are the host's bookkeeping rather than a reconcile's: the election and membership
/// Leases, and the WasmPlugin statuses (written on the host's own schedule, not a story's).
pub fn is_bookkeeping(path: &ResourcePath) -> bool {
    is_bookkeeping_resource(&path.resource)
}

/// [`is_bookkeeping`] by the plural resource name.
pub fn is_bookkeeping_resource(resource: &str) -> bool {
    matches!(resource, "leases" | "wasmplugins")
}

/// Whether the resource is Events (`events.k8s.io` or core): written off the reconcile's path, never read back.
pub fn is_event(path: &ResourcePath) -> bool {
    path.resource == "events"
}

/// The name a write is identified by: the object's, or for a new Event, what it regards and why.
pub fn identified_object(path: &ResourcePath, body: &Value, event_names: &dyn Fn(&str) -> Option<String>) -> String {
    if is_event(path) {
        return match &path.name {
            None => format!(
                "{}:{}",
                body["regarding"]["name"].as_str().unwrap_or_default(),
                body["reason"].as_str().unwrap_or_default()
            ),
            Some(name) => event_names(name).unwrap_or_else(|| name.clone()),
        };
    }
    path.name.clone().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_their_objects() {
        let core = ResourcePath::parse("/api/v1/namespaces/fp1/configmaps/web-0").unwrap();
        assert_eq!(core.group, "");
        assert_eq!(core.resource, "configmaps");
        assert_eq!(core.namespace.as_deref(), Some("fp1"));
        assert_eq!(core.name.as_deref(), Some("web-0"));
        let status = ResourcePath::parse("/apis/examples.io/v1/namespaces/fp1/sets/web/status").unwrap();
        assert_eq!(status.subresource.as_deref(), Some("status"));
        assert_eq!(
            action("PATCH", "application/merge-patch+json", &status),
            "status/merge-patch"
        );
        let collection = ResourcePath::parse("/api/v1/namespaces/fp1/configmaps").unwrap();
        assert_eq!(collection.name, None);
        let namespace = ResourcePath::parse("/api/v1/namespaces/fp1").unwrap();
        assert_eq!(
            (namespace.resource.as_str(), namespace.name.as_deref()),
            ("namespaces", Some("fp1"))
        );
        assert!(ResourcePath::parse("/version").is_none());
        assert!(is_watch("labelSelector=a&watch=true&resourceVersion=5"));
        assert_eq!(
            query_value("watch=true&resourceVersion=5", "resourceVersion"),
            Some("5")
        );
    }
}
