//! The shared server state: store, registry of served kinds, fault injection, and background work triggers.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::fault::FaultState;
use crate::object;
use crate::patch::{FieldPath, FieldSet, UpdateOptions, record_update};
use crate::registry::{Registry, ResourceInfo, StorageId, crd};
use crate::storage::{Change, ObjectKey, Store};

/// Namespaces every cluster has.
pub const DEFAULT_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

/// Namespaces that may not be deleted.
pub const UNDELETABLE_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public"];

/// Store id of namespaces.
pub fn namespaces_storage() -> StorageId {
    StorageId::from("/namespaces")
}

/// Store id of CRDs.
pub fn crd_storage() -> StorageId {
    StorageId::from("apiextensions.k8s.io/customresourcedefinitions")
}

/// Settings fixed at startup.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Static bearer token, if required.
    pub bearer_token: Option<String>,
    /// Interval between watch bookmarks.
    pub bookmark_interval: Duration,
}

/// Everything a request handler or background task needs.
#[derive(Debug)]
pub struct Cluster {
    /// Object storage.
    pub store: Store,
    registry: RwLock<Arc<Registry>>,
    /// Fault injection.
    pub faults: FaultState,
    /// Startup settings.
    pub settings: Settings,
    /// Wakes the garbage collector.
    pub collector_wakeup: Arc<Notify>,
    /// The PEM certificate published as `kube-root-ca.crt` (None when it could not be made).
    root_ca: Option<String>,
}

/// A self-signed CA certificate for the `kube-root-ca.crt` ConfigMaps. The server speaks plain HTTP on loopback, so
/// nothing is signed with it; it is there so that workloads and tools that read the ConfigMap find a certificate.
fn make_root_ca() -> Result<String, rcgen::Error> {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new())?;
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "wasm-reconciler-apiserver-ca");
    let key = rcgen::KeyPair::generate()?;
    Ok(params.self_signed(&key)?.pem())
}

impl Cluster {
    /// State over a store; builds the registry from the stored CRDs.
    pub fn new(store: Store, settings: Settings) -> Self {
        let cluster = Cluster {
            store,
            registry: RwLock::new(Arc::new(Registry::default())),
            faults: FaultState::default(),
            settings,
            collector_wakeup: Arc::new(Notify::new()),
            root_ca: make_root_ca()
                .inspect_err(|error| tracing::error!(%error, "cannot make the CA certificate of kube-root-ca.crt"))
                .ok(),
        };
        cluster.refresh_registry();
        cluster
    }

    /// The CA certificate (PEM) that `kube-root-ca.crt` ConfigMaps carry.
    pub fn root_ca(&self) -> Option<&str> {
        self.root_ca.as_deref()
    }

    /// The current registry snapshot.
    pub fn registry(&self) -> Arc<Registry> {
        self.registry.read().clone()
    }

    /// Rebuild the registry from the stored CRDs.
    pub fn refresh_registry(&self) {
        let page = self.store.list(&crd_storage(), None, None, None, &|_| true);
        let registry = Arc::new(Registry::build(page.items.iter().map(|c| c.as_ref())));
        let previous = std::mem::replace(&mut *self.registry.write(), registry.clone());
        let served_before: Vec<_> = previous
            .storage_resources()
            .into_iter()
            .map(|p| p.storage.clone())
            .collect();
        for info in registry.storage_resources() {
            if info.custom.is_some() && !served_before.contains(&info.storage) {
                self.store.start_history(&info.storage);
            }
        }
    }

    /// Ask the garbage collector for a pass.
    pub fn wake_collector(&self) {
        self.collector_wakeup.notify_one();
    }

    /// Whether a namespace exists, and whether it is terminating.
    pub fn namespace_state(&self, name: &str) -> Option<bool> {
        let key = ObjectKey::new(&namespaces_storage(), "", name);
        self.store.get(&key).map(|ns| object::is_deleting(&ns))
    }

    /// Create the default namespaces and the `kubernetes` service when missing.
    pub fn bootstrap(&self) {
        let now = object::now_rfc3339();
        for name in DEFAULT_NAMESPACES {
            let key = ObjectKey::new(&namespaces_storage(), "", name);
            let namespace = json!({
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": name,
                    "uid": uuid::Uuid::new_v4().to_string(),
                    "creationTimestamp": now,
                    "labels": {"kubernetes.io/metadata.name": name},
                },
                "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Active"},
            });
            let result = self.store.write(&key, false, |current, _| {
                Ok(match current {
                    Some(existing) => Change::Unchanged(existing.clone()),
                    None => Change::Create(namespace),
                })
            });
            if let Err(error) = result {
                tracing::error!(%error, namespace = name, "cannot create default namespace");
            }
        }
        let key = ObjectKey::new(&StorageId::from("/services"), "default", "kubernetes");
        let service = json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": "kubernetes",
                "namespace": "default",
                "uid": uuid::Uuid::new_v4().to_string(),
                "creationTimestamp": now,
                "labels": {"component": "apiserver", "provider": "kubernetes"},
            },
            "spec": {
                "clusterIP": "10.96.0.1",
                "clusterIPs": ["10.96.0.1"],
                "internalTrafficPolicy": "Cluster",
                "ipFamilies": ["IPv4"],
                "ipFamilyPolicy": "SingleStack",
                "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}],
                "sessionAffinity": "None",
                "type": "ClusterIP",
            },
            "status": {"loadBalancer": {}},
        });
        let result = self.store.write(&key, false, |current, _| {
            Ok(match current {
                Some(existing) => Change::Unchanged(existing.clone()),
                None => Change::Create(service),
            })
        });
        if let Err(error) = result {
            tracing::error!(%error, "cannot create the kubernetes service");
        }
    }

    /// Set `NamesAccepted`/`Established` on a CRD when they are not current, then refresh discovery.
    pub fn reconcile_crd(&self, name: &str) {
        let key = ObjectKey::new(&crd_storage(), "", name);
        let crds = self.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions");
        let result = self.store.write(&key, false, |current, _| {
            let Some(current) = current else {
                return Ok(Change::Unchanged(Arc::new(Value::Null)));
            };
            let status = crd::accepted_status(current, Some(current), None);
            let same = |a: &Value, b: &Value| {
                let strip = |v: &Value| {
                    let mut v = v.clone();
                    if let Some(conditions) = v.get_mut("conditions").and_then(Value::as_array_mut) {
                        for c in conditions {
                            if let Some(c) = c.as_object_mut() {
                                c.remove("lastTransitionTime");
                            }
                        }
                    }
                    v
                };
                strip(a) == strip(b)
            };
            if current.get("status").is_some_and(|s| same(s, &status)) {
                return Ok(Change::Unchanged(current.clone()));
            }
            let mut updated = (**current).clone();
            updated["status"] = status;
            // The real server's CRD controllers write status as `kube-apiserver`, which managedFields record.
            if let Some(info) = &crds {
                let options = UpdateOptions {
                    manager: "kube-apiserver".into(),
                    ty: &info.field_type,
                    api_version: info.api_version(),
                    kind: info.kind.clone(),
                    subresource: Some("status".into()),
                    time: object::now_rfc3339(),
                    ignored_fields: FieldSet::from_paths([FieldPath::fields(["spec"])]),
                };
                updated = record_update(Some(current), &updated, &options);
            }
            Ok(Change::Update(updated))
        });
        if let Err(error) = result {
            tracing::error!(%error, crd = name, "cannot update CRD status");
        }
        self.refresh_registry();
    }

    /// Resolve a resource by group/version/plural.
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
        self.registry().lookup(group, version, plural)
    }
}
