//! Discovery documents: legacy `/api`, `/apis` lists and aggregated (`apidiscovery.k8s.io/v2`) ones.

use serde_json::{Value, json};

use super::{Registry, ResourceInfo};

/// Verbs of a main resource.
pub const RESOURCE_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// Verbs of a custom resource, in the order the real server lists them.
pub const CUSTOM_RESOURCE_VERBS: &[&str] = &[
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
];

/// The verbs of a resource as discovery lists them.
fn verbs(info: &ResourceInfo) -> &'static [&'static str] {
    if info.is_builtin() {
        RESOURCE_VERBS
    } else {
        CUSTOM_RESOURCE_VERBS
    }
}

/// `storageVersionHash`: the first 8 bytes of the SHA-256 of `group/version/kind` of the stored form, base64.
pub fn storage_version_hash(info: &ResourceInfo) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let (group, version) = info
        .storage_api_version
        .rsplit_once('/')
        .unwrap_or(("", info.storage_api_version.as_str()));
    let digest = sha2::Sha256::digest(format!("{group}/{version}/{}", info.kind).as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

/// Verbs of a `/status` subresource.
pub const STATUS_VERBS: &[&str] = &["get", "patch", "update"];

/// `/api`: the core versions.
pub fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]
    })
}

/// `/api/v1` or `/apis/{group}/{version}`: an `APIResourceList`.
pub fn resource_list(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let mut resources = Vec::new();
    for info in registry.resources_in(group, version) {
        let mut entry = json!({
            "name": info.plural,
            "singularName": info.singular,
            "namespaced": info.namespaced,
            "kind": info.kind,
            "verbs": verbs(info),
        });
        if !info.short_names.is_empty() {
            entry["shortNames"] = json!(info.short_names);
        }
        if !info.categories.is_empty() {
            entry["categories"] = json!(info.categories);
        }
        entry["storageVersionHash"] = json!(storage_version_hash(info));
        resources.push(entry);
        if info.status_subresource {
            resources.push(json!({
                "name": format!("{}/status", info.plural),
                "singularName": "",
                "namespaced": info.namespaced,
                "kind": info.kind,
                "verbs": STATUS_VERBS,
            }));
        }
        if info.scale.is_some() {
            resources.push(json!({
                "name": format!("{}/scale", info.plural),
                "singularName": "",
                "namespaced": info.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": STATUS_VERBS,
            }));
        }
    }
    if resources.is_empty() {
        return None;
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }))
}

fn group_entry(registry: &Registry, name: &str) -> Option<Value> {
    let group = registry.group(name)?;
    let versions: Vec<Value> = group
        .versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    let preferred = versions.first().cloned()?;
    Some(json!({"name": name, "versions": versions, "preferredVersion": preferred}))
}

/// `/apis`: an `APIGroupList`.
pub fn group_list(registry: &Registry) -> Value {
    let groups: Vec<Value> = registry
        .groups()
        .iter()
        .filter_map(|g| group_entry(registry, &g.name))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/{group}`: an `APIGroup`.
pub fn group(registry: &Registry, name: &str) -> Option<Value> {
    let mut entry = group_entry(registry, name)?;
    let map = entry.as_object_mut()?;
    let mut out = serde_json::Map::new();
    out.insert("kind".into(), json!("APIGroup"));
    out.insert("apiVersion".into(), json!("v1"));
    out.append(map);
    Some(Value::Object(out))
}

fn aggregated_resource(info: &ResourceInfo) -> Value {
    let response_kind = json!({"group": info.group, "version": info.version, "kind": info.kind});
    let mut entry = json!({
        "resource": info.plural,
        "responseKind": response_kind,
        "scope": if info.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": info.singular,
        "verbs": verbs(info),
    });
    if !info.short_names.is_empty() {
        entry["shortNames"] = json!(info.short_names);
    }
    if !info.categories.is_empty() {
        entry["categories"] = json!(info.categories);
    }
    let mut subresources = Vec::new();
    if info.scale.is_some() {
        subresources.push(json!({
            "subresource": "scale",
            "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
            "verbs": STATUS_VERBS,
        }));
    }
    if info.status_subresource {
        subresources.push(json!({
            "subresource": "status",
            "responseKind": response_kind,
            "verbs": STATUS_VERBS,
        }));
    }
    if !subresources.is_empty() {
        entry["subresources"] = json!(subresources);
    }
    entry
}

fn aggregated_versions(registry: &Registry, group: &str, versions: &[String]) -> Vec<Value> {
    versions
        .iter()
        .map(|version| {
            let resources: Vec<Value> = registry
                .resources_in(group, version)
                .map(|info| aggregated_resource(info))
                .collect();
            json!({"version": version, "resources": resources, "freshness": "Current"})
        })
        .collect()
}

/// Aggregated discovery for `/api` (`core = true`) or `/apis`, at `apidiscovery.k8s.io/{version}`.
pub fn aggregated(registry: &Registry, core: bool, discovery_version: &str) -> Value {
    let items: Vec<Value> = if core {
        vec![json!({
            "metadata": {"creationTimestamp": null},
            "versions": aggregated_versions(registry, "", &["v1".to_string()]),
        })]
    } else {
        registry
            .groups()
            .iter()
            .map(|g| {
                json!({
                    "metadata": {"name": g.name, "creationTimestamp": null},
                    "versions": aggregated_versions(registry, &g.name, &g.versions),
                })
            })
            .collect()
    };
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{discovery_version}"),
        "metadata": {},
        "items": items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_resource_list_has_status_subresources_and_short_names() {
        let registry = Registry::build([]);
        let list = resource_list(&registry, "", "v1").unwrap();
        let names: Vec<&str> = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"pods/status"));
        assert!(!names.contains(&"configmaps/status"));
        let cm = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "configmaps")
            .unwrap();
        assert_eq!(cm["shortNames"], json!(["cm"]));
    }

    #[test]
    fn aggregated_lists_every_group() {
        let registry = Registry::build([]);
        let apis = aggregated(&registry, false, "v2");
        let groups: Vec<&str> = apis["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(groups[0], "apps");
        assert!(groups.contains(&"apiextensions.k8s.io"));
    }

    #[test]
    fn storage_version_hash_is_the_real_servers() {
        let registry = Registry::build([]);
        let deployments = registry
            .lookup("apps", "v1", "deployments")
            .expect("deployments are built in");
        // What kube-apiserver v1.37 lists for apps/v1 deployments.
        assert_eq!(storage_version_hash(&deployments), "8aSe+NMegvE=");
    }
}
