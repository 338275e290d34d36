//! What RBAC grants one ServiceAccount: the rules of every Role and ClusterRole bound to it in a set of manifests,
//! matched the way the API server's RBAC authorizer matches them (`k8s.io/kubernetes/pkg/apis/rbac/v1/evaluation_helpers.go`).

use std::path::Path;

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, Subject};

use crate::request_info::{RequestInfo, ResourceAttributes};

/// Paths every authenticated user may GET, from the API server's default `system:discovery` and
/// `system:public-info-viewer` ClusterRoles.
const DEFAULT_NON_RESOURCE_URLS: [&str; 11] = [
    "/api",
    "/api/*",
    "/apis",
    "/apis/*",
    "/openapi",
    "/openapi/*",
    "/version",
    "/version/",
    "/healthz",
    "/livez",
    "/readyz",
];

/// Rules that apply to a subject, cluster-wide or in one namespace.
#[derive(Debug, Default)]
pub struct Grants {
    /// From ClusterRoles bound by ClusterRoleBindings.
    cluster: Vec<PolicyRule>,
    /// From Roles and ClusterRoles bound by RoleBindings, with the binding's namespace.
    namespaced: Vec<(String, PolicyRule)>,
}

impl Grants {
    /// The grants of ServiceAccount `namespace/name` in every YAML file of `dir` (recursively).
    pub fn for_service_account(dir: &Path, namespace: &str, name: &str) -> anyhow::Result<Self> {
        let mut roles = Vec::new();
        let mut cluster_roles = Vec::new();
        let mut role_bindings = Vec::new();
        let mut cluster_role_bindings = Vec::new();
        for document in yaml_documents(dir)? {
            let kind = document["kind"].as_str().unwrap_or_default().to_owned();
            match kind.as_str() {
                "Role" => roles.push(serde_json::from_value::<Role>(document)?),
                "ClusterRole" => cluster_roles.push(serde_json::from_value::<ClusterRole>(document)?),
                "RoleBinding" => role_bindings.push(serde_json::from_value::<RoleBinding>(document)?),
                "ClusterRoleBinding" => {
                    cluster_role_bindings.push(serde_json::from_value::<ClusterRoleBinding>(document)?)
                }
                _ => {}
            }
        }
        let is_subject = |subjects: &Option<Vec<Subject>>, binding_namespace: &str| {
            subjects.iter().flatten().any(|subject| {
                // A ServiceAccount subject without a namespace means the binding's namespace.
                let subject_namespace = subject.namespace.as_deref().unwrap_or(binding_namespace);
                subject.kind == "ServiceAccount" && subject.name == name && subject_namespace == namespace
            })
        };
        let cluster_role_rules = |role_name: &str| -> Vec<PolicyRule> {
            cluster_roles
                .iter()
                .filter(|role| role.metadata.name.as_deref() == Some(role_name))
                .flat_map(|role| role.rules.clone().unwrap_or_default())
                .collect()
        };

        let mut grants = Grants::default();
        for binding in &cluster_role_bindings {
            if binding.role_ref.kind == "ClusterRole" && is_subject(&binding.subjects, "") {
                grants.cluster.extend(cluster_role_rules(&binding.role_ref.name));
            }
        }
        for binding in &role_bindings {
            let binding_namespace = binding.metadata.namespace.clone().unwrap_or_default();
            if !is_subject(&binding.subjects, &binding_namespace) {
                continue;
            }
            let rules = match binding.role_ref.kind.as_str() {
                "ClusterRole" => cluster_role_rules(&binding.role_ref.name),
                _ => roles
                    .iter()
                    .filter(|role| {
                        role.metadata.name.as_deref() == Some(binding.role_ref.name.as_str())
                            && role.metadata.namespace.as_deref() == Some(binding_namespace.as_str())
                    })
                    .flat_map(|role| role.rules.clone().unwrap_or_default())
                    .collect(),
            };
            grants
                .namespaced
                .extend(rules.into_iter().map(|rule| (binding_namespace.clone(), rule)));
        }
        Ok(grants)
    }

    /// Whether any rule allows the request.
    pub fn allows(&self, request: &RequestInfo) -> bool {
        match request {
            RequestInfo::NonResource { verb, path } => {
                (verb == "get" && DEFAULT_NON_RESOURCE_URLS.iter().any(|url| url_matches(url, path)))
                    || self
                        .cluster
                        .iter()
                        .any(|rule| non_resource_rule_allows(rule, verb, path))
            }
            RequestInfo::Resource(attributes) => {
                self.cluster.iter().any(|rule| resource_rule_allows(rule, attributes))
                    || self.namespaced.iter().any(|(namespace, rule)| {
                        // Namespaced grants never cover cluster-wide requests (`list` across namespaces).
                        !attributes.namespace.is_empty()
                            && &attributes.namespace == namespace
                            && resource_rule_allows(rule, attributes)
                    })
            }
        }
    }

    /// The (rule, verb) pairs no request in `requests` needed, e.g. `get,list apiextensions.k8s.io
    /// customresourcedefinitions`: candidates for removal.
    pub fn unused<'a>(&self, requests: impl Iterator<Item = &'a RequestInfo> + Clone) -> Vec<String> {
        let rules = self
            .cluster
            .iter()
            .map(|rule| (None, rule))
            .chain(self.namespaced.iter().map(|(namespace, rule)| (Some(namespace), rule)));
        let mut unused = Vec::new();
        for (namespace, rule) in rules {
            for verb in &rule.verbs {
                let single = PolicyRule {
                    verbs: vec![verb.clone()],
                    ..rule.clone()
                };
                let used = requests.clone().any(|request| match request {
                    RequestInfo::Resource(attributes) => {
                        namespace.is_none_or(|namespace| *namespace == attributes.namespace)
                            && resource_rule_allows(&single, attributes)
                    }
                    RequestInfo::NonResource { verb, path } => non_resource_rule_allows(&single, verb, path),
                });
                if !used {
                    let list = |values: &Option<Vec<String>>| values.clone().unwrap_or_default().join(",");
                    let scope = namespace.map(|n| format!(" in {n}")).unwrap_or_default();
                    unused.push(format!(
                        "{verb} [{}] {}{}{scope}",
                        list(&rule.api_groups),
                        list(&rule.resources),
                        list(&rule.non_resource_urls)
                    ));
                }
            }
        }
        unused
    }

    /// Number of rules found, to tell an empty set of manifests from a restrictive one.
    pub fn rule_count(&self) -> usize {
        self.cluster.len() + self.namespaced.len()
    }
}

fn resource_rule_allows(rule: &PolicyRule, request: &ResourceAttributes) -> bool {
    let listed = |values: &Option<Vec<String>>, wanted: &str| {
        values.iter().flatten().any(|value| value == "*" || value == wanted)
    };
    let combined = if request.subresource.is_empty() {
        request.resource.clone()
    } else {
        format!("{}/{}", request.resource, request.subresource)
    };
    let resource_matches = rule.resources.iter().flatten().any(|resource| {
        resource == "*"
            || *resource == combined
            || (!request.subresource.is_empty() && *resource == format!("*/{}", request.subresource))
    });
    let name_matches = rule
        .resource_names
        .as_ref()
        .is_none_or(|names| names.is_empty() || names.contains(&request.name));
    rule.verbs.iter().any(|verb| verb == "*" || *verb == request.verb)
        && listed(&rule.api_groups, &request.api_group)
        && resource_matches
        && name_matches
}

fn non_resource_rule_allows(rule: &PolicyRule, verb: &str, path: &str) -> bool {
    rule.verbs.iter().any(|v| v == "*" || v == verb)
        && rule
            .non_resource_urls
            .iter()
            .flatten()
            .any(|url| url_matches(url, path))
}

fn url_matches(rule_url: &str, path: &str) -> bool {
    rule_url == "*"
        || rule_url == path
        || rule_url
            .strip_suffix('*')
            .is_some_and(|prefix| path.starts_with(prefix))
}

/// Every YAML document in the `.yaml` files under `dir`, as JSON values.
fn yaml_documents(dir: &Path) -> anyhow::Result<Vec<serde_json::Value>> {
    let mut documents = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(path) = pending.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path)? {
                pending.push(entry?.path());
            }
        } else if path.extension().is_some_and(|e| e == "yaml") {
            let text = std::fs::read_to_string(&path)?;
            let values: Vec<serde_json::Value> = serde_saphyr::from_multiple(&text)?;
            documents.extend(values.into_iter().filter(|value| !value.is_null()));
        }
    }
    Ok(documents)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> PolicyRule {
        let strings = |items: &[&str]| Some(items.iter().map(|s| s.to_string()).collect());
        PolicyRule {
            api_groups: strings(groups),
            resources: strings(resources),
            verbs: verbs.iter().map(|s| s.to_string()).collect(),
            ..PolicyRule::default()
        }
    }

    fn request(verb: &str, resource: &str, subresource: &str, namespace: &str) -> RequestInfo {
        RequestInfo::Resource(ResourceAttributes {
            verb: verb.into(),
            api_group: "g".into(),
            resource: resource.into(),
            subresource: subresource.into(),
            namespace: namespace.into(),
            name: "n".into(),
        })
    }

    #[test]
    fn subresources_are_granted_only_by_name() {
        let grants = Grants {
            cluster: vec![rule(&["g"], &["things", "things/status"], &["get", "patch"])],
            namespaced: vec![],
        };
        assert!(grants.allows(&request("patch", "things", "status", "a")));
        assert!(!grants.allows(&request("update", "things", "finalizers", "a")));
        let wildcard = Grants {
            cluster: vec![rule(&["g"], &["*/finalizers"], &["update"])],
            namespaced: vec![],
        };
        assert!(wildcard.allows(&request("update", "things", "finalizers", "a")));
        assert!(!wildcard.allows(&request("update", "things", "", "a")));
    }

    #[test]
    fn namespaced_rules_stay_in_their_namespace() {
        let grants = Grants {
            cluster: vec![],
            namespaced: vec![("home".into(), rule(&["g"], &["things"], &["list"]))],
        };
        assert!(grants.allows(&request("list", "things", "", "home")));
        assert!(!grants.allows(&request("list", "things", "", "elsewhere")));
        assert!(!grants.allows(&request("list", "things", "", "")));
    }

    #[test]
    fn discovery_is_open_to_everyone() {
        let grants = Grants::default();
        let get = |path: &str| RequestInfo::NonResource {
            verb: "get".into(),
            path: path.into(),
        };
        assert!(grants.allows(&get("/apis/apps/v1")));
        assert!(grants.allows(&get("/version")));
        assert!(!grants.allows(&get("/metrics")));
    }
}
