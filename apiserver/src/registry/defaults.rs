//! Defaulting of built-in kinds (what the real server fills in on every write) and status on create.

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
        }
        ("", "Service") => default_service(object),
        ("", "Pod") => {
            if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
                default_pod_spec(spec);
                insert_missing(spec, "enableServiceLinks", json!(true));
                insert_missing(spec, "priority", json!(0));
                insert_missing(spec, "preemptionPolicy", json!("PreemptLowerPriority"));
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
            map.insert(
                "status".into(),
                json!({"conditions": [], "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": []}),
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

fn default_service(object: &mut Value) {
    set_default(object, &["spec", "type"], json!("ClusterIP"));
    let service_type = object::path_str(object, &["spec", "type"]).to_string();
    if service_type == "ExternalName" {
        return;
    }
    set_default(object, &["spec", "sessionAffinity"], json!("None"));
    set_default(object, &["spec", "ipFamilyPolicy"], json!("SingleStack"));
    set_default(object, &["spec", "ipFamilies"], json!(["IPv4"]));
    set_default(object, &["spec", "internalTrafficPolicy"], json!("Cluster"));
    if service_type == "NodePort" || service_type == "LoadBalancer" {
        set_default(object, &["spec", "externalTrafficPolicy"], json!("Cluster"));
    }
    if let Some(ports) = object.pointer_mut("/spec/ports").and_then(Value::as_array_mut) {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            insert_missing(port, "protocol", json!("TCP"));
            if let Some(number) = port.get("port").cloned() {
                insert_missing(port, "targetPort", number);
            }
        }
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
    }
}
