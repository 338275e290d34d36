//! From a plugin's desired children to a write plan: scope checks, ownership, no-op detection and pruning.

use std::collections::HashSet;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Resource;
use kube::api::{ApiResource, DynamicObject};
use serde_json::{Value, json};

use crate::plugin::{ControllerSpec, Gvk};

/// A child ready to be applied.
#[derive(Debug, Clone, PartialEq)]
pub struct PreparedChild {
    /// Its kind.
    pub gvk: Gvk,
    /// Its name.
    pub name: String,
    /// The object to apply: the plugin's, with namespace and controller ownerReference set by the host.
    pub object: Value,
}

/// Why an outcome's children cannot be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScopeError {
    /// The kind is not declared in `owns`.
    #[error("child {kind} {name:?} is of a kind the plugin does not declare in `owns`")]
    UndeclaredKind {
        /// The kind.
        kind: String,
        /// The name.
        name: String,
    },
    /// The child names another namespace than the primary's.
    #[error(
        "child {kind} {name:?} is in namespace {namespace:?}, but children must live in the primary's namespace {primary_namespace:?}"
    )]
    OtherNamespace {
        /// The kind.
        kind: String,
        /// The name.
        name: String,
        /// The namespace asked for.
        namespace: String,
        /// The primary's namespace.
        primary_namespace: String,
    },
    /// A cluster-scoped child of a namespaced primary cannot be owned by it.
    #[error("child {kind} {name:?} is cluster-scoped and cannot be owned by the namespaced primary")]
    ClusterScopedChild {
        /// The kind.
        kind: String,
        /// The name.
        name: String,
    },
    /// The child names the primary itself.
    #[error("child {kind} {name:?} is the primary object itself")]
    IsThePrimary {
        /// The kind.
        kind: String,
        /// The name.
        name: String,
    },
    /// Two children with the same kind and name.
    #[error("child {kind} {name:?} appears more than once")]
    Duplicate {
        /// The kind.
        kind: String,
        /// The name.
        name: String,
    },
    /// The child carries ownerReferences of its own.
    #[error("child {kind} {name:?} sets metadata.ownerReferences; the host sets ownership")]
    OwnerReferences {
        /// The kind.
        kind: String,
        /// The name.
        name: String,
    },
}

/// What the host knows about the primary when preparing children.
#[derive(Debug, Clone)]
pub struct PrimaryRef<'a> {
    /// `metadata.name`.
    pub name: &'a str,
    /// `metadata.namespace`; `None` when cluster-scoped.
    pub namespace: Option<&'a str>,
    /// The controller ownerReference children get (`controller` and `blockOwnerDeletion` set).
    pub owner: OwnerReference,
}

impl<'a> PrimaryRef<'a> {
    /// The reference fields of a primary served as `resource`; `None` without a name or uid.
    pub fn of(primary: &'a DynamicObject, resource: &ApiResource) -> Option<Self> {
        Some(Self {
            name: primary.metadata.name.as_deref()?,
            namespace: primary.metadata.namespace.as_deref(),
            owner: OwnerReference {
                // Foreground deletion of the primary waits for its children.
                block_owner_deletion: Some(true),
                ..primary.controller_owner_ref(resource)?
            },
        })
    }
}

/// Checks the desired children against the plugin's scope and sets namespace and ownership on each.
///
/// `is_namespaced` answers whether an owned kind is namespaced (from discovery). Nothing is written when any
/// child is out of scope: a partial write followed by pruning could delete what should stay.
pub fn prepare_children(
    primary: &PrimaryRef<'_>,
    spec: &ControllerSpec,
    desired: &[Value],
    is_namespaced: impl Fn(&Gvk) -> bool,
) -> Result<Vec<PreparedChild>, ScopeError> {
    let mut seen = HashSet::new();
    let mut prepared = Vec::with_capacity(desired.len());
    for child in desired {
        let gvk = Gvk::of_object(child).expect("outcome decoding checked apiVersion and kind");
        let name = child["metadata"]["name"]
            .as_str()
            .expect("outcome decoding checked metadata.name")
            .to_owned();
        let kind = gvk.to_string();
        if !spec.owns.contains(&gvk) {
            return Err(ScopeError::UndeclaredKind { kind, name });
        }
        if gvk == spec.primary && name == primary.name {
            return Err(ScopeError::IsThePrimary { kind, name });
        }
        if !seen.insert((gvk.clone(), name.clone())) {
            return Err(ScopeError::Duplicate { kind, name });
        }
        if child["metadata"].get("ownerReferences").is_some_and(|o| !o.is_null()) {
            return Err(ScopeError::OwnerReferences { kind, name });
        }
        let namespaced = is_namespaced(&gvk);
        let mut object = child.clone();
        match (primary.namespace, namespaced) {
            (Some(primary_namespace), true) => {
                if let Some(namespace) = child["metadata"]["namespace"].as_str()
                    && namespace != primary_namespace
                {
                    return Err(ScopeError::OtherNamespace {
                        kind,
                        name,
                        namespace: namespace.to_owned(),
                        primary_namespace: primary_namespace.to_owned(),
                    });
                }
                object["metadata"]["namespace"] = json!(primary_namespace);
            }
            (Some(_), false) => return Err(ScopeError::ClusterScopedChild { kind, name }),
            (None, _) => {
                // A cluster-scoped primary may own cluster-scoped children, and namespaced ones in any namespace.
            }
        }
        object["metadata"]["ownerReferences"] = json!([primary.owner]);
        prepared.push(PreparedChild { gvk, name, object });
    }
    Ok(prepared)
}

/// True when every field of `desired` already has the same value in `observed`: applying it would change
/// nothing the host manages. Lists must match exactly. The rule a contract 0.3 view's `children` answers by.
pub use wasm_reconciler_contract::json::is_subset;

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ControllerSpec {
        ControllerSpec::new(Gvk::new("ex.io", "v1", "Set"))
            .owns(Gvk::new("", "v1", "ConfigMap"))
            .owns(Gvk::new("rbac.authorization.k8s.io", "v1", "ClusterRole"))
    }

    fn primary() -> DynamicObject {
        serde_json::from_value(
            json!({"apiVersion": "ex.io/v1", "kind": "Set", "metadata": {"name": "p", "namespace": "ns", "uid": "u-1"}}),
        )
        .unwrap()
    }

    fn set_resource() -> ApiResource {
        ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk("ex.io", "v1", "Set"))
    }

    fn namespaced(gvk: &Gvk) -> bool {
        gvk.kind != "ClusterRole"
    }

    fn config_map(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "1"}})
    }

    #[test]
    fn children_get_namespace_and_controller_reference() {
        let primary = primary();
        let prepared = prepare_children(
            &PrimaryRef::of(&primary, &set_resource()).unwrap(),
            &spec(),
            &[config_map("c")],
            namespaced,
        )
        .unwrap();
        assert_eq!(prepared[0].object["metadata"]["namespace"], "ns");
        assert_eq!(
            prepared[0].object["metadata"]["ownerReferences"],
            json!([{"apiVersion": "ex.io/v1", "kind": "Set", "name": "p", "uid": "u-1", "controller": true, "blockOwnerDeletion": true}])
        );
        assert_eq!(prepared[0].object["data"]["a"], "1");
    }

    #[test]
    fn out_of_scope_children_are_refused() {
        let primary = primary();
        let primary = PrimaryRef::of(&primary, &set_resource()).unwrap();
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}});
        assert!(matches!(
            prepare_children(&primary, &spec(), &[secret], namespaced),
            Err(ScopeError::UndeclaredKind { .. })
        ));
        let mut elsewhere = config_map("c");
        elsewhere["metadata"]["namespace"] = json!("kube-system");
        let error = prepare_children(&primary, &spec(), &[elsewhere], namespaced).unwrap_err();
        assert_eq!(
            error.to_string(),
            "child v1/ConfigMap \"c\" is in namespace \"kube-system\", but children must live in the primary's namespace \"ns\""
        );
        let role =
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"}});
        assert!(matches!(
            prepare_children(&primary, &spec(), &[role], namespaced),
            Err(ScopeError::ClusterScopedChild { .. })
        ));
        assert!(matches!(
            prepare_children(&primary, &spec(), &[config_map("c"), config_map("c")], namespaced),
            Err(ScopeError::Duplicate { .. })
        ));
        let mut owned = config_map("c");
        owned["metadata"]["ownerReferences"] = json!([{"uid": "x"}]);
        assert!(matches!(
            prepare_children(&primary, &spec(), &[owned], namespaced),
            Err(ScopeError::OwnerReferences { .. })
        ));
    }

    #[test]
    fn subset_detects_no_op_applies() {
        let desired = json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "v"}, "n": 1});
        let observed = json!({"metadata": {"name": "a", "uid": "u", "labels": {"x": "1", "y": "2"}}, "data": {"k": "v"}, "n": 1.0});
        assert!(is_subset(&desired, &observed));
        assert!(!is_subset(&json!({"data": {"k": "w"}}), &observed));
        assert!(!is_subset(&json!({"data": {"other": "v"}}), &observed));
        assert!(!is_subset(&json!({"l": [1, 2]}), &json!({"l": [1, 2, 3]})));
        assert!(is_subset(&json!({"l": [{"a": 1}]}), &json!({"l": [{"a": 1, "b": 2}]})));
    }
}
