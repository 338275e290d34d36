//! Defaulting of built-in kinds (what the real server fills in on every write) and status on create.

use base64::Engine as _;
use base64::prelude::BASE64_STANDARD;
use serde_json::{Map, Value, json};

use super::ResourceInfo;
use crate::object;

/// Apply the defaults of a built-in kind; `uid` is the object's (for generated job selectors).
pub fn apply_defaults(info: &ResourceInfo, object: &mut Value) {
    if !info.is_builtin() {
        return;
    }
    let name = object::name(object).to_string();
    match (info.group.as_str(), info.kind.as_str()) {
        ("", "Namespace") => {
            let labels = object::ensure_object(object, &["metadata", "labels"]);
            labels.insert("kubernetes.io/metadata.name".into(), Value::String(name));
        }
        ("", "Secret") => {
            set_default(object, &["type"], json!("Opaque"));
            merge_string_data(object);
        }
        ("", "Service") => default_service(object),
        ("", "Pod") => {
            if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
                default_pod_spec(spec);
                insert_missing(spec, "enableServiceLinks", json!(true));
            }
        }
        ("apps", "Deployment") => {
            set_default(object, &["spec", "replicas"], json!(1));
            set_default(object, &["spec", "strategy"], json!({"type": "RollingUpdate"}));
            if object::path_str(object, &["spec", "strategy", "type"]) == "RollingUpdate" {
                set_default(
                    object,
                    &["spec", "strategy", "rollingUpdate"],
                    json!({"maxUnavailable": "25%", "maxSurge": "25%"}),
                );
            }
            set_default(object, &["spec", "revisionHistoryLimit"], json!(10));
            set_default(object, &["spec", "progressDeadlineSeconds"], json!(600));
            default_template(object);
        }
        ("apps", "ReplicaSet") => {
            set_default(object, &["spec", "replicas"], json!(1));
            default_template(object);
        }
        ("apps", "StatefulSet") => {
            set_default(object, &["spec", "replicas"], json!(1));
            set_default(object, &["spec", "podManagementPolicy"], json!("OrderedReady"));
            set_default(
                object,
                &["spec", "updateStrategy"],
                json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}),
            );
            set_default(object, &["spec", "revisionHistoryLimit"], json!(10));
            set_default(
                object,
                &["spec", "persistentVolumeClaimRetentionPolicy"],
                json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
            );
            default_template(object);
        }
        ("apps", "DaemonSet") => {
            set_default(
                object,
                &["spec", "updateStrategy"],
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}),
            );
            set_default(object, &["spec", "revisionHistoryLimit"], json!(10));
            default_template(object);
        }
        ("batch", "Job") => {
            set_default(object, &["spec", "parallelism"], json!(1));
            set_default(object, &["spec", "completions"], json!(1));
            set_default(object, &["spec", "backoffLimit"], json!(6));
            set_default(object, &["spec", "completionMode"], json!("NonIndexed"));
            set_default(object, &["spec", "suspend"], json!(false));
            set_default(object, &["spec", "podReplacementPolicy"], json!("TerminatingOrFailed"));
            default_template(object);
        }
        ("batch", "CronJob") => {
            set_default(object, &["spec", "concurrencyPolicy"], json!("Allow"));
            set_default(object, &["spec", "suspend"], json!(false));
            set_default(object, &["spec", "successfulJobsHistoryLimit"], json!(3));
            set_default(object, &["spec", "failedJobsHistoryLimit"], json!(1));
        }
        _ => {}
    }
}

/// On create: what the status of a kind with a status subresource starts as.
pub fn initial_status(info: &ResourceInfo, object: &mut Value) {
    if !info.status_subresource {
        return;
    }
    let Some(map) = object.as_object_mut() else {
        return;
    };
    match (info.group.as_str(), info.kind.as_str()) {
        ("", "Namespace") => {
            map.insert("status".into(), json!({"phase": "Active"}));
            let spec = map.entry("spec").or_insert_with(|| json!({}));
            if let Some(spec) = spec.as_object_mut() {
                insert_missing(spec, "finalizers", json!(["kubernetes"]));
            }
        }
        ("", "Pod") => {
            let qos = pod_qos_class(map.get("spec"));
            map.insert("status".into(), json!({"phase": "Pending", "qosClass": qos}));
        }
        ("", "Service") => {
            map.insert("status".into(), json!({"loadBalancer": {}}));
        }
        ("", "PersistentVolumeClaim") => {
            map.insert("status".into(), json!({"phase": "Pending"}));
        }
        ("apiextensions.k8s.io", _) => {
            let stored: Vec<Value> = super::crd::storage_version(&Value::Object(map.clone()))
                .into_iter()
                .map(Value::String)
                .collect();
            map.insert(
                "status".into(),
                json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": stored}),
            );
        }
        ("batch", "Job") | ("batch", "CronJob") | ("apps", _) => {
            map.insert("status".into(), json!({}));
        }
        _ => {
            map.remove("status");
        }
    }
}

/// Where a pod's service account token is mounted.
const SERVICE_ACCOUNT_MOUNT: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// What the real server's admission plugins add to a new pod after its fields are recorded as the creator's:
/// the priority (`Priority`), the `default` service account with its projected token volume mounted into every
/// container (`ServiceAccount`; `suffix` names the volume) and tolerations of unready and unreachable nodes for
/// 300 s (`DefaultTolerationSeconds`).
pub fn admit_pod(pod: &mut Value, suffix: &str) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    insert_missing(spec, "priority", json!(0));
    insert_missing(spec, "preemptionPolicy", json!("PreemptLowerPriority"));
    let account = spec
        .get("serviceAccountName")
        .and_then(Value::as_str)
        .filter(|name| !name.is_empty())
        .unwrap_or("default")
        .to_string();
    spec.insert("serviceAccountName".into(), json!(account));
    spec.insert("serviceAccount".into(), json!(account));
    let automount = spec.get("automountServiceAccountToken").and_then(Value::as_bool) != Some(false);
    let mounted = |containers: Option<&Value>| {
        containers.and_then(Value::as_array).is_some_and(|containers| {
            containers.iter().any(|container| {
                container
                    .get("volumeMounts")
                    .and_then(Value::as_array)
                    .is_some_and(|mounts| mounts.iter().any(|m| m["mountPath"] == SERVICE_ACCOUNT_MOUNT))
            })
        })
    };
    if automount && !mounted(spec.get("containers")) && !mounted(spec.get("initContainers")) {
        let volume = format!("kube-api-access-{suffix}");
        let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
        if let Some(volumes) = volumes.as_array_mut() {
            volumes.push(json!({
                "name": volume,
                "projected": {
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                        {"downwardAPI": {"items": [{"path": "namespace",
                            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
                    ],
                    "defaultMode": 420,
                },
            }));
        }
        for list in ["initContainers", "containers"] {
            for container in spec.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten() {
                let mounts = container
                    .as_object_mut()
                    .map(|c| c.entry("volumeMounts").or_insert_with(|| json!([])));
                if let Some(mounts) = mounts.and_then(Value::as_array_mut) {
                    mounts.push(json!({"name": volume, "readOnly": true, "mountPath": SERVICE_ACCOUNT_MOUNT}));
                }
            }
        }
    }
    let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
    if let Some(tolerations) = tolerations.as_array_mut() {
        for key in ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"] {
            let tolerated = tolerations
                .iter()
                .any(|t| t["key"] == key || (t.get("key").is_none() && t["operator"] == "Exists"));
            if !tolerated {
                tolerations
                    .push(json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}));
            }
        }
    }
}

/// Fill the generated selector and labels of a Job without `manualSelector`.
pub fn job_selector(object: &mut Value, uid: &str) {
    if object::path(object, &["spec", "manualSelector"]).and_then(Value::as_bool) == Some(true) {
        return;
    }
    let name = object::name(object).to_string();
    let labels = json!({
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": name,
        "controller-uid": uid,
        "job-name": name,
    });
    set_default(
        object,
        &["spec", "selector"],
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}),
    );
    let template_labels = object::ensure_object(object, &["spec", "template", "metadata", "labels"]);
    if let Value::Object(labels) = labels {
        for (key, value) in labels {
            template_labels.entry(key).or_insert(value);
        }
    }
}

fn pod_qos_class(spec: Option<&Value>) -> &'static str {
    let containers: Vec<&Value> = spec
        .and_then(|s| s.get("containers"))
        .and_then(Value::as_array)
        .map(|c| c.iter().collect())
        .unwrap_or_default();
    let mut any = false;
    let mut guaranteed = !containers.is_empty();
    for container in containers {
        let requests = container.pointer("/resources/requests");
        let limits = container.pointer("/resources/limits");
        let has = |v: Option<&Value>| v.and_then(Value::as_object).is_some_and(|m| !m.is_empty());
        if has(requests) || has(limits) {
            any = true;
        }
        for resource in ["cpu", "memory"] {
            let limit = limits.and_then(|l| l.get(resource));
            let request = requests.and_then(|r| r.get(resource)).or(limit);
            if limit.is_none() || request != limit {
                guaranteed = false;
            }
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// `SetDefaults_Service`; the address families and cluster IPs are the allocator's, not defaults.
fn default_service(object: &mut Value) {
    set_default(object, &["spec", "sessionAffinity"], json!("None"));
    set_default(object, &["spec", "type"], json!("ClusterIP"));
    if let Some(ports) = object.pointer_mut("/spec/ports").and_then(Value::as_array_mut) {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            insert_missing(port, "protocol", json!("TCP"));
            if let Some(number) = port.get("port").cloned() {
                insert_missing(port, "targetPort", number);
            }
        }
    }
    let service_type = object::path_str(object, &["spec", "type"]).to_string();
    if service_type == "NodePort" || service_type == "LoadBalancer" {
        set_default(object, &["spec", "externalTrafficPolicy"], json!("Cluster"));
    }
    if matches!(service_type.as_str(), "ClusterIP" | "NodePort" | "LoadBalancer") {
        set_default(object, &["spec", "internalTrafficPolicy"], json!("Cluster"));
    }
    if service_type == "LoadBalancer" {
        set_default(object, &["spec", "allocateLoadBalancerNodePorts"], json!(true));
    }
}

/// A Secret's `stringData` is write-only: its entries replace those of `data`, base64-encoded.
fn merge_string_data(object: &mut Value) {
    let Some(map) = object.as_object_mut() else {
        return;
    };
    let Some(Value::Object(string_data)) = map.remove("stringData") else {
        return;
    };
    let data = map.entry("data").or_insert_with(|| json!({}));
    if !data.is_object() {
        *data = json!({});
    }
    let data = data.as_object_mut().expect("data is an object");
    for (key, value) in string_data {
        let text = value.as_str().unwrap_or_default();
        data.insert(key, json!(BASE64_STANDARD.encode(text)));
    }
}

fn default_template(object: &mut Value) {
    if let Some(spec) = object.pointer_mut("/spec/template/spec").and_then(Value::as_object_mut) {
        default_pod_spec(spec);
    }
}

/// Defaults of a PodSpec (pods and pod templates).
pub fn default_pod_spec(spec: &mut Map<String, Value>) {
    insert_missing(spec, "restartPolicy", json!("Always"));
    insert_missing(spec, "terminationGracePeriodSeconds", json!(30));
    insert_missing(spec, "dnsPolicy", json!("ClusterFirst"));
    insert_missing(spec, "securityContext", json!({}));
    insert_missing(spec, "schedulerName", json!("default-scheduler"));
    for list in ["initContainers", "containers"] {
        if let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for container in containers.iter_mut().filter_map(Value::as_object_mut) {
                default_container(container);
            }
        }
    }
}

fn default_container(container: &mut Map<String, Value>) {
    insert_missing(container, "terminationMessagePath", json!("/dev/termination-log"));
    insert_missing(container, "terminationMessagePolicy", json!("File"));
    insert_missing(container, "resources", json!({}));
    let image = container.get("image").and_then(Value::as_str).unwrap_or("").to_string();
    let tag = image
        .rsplit('/')
        .next()
        .and_then(|last| last.split_once(':').map(|(_, tag)| tag.to_string()));
    let policy = if image.contains('@') {
        "IfNotPresent"
    } else {
        match tag.as_deref() {
            None | Some("latest") => "Always",
            Some(_) => "IfNotPresent",
        }
    };
    insert_missing(container, "imagePullPolicy", json!(policy));
    if let Some(ports) = container.get_mut("ports").and_then(Value::as_array_mut) {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            insert_missing(port, "protocol", json!("TCP"));
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(probe) = container.get_mut(probe).and_then(Value::as_object_mut) {
            insert_missing(probe, "timeoutSeconds", json!(1));
            insert_missing(probe, "periodSeconds", json!(10));
            insert_missing(probe, "successThreshold", json!(1));
            insert_missing(probe, "failureThreshold", json!(3));
            if let Some(http) = probe.get_mut("httpGet").and_then(Value::as_object_mut) {
                insert_missing(http, "scheme", json!("HTTP"));
                insert_missing(http, "path", json!("/"));
            }
        }
    }
}

fn insert_missing(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.to_string(), value);
    }
}

fn set_default(object: &mut Value, keys: &[&str], value: Value) {
    let (last, parents) = keys.split_last().expect("non-empty path");
    let parent = object::ensure_object(object, parents);
    insert_missing(parent, last, value);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    #[test]
    fn deployment_defaults_like_the_real_server() {
        let registry = Registry::build([]);
        let info = registry.lookup("apps", "v1", "deployments").unwrap();
        let mut deployment = json!({"metadata": {"name": "web"}, "spec": {"template": {"spec": {
            "containers": [{"name": "c", "image": "nginx:1.27", "ports": [{"containerPort": 80}]},
                           {"name": "d", "image": "busybox"}]}}}});
        apply_defaults(&info, &mut deployment);
        assert_eq!(deployment["spec"]["replicas"], 1);
        assert_eq!(deployment["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        let containers = &deployment["spec"]["template"]["spec"]["containers"];
        assert_eq!(containers[0]["imagePullPolicy"], "IfNotPresent");
        assert_eq!(containers[1]["imagePullPolicy"], "Always");
        assert_eq!(containers[0]["ports"][0]["protocol"], "TCP");
        assert_eq!(deployment["spec"]["template"]["spec"]["dnsPolicy"], "ClusterFirst");
    }

    #[test]
    fn service_ports_get_protocol_and_target_port() {
        let registry = Registry::build([]);
        let info = registry.lookup("", "v1", "services").unwrap();
        let mut service = json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}});
        apply_defaults(&info, &mut service);
        assert_eq!(
            service["spec"]["ports"][0],
            json!({"port": 80, "protocol": "TCP", "targetPort": 80})
        );
        assert_eq!(service["spec"]["type"], "ClusterIP");
        assert!(
            service["spec"].get("ipFamilies").is_none(),
            "address families are allocated, not defaulted"
        );
    }

    #[test]
    fn pods_get_what_admission_adds() {
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}});
        admit_pod(&mut pod, "abcde");
        let spec = &pod["spec"];
        assert_eq!(
            (spec["serviceAccountName"].as_str(), spec["priority"].as_i64()),
            (Some("default"), Some(0))
        );
        assert_eq!(spec["volumes"][0]["name"], "kube-api-access-abcde");
        assert_eq!(
            spec["containers"][0]["volumeMounts"][0]["mountPath"],
            SERVICE_ACCOUNT_MOUNT
        );
        assert_eq!(spec["tolerations"].as_array().map(Vec::len), Some(2));
        let mut opted_out = json!({"spec": {"automountServiceAccountToken": false, "containers": [{"name": "c"}],
            "tolerations": [{"operator": "Exists"}]}});
        admit_pod(&mut opted_out, "abcde");
        assert!(opted_out["spec"].get("volumes").is_none());
        assert_eq!(opted_out["spec"]["tolerations"].as_array().map(Vec::len), Some(1));
    }

    #[test]
    fn secret_string_data_becomes_data() {
        let registry = Registry::build([]);
        let info = registry.lookup("", "v1", "secrets").unwrap();
        let mut secret = json!({"metadata": {"name": "s"}, "data": {"a": "eA==", "b": "eQ=="},
                                "stringData": {"b": "hunter2"}});
        apply_defaults(&info, &mut secret);
        assert_eq!(
            secret,
            json!({"metadata": {"name": "s"}, "type": "Opaque",
                                  "data": {"a": "eA==", "b": "aHVudGVyMg=="}})
        );
    }
}
