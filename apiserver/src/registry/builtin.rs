//! The built-in kinds this server stores: names, scope, short names, categories and subresources.

/// One built-in resource as discovery describes it.
#[derive(Debug, Clone, Copy)]
pub struct BuiltinKind {
    /// API group ("" for core).
    pub group: &'static str,
    /// Served (and storage) version.
    pub version: &'static str,
    /// Plural resource name.
    pub plural: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// kubectl short names.
    pub short_names: &'static [&'static str],
    /// Categories (`all`).
    pub categories: &'static [&'static str],
    /// Whether the kind has a `/status` subresource.
    pub status: bool,
    /// Whether `metadata.generation` is maintained.
    pub generation: bool,
    /// Storage identity when two resources share one store (events), otherwise None.
    pub shared_storage: Option<(&'static str, &'static str)>,
}

const fn kind(
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
) -> BuiltinKind {
    BuiltinKind {
        group,
        version,
        plural,
        kind,
        namespaced,
        short_names: &[],
        categories: &[],
        status: false,
        generation: false,
        shared_storage: None,
    }
}

impl BuiltinKind {
    const fn short(mut self, names: &'static [&'static str]) -> Self {
        self.short_names = names;
        self
    }
    const fn all(mut self) -> Self {
        self.categories = &["all"];
        self
    }
    const fn with_status(mut self) -> Self {
        self.status = true;
        self
    }
    const fn with_generation(mut self) -> Self {
        self.generation = true;
        self
    }
}

/// Every built-in resource, in the order discovery lists groups.
pub const BUILTIN_KINDS: &[BuiltinKind] = &[
    kind("", "v1", "configmaps", "ConfigMap", true).short(&["cm"]),
    kind("", "v1", "endpoints", "Endpoints", true).short(&["ep"]),
    kind("", "v1", "events", "Event", true).short(&["ev"]),
    kind("", "v1", "limitranges", "LimitRange", true).short(&["limits"]),
    kind("", "v1", "namespaces", "Namespace", false)
        .short(&["ns"])
        .with_status(),
    kind("", "v1", "nodes", "Node", false).short(&["no"]).with_status(),
    kind("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true)
        .short(&["pvc"])
        .with_status(),
    kind("", "v1", "persistentvolumes", "PersistentVolume", false)
        .short(&["pv"])
        .with_status(),
    kind("", "v1", "pods", "Pod", true)
        .short(&["po"])
        .all()
        .with_status()
        .with_generation(),
    kind("", "v1", "resourcequotas", "ResourceQuota", true)
        .short(&["quota"])
        .with_status(),
    kind("", "v1", "secrets", "Secret", true),
    kind("", "v1", "serviceaccounts", "ServiceAccount", true).short(&["sa"]),
    kind("", "v1", "services", "Service", true)
        .short(&["svc"])
        .all()
        .with_status(),
    kind(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        false,
    )
    .short(&["crd", "crds"])
    .with_status()
    .with_generation(),
    kind("apps", "v1", "controllerrevisions", "ControllerRevision", true),
    kind("apps", "v1", "daemonsets", "DaemonSet", true)
        .short(&["ds"])
        .all()
        .with_status()
        .with_generation(),
    kind("apps", "v1", "deployments", "Deployment", true)
        .short(&["deploy"])
        .all()
        .with_status()
        .with_generation(),
    kind("apps", "v1", "replicasets", "ReplicaSet", true)
        .short(&["rs"])
        .all()
        .with_status()
        .with_generation(),
    kind("apps", "v1", "statefulsets", "StatefulSet", true)
        .short(&["sts"])
        .all()
        .with_status()
        .with_generation(),
    kind(
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        true,
    )
    .short(&["hpa"])
    .all()
    .with_status(),
    kind("batch", "v1", "cronjobs", "CronJob", true)
        .short(&["cj"])
        .all()
        .with_status()
        .with_generation(),
    kind("batch", "v1", "jobs", "Job", true)
        .all()
        .with_status()
        .with_generation(),
    kind("coordination.k8s.io", "v1", "leases", "Lease", true),
    kind("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", true),
    BuiltinKind {
        shared_storage: Some(("", "events")),
        ..kind("events.k8s.io", "v1", "events", "Event", true).short(&["ev"])
    },
    kind("networking.k8s.io", "v1", "ingresses", "Ingress", true)
        .short(&["ing"])
        .with_status()
        .with_generation(),
    kind("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", true)
        .short(&["netpol"])
        .with_generation(),
    kind("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", true)
        .short(&["pdb"])
        .with_status()
        .with_generation(),
    kind(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        false,
    ),
    kind("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", false),
    kind("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", true),
    kind("rbac.authorization.k8s.io", "v1", "roles", "Role", true),
    kind("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", false).short(&["pc"]),
    kind("storage.k8s.io", "v1", "storageclasses", "StorageClass", false).short(&["sc"]),
];

/// The built-in API groups in the order `/apis` lists them.
pub const BUILTIN_GROUP_ORDER: &[&str] = &[
    "apps",
    "events.k8s.io",
    "autoscaling",
    "batch",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
];
