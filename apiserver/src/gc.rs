//! Background controllers the API server itself needs: the garbage collector (owner references,
//! `orphan` and `foregroundDeletion` finalizers), namespace termination with its `NamespaceDeletion*`
//! conditions, the `kube-root-ca.crt` ConfigMap and `default` ServiceAccount of every namespace, and CRD instance
//! cleanup.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use serde_json::{Value, json};

use crate::cluster::{Cluster, crd_storage, namespaces_storage};
use crate::lifecycle::deletion::{DeleteOptions, FOREGROUND_FINALIZER, ORPHAN_FINALIZER, Propagation};
use crate::object;
use crate::patch::{FieldSet, UpdateOptions, record_update};
use crate::registry::{ResourceInfo, crd};
use crate::storage::{Change, ObjectKey};

/// Periodic pass interval, on top of passes triggered by writes.
const SWEEP_INTERVAL: Duration = Duration::from_secs(10);

/// Run the collector until the cluster is dropped.
pub fn spawn(cluster: &Arc<Cluster>) {
    let weak: Weak<Cluster> = Arc::downgrade(cluster);
    let notify = cluster.collector_wakeup.clone();
    tokio::spawn(async move {
        loop {
            let Some(cluster) = weak.upgrade() else {
                return;
            };
            let wakeup = notify.notified();
            tokio::pin!(wakeup);
            wakeup.as_mut().enable();
            collect(&cluster);
            drop(cluster);
            tokio::select! {
                _ = wakeup => {}
                _ = tokio::time::sleep(SWEEP_INTERVAL) => {}
            }
        }
    });
}

struct OwnerState {
    deleting: bool,
    finalizers: Vec<String>,
}

/// One pass of every controller.
pub fn collect(cluster: &Cluster) {
    terminate_namespaces(cluster);
    publish_namespace_defaults(cluster);
    clean_up_crds(cluster);
    collect_garbage(cluster);
}

fn delete_quietly(cluster: &Cluster, info: &Arc<ResourceInfo>, namespace: &str, name: &str, propagation: Propagation) {
    let options = DeleteOptions {
        propagation: Some(propagation),
        ..Default::default()
    };
    if let Err(error) = cluster.delete_unfaulted(info, namespace, name, &options)
        && error.code != 404
    {
        tracing::warn!(%error, resource = %info.plural, namespace, name, "collector delete failed");
    }
}

fn update_quietly(cluster: &Cluster, key: &ObjectKey, change: impl FnOnce(&mut Value) -> bool) {
    let result = cluster.store.write(key, false, |current, _| {
        let Some(current) = current else {
            return Ok(Change::Unchanged(Arc::new(Value::Null)));
        };
        let mut object = (**current).clone();
        if !change(&mut object) {
            return Ok(Change::Unchanged(current.clone()));
        }
        let spec_finalizers = key.storage.as_ref() == "/namespaces"
            && !object::string_list(object::path(&object, &["spec", "finalizers"])).is_empty();
        if object::is_deleting(&object) && object::finalizers(&object).is_empty() && !spec_finalizers {
            return Ok(Change::Delete(object));
        }
        Ok(Change::Update(object))
    });
    if let Err(error) = result {
        tracing::warn!(%error, name = %key.name, "collector update failed");
    }
}

/// The namespace condition types, in the order the namespace controller writes them.
const NAMESPACE_CONDITIONS: [(&str, &str, &str); 5] = [
    (
        "NamespaceDeletionDiscoveryFailure",
        "ResourcesDiscovered",
        "All resources successfully discovered",
    ),
    (
        "NamespaceDeletionGroupVersionParsingFailure",
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    (
        "NamespaceDeletionContentFailure",
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
    (
        "NamespaceContentRemaining",
        "ContentRemoved",
        "All content successfully removed",
    ),
    (
        "NamespaceFinalizersRemaining",
        "ContentHasNoFinalizers",
        "All content-preserving finalizers finished",
    ),
];

/// The namespace controller's conditions for what remains: per resource (`configmaps.` for the core group,
/// `widgets.example.com`) and per finalizer, as counts of objects.
fn namespace_conditions(
    current: Option<&Value>,
    remaining: &std::collections::BTreeMap<String, usize>,
    finalizers: &std::collections::BTreeMap<String, usize>,
) -> Vec<Value> {
    let now = object::now_rfc3339();
    let current: Vec<Value> = current.and_then(Value::as_array).cloned().unwrap_or_default();
    NAMESPACE_CONDITIONS
        .iter()
        .map(|(kind, ok_reason, ok_message)| {
            let (status, reason, message) = match *kind {
                "NamespaceContentRemaining" if !remaining.is_empty() => {
                    let mut parts: Vec<String> = remaining
                        .iter()
                        .map(|(resource, count)| format!("{resource} has {count} resource instances"))
                        .collect();
                    parts.sort();
                    (
                        "True",
                        "SomeResourcesRemain",
                        format!("Some resources are remaining: {}", parts.join(", ")),
                    )
                }
                "NamespaceFinalizersRemaining" if !finalizers.is_empty() => {
                    let mut parts: Vec<String> = finalizers
                        .iter()
                        .map(|(finalizer, count)| format!("{finalizer} in {count} resource instances"))
                        .collect();
                    parts.sort();
                    (
                        "True",
                        "SomeFinalizersRemain",
                        format!(
                            "Some content in the namespace has finalizers remaining: {}",
                            parts.join(", ")
                        ),
                    )
                }
                _ => ("False", *ok_reason, ok_message.to_string()),
            };
            let previous = current
                .iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some(kind));
            // lastTransitionTime moves only when the status changes.
            let since = previous
                .filter(|p| p.get("status").and_then(Value::as_str) == Some(status))
                .and_then(|p| p.get("lastTransitionTime").cloned())
                .unwrap_or_else(|| json!(now));
            json!({"type": kind, "status": status, "lastTransitionTime": since, "reason": reason, "message": message})
        })
        .collect()
}

fn terminate_namespaces(cluster: &Cluster) {
    let namespaces = cluster
        .store
        .list(&namespaces_storage(), None, None, None, &|ns| object::is_deleting(ns));
    if namespaces.items.is_empty() {
        return;
    }
    let registry = cluster.registry();
    for namespace in namespaces.items {
        let name = object::name(&namespace).to_string();
        let mut remaining: std::collections::BTreeMap<String, usize> = Default::default();
        let mut finalizers: std::collections::BTreeMap<String, usize> = Default::default();
        for info in registry.storage_resources().iter().filter(|i| i.namespaced) {
            let page = cluster.store.list(&info.storage, Some(&name), None, None, &|_| true);
            for item in &page.items {
                if !object::is_deleting(item) {
                    delete_quietly(cluster, info, &name, object::name(item), Propagation::Background);
                }
            }
            // What is left after this pass: objects held by finalizers.
            let left = cluster.store.list(&info.storage, Some(&name), None, None, &|_| true);
            if left.items.is_empty() {
                continue;
            }
            *remaining.entry(format!("{}.{}", info.plural, info.group)).or_default() += left.items.len();
            for item in &left.items {
                for finalizer in object::finalizers(item) {
                    *finalizers.entry(finalizer).or_default() += 1;
                }
            }
        }
        let key = ObjectKey::new(&namespaces_storage(), "", &name);
        let namespaces = registry.lookup("", "v1", "namespaces");
        update_quietly(cluster, &key, |ns| {
            let conditions = namespace_conditions(object::path(ns, &["status", "conditions"]), &remaining, &finalizers);
            if object::path(ns, &["status", "conditions"]) == Some(&json!(conditions)) {
                return false;
            }
            let before = ns.clone();
            object::ensure_object(ns, &["status"]).insert("conditions".into(), json!(conditions));
            // The namespace controller writes its conditions through /status, as kube-controller-manager.
            if let Some(info) = &namespaces {
                let options = UpdateOptions {
                    manager: "kube-controller-manager".into(),
                    ty: &info.field_type,
                    api_version: info.api_version(),
                    kind: info.kind.clone(),
                    subresource: Some("status".into()),
                    time: object::now_rfc3339(),
                    ignored_fields: FieldSet::new(),
                };
                *ns = record_update(Some(&before), ns, &options);
            }
            true
        });
        if remaining.is_empty() {
            tracing::debug!(namespace = %name, "namespace empty, finalizing");
            update_quietly(cluster, &key, |ns| {
                let mut finalizers = object::string_list(object::path(ns, &["spec", "finalizers"]));
                let before = finalizers.len();
                finalizers.retain(|f| f != "kubernetes");
                if finalizers.len() == before {
                    return false;
                }
                if finalizers.is_empty() {
                    object::ensure_object(ns, &["spec"]).remove("finalizers");
                } else {
                    ns["spec"]["finalizers"] = json!(finalizers);
                }
                true
            });
        }
    }
}

/// The description the root CA publisher puts on `kube-root-ca.crt`.
const ROOT_CA_DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// What kube-controller-manager's root CA publisher and service account controller keep in every active
/// namespace: the `kube-root-ca.crt` ConfigMap (the server's CA) and the `default` ServiceAccount.
fn publish_namespace_defaults(cluster: &Cluster) {
    let namespaces = cluster
        .store
        .list(&namespaces_storage(), None, None, None, &|ns| !object::is_deleting(ns));
    for namespace in namespaces.items {
        let name = object::name(&namespace);
        let now = object::now_rfc3339();
        if let Some(ca) = cluster.root_ca() {
            create_if_missing(
                cluster,
                &ObjectKey::new(
                    &crate::registry::StorageId::from("/configmaps"),
                    name,
                    "kube-root-ca.crt",
                ),
                json!({
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": "kube-root-ca.crt",
                        "namespace": name,
                        "uid": uuid::Uuid::new_v4().to_string(),
                        "creationTimestamp": now,
                        "annotations": {"kubernetes.io/description": ROOT_CA_DESCRIPTION},
                    },
                    "data": {"ca.crt": ca},
                }),
            );
        }
        create_if_missing(
            cluster,
            &ObjectKey::new(&crate::registry::StorageId::from("/serviceaccounts"), name, "default"),
            json!({
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {
                    "name": "default",
                    "namespace": name,
                    "uid": uuid::Uuid::new_v4().to_string(),
                    "creationTimestamp": now,
                },
            }),
        );
    }
}

fn create_if_missing(cluster: &Cluster, key: &ObjectKey, object: Value) {
    let result = cluster.store.write(key, false, |current, _| {
        Ok(match current {
            Some(existing) => Change::Unchanged(existing.clone()),
            None => Change::Create(object),
        })
    });
    if let Err(error) = result {
        tracing::warn!(%error, namespace = %key.namespace, name = %key.name, "cannot publish a namespace default");
    }
}

fn clean_up_crds(cluster: &Cluster) {
    let crds = cluster.store.list(&crd_storage(), None, None, None, &|c| {
        object::is_deleting(c) && object::finalizers(c).iter().any(|f| f == crd::CLEANUP_FINALIZER)
    });
    if crds.items.is_empty() {
        return;
    }
    let registry = cluster.registry();
    for definition in crds.items {
        let group = object::path_str(&definition, &["spec", "group"]);
        let plural = object::path_str(&definition, &["spec", "names", "plural"]);
        let storage = format!("{group}/{plural}");
        let info = registry
            .storage_resources()
            .into_iter()
            .find(|i| i.storage.as_ref() == storage);
        let mut remaining = 0;
        if let Some(info) = &info {
            let page = cluster.store.list(&info.storage, None, None, None, &|_| true);
            for item in page.items {
                remaining += 1;
                if !object::is_deleting(&item) {
                    delete_quietly(
                        cluster,
                        info,
                        object::namespace(&item),
                        object::name(&item),
                        Propagation::Background,
                    );
                }
            }
        }
        if remaining == 0 {
            let name = object::name(&definition).to_string();
            update_quietly(cluster, &ObjectKey::new(&crd_storage(), "", &name), |c| {
                let mut finalizers = object::finalizers(c);
                finalizers.retain(|f| f != crd::CLEANUP_FINALIZER);
                object::set_finalizers(c, &finalizers);
                true
            });
            cluster.refresh_registry();
        }
    }
}

fn collect_garbage(cluster: &Cluster) {
    let registry = cluster.registry();
    let resources = registry.storage_resources();
    let mut owners: HashMap<String, OwnerState> = HashMap::new();
    let mut dependents: Vec<(Arc<ResourceInfo>, Arc<Value>)> = Vec::new();
    for info in &resources {
        let page = cluster.store.list(&info.storage, None, None, None, &|_| true);
        for item in page.items {
            owners.insert(
                object::uid(&item).to_string(),
                OwnerState {
                    deleting: object::is_deleting(&item),
                    finalizers: object::finalizers(&item),
                },
            );
            if !object::owner_references(&item).is_empty() {
                dependents.push((info.clone(), item));
            }
        }
    }
    let mut blocking_dependents: HashMap<String, usize> = HashMap::new();
    let mut orphaning_owners: Vec<String> = Vec::new();
    for (info, dependent) in &dependents {
        let namespace = object::namespace(dependent).to_string();
        let name = object::name(dependent).to_string();
        let mut solid = 0;
        let mut waiting = 0;
        let mut dangling: Vec<String> = Vec::new();
        let mut orphaned_by: Vec<String> = Vec::new();
        for reference in object::owner_references(dependent) {
            let uid = reference.get("uid").and_then(Value::as_str).unwrap_or("").to_string();
            match owners.get(&uid) {
                None => dangling.push(uid),
                Some(owner) if owner.deleting && owner.finalizers.iter().any(|f| f == ORPHAN_FINALIZER) => {
                    orphaned_by.push(uid);
                }
                Some(owner) if owner.deleting && owner.finalizers.iter().any(|f| f == FOREGROUND_FINALIZER) => {
                    waiting += 1;
                    if reference.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true) {
                        *blocking_dependents.entry(uid).or_default() += 1;
                    }
                }
                Some(_) => solid += 1,
            }
        }
        let key = ObjectKey::new(&info.storage, &namespace, &name);
        if !orphaned_by.is_empty() {
            update_quietly(cluster, &key, |object| {
                remove_owner_references(info, object, &orphaned_by)
            });
            orphaning_owners.extend(orphaned_by.iter().cloned());
            if solid + waiting > 0 || dangling.is_empty() {
                continue;
            }
        }
        if solid == 0 && (waiting > 0 || !dangling.is_empty()) && orphaned_by.is_empty() {
            if !object::is_deleting(dependent) {
                let propagation = if waiting > 0 {
                    Propagation::Foreground
                } else {
                    Propagation::Background
                };
                tracing::debug!(resource = %info.plural, namespace, name, ?propagation, "collecting dependent");
                delete_quietly(cluster, info, &namespace, &name, propagation);
            }
        } else if !dangling.is_empty() {
            update_quietly(cluster, &key, |object| remove_owner_references(info, object, &dangling));
        }
    }
    for info in &resources {
        let page = cluster.store.list(&info.storage, None, None, None, &|o| {
            object::is_deleting(o)
                && object::finalizers(o)
                    .iter()
                    .any(|f| f == ORPHAN_FINALIZER || f == FOREGROUND_FINALIZER)
        });
        for owner in page.items {
            let uid = object::uid(&owner).to_string();
            let finalizers = object::finalizers(&owner);
            let key = ObjectKey::new(&info.storage, object::namespace(&owner), object::name(&owner));
            if finalizers.iter().any(|f| f == ORPHAN_FINALIZER) {
                let still_referenced = dependents.iter().any(|(_, d)| {
                    object::owner_references(d)
                        .iter()
                        .any(|r| r.get("uid").and_then(Value::as_str) == Some(&uid))
                }) && !orphaning_owners.contains(&uid);
                if !still_referenced {
                    update_quietly(cluster, &key, |o| remove_finalizer(o, ORPHAN_FINALIZER));
                }
            } else if finalizers.iter().any(|f| f == FOREGROUND_FINALIZER) && !blocking_dependents.contains_key(&uid) {
                update_quietly(cluster, &key, |o| remove_finalizer(o, FOREGROUND_FINALIZER));
            }
        }
    }
}

/// The manager a real cluster's garbage collector writes as.
const COLLECTOR_MANAGER: &str = "kube-controller-manager";

/// Removes the references to `uids` as an update by the collector's manager, so that they also leave the managed
/// fields of whoever set them (and a manager left owning nothing disappears).
fn remove_owner_references(info: &ResourceInfo, object: &mut Value, uids: &[String]) -> bool {
    let before = object.clone();
    let references = object::owner_references(object).to_vec();
    let kept: Vec<Value> = references
        .iter()
        .filter(|r| !uids.iter().any(|u| r.get("uid").and_then(Value::as_str) == Some(u)))
        .cloned()
        .collect();
    if kept.len() == references.len() {
        return false;
    }
    let meta = object::metadata_mut(object);
    if kept.is_empty() {
        meta.remove("ownerReferences");
    } else {
        meta.insert("ownerReferences".into(), Value::Array(kept));
    }
    let options = UpdateOptions {
        manager: COLLECTOR_MANAGER.into(),
        ty: &info.field_type,
        api_version: info.storage_api_version.clone(),
        kind: info.kind.clone(),
        subresource: None,
        time: object::now_rfc3339(),
        ignored_fields: FieldSet::new(),
    };
    *object = record_update(Some(&before), object, &options);
    true
}

fn remove_finalizer(object: &mut Value, finalizer: &str) -> bool {
    let mut finalizers = object::finalizers(object);
    let before = finalizers.len();
    finalizers.retain(|f| f != finalizer);
    if finalizers.len() == before {
        return false;
    }
    object::set_finalizers(object, &finalizers);
    true
}
