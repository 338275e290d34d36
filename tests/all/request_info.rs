//! What an API request asks to do, in the authorizer's terms: the Kubernetes verb, API group, resource,
//! subresource, namespace and name, resolved from method, path and query the way the API server's RequestInfo
//! resolver does (`k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`).

/// A request resolved for authorization.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RequestInfo {
    /// A request on a resource (`/api/v1/...`, `/apis/<group>/<version>/...`).
    Resource(ResourceAttributes),
    /// Anything else (`/api`, `/apis/<group>`, `/version`, `/openapi/v2`): authorized by path.
    NonResource {
        /// The lowercase verb (`get`, `post`, ...).
        verb: String,
        /// The path.
        path: String,
    },
}

/// The attributes of a resource request that RBAC rules match.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceAttributes {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`.
    pub verb: String,
    /// The API group, `""` for the core group.
    pub api_group: String,
    /// The resource (plural).
    pub resource: String,
    /// The subresource (`status`, `finalizers`, `scale`), or `""`.
    pub subresource: String,
    /// The namespace, `""` for cluster-scoped requests and requests across all namespaces.
    pub namespace: String,
    /// The object's name, `""` for collections.
    pub name: String,
}

/// Subresources of a namespace that are not resources inside it (`/api/v1/namespaces/<ns>/status`).
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

impl RequestInfo {
    /// Resolves `method` (`GET`, `POST`, ...), `path` and `query` (without `?`).
    pub fn resolve(method: &str, path: &str, query: &str) -> Self {
        let non_resource = || RequestInfo::NonResource {
            verb: method.to_ascii_lowercase(),
            path: path.to_owned(),
        };
        let mut parts: Vec<&str> = path.trim_matches('/').split('/').filter(|p| !p.is_empty()).collect();
        let api_group = match parts.first() {
            // /api/<version>/...
            Some(&"api") if parts.len() >= 3 => {
                parts.drain(..2);
                String::new()
            }
            // /apis/<group>/<version>/...
            Some(&"apis") if parts.len() >= 4 => {
                let group = parts[1].to_owned();
                parts.drain(..3);
                group
            }
            _ => return non_resource(),
        };

        let mut verb = match method {
            "POST" => "create",
            "GET" | "HEAD" => "get",
            "PUT" => "update",
            "PATCH" => "patch",
            "DELETE" => "delete",
            _ => return non_resource(),
        }
        .to_owned();
        // The deprecated /watch/ path prefix.
        if parts.first() == Some(&"watch") {
            parts.remove(0);
            verb = "watch".into();
        }

        let mut namespace = String::new();
        if parts.first() == Some(&"namespaces") && parts.len() > 1 {
            namespace = parts[1].to_owned();
            // A further segment that is not a namespace subresource is a resource inside the namespace.
            if parts.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&parts[2]) {
                parts.drain(..2);
            }
        }
        let resource = parts.first().copied().unwrap_or_default().to_owned();
        let mut name = parts.get(1).copied().unwrap_or_default().to_owned();
        let subresource = parts.get(2).copied().unwrap_or_default().to_owned();

        if name.is_empty() {
            match verb.as_str() {
                // A get without a name is a list, or a watch; narrowed to one name by field selector, it is
                // authorized as that name.
                "get" => {
                    verb = if watch_requested(query) { "watch" } else { "list" }.into();
                    if let Some(selected) = selected_name(query) {
                        name = selected;
                    }
                }
                "delete" => verb = "deletecollection".into(),
                _ => {}
            }
        }

        RequestInfo::Resource(ResourceAttributes {
            verb,
            api_group,
            resource,
            subresource,
            namespace,
            name,
        })
    }
}

/// The decoded values of query parameter `key`.
fn query_values<'a>(query: &'a str, key: &'a str) -> impl Iterator<Item = String> + 'a {
    query.split('&').filter_map(move |pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == key).then(|| percent_decode(v))
    })
}

fn watch_requested(query: &str) -> bool {
    query_values(query, "watch").any(|v| matches!(v.to_ascii_lowercase().as_str(), "true" | "1"))
}

/// `metadata.name=<name>` (or `==`) in a field selector.
fn selected_name(query: &str) -> Option<String> {
    query_values(query, "fieldSelector").find_map(|selector| {
        selector.split(',').find_map(|term| {
            let value = term
                .strip_prefix("metadata.name==")
                .or_else(|| term.strip_prefix("metadata.name="))?;
            Some(value.to_owned())
        })
    })
}

fn percent_decode(text: &str) -> String {
    let mut decoded = Vec::with_capacity(text.len());
    let mut index = 0;
    while index < text.len() {
        let escaped = text
            .get(index + 1..index + 3)
            .filter(|_| text.as_bytes()[index] == b'%')
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match (escaped, text.as_bytes()[index]) {
            (Some(byte), _) => {
                decoded.push(byte);
                index += 3;
            }
            (None, b'+') => {
                decoded.push(b' ');
                index += 1;
            }
            (None, byte) => {
                decoded.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(method: &str, path: &str, query: &str) -> ResourceAttributes {
        match RequestInfo::resolve(method, path, query) {
            RequestInfo::Resource(attributes) => attributes,
            other => panic!("{method} {path}?{query} resolved to {other:?}"),
        }
    }

    fn attributes(verb: &str, group: &str, resource: &str, sub: &str, ns: &str, name: &str) -> ResourceAttributes {
        ResourceAttributes {
            verb: verb.into(),
            api_group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            namespace: ns.into(),
            name: name.into(),
        }
    }

    #[test]
    fn collections_objects_and_subresources() {
        assert_eq!(
            resource("GET", "/api/v1/namespaces/demo/configmaps", "labelSelector=a%3Db"),
            attributes("list", "", "configmaps", "", "demo", "")
        );
        assert_eq!(
            resource("GET", "/api/v1/configmaps", "watch=true&resourceVersion=5"),
            attributes("watch", "", "configmaps", "", "", "")
        );
        assert_eq!(
            resource("GET", "/api/v1/namespaces/demo/configmaps/web-0", ""),
            attributes("get", "", "configmaps", "", "demo", "web-0")
        );
        assert_eq!(
            resource(
                "PATCH",
                "/apis/examples.wasm-reconciler.io/v1alpha1/namespaces/demo/configmapsets/web/status",
                "fieldManager=x"
            ),
            attributes(
                "patch",
                "examples.wasm-reconciler.io",
                "configmapsets",
                "status",
                "demo",
                "web"
            )
        );
        assert_eq!(
            resource("POST", "/apis/events.k8s.io/v1/namespaces/demo/events", ""),
            attributes("create", "events.k8s.io", "events", "", "demo", "")
        );
        assert_eq!(
            resource("PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/lock", ""),
            attributes("update", "coordination.k8s.io", "leases", "", "ns", "lock")
        );
        assert_eq!(
            resource("DELETE", "/api/v1/namespaces/demo/configmaps", ""),
            attributes("deletecollection", "", "configmaps", "", "demo", "")
        );
        assert_eq!(
            resource("DELETE", "/apis/apps/v1/namespaces/demo/deployments/web", ""),
            attributes("delete", "apps", "deployments", "", "demo", "web")
        );
    }

    #[test]
    fn namespaces_are_named_by_their_own_segment() {
        assert_eq!(
            resource("GET", "/api/v1/namespaces/demo", ""),
            attributes("get", "", "namespaces", "", "demo", "demo")
        );
        assert_eq!(
            resource("PUT", "/api/v1/namespaces/demo/finalize", ""),
            attributes("update", "", "namespaces", "finalize", "demo", "demo")
        );
        assert_eq!(
            resource("GET", "/api/v1/namespaces", ""),
            attributes("list", "", "namespaces", "", "", "")
        );
    }

    #[test]
    fn watches_and_field_selected_names() {
        assert_eq!(
            resource("GET", "/api/v1/watch/namespaces/demo/pods", ""),
            attributes("watch", "", "pods", "", "demo", "")
        );
        assert_eq!(
            resource(
                "GET",
                "/apis/coordination.k8s.io/v1/namespaces/ns/leases",
                "fieldSelector=metadata.name%3Dlock&watch=1"
            ),
            attributes("watch", "coordination.k8s.io", "leases", "", "ns", "lock")
        );
    }

    #[test]
    fn discovery_is_not_a_resource_request() {
        for path in [
            "/api",
            "/api/v1",
            "/apis",
            "/apis/apps",
            "/apis/apps/v1",
            "/version",
            "/openapi/v2",
        ] {
            assert_eq!(
                RequestInfo::resolve("GET", path, ""),
                RequestInfo::NonResource {
                    verb: "get".into(),
                    path: path.into()
                },
                "{path}"
            );
        }
    }
}
