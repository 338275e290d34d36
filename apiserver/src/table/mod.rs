//! Server-side printing: `meta.k8s.io/v1` Tables with the columns kube-apiserver prints for each kind.

use std::sync::Arc;

use serde_json::{Value, json};

mod columns;

use columns::{AGE_DESCRIPTION, NAME_DESCRIPTION, builtin_columns};

use crate::jsonpath::JsonPath;
use crate::object;
use crate::registry::{ResourceInfo, conversion};

/// What each row carries in `object` (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncludeObject {
    /// Nothing.
    None,
    /// A PartialObjectMetadata (the default).
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// Parse the query value.
    pub fn parse(value: Option<&str>) -> Self {
        match value {
            Some("None") => IncludeObject::None,
            Some("Object") => IncludeObject::Object,
            _ => IncludeObject::Metadata,
        }
    }
}

/// Column definitions for a resource.
pub fn column_definitions(info: &ResourceInfo) -> Vec<Value> {
    let definition = |name: &str, column_type: &str, format: &str, priority: i64, description: &str| json!({"name": name, "type": column_type, "format": format, "description": description, "priority": priority});
    if let Some(custom) = &info.custom {
        let mut out = vec![definition("Name", "string", "name", 0, NAME_DESCRIPTION)];
        if custom.printer_columns.is_empty() {
            out.push(definition("Age", "date", "", 0, AGE_DESCRIPTION));
        }
        for column in &custom.printer_columns {
            let description = if column.description.is_empty() {
                format!(
                    "Custom resource definition column (in JSONPath format): {}",
                    column.json_path
                )
            } else {
                column.description.clone()
            };
            out.push(definition(
                &column.name,
                &column.column_type,
                &column.format,
                column.priority,
                &description,
            ));
        }
        return out;
    }
    match builtin_columns(info) {
        Some(columns) => columns
            .iter()
            .map(|c| definition(c.name, c.column_type, c.format, c.priority, c.description))
            .collect(),
        None => vec![
            definition("Name", "string", "name", 0, NAME_DESCRIPTION),
            definition("Created At", "date", "", 0, AGE_DESCRIPTION),
        ],
    }
}

/// Kubernetes' `HumanDuration`.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{}h", hours / 24, h)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let days = (hours / 24) % 365;
        return if days == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{}d", hours / 24 / 365, days)
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// Age of a timestamp, as tables print it (`<unknown>` when absent).
pub fn since(timestamp: Option<&Value>) -> String {
    match timestamp.and_then(Value::as_str).and_then(object::parse_time) {
        Some(time) => human_duration((chrono::Utc::now() - time).num_seconds()),
        None => "<unknown>".into(),
    }
}

fn or_none(text: &str) -> Value {
    if text.is_empty() { json!("<none>") } else { json!(text) }
}

fn int(object: &Value, keys: &[&str]) -> i64 {
    object::path(object, keys).and_then(Value::as_i64).unwrap_or(0)
}

fn selector_text(selector: Option<&Value>) -> String {
    let Some(selector) = selector else {
        return String::new();
    };
    let mut parts = Vec::new();
    let labels = selector.get("matchLabels").and_then(Value::as_object);
    let is_label_selector = labels.is_some() || selector.get("matchExpressions").is_some();
    let pairs = if is_label_selector {
        labels
    } else {
        selector.as_object()
    };
    if let Some(pairs) = pairs {
        let mut sorted: Vec<_> = pairs.iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        for (key, value) in sorted {
            parts.push(format!("{}={}", key, value.as_str().unwrap_or("")));
        }
    }
    if let Some(expressions) = selector.get("matchExpressions").and_then(Value::as_array) {
        for expression in expressions {
            let key = expression.get("key").and_then(Value::as_str).unwrap_or("");
            let values: Vec<String> = object::string_list(expression.get("values"));
            match expression.get("operator").and_then(Value::as_str).unwrap_or("") {
                "In" => parts.push(format!("{key} in ({})", values.join(","))),
                "NotIn" => parts.push(format!("{key} notin ({})", values.join(","))),
                "Exists" => parts.push(key.to_string()),
                "DoesNotExist" => parts.push(format!("!{key}")),
                _ => {}
            }
        }
    }
    parts.join(",")
}

fn containers_and_images(pod_spec: Option<&Value>) -> (String, String) {
    let containers = pod_spec
        .and_then(|s| s.get("containers"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let names: Vec<&str> = containers
        .iter()
        .map(|c| c.get("name").and_then(Value::as_str).unwrap_or(""))
        .collect();
    let images: Vec<&str> = containers
        .iter()
        .map(|c| c.get("image").and_then(Value::as_str).unwrap_or(""))
        .collect();
    (names.join(","), images.join(","))
}

fn pod_cells(pod: &Value) -> Vec<Value> {
    let statuses = object::path(pod, &["status", "containerStatuses"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let total = object::path(pod, &["spec", "containers"])
        .and_then(Value::as_array)
        .map(Vec::len)
        .unwrap_or(0);
    let ready = statuses
        .iter()
        .filter(|s| s.get("ready").and_then(Value::as_bool) == Some(true))
        .count();
    let mut restarts = 0;
    let mut last_restart: Option<String> = None;
    let mut reason = object::path_str(pod, &["status", "phase"]).to_string();
    let status_reason = object::path_str(pod, &["status", "reason"]);
    if !status_reason.is_empty() {
        reason = status_reason.to_string();
    }
    for status in statuses.iter().rev() {
        restarts += status.get("restartCount").and_then(Value::as_i64).unwrap_or(0);
        if let Some(finished) = status
            .pointer("/lastState/terminated/finishedAt")
            .and_then(Value::as_str)
            && last_restart.as_deref().is_none_or(|l| finished > l)
        {
            last_restart = Some(finished.to_string());
        }
        if let Some(waiting) = status.pointer("/state/waiting/reason").and_then(Value::as_str)
            && !waiting.is_empty()
        {
            reason = waiting.to_string();
        } else if let Some(terminated) = status.pointer("/state/terminated") {
            reason = match terminated.get("reason").and_then(Value::as_str) {
                Some(r) if !r.is_empty() => r.to_string(),
                _ => match terminated.get("signal").and_then(Value::as_i64) {
                    Some(signal) if signal != 0 => format!("Signal:{signal}"),
                    _ => format!(
                        "ExitCode:{}",
                        terminated.get("exitCode").and_then(Value::as_i64).unwrap_or(0)
                    ),
                },
            };
        }
    }
    if object::is_deleting(pod) {
        reason = if status_reason == "NodeLost" {
            "Unknown".into()
        } else {
            "Terminating".into()
        };
    }
    let restarts_text = match last_restart {
        Some(time) if restarts > 0 => format!("{restarts} ({} ago)", since(Some(&json!(time)))),
        _ => restarts.to_string(),
    };
    let gates = object::path(pod, &["spec", "readinessGates"])
        .and_then(Value::as_array)
        .map(Vec::len)
        .unwrap_or(0);
    let gates_text = if gates == 0 {
        "<none>".to_string()
    } else {
        let conditions = object::path(pod, &["status", "conditions"])
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let true_gates = object::path(pod, &["spec", "readinessGates"])
            .and_then(Value::as_array)
            .map(|g| {
                g.iter()
                    .filter(|gate| {
                        conditions.iter().any(|c| {
                            c.get("type") == gate.get("conditionType")
                                && c.get("status").and_then(Value::as_str) == Some("True")
                        })
                    })
                    .count()
            })
            .unwrap_or(0);
        format!("{true_gates}/{gates}")
    };
    vec![
        json!(object::name(pod)),
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts_text),
        json!(since(object::metadata(pod).and_then(|m| m.get("creationTimestamp")))),
        or_none(object::path_str(pod, &["status", "podIP"])),
        or_none(object::path_str(pod, &["spec", "nodeName"])),
        or_none(object::path_str(pod, &["status", "nominatedNodeName"])),
        json!(gates_text),
    ]
}

fn service_cells(service: &Value, age: String) -> Vec<Value> {
    let service_type = object::path_str(service, &["spec", "type"]);
    let cluster_ip = object::path_str(service, &["spec", "clusterIP"]);
    let mut external: Vec<String> = object::string_list(object::path(service, &["spec", "externalIPs"]));
    let external_text = match service_type {
        "ClusterIP" | "NodePort" | "" => {
            if external.is_empty() {
                "<none>".to_string()
            } else {
                external.join(",")
            }
        }
        "LoadBalancer" => {
            if let Some(ingress) =
                object::path(service, &["status", "loadBalancer", "ingress"]).and_then(Value::as_array)
            {
                for entry in ingress {
                    if let Some(ip) = entry.get("ip").and_then(Value::as_str) {
                        external.push(ip.to_string());
                    } else if let Some(host) = entry.get("hostname").and_then(Value::as_str) {
                        external.push(host.to_string());
                    }
                }
            }
            if external.is_empty() {
                "<pending>".to_string()
            } else {
                external.join(",")
            }
        }
        "ExternalName" => object::path_str(service, &["spec", "externalName"]).to_string(),
        _ => "<unknown>".to_string(),
    };
    let ports: Vec<String> = object::path(service, &["spec", "ports"])
        .and_then(Value::as_array)
        .map(|ports| {
            ports
                .iter()
                .map(|p| {
                    let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
                    let protocol = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
                    match p.get("nodePort").and_then(Value::as_i64) {
                        Some(node_port) if node_port != 0 => format!("{port}:{node_port}/{protocol}"),
                        _ => format!("{port}/{protocol}"),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let selector = selector_text(object::path(service, &["spec", "selector"]));
    vec![
        json!(object::name(service)),
        json!(service_type),
        or_none(cluster_ip),
        json!(external_text),
        or_none(&ports.join(",")),
        json!(age),
        or_none(&selector),
    ]
}

fn event_cells(event: &Value) -> Vec<Value> {
    let first = match event.get("firstTimestamp").filter(|v| !v.is_null()) {
        Some(t) => since(Some(t)),
        None => since(event.get("eventTime")),
    };
    let mut last = match event.get("lastTimestamp").filter(|v| !v.is_null()) {
        Some(t) => since(Some(t)),
        None => first.clone(),
    };
    let mut count = event.get("count").and_then(Value::as_i64).unwrap_or(0);
    if let Some(series) = event.get("series").filter(|s| !s.is_null()) {
        last = since(series.get("lastObservedTime"));
        count = series.get("count").and_then(Value::as_i64).unwrap_or(0);
    } else if count == 0 {
        count = 1;
    }
    let kind = object::path_str(event, &["involvedObject", "kind"]).to_lowercase();
    let involved_name = object::path_str(event, &["involvedObject", "name"]);
    let target = if involved_name.is_empty() {
        kind
    } else {
        format!("{kind}/{involved_name}")
    };
    let component = match object::path_str(event, &["source", "component"]) {
        "" => object::path_str(event, &["reportingComponent"]),
        c => c,
    };
    let host = match object::path_str(event, &["source", "host"]) {
        "" => object::path_str(event, &["reportingInstance"]),
        h => h,
    };
    let source = if component.is_empty() {
        "<unknown>".to_string()
    } else if host.is_empty() {
        component.to_string()
    } else {
        format!("{component}, {host}")
    };
    vec![
        json!(last),
        json!(object::path_str(event, &["type"])),
        json!(object::path_str(event, &["reason"])),
        json!(target),
        json!(object::path_str(event, &["involvedObject", "fieldPath"])),
        json!(source),
        json!(object::path_str(event, &["message"]).trim()),
        json!(first),
        json!(count),
        json!(object::name(event)),
    ]
}

fn builtin_cells(info: &ResourceInfo, object: &Value) -> Vec<Value> {
    let name = json!(object::name(object));
    let created = object::metadata(object).and_then(|m| m.get("creationTimestamp"));
    let age = since(created);
    let count_keys = |keys: &[&str]| -> usize {
        keys.iter()
            .filter_map(|k| object.get(*k).and_then(Value::as_object))
            .map(|m| m.len())
            .sum()
    };
    match (info.group.as_str(), info.kind.as_str()) {
        ("", "Pod") => pod_cells(object),
        ("", "Service") => service_cells(object, age),
        (_, "Event") => event_cells(object),
        ("apps", "Deployment") => {
            let (containers, images) = containers_and_images(object.pointer("/spec/template/spec"));
            vec![
                name,
                json!(format!(
                    "{}/{}",
                    int(object, &["status", "readyReplicas"]),
                    int(object, &["spec", "replicas"])
                )),
                json!(int(object, &["status", "updatedReplicas"])),
                json!(int(object, &["status", "availableReplicas"])),
                json!(age),
                json!(containers),
                json!(images),
                or_none(&selector_text(object::path(object, &["spec", "selector"]))),
            ]
        }
        ("apps", "ReplicaSet") => {
            let (containers, images) = containers_and_images(object.pointer("/spec/template/spec"));
            vec![
                name,
                json!(int(object, &["spec", "replicas"])),
                json!(int(object, &["status", "replicas"])),
                json!(int(object, &["status", "readyReplicas"])),
                json!(age),
                json!(containers),
                json!(images),
                or_none(&selector_text(object::path(object, &["spec", "selector"]))),
            ]
        }
        ("apps", "StatefulSet") => {
            let (containers, images) = containers_and_images(object.pointer("/spec/template/spec"));
            vec![
                name,
                json!(format!(
                    "{}/{}",
                    int(object, &["status", "readyReplicas"]),
                    int(object, &["spec", "replicas"])
                )),
                json!(age),
                json!(containers),
                json!(images),
            ]
        }
        ("apps", "DaemonSet") => {
            let (containers, images) = containers_and_images(object.pointer("/spec/template/spec"));
            vec![
                name,
                json!(int(object, &["status", "desiredNumberScheduled"])),
                json!(int(object, &["status", "currentNumberScheduled"])),
                json!(int(object, &["status", "numberReady"])),
                json!(int(object, &["status", "updatedNumberScheduled"])),
                json!(int(object, &["status", "numberAvailable"])),
                or_none(&selector_text(object.pointer("/spec/template/spec/nodeSelector"))),
                json!(age),
                json!(containers),
                json!(images),
                or_none(&selector_text(object::path(object, &["spec", "selector"]))),
            ]
        }
        ("batch", "Job") => {
            let (containers, images) = containers_and_images(object.pointer("/spec/template/spec"));
            let conditions = object::path(object, &["status", "conditions"])
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let has = |t: &str| {
                conditions.iter().any(|c| {
                    c.get("type").and_then(Value::as_str) == Some(t)
                        && c.get("status").and_then(Value::as_str) == Some("True")
                })
            };
            let status = if has("Complete") {
                "Complete"
            } else if has("Failed") {
                "Failed"
            } else if has("FailureTarget") {
                "FailureTarget"
            } else if has("SuccessCriteriaMet") {
                "SuccessCriteriaMet"
            } else if has("Suspended") {
                "Suspended"
            } else {
                "Running"
            };
            let completions = match object::path(object, &["spec", "completions"]).and_then(Value::as_i64) {
                Some(c) => format!("{}/{}", int(object, &["status", "succeeded"]), c),
                None => format!(
                    "{}/1 of {}",
                    int(object, &["status", "succeeded"]),
                    int(object, &["spec", "parallelism"])
                ),
            };
            let start = object::path(object, &["status", "startTime"])
                .and_then(Value::as_str)
                .and_then(object::parse_time);
            let end = object::path(object, &["status", "completionTime"])
                .and_then(Value::as_str)
                .and_then(object::parse_time)
                .unwrap_or_else(chrono::Utc::now);
            let duration = start
                .map(|s| human_duration((end - s).num_seconds()))
                .unwrap_or_default();
            vec![
                name,
                json!(status),
                json!(completions),
                json!(duration),
                json!(age),
                json!(containers),
                json!(images),
                or_none(&selector_text(object::path(object, &["spec", "selector"]))),
            ]
        }
        ("batch", "CronJob") => {
            let (containers, images) = containers_and_images(object.pointer("/spec/jobTemplate/spec/template/spec"));
            let last = object::path(object, &["status", "lastScheduleTime"]);
            vec![
                name,
                json!(object::path_str(object, &["spec", "schedule"])),
                or_none(object::path_str(object, &["spec", "timeZone"])),
                json!(
                    match object::path(object, &["spec", "suspend"]).and_then(Value::as_bool) {
                        Some(true) => "True",
                        Some(false) => "False",
                        None => "<unset>",
                    }
                ),
                json!(
                    object::path(object, &["status", "active"])
                        .and_then(Value::as_array)
                        .map(Vec::len)
                        .unwrap_or(0)
                ),
                json!(if last.is_some() { since(last) } else { "<none>".into() }),
                json!(age),
                json!(containers),
                json!(images),
                json!("<none>"),
            ]
        }
        ("", "Namespace") => vec![name, json!(object::path_str(object, &["status", "phase"])), json!(age)],
        ("", "ConfigMap") => vec![name, json!(count_keys(&["data", "binaryData"])), json!(age)],
        ("", "Secret") => vec![
            name,
            json!(object::path_str(object, &["type"])),
            json!(count_keys(&["data"])),
            json!(age),
        ],
        ("", "ServiceAccount") => vec![name, json!(age)],
        ("apiextensions.k8s.io", "CustomResourceDefinition") => crd_cells(object),
        ("coordination.k8s.io", "Lease") => vec![
            name,
            json!(object::path_str(object, &["spec", "holderIdentity"])),
            json!(age),
        ],
        _ => vec![name, json!(created.and_then(Value::as_str).unwrap_or(""))],
    }
}

fn crd_cells(crd: &Value) -> Vec<Value> {
    let versions: Vec<String> = object::path(crd, &["spec", "versions"])
        .and_then(Value::as_array)
        .map(|versions| {
            versions
                .iter()
                .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
                .map(|v| {
                    let name = v.get("name").and_then(Value::as_str).unwrap_or_default();
                    if v.get("storage").and_then(Value::as_bool) == Some(true) {
                        format!("{name}(storage)")
                    } else {
                        name.to_string()
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let established = object::path(crd, &["status", "conditions"])
        .and_then(Value::as_array)
        .is_some_and(|conditions| {
            conditions.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some("Established")
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        });
    vec![
        json!(object::name(crd)),
        json!(object::path_str(crd, &["spec", "scope"])),
        json!(versions.join(",")),
        json!(object::meta_str(crd, "creationTimestamp")),
        json!(object::path_str(crd, &["spec", "group"])),
        json!(object::path_str(crd, &["spec", "names", "kind"])),
        json!(object::string_list(object::path(crd, &["spec", "names", "shortNames"])).join(",")),
        json!(established),
    ]
}

fn custom_cell(column_type: &str, values: &[&Value]) -> Value {
    match values {
        [] => Value::Null,
        [value] => match (column_type, value) {
            ("integer", Value::Number(n)) => n
                .as_i64()
                .map(Value::from)
                .or_else(|| n.as_f64().map(|f| Value::from(f as i64)))
                .unwrap_or(Value::Null),
            ("number", Value::Number(n)) => n.as_f64().map(Value::from).unwrap_or(Value::Null),
            ("boolean", Value::Bool(b)) => Value::Bool(*b),
            ("string", Value::String(s)) => Value::String(s.clone()),
            ("date", Value::String(s)) => match object::parse_time(s) {
                Some(_) => Value::String(since(Some(value))),
                None => Value::String("<invalid>".into()),
            },
            ("string", other) => Value::String(other.to_string()),
            _ => Value::Null,
        },
        many => {
            let parts: Vec<String> = many
                .iter()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            Value::String(parts.join(","))
        }
    }
}

/// The cells of one row, for an object in its stored form.
pub fn cells(info: &ResourceInfo, stored: &Value) -> Vec<Value> {
    match &info.custom {
        Some(custom) => {
            let served = conversion::to_served(info, stored.clone());
            let mut cells = vec![json!(object::name(&served))];
            if custom.printer_columns.is_empty() {
                cells.push(json!(since(
                    object::metadata(&served).and_then(|m| m.get("creationTimestamp"))
                )));
            }
            for column in &custom.printer_columns {
                let values = JsonPath::parse(&column.json_path)
                    .map(|path| path.evaluate(&served))
                    .unwrap_or_default();
                cells.push(custom_cell(&column.column_type, &values));
            }
            cells
        }
        None => builtin_cells(info, stored),
    }
}

fn row_object(info: &ResourceInfo, stored: &Value, include: IncludeObject) -> Option<Value> {
    match include {
        IncludeObject::None => None,
        IncludeObject::Object => Some(conversion::to_served(info, stored.clone())),
        IncludeObject::Metadata => Some(partial_metadata(stored)),
    }
}

/// `PartialObjectMetadata` of an object.
pub fn partial_metadata(object: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": object.get("metadata").cloned().unwrap_or(json!({})),
    })
}

/// A Table of stored objects.
pub fn table(
    info: &ResourceInfo,
    objects: &[Arc<Value>],
    list_metadata: Value,
    include: IncludeObject,
    with_headers: bool,
    api_version: &str,
) -> Value {
    let rows: Vec<Value> = objects
        .iter()
        .map(|object| json!({"cells": cells(info, object), "object": row_object(info, object, include)}))
        .collect();
    let mut table = json!({
        "kind": "Table",
        "apiVersion": api_version,
        "metadata": list_metadata,
    });
    if with_headers {
        table["columnDefinitions"] = Value::Array(column_definitions(info));
    } else {
        table["columnDefinitions"] = Value::Null;
    }
    table["rows"] = Value::Array(rows);
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    #[test]
    fn human_durations_match_kubernetes() {
        for (seconds, text) in [
            (0, "0s"),
            (119, "119s"),
            (125, "2m5s"),
            (600, "10m"),
            (3 * 3600 + 60, "3h1m"),
            (10 * 3600, "10h"),
            (3 * 86400 + 3600, "3d1h"),
            (30 * 86400, "30d"),
        ] {
            assert_eq!(human_duration(seconds), text);
        }
    }

    #[test]
    fn deployment_row() {
        let registry = Registry::build([]);
        let info = registry.lookup("apps", "v1", "deployments").unwrap();
        let deployment = json!({"metadata": {"name": "web", "creationTimestamp": object::now_rfc3339()},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
            "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}});
        let row = cells(&info, &deployment);
        assert_eq!(row[0..4], [json!("web"), json!("2/3"), json!(3), json!(2)]);
        assert_eq!(row[5..], [json!("c"), json!("nginx"), json!("app=web")]);
    }

    #[test]
    fn service_row() {
        let registry = Registry::build([]);
        let info = registry.lookup("", "v1", "services").unwrap();
        let service = json!({"metadata": {"name": "s"}, "spec": {"type": "NodePort", "clusterIP": "10.96.0.10",
            "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}});
        let row = cells(&info, &service);
        assert_eq!(
            row[1..5],
            [
                json!("NodePort"),
                json!("10.96.0.10"),
                json!("<none>"),
                json!("80:30080/TCP,53/UDP")
            ]
        );
    }
}
