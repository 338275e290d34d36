//! Hand-written merge semantics of the built-in kinds, transcribed from the Kubernetes 1.33 Go types
//! (`+listType`, `+listMapKey`, `+mapType`, `+structType`, `patchStrategy`, `patchMergeKey`).

use super::typeinfo::{FieldType, ListPatch};
use serde_json::{Value, json};

fn s() -> FieldType {
    FieldType::Scalar
}

fn untyped() -> FieldType {
    FieldType::Untyped
}

fn st<const N: usize>(fields: [(&str, FieldType); N]) -> FieldType {
    FieldType::structure(fields)
}

fn scalars<const N: usize>(names: [&str; N]) -> Vec<(&str, FieldType)> {
    names.into_iter().map(|n| (n, s())).collect()
}

fn st_with(scalar_names: &[&str], fields: Vec<(&str, FieldType)>) -> FieldType {
    let mut all: Vec<(&str, FieldType)> = scalar_names.iter().map(|n| (*n, s())).collect();
    all.extend(fields);
    FieldType::structure(all)
}

fn string_map() -> FieldType {
    FieldType::map_of(s())
}

fn atomic_scalars() -> FieldType {
    FieldType::atomic_list(s())
}

/// `metav1.ObjectMeta`.
pub(crate) fn object_meta() -> FieldType {
    st_with(
        &[
            "name",
            "generateName",
            "namespace",
            "selfLink",
            "uid",
            "resourceVersion",
            "generation",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ],
        vec![
            ("labels", string_map()),
            ("annotations", string_map()),
            ("ownerReferences", FieldType::keyed_list(owner_reference(), &["uid"])),
            ("finalizers", FieldType::set_list(s())),
            (
                "managedFields",
                FieldType::atomic_list(FieldType::structure(scalars([
                    "manager",
                    "operation",
                    "apiVersion",
                    "time",
                    "fieldsType",
                    "fieldsV1",
                    "subresource",
                ]))),
            ),
        ],
    )
}

/// `metav1.OwnerReference` (`+structType=atomic`).
fn owner_reference() -> FieldType {
    FieldType::structure(scalars([
        "apiVersion",
        "kind",
        "name",
        "uid",
        "controller",
        "blockOwnerDeletion",
    ]))
    .atomic()
}

/// `metav1.LabelSelector` (`+structType=atomic`).
fn label_selector() -> FieldType {
    st([
        ("matchLabels", string_map()),
        (
            "matchExpressions",
            FieldType::atomic_list(st_with(&["key", "operator"], vec![("values", atomic_scalars())])),
        ),
    ])
    .atomic()
}

/// `corev1.ObjectReference` (`+structType=atomic`).
fn object_reference() -> FieldType {
    FieldType::structure(scalars([
        "kind",
        "namespace",
        "name",
        "uid",
        "apiVersion",
        "resourceVersion",
        "fieldPath",
    ]))
    .atomic()
}

/// `corev1.LocalObjectReference` (`+structType=atomic`).
fn local_object_reference() -> FieldType {
    st([("name", s())]).atomic()
}

/// A status condition (`metav1.Condition` and the per-kind condition types).
fn condition() -> FieldType {
    FieldType::structure(scalars([
        "type",
        "status",
        "observedGeneration",
        "lastProbeTime",
        "lastHeartbeatTime",
        "lastUpdateTime",
        "lastTransitionTime",
        "reason",
        "message",
    ]))
}

/// `+listType=map +listMapKey=type +patchStrategy=merge +patchMergeKey=type`.
fn conditions() -> FieldType {
    FieldType::keyed_list(condition(), &["type"])
}

fn key_selector() -> FieldType {
    FieldType::structure(scalars(["name", "key", "optional"])).atomic()
}

fn env_var() -> FieldType {
    st_with(
        &["name", "value"],
        vec![(
            "valueFrom",
            st([
                (
                    "fieldRef",
                    FieldType::structure(scalars(["apiVersion", "fieldPath"])).atomic(),
                ),
                (
                    "resourceFieldRef",
                    FieldType::structure(scalars(["containerName", "resource", "divisor"])).atomic(),
                ),
                ("configMapKeyRef", key_selector()),
                ("secretKeyRef", key_selector()),
                (
                    "fileKeyRef",
                    FieldType::structure(scalars(["volumeName", "path", "key", "optional"])).atomic(),
                ),
            ]),
        )],
    )
}

fn env_from_source() -> FieldType {
    let reference = FieldType::structure(scalars(["name", "optional"])).atomic();
    st([
        ("prefix", s()),
        ("configMapRef", reference.clone()),
        ("secretRef", reference),
    ])
}

fn resource_requirements() -> FieldType {
    st([
        ("limits", string_map()),
        ("requests", string_map()),
        (
            "claims",
            FieldType::keyed_list(FieldType::structure(scalars(["name", "request"])), &["name"])
                .with_patch(ListPatch::Replace),
        ),
    ])
}

fn http_get() -> FieldType {
    st_with(
        &["path", "port", "host", "scheme"],
        vec![(
            "httpHeaders",
            FieldType::atomic_list(FieldType::structure(scalars(["name", "value"]))),
        )],
    )
}

fn exec_action() -> FieldType {
    st([("command", atomic_scalars())])
}

fn probe() -> FieldType {
    st_with(
        &[
            "initialDelaySeconds",
            "timeoutSeconds",
            "periodSeconds",
            "successThreshold",
            "failureThreshold",
            "terminationGracePeriodSeconds",
        ],
        vec![
            ("exec", exec_action()),
            ("httpGet", http_get()),
            ("tcpSocket", FieldType::structure(scalars(["port", "host"]))),
            ("grpc", FieldType::structure(scalars(["port", "service"]))),
        ],
    )
}

fn lifecycle_handler() -> FieldType {
    st([
        ("exec", exec_action()),
        ("httpGet", http_get()),
        ("tcpSocket", FieldType::structure(scalars(["port", "host"]))),
        ("sleep", st([("seconds", s())])),
    ])
}

fn se_linux_options() -> FieldType {
    FieldType::structure(scalars(["user", "role", "type", "level"]))
}

fn windows_options() -> FieldType {
    FieldType::structure(scalars([
        "gmsaCredentialSpecName",
        "gmsaCredentialSpec",
        "runAsUserName",
        "hostProcess",
    ]))
}

fn profile() -> FieldType {
    FieldType::structure(scalars(["type", "localhostProfile"]))
}

fn security_context() -> FieldType {
    st_with(
        &[
            "privileged",
            "runAsUser",
            "runAsGroup",
            "runAsNonRoot",
            "readOnlyRootFilesystem",
            "allowPrivilegeEscalation",
            "procMount",
        ],
        vec![
            (
                "capabilities",
                st([("add", atomic_scalars()), ("drop", atomic_scalars())]),
            ),
            ("seLinuxOptions", se_linux_options()),
            ("windowsOptions", windows_options()),
            ("seccompProfile", profile()),
            ("appArmorProfile", profile()),
        ],
    )
}

fn pod_security_context() -> FieldType {
    st_with(
        &[
            "runAsUser",
            "runAsGroup",
            "runAsNonRoot",
            "supplementalGroupsPolicy",
            "fsGroup",
            "fsGroupChangePolicy",
            "seLinuxChangePolicy",
        ],
        vec![
            ("seLinuxOptions", se_linux_options()),
            ("windowsOptions", windows_options()),
            ("supplementalGroups", atomic_scalars()),
            (
                "sysctls",
                FieldType::atomic_list(FieldType::structure(scalars(["name", "value"]))),
            ),
            ("seccompProfile", profile()),
            ("appArmorProfile", profile()),
        ],
    )
}

fn container() -> FieldType {
    st_with(
        &[
            "name",
            "image",
            "workingDir",
            "imagePullPolicy",
            "terminationMessagePath",
            "terminationMessagePolicy",
            "stdin",
            "stdinOnce",
            "tty",
            "restartPolicy",
            "targetContainerName",
        ],
        vec![
            ("command", atomic_scalars()),
            ("args", atomic_scalars()),
            (
                "ports",
                FieldType::keyed_list(
                    FieldType::structure(scalars(["name", "hostPort", "containerPort", "protocol", "hostIP"])),
                    &["containerPort", "protocol"],
                )
                .with_key_default("protocol", json!("TCP")),
            ),
            ("envFrom", FieldType::atomic_list(env_from_source())),
            ("env", FieldType::keyed_list(env_var(), &["name"])),
            ("resources", resource_requirements()),
            (
                "resizePolicy",
                FieldType::atomic_list(FieldType::structure(scalars(["resourceName", "restartPolicy"]))),
            ),
            (
                "volumeMounts",
                FieldType::keyed_list(
                    FieldType::structure(scalars([
                        "name",
                        "readOnly",
                        "recursiveReadOnly",
                        "mountPath",
                        "subPath",
                        "mountPropagation",
                        "subPathExpr",
                    ])),
                    &["mountPath"],
                ),
            ),
            (
                "volumeDevices",
                FieldType::keyed_list(FieldType::structure(scalars(["name", "devicePath"])), &["devicePath"]),
            ),
            ("livenessProbe", probe()),
            ("readinessProbe", probe()),
            ("startupProbe", probe()),
            (
                "lifecycle",
                st([
                    ("postStart", lifecycle_handler()),
                    ("preStop", lifecycle_handler()),
                    ("stopSignal", s()),
                ]),
            ),
            ("securityContext", security_context()),
        ],
    )
}

fn key_to_path_items() -> FieldType {
    FieldType::atomic_list(FieldType::structure(scalars(["key", "path", "mode"])))
}

fn volume() -> FieldType {
    st([
        ("name", s()),
        ("hostPath", FieldType::structure(scalars(["path", "type"]))),
        ("emptyDir", FieldType::structure(scalars(["medium", "sizeLimit"]))),
        (
            "secret",
            st_with(
                &["secretName", "defaultMode", "optional"],
                vec![("items", key_to_path_items())],
            ),
        ),
        (
            "configMap",
            st_with(
                &["name", "defaultMode", "optional"],
                vec![("items", key_to_path_items())],
            ),
        ),
        (
            "persistentVolumeClaim",
            FieldType::structure(scalars(["claimName", "readOnly"])),
        ),
        (
            "projected",
            st_with(&["defaultMode"], vec![("sources", FieldType::atomic_list(untyped()))]),
        ),
        (
            "downwardAPI",
            st_with(&["defaultMode"], vec![("items", FieldType::atomic_list(untyped()))]),
        ),
        (
            "csi",
            st_with(
                &["driver", "readOnly", "fsType"],
                vec![
                    ("volumeAttributes", string_map()),
                    ("nodePublishSecretRef", local_object_reference()),
                ],
            ),
        ),
        ("ephemeral", st([("volumeClaimTemplate", untyped())])),
        ("image", FieldType::structure(scalars(["reference", "pullPolicy"]))),
        ("nfs", FieldType::structure(scalars(["server", "path", "readOnly"]))),
    ])
}

fn node_selector_term() -> FieldType {
    let requirement = st_with(&["key", "operator"], vec![("values", atomic_scalars())]);
    st([
        ("matchExpressions", FieldType::atomic_list(requirement.clone())),
        ("matchFields", FieldType::atomic_list(requirement)),
    ])
    .atomic()
}

fn pod_affinity_term() -> FieldType {
    st_with(
        &["topologyKey"],
        vec![
            ("labelSelector", label_selector()),
            ("namespaces", atomic_scalars()),
            ("namespaceSelector", label_selector()),
            ("matchLabelKeys", atomic_scalars()),
            ("mismatchLabelKeys", atomic_scalars()),
        ],
    )
}

fn pod_affinity() -> FieldType {
    st([
        (
            "requiredDuringSchedulingIgnoredDuringExecution",
            FieldType::atomic_list(pod_affinity_term()),
        ),
        (
            "preferredDuringSchedulingIgnoredDuringExecution",
            FieldType::atomic_list(st([("weight", s()), ("podAffinityTerm", pod_affinity_term())])),
        ),
    ])
}

fn affinity() -> FieldType {
    st([
        (
            "nodeAffinity",
            st([
                (
                    "requiredDuringSchedulingIgnoredDuringExecution",
                    st([("nodeSelectorTerms", FieldType::atomic_list(node_selector_term()))]).atomic(),
                ),
                (
                    "preferredDuringSchedulingIgnoredDuringExecution",
                    FieldType::atomic_list(st([("weight", s()), ("preference", node_selector_term())])),
                ),
            ]),
        ),
        ("podAffinity", pod_affinity()),
        ("podAntiAffinity", pod_affinity()),
    ])
}

/// `corev1.PodSpec`.
fn pod_spec() -> FieldType {
    st_with(
        &[
            "restartPolicy",
            "terminationGracePeriodSeconds",
            "activeDeadlineSeconds",
            "dnsPolicy",
            "serviceAccountName",
            "serviceAccount",
            "automountServiceAccountToken",
            "nodeName",
            "hostNetwork",
            "hostPID",
            "hostIPC",
            "shareProcessNamespace",
            "hostname",
            "subdomain",
            "schedulerName",
            "priorityClassName",
            "priority",
            "runtimeClassName",
            "enableServiceLinks",
            "preemptionPolicy",
            "setHostnameAsFQDN",
            "hostUsers",
        ],
        vec![
            ("volumes", FieldType::keyed_list(volume(), &["name"])),
            ("initContainers", FieldType::keyed_list(container(), &["name"])),
            ("containers", FieldType::keyed_list(container(), &["name"])),
            ("ephemeralContainers", FieldType::keyed_list(container(), &["name"])),
            ("nodeSelector", string_map().atomic()),
            ("securityContext", pod_security_context()),
            (
                "imagePullSecrets",
                FieldType::keyed_list(local_object_reference(), &["name"]),
            ),
            ("affinity", affinity()),
            (
                "tolerations",
                FieldType::atomic_list(FieldType::structure(scalars([
                    "key",
                    "operator",
                    "value",
                    "effect",
                    "tolerationSeconds",
                ]))),
            ),
            (
                "hostAliases",
                FieldType::keyed_list(st([("ip", s()), ("hostnames", atomic_scalars())]), &["ip"]),
            ),
            (
                "dnsConfig",
                st([
                    ("nameservers", atomic_scalars()),
                    ("searches", atomic_scalars()),
                    (
                        "options",
                        FieldType::atomic_list(FieldType::structure(scalars(["name", "value"]))),
                    ),
                ]),
            ),
            ("readinessGates", FieldType::atomic_list(st([("conditionType", s())]))),
            ("overhead", string_map()),
            (
                "topologySpreadConstraints",
                FieldType::keyed_list(
                    st_with(
                        &[
                            "maxSkew",
                            "topologyKey",
                            "whenUnsatisfiable",
                            "minDomains",
                            "nodeAffinityPolicy",
                            "nodeTaintsPolicy",
                        ],
                        vec![
                            ("labelSelector", label_selector()),
                            ("matchLabelKeys", atomic_scalars()),
                        ],
                    ),
                    &["topologyKey", "whenUnsatisfiable"],
                ),
            ),
            ("os", st([("name", s())])),
            ("schedulingGates", FieldType::keyed_list(st([("name", s())]), &["name"])),
            (
                "resourceClaims",
                FieldType::keyed_list(
                    FieldType::structure(scalars(["name", "resourceClaimName", "resourceClaimTemplateName"])),
                    &["name"],
                ),
            ),
            ("resources", resource_requirements()),
        ],
    )
}

fn pod_status() -> FieldType {
    st_with(
        &[
            "observedGeneration",
            "phase",
            "message",
            "reason",
            "nominatedNodeName",
            "hostIP",
            "podIP",
            "startTime",
            "qosClass",
            "resize",
        ],
        vec![
            ("conditions", conditions()),
            (
                "hostIPs",
                FieldType::atomic_list(st([("ip", s())])).with_patch(ListPatch::MergeByKey("ip".into())),
            ),
            ("podIPs", FieldType::keyed_list(st([("ip", s())]), &["ip"])),
            ("initContainerStatuses", FieldType::atomic_list(untyped())),
            ("containerStatuses", FieldType::atomic_list(untyped())),
            ("ephemeralContainerStatuses", FieldType::atomic_list(untyped())),
            (
                "resourceClaimStatuses",
                FieldType::keyed_list(FieldType::structure(scalars(["name", "resourceClaimName"])), &["name"]),
            ),
        ],
    )
}

fn pod_template() -> FieldType {
    st([("metadata", object_meta()), ("spec", pod_spec())])
}

fn service_spec() -> FieldType {
    st_with(
        &[
            "clusterIP",
            "type",
            "externalName",
            "externalTrafficPolicy",
            "healthCheckNodePort",
            "publishNotReadyAddresses",
            "sessionAffinity",
            "loadBalancerIP",
            "ipFamilyPolicy",
            "allocateLoadBalancerNodePorts",
            "loadBalancerClass",
            "internalTrafficPolicy",
            "trafficDistribution",
        ],
        vec![
            (
                "ports",
                FieldType::keyed_list(
                    FieldType::structure(scalars([
                        "name",
                        "protocol",
                        "appProtocol",
                        "port",
                        "targetPort",
                        "nodePort",
                    ])),
                    &["port", "protocol"],
                )
                .with_key_default("protocol", json!("TCP")),
            ),
            ("selector", string_map().atomic()),
            ("clusterIPs", atomic_scalars()),
            ("externalIPs", atomic_scalars()),
            ("loadBalancerSourceRanges", atomic_scalars()),
            ("ipFamilies", atomic_scalars()),
            (
                "sessionAffinityConfig",
                st([("clientIP", st([("timeoutSeconds", s())]))]),
            ),
        ],
    )
}

fn crd_names() -> FieldType {
    st_with(
        &["plural", "singular", "kind", "listKind"],
        vec![("shortNames", atomic_scalars()), ("categories", atomic_scalars())],
    )
}

fn crd_spec() -> FieldType {
    let version = st_with(
        &["name", "served", "storage", "deprecated", "deprecationWarning"],
        vec![
            ("schema", st([("openAPIV3Schema", untyped())])),
            (
                "subresources",
                st([
                    ("status", FieldType::structure(Vec::<(&str, FieldType)>::new())),
                    (
                        "scale",
                        FieldType::structure(scalars(["specReplicasPath", "statusReplicasPath", "labelSelectorPath"])),
                    ),
                ]),
            ),
            ("additionalPrinterColumns", FieldType::atomic_list(untyped())),
            ("selectableFields", FieldType::atomic_list(untyped())),
        ],
    );
    st_with(
        &["group", "scope", "preserveUnknownFields"],
        vec![
            ("names", crd_names()),
            ("versions", FieldType::atomic_list(version)),
            (
                "conversion",
                st([
                    ("strategy", s()),
                    (
                        "webhook",
                        st([
                            ("clientConfig", untyped()),
                            ("conversionReviewVersions", atomic_scalars()),
                        ]),
                    ),
                ]),
            ),
        ],
    )
}

fn root(mut fields: Vec<(&str, FieldType)>) -> FieldType {
    fields.push(("apiVersion", s()));
    fields.push(("kind", s()));
    fields.push(("metadata", object_meta()));
    FieldType::structure(fields)
}

/// Type information of the root of a built-in kind (object metadata plus untyped content otherwise).
pub(crate) fn root_type(api_version: &str, kind: &str) -> FieldType {
    match (api_version, kind) {
        ("v1", "Namespace") => root(vec![
            ("spec", st([("finalizers", atomic_scalars())])),
            ("status", st([("phase", s()), ("conditions", conditions())])),
        ]),
        ("v1", "ConfigMap") => root(vec![
            ("data", string_map()),
            ("binaryData", string_map()),
            ("immutable", s()),
        ]),
        ("v1", "Secret") => root(vec![
            ("data", string_map()),
            ("stringData", string_map()),
            ("type", s()),
            ("immutable", s()),
        ]),
        ("v1", "Service") => root(vec![
            ("spec", service_spec()),
            (
                "status",
                st([
                    ("loadBalancer", st([("ingress", FieldType::atomic_list(untyped()))])),
                    ("conditions", conditions()),
                ]),
            ),
        ]),
        ("v1", "ServiceAccount") => root(vec![
            ("secrets", FieldType::keyed_list(object_reference(), &["name"])),
            ("imagePullSecrets", FieldType::atomic_list(local_object_reference())),
            ("automountServiceAccountToken", s()),
        ]),
        ("v1", "Pod") => root(vec![("spec", pod_spec()), ("status", pod_status())]),
        ("v1", "Event") => {
            let mut fields = scalars([
                "reason",
                "message",
                "firstTimestamp",
                "lastTimestamp",
                "count",
                "type",
                "eventTime",
                "action",
                "reportingComponent",
                "reportingInstance",
            ]);
            fields.push(("involvedObject", object_reference()));
            fields.push(("related", object_reference()));
            fields.push(("source", FieldType::structure(scalars(["component", "host"]))));
            fields.push(("series", FieldType::structure(scalars(["count", "lastObservedTime"]))));
            root(fields)
        }
        ("events.k8s.io/v1", "Event") => {
            let mut fields = scalars([
                "eventTime",
                "reportingController",
                "reportingInstance",
                "action",
                "reason",
                "note",
                "type",
                "deprecatedFirstTimestamp",
                "deprecatedLastTimestamp",
                "deprecatedCount",
            ]);
            fields.push(("series", FieldType::structure(scalars(["count", "lastObservedTime"]))));
            fields.push(("regarding", object_reference()));
            fields.push(("related", object_reference()));
            fields.push(("deprecatedSource", FieldType::structure(scalars(["component", "host"]))));
            root(fields)
        }
        ("coordination.k8s.io/v1", "Lease") => root(vec![(
            "spec",
            FieldType::structure(scalars([
                "holderIdentity",
                "leaseDurationSeconds",
                "acquireTime",
                "renewTime",
                "leaseTransitions",
                "strategy",
                "preferredHolder",
            ])),
        )]),
        ("apps/v1", "Deployment") => root(vec![
            (
                "spec",
                st_with(
                    &[
                        "replicas",
                        "minReadySeconds",
                        "revisionHistoryLimit",
                        "paused",
                        "progressDeadlineSeconds",
                    ],
                    vec![
                        ("selector", label_selector()),
                        ("template", pod_template()),
                        (
                            "strategy",
                            st([
                                ("type", s()),
                                (
                                    "rollingUpdate",
                                    FieldType::structure(scalars(["maxUnavailable", "maxSurge"])),
                                ),
                            ]),
                        ),
                    ],
                ),
            ),
            (
                "status",
                st_with(
                    &[
                        "observedGeneration",
                        "replicas",
                        "updatedReplicas",
                        "readyReplicas",
                        "availableReplicas",
                        "unavailableReplicas",
                        "terminatingReplicas",
                        "collisionCount",
                    ],
                    vec![("conditions", conditions())],
                ),
            ),
        ]),
        ("apps/v1", "ReplicaSet") => root(vec![
            (
                "spec",
                st_with(
                    &["replicas", "minReadySeconds"],
                    vec![("selector", label_selector()), ("template", pod_template())],
                ),
            ),
            (
                "status",
                st_with(
                    &[
                        "replicas",
                        "fullyLabeledReplicas",
                        "readyReplicas",
                        "availableReplicas",
                        "terminatingReplicas",
                        "observedGeneration",
                    ],
                    vec![("conditions", conditions())],
                ),
            ),
        ]),
        // `data` is a RawExtension, one value to server-side apply: its managed fields stop at `f:data`.
        ("apps/v1", "ControllerRevision") => root(vec![("data", s()), ("revision", s())]),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => root(vec![
            ("spec", crd_spec()),
            (
                "status",
                st([
                    ("conditions", conditions().with_patch(ListPatch::Replace)),
                    ("acceptedNames", crd_names()),
                    ("storedVersions", atomic_scalars()),
                ]),
            ),
        ]),
        _ => root(Vec::new()),
    }
}

/// What the Go zero value of a built-in kind serialises to: non-`omitempty` structs appear as `{}`
/// and nil slices or pointers as `null`, which decides which nodes count as added on create.
pub(crate) fn zero_value(api_version: &str, kind: &str) -> Value {
    let meta = json!({"creationTimestamp": null});
    let pod_template = json!({"metadata": {"creationTimestamp": null}, "spec": {"containers": null}});
    match (api_version, kind) {
        ("v1", "Namespace") => json!({"metadata": meta, "spec": {}, "status": {}}),
        ("v1", "ConfigMap" | "Secret" | "ServiceAccount") => json!({"metadata": meta}),
        ("v1", "Service") => json!({"metadata": meta, "spec": {}, "status": {"loadBalancer": {}}}),
        ("v1", "Pod") => json!({"metadata": meta, "spec": {"containers": null}, "status": {}}),
        ("v1", "Event") => json!({
            "metadata": meta, "involvedObject": {}, "source": {}, "firstTimestamp": null,
            "lastTimestamp": null, "eventTime": null, "reportingComponent": "", "reportingInstance": ""
        }),
        ("events.k8s.io/v1", "Event") => json!({
            "metadata": meta, "eventTime": null, "regarding": {}, "deprecatedSource": {},
            "deprecatedFirstTimestamp": null, "deprecatedLastTimestamp": null
        }),
        ("coordination.k8s.io/v1", "Lease") => json!({"metadata": meta, "spec": {}}),
        ("apps/v1", "Deployment") => json!({
            "metadata": meta,
            "spec": {"selector": null, "template": pod_template, "strategy": {}},
            "status": {}
        }),
        ("apps/v1", "ReplicaSet") => json!({
            "metadata": meta,
            "spec": {"selector": null, "template": pod_template},
            "status": {"replicas": 0}
        }),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => json!({
            "metadata": meta,
            "spec": {"group": "", "names": {"plural": "", "kind": ""}, "scope": "", "versions": null},
            "status": {"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": null}
        }),
        _ => json!({}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::typeinfo::ListKind;

    fn list_kind<'a>(ty: &'a FieldType, path: &[&str]) -> &'a FieldType {
        let mut current = ty;
        for name in path {
            current = match current {
                FieldType::List { items, .. } => items.child(name).0,
                other => other.child(name).0,
            };
        }
        current
    }

    #[test]
    fn pod_list_semantics() {
        let pod = root_type("v1", "Pod");
        let ports = list_kind(&pod, &["spec", "containers", "ports"]);
        match ports {
            FieldType::List {
                kind: ListKind::Map { keys, defaults },
                patch,
                ..
            } => {
                assert_eq!(keys, &vec!["containerPort".to_string(), "protocol".to_string()]);
                assert_eq!(defaults.get("protocol"), Some(&json!("TCP")));
                assert_eq!(patch, &ListPatch::MergeByKey("containerPort".into()));
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(matches!(
            list_kind(&pod, &["spec", "tolerations"]),
            FieldType::List {
                kind: ListKind::Atomic,
                patch: ListPatch::Replace,
                ..
            }
        ));
        assert!(matches!(
            list_kind(&pod, &["spec", "containers", "volumeMounts"]),
            FieldType::List { patch: ListPatch::MergeByKey(k), .. } if k == "mountPath"
        ));
        assert!(matches!(
            list_kind(&pod, &["metadata", "finalizers"]),
            FieldType::List {
                kind: ListKind::Set,
                patch: ListPatch::MergeScalars,
                ..
            }
        ));
        assert!(matches!(
            list_kind(&pod, &["metadata", "managedFields"]),
            FieldType::List {
                kind: ListKind::Atomic,
                ..
            }
        ));
    }

    #[test]
    fn service_selector_is_atomic_and_ports_keyed_by_port_and_protocol() {
        let svc = root_type("v1", "Service");
        assert!(matches!(
            list_kind(&svc, &["spec", "selector"]),
            FieldType::Map { atomic: true, .. }
        ));
        assert!(matches!(
            list_kind(&svc, &["spec", "ports"]),
            FieldType::List { kind: ListKind::Map { keys, .. }, .. } if keys.len() == 2
        ));
    }
}
