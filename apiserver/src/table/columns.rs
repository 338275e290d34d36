//! The columns of built-in kinds' Tables, with the names, types, priorities and descriptions kube-apiserver gives
//! them (the descriptions are the API's field documentation).

use crate::registry::ResourceInfo;

/// One column definition.
pub(super) struct Column {
    pub name: &'static str,
    pub column_type: &'static str,
    pub format: &'static str,
    pub priority: i64,
    pub description: &'static str,
}

/// Description of every `Name` column (`ObjectMeta.name`).
pub(super) const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// Description of every `Age` column (`ObjectMeta.creationTimestamp`).
pub(super) const AGE_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

const fn col(name: &'static str, column_type: &'static str, description: &'static str) -> Column {
    Column {
        name,
        column_type,
        format: "",
        priority: 0,
        description,
    }
}

const fn wide(name: &'static str, description: &'static str) -> Column {
    Column {
        name,
        column_type: "string",
        format: "",
        priority: 1,
        description,
    }
}

pub(super) const NAME: Column = Column {
    name: "Name",
    column_type: "string",
    format: "name",
    priority: 0,
    description: NAME_DESCRIPTION,
};

const AGE: Column = col("Age", "string", AGE_DESCRIPTION);

/// The columns kube-apiserver prints for a built-in kind (None: the default `Name`, `Created At`).
pub(super) fn builtin_columns(info: &ResourceInfo) -> Option<Vec<Column>> {
    let columns = match (info.group.as_str(), info.kind.as_str()) {
        ("", "Pod") => vec![
            NAME,
            col(
                "Ready",
                "string",
                "The aggregate readiness state of this pod for accepting traffic.",
            ),
            col(
                "Status",
                "string",
                "The aggregate status of the containers in this pod.",
            ),
            col(
                "Restarts",
                "string",
                "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
            ),
            AGE,
            wide(
                "IP",
                "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
            ),
            wide(
                "Node",
                "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename",
            ),
            wide(
                "Nominated Node",
                "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.",
            ),
            wide(
                "Readiness Gates",
                "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates",
            ),
        ],
        ("", "Service") => vec![
            NAME,
            col(
                "Type",
                "string",
                "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer. \"ClusterIP\" allocates a cluster-internal IP address for load-balancing to endpoints. Endpoints are determined by the selector or if that is not specified, by manual construction of an Endpoints object or EndpointSlice objects. If clusterIP is \"None\", no virtual IP is allocated and the endpoints are published as a set of endpoints rather than a virtual IP. \"NodePort\" builds on ClusterIP and allocates a port on every node which routes to the same endpoints as the clusterIP. \"LoadBalancer\" builds on NodePort and creates an external load-balancer (if supported in the current cloud) which routes to the same endpoints as the clusterIP. \"ExternalName\" aliases this service to the specified externalName. Several other fields do not apply to ExternalName services. More info: https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types",
            ),
            col(
                "Cluster-IP",
                "string",
                "clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified manually, is in-range (as per system configuration), and is not in use, it will be allocated to the service; otherwise creation of the service will fail. This field may not be changed through updates unless the type field is also being changed to ExternalName (which requires this field to be blank) or the type field is being changed from ExternalName (in which case this field may optionally be specified, as describe above).  Valid values are \"None\", empty string (\"\"), or a valid IP address. Setting this to \"None\" makes a \"headless service\" (no virtual IP), which is useful when direct endpoint connections are preferred and proxying is not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a Service of type ExternalName, creation will fail. This field will be wiped when updating a Service to type ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies",
            ),
            col(
                "External-IP",
                "string",
                "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node with this IP.  A common example is external load-balancers that are not part of the Kubernetes system.",
            ),
            col(
                "Port(s)",
                "string",
                "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies",
            ),
            AGE,
            wide(
                "Selector",
                "Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/",
            ),
        ],
        ("apps", "Deployment") => vec![
            NAME,
            col("Ready", "string", "Number of the pod with ready state"),
            col(
                "Up-to-date",
                "string",
                "Total number of non-terminating pods targeted by this deployment that have the desired template spec.",
            ),
            col(
                "Available",
                "string",
                "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment.",
            ),
            AGE,
            wide("Containers", "Names of each container in the template."),
            wide("Images", "Images referenced by each container in the template."),
            wide(
                "Selector",
                "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment. It must match the pod template's labels.",
            ),
        ],
        ("apps", "ReplicaSet") => vec![
            NAME,
            col(
                "Desired",
                "integer",
                "Replicas is the number of desired pods. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset",
            ),
            col(
                "Current",
                "integer",
                "Replicas is the most recently observed number of non-terminating pods. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset",
            ),
            col(
                "Ready",
                "integer",
                "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition.",
            ),
            AGE,
            wide("Containers", "Names of each container in the template."),
            wide("Images", "Images referenced by each container in the template."),
            wide(
                "Selector",
                "Selector is a label query over pods that should match the replica count. Label keys and values that must match in order to be controlled by this replica set. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
            ),
        ],
        ("apps", "StatefulSet") => vec![
            NAME,
            col("Ready", "string", "Number of the pod with ready state"),
            AGE,
            wide("Containers", "Names of each container in the template."),
            wide("Images", "Images referenced by each container in the template."),
        ],
        ("apps", "DaemonSet") => vec![
            NAME,
            col(
                "Desired",
                "integer",
                "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod). More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/",
            ),
            col(
                "Current",
                "integer",
                "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/",
            ),
            col(
                "Ready",
                "integer",
                "numberReady is the number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition.",
            ),
            col(
                "Up-to-date",
                "integer",
                "The total number of nodes that are running updated daemon pod",
            ),
            col(
                "Available",
                "integer",
                "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)",
            ),
            col(
                "Node Selector",
                "string",
                "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node. More info: https://kubernetes.io/docs/concepts/configuration/assign-pod-node/",
            ),
            AGE,
            wide("Containers", "Names of each container in the template."),
            wide("Images", "Images referenced by each container in the template."),
            wide(
                "Selector",
                "A label query over pods that are managed by the daemon set. Must match in order to be controlled. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
            ),
        ],
        ("batch", "Job") => vec![
            NAME,
            col("Status", "string", "Status of the job."),
            col(
                "Completions",
                "string",
                "The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. However, it may decrease in reaction to scale down of elastic indexed jobs.",
            ),
            col("Duration", "string", "Time required to complete the job."),
            AGE,
            wide("Containers", "Names of each container in the template."),
            wide("Images", "Images referenced by each container in the template."),
            wide(
                "Selector",
                "A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
            ),
        ],
        ("batch", "CronJob") => vec![
            NAME,
            col(
                "Schedule",
                "string",
                "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.",
            ),
            col(
                "Timezone",
                "string",
                "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not specified, this will default to the time zone of the kube-controller-manager process. The set of valid time zone names and the time zone offset is loaded from the system-wide time zone database by the API server during CronJob validation and the controller manager during execution. If no system-wide time zone database can be found a bundled version of the database is used instead. If the time zone name becomes invalid during the lifetime of a CronJob or due to a change in host configuration, the controller will stop creating new new Jobs and will create a system event with the reason UnknownTimeZone. More information can be found in https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones",
            ),
            col(
                "Suspend",
                "boolean",
                "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.  Defaults to false.",
            ),
            col("Active", "integer", "A list of pointers to currently running jobs."),
            col(
                "Last Schedule",
                "string",
                "Information when was the last time the job was successfully scheduled.",
            ),
            AGE,
            wide("Containers", "Names of each container in the template."),
            wide("Images", "Images referenced by each container in the template."),
            wide(
                "Selector",
                "A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
            ),
        ],
        ("", "Namespace") => vec![NAME, col("Status", "string", "The status of the namespace"), AGE],
        ("", "ConfigMap") => vec![
            NAME,
            col(
                "Data",
                "string",
                "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.",
            ),
            AGE,
        ],
        ("", "Secret") => vec![
            NAME,
            col(
                "Type",
                "string",
                "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types",
            ),
            col(
                "Data",
                "string",
                "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4",
            ),
            AGE,
        ],
        ("", "ServiceAccount") => vec![NAME, AGE],
        (_, "Event") => vec![
            col(
                "Last Seen",
                "string",
                "The time at which the most recent occurrence of this event was recorded.",
            ),
            col(
                "Type",
                "string",
                "Type of this event (Normal, Warning), new types could be added in the future",
            ),
            col(
                "Reason",
                "string",
                "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
            ),
            col("Object", "string", "The object that this event is about."),
            wide(
                "Subobject",
                "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.",
            ),
            wide(
                "Source",
                "The component reporting this event. Should be a short machine understandable string.",
            ),
            col(
                "Message",
                "string",
                "A human-readable description of the status of this operation.",
            ),
            wide(
                "First Seen",
                "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
            ),
            wide("Count", "The number of times this event has occurred."),
            Column {
                name: "Name",
                column_type: "string",
                format: "name",
                priority: 1,
                description: "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
            },
        ],
        ("coordination.k8s.io", "Lease") => vec![
            NAME,
            col(
                "Holder",
                "string",
                "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field.",
            ),
            AGE,
        ],
        ("apiextensions.k8s.io", "CustomResourceDefinition") => vec![
            NAME,
            col("Scope", "string", "Cluster/Namespaced"),
            col("Versions", "string", "Served versions"),
            col(
                "Created At",
                "date",
                "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
            ),
            wide("Group", "API group"),
            wide("Kind", "CustomResource kind"),
            wide("ShortNames", "Short names"),
            Column {
                name: "Established",
                column_type: "boolean",
                format: "",
                priority: 1,
                description: "Established status",
            },
        ],
        _ => return None,
    };
    Some(columns)
}
