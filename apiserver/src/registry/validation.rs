//! Checks of built-in kinds beyond their metadata, with the real server's messages: what its decoder refuses
//! (fields the Go type lacks and wrong JSON types, from the kinds' published OpenAPI schemas; microsecond timestamps
//! not written with six digits) and a part of what its strategies validate (ConfigMap keys, Deployment replicas,
//! selector and containers, selectors that must match templates and may not change, Service ports, Leases, Events
//! created through `events.k8s.io`).

use serde_json::Value;

use super::ResourceInfo;
use crate::error::FieldViolation;
use crate::go_format;
use crate::object;
use crate::schema::OBJECT_META_FIELDS;
use crate::selector::LabelSelector;

/// The top-level fields of a built-in kind (in storage form), besides `apiVersion`, `kind` and `metadata`.
fn top_level_fields(info: &ResourceInfo) -> &'static [&'static str] {
    match (info.group.as_str(), info.kind.as_str()) {
        ("", "ConfigMap") => &["data", "binaryData", "immutable"],
        ("", "Secret") => &["data", "stringData", "type", "immutable"],
        ("", "ServiceAccount") => &["secrets", "imagePullSecrets", "automountServiceAccountToken"],
        ("", "Endpoints") => &["subsets"],
        ("" | "events.k8s.io", "Event") => &[
            "involvedObject",
            "reason",
            "message",
            "source",
            "firstTimestamp",
            "lastTimestamp",
            "count",
            "type",
            "eventTime",
            "series",
            "action",
            "related",
            "reportingComponent",
            "reportingInstance",
        ],
        ("discovery.k8s.io", "EndpointSlice") => &["addressType", "endpoints", "ports"],
        ("rbac.authorization.k8s.io", "Role") => &["rules"],
        ("rbac.authorization.k8s.io", "ClusterRole") => &["rules", "aggregationRule"],
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => &["subjects", "roleRef"],
        ("scheduling.k8s.io", "PriorityClass") => &["value", "globalDefault", "description", "preemptionPolicy"],
        ("storage.k8s.io", "StorageClass") => &[
            "provisioner",
            "parameters",
            "reclaimPolicy",
            "mountOptions",
            "allowVolumeExpansion",
            "volumeBindingMode",
            "allowedTopologies",
        ],
        ("apps", "ControllerRevision") => &["data", "revision"],
        _ => &["spec", "status"],
    }
}

/// Removes what a built-in kind's Go type has no field for, at any depth (from the kind's published OpenAPI
/// schema; for a kind without one, at the top and in `metadata`), and returns their paths in document order, as
/// the strict decoder reports them.
pub fn prune_unknown_fields(info: &ResourceInfo, object: &mut Value) -> Vec<String> {
    if !info.is_builtin() {
        return Vec::new();
    }
    if let Some(findings) = super::openapi_schemas::decode(&info.storage_api_version, &info.kind, object, true) {
        return findings.unknown;
    }
    let mut unknown = Vec::new();
    let Some(map) = object.as_object_mut() else {
        return unknown;
    };
    let known = top_level_fields(info);
    map.retain(|key, _| {
        let keep = matches!(key.as_str(), "apiVersion" | "kind" | "metadata") || known.contains(&key.as_str());
        if !keep {
            unknown.push(key.clone());
        }
        keep
    });
    if let Some(metadata) = map.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.retain(|key, _| {
            let keep = OBJECT_META_FIELDS.contains(&key.as_str());
            if !keep {
                unknown.push(format!("metadata.{key}"));
            }
            keep
        });
    }
    unknown
}

/// Go's layout for `metav1.MicroTime`.
const MICRO_TIME_LAYOUT: &str = "2006-01-02T15:04:05.000000Z07:00";

/// Why the real server's decoder refuses a built-in object (its 400 message after `cannot be handled as a Kind: `),
/// or None. `object` is in the request's version.
pub fn decode_problem(info: &ResourceInfo, object: &Value) -> Option<String> {
    if !info.is_builtin() {
        return None;
    }
    if let Some(metadata) = object.get("metadata")
        && let Some(problem) = crate::schema::metadata_decode_problem(metadata)
    {
        // Go names the field by its whole path from the decoded object.
        return Some(problem.replace("Go struct field ObjectMeta.", "Go struct field ObjectMeta.metadata."));
    }
    let (spec_type, integers): (&str, &[&str]) = match (info.group.as_str(), info.kind.as_str()) {
        ("apps", "Deployment") => (
            "DeploymentSpec",
            &[
                "replicas",
                "minReadySeconds",
                "revisionHistoryLimit",
                "progressDeadlineSeconds",
            ],
        ),
        ("apps", "ReplicaSet") => ("ReplicaSetSpec", &["replicas", "minReadySeconds"]),
        ("apps", "StatefulSet") => (
            "StatefulSetSpec",
            &["replicas", "minReadySeconds", "revisionHistoryLimit"],
        ),
        _ => ("", &[]),
    };
    for field in integers {
        let Some(value) = object::path(object, &["spec", field]).filter(|v| !v.is_null()) else {
            continue;
        };
        let problem = match value {
            Value::Number(number) if number.as_i64().is_some_and(|n| i32::try_from(n).is_ok()) => continue,
            Value::Number(number) => format!("number {number}"),
            other => crate::patch::go_json_kind(other).to_string(),
        };
        return Some(format!(
            "json: cannot unmarshal {problem} into Go struct field {spec_type}.spec.{field} of type int32"
        ));
    }
    let micro_times: &[&[&str]] = match (info.group.as_str(), info.kind.as_str()) {
        ("coordination.k8s.io", "Lease") => &[&["spec", "acquireTime"], &["spec", "renewTime"]],
        ("" | "events.k8s.io", "Event") => &[&["eventTime"], &["series", "lastObservedTime"]],
        ("", "ConfigMap") => {
            return object
                .get("data")
                .and_then(Value::as_object)
                .and_then(|data| data.values().find(|v| !v.is_string() && !v.is_null()))
                .map(|value| {
                    format!(
                        "json: cannot unmarshal {} into Go struct field ConfigMap.data of type string",
                        crate::patch::go_json_kind(value)
                    )
                });
        }
        _ => &[],
    };
    micro_times
        .iter()
        .filter_map(|path| object::path(object, path).and_then(Value::as_str))
        .find_map(micro_time_problem)
        .or_else(|| {
            let mut copy = object.clone();
            super::openapi_schemas::decode(&info.api_version(), &info.kind, &mut copy, false)
                .and_then(|findings| findings.type_error)
        })
}

/// Go's `time.Parse` error for a `MicroTime` that is not `2006-01-02T15:04:05.000000Z07:00` (six fractional
/// digits, always), or None when it parses.
pub fn micro_time_problem(text: &str) -> Option<String> {
    let fail = |rest: &str, element: &str| {
        Some(format!(
            "parsing time {} as {}: cannot parse {} as {}",
            go_format::quote(text),
            go_format::quote(MICRO_TIME_LAYOUT),
            go_format::quote(rest),
            go_format::quote(element)
        ))
    };
    let mut rest = text;
    for (element, digits) in [
        ("2006", 4),
        ("-", 0),
        ("01", 2),
        ("-", 0),
        ("02", 2),
        ("T", 0),
        ("15", 2),
        (":", 0),
        ("04", 2),
        (":", 0),
        ("05", 2),
    ] {
        let matched = if digits == 0 {
            rest.strip_prefix(element)
        } else {
            (rest.len() >= digits && rest.as_bytes()[..digits].iter().all(u8::is_ascii_digit)).then(|| &rest[digits..])
        };
        match matched {
            Some(remaining) => rest = remaining,
            None => return fail(rest, element),
        }
    }
    let fraction = rest.as_bytes();
    if fraction.len() < 7 || fraction[0] != b'.' || !fraction[1..7].iter().all(u8::is_ascii_digit) {
        return fail(rest, ".000000");
    }
    rest = &rest[7..];
    let zone_ok = rest == "Z"
        || (rest.len() == 6
            && (rest.starts_with('+') || rest.starts_with('-'))
            && rest.as_bytes()[3] == b':'
            && [1, 2, 4, 5].iter().all(|&i| rest.as_bytes()[i].is_ascii_digit()));
    if zone_ok { None } else { fail(rest, "Z07:00") }
}

/// The kind-specific validation of a built-in object in storage form; `old` is the stored object on updates and
/// `request_group` the group the request came through (Events created through `events.k8s.io` are held to more).
pub fn validate(info: &ResourceInfo, object: &Value, old: Option<&Value>, request_group: &str) -> Vec<FieldViolation> {
    if !info.is_builtin() {
        return Vec::new();
    }
    match (info.group.as_str(), info.kind.as_str()) {
        ("", "ConfigMap") => validate_config_map(object),
        ("", "Service") => validate_service(object),
        ("apps", "Deployment") => {
            let mut violations = validate_deployment(object);
            violations.extend(immutable_fields(object, old, &[&["spec", "selector"]]));
            violations
        }
        ("apps", kind @ ("ReplicaSet" | "DaemonSet")) => {
            let mut violations = validate_pod_controller(object, &kind.to_lowercase());
            violations.extend(immutable_fields(object, old, &[&["spec", "selector"]]));
            violations
        }
        ("apps", "StatefulSet") => {
            let mut violations = validate_pod_controller(object, "statefulset");
            violations.extend(immutable_fields(
                object,
                old,
                &[
                    &["spec", "selector"],
                    &["spec", "volumeClaimTemplates"],
                    &["spec", "serviceName"],
                    &["spec", "podManagementPolicy"],
                ],
            ));
            violations
        }
        ("batch", "Job") => {
            let mut violations = validate_pod_spec(
                object::path(object, &["spec", "template", "spec"]),
                "spec.template.spec",
            );
            violations.extend(immutable_fields(object, old, &[&["spec", "selector"]]));
            violations
        }
        ("batch", "CronJob") => validate_pod_spec(
            object::path(object, &["spec", "jobTemplate", "spec", "template", "spec"]),
            "spec.jobTemplate.spec.template.spec",
        ),
        ("apps", "ControllerRevision") => {
            // `ValidateControllerRevision` and, on updates, its `data` immutable (the revision number may change).
            let mut violations = Vec::new();
            non_negative(&mut violations, object, &["revision"]);
            if object::path(object, &["data"]).is_none_or(Value::is_null) {
                violations.push(FieldViolation::required("data", "data is mandatory"));
            }
            violations.extend(immutable_fields(object, old, &[&["data"]]));
            violations
        }
        ("coordination.k8s.io", "Lease") => validate_lease(object),
        ("" | "events.k8s.io", "Event") if old.is_none() => validate_event_create(object, request_group),
        _ => Vec::new(),
    }
}

/// `IsConfigMapKey`.
fn config_key_errors(key: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if key.len() > 253 {
        errors.push("must be no more than 253 characters".to_string());
    }
    if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b)) {
        errors.push(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or \
             'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
                .to_string(),
        );
    }
    if key == "." {
        errors.push("must not be '.'".to_string());
    } else if key == ".." {
        errors.push("must not be '..'".to_string());
    } else if key.starts_with("..") {
        errors.push("must not start with '..'".to_string());
    }
    errors
}

fn validate_config_map(config_map: &Value) -> Vec<FieldViolation> {
    let mut violations = Vec::new();
    let binary = config_map.get("binaryData").and_then(Value::as_object);
    for bag in ["data", "binaryData"] {
        let Some(entries) = config_map.get(bag).and_then(Value::as_object) else {
            continue;
        };
        for key in entries.keys() {
            let field = format!("{bag}[{key}]");
            for message in config_key_errors(key) {
                violations.push(FieldViolation::invalid(
                    field.clone(),
                    &Value::String(key.clone()),
                    &message,
                ));
            }
            if bag == "data" && binary.is_some_and(|b| b.contains_key(key)) {
                violations.push(FieldViolation::invalid(
                    field,
                    &Value::String(key.clone()),
                    "duplicate of key present in binaryData",
                ));
            }
        }
    }
    violations
}

fn validate_service(service: &Value) -> Vec<FieldViolation> {
    let mut violations = Vec::new();
    let ports = object::path(service, &["spec", "ports"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (index, port) in ports.iter().enumerate() {
        for field in ["port", "targetPort"] {
            if let Some(number) = port.get(field).and_then(Value::as_i64)
                && !(1..=65535).contains(&number)
            {
                violations.push(FieldViolation::invalid(
                    format!("spec.ports[{index}].{field}"),
                    &Value::from(number),
                    "must be between 1 and 65535, inclusive",
                ));
            }
        }
    }
    violations
}

fn non_negative(violations: &mut Vec<FieldViolation>, object: &Value, path: &[&str]) {
    if let Some(number) = object::path(object, path).and_then(Value::as_i64)
        && number < 0
    {
        violations.push(FieldViolation::invalid(
            path.join("."),
            &Value::from(number),
            "must be greater than or equal to 0",
        ));
    }
}

/// The label selector of a `metav1.LabelSelector`, or None when it has no requirements.
fn label_selector(selector: &Value) -> Option<LabelSelector> {
    let mut terms: Vec<String> = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .map(|labels| {
            labels
                .iter()
                .map(|(key, value)| format!("{key}={}", value.as_str().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default();
    for expression in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = expression.get("key").and_then(Value::as_str).unwrap_or_default();
        let values = object::string_list(expression.get("values")).join(",");
        match expression.get("operator").and_then(Value::as_str).unwrap_or_default() {
            "In" => terms.push(format!("{key} in ({values})")),
            "NotIn" => terms.push(format!("{key} notin ({values})")),
            "Exists" => terms.push(key.to_string()),
            "DoesNotExist" => terms.push(format!("!{key}")),
            _ => {}
        }
    }
    if terms.is_empty() {
        return None;
    }
    LabelSelector::parse(&terms.join(",")).ok()
}

fn validate_deployment(deployment: &Value) -> Vec<FieldViolation> {
    let mut violations = Vec::new();
    non_negative(&mut violations, deployment, &["spec", "replicas"]);
    match object::path(deployment, &["spec", "selector"]) {
        None | Some(Value::Null) => violations.push(FieldViolation::required("spec.selector", "")),
        Some(selector) => {
            if let Some(selector) = label_selector(selector) {
                let labels = object::path(deployment, &["spec", "template", "metadata", "labels"]);
                if !selector.matches_labels(labels.and_then(Value::as_object)) {
                    violations.push(FieldViolation::invalid(
                        "spec.template.metadata.labels",
                        labels.unwrap_or(&Value::Null),
                        "`selector` does not match template `labels`",
                    ));
                }
            } else {
                violations.push(FieldViolation::invalid(
                    "spec.selector",
                    selector,
                    "empty selector is invalid for deployment",
                ));
            }
        }
    }
    violations.extend(validate_pod_spec(
        object::path(deployment, &["spec", "template", "spec"]),
        "spec.template.spec",
    ));
    for field in ["minReadySeconds", "revisionHistoryLimit", "progressDeadlineSeconds"] {
        non_negative(&mut violations, deployment, &["spec", field]);
    }
    violations
}

/// The selector checks shared by ReplicaSets, StatefulSets and DaemonSets: a selector is required, may not be
/// empty, and must match the template's labels.
fn validate_pod_controller(object: &Value, kind: &str) -> Vec<FieldViolation> {
    let mut violations = Vec::new();
    non_negative(&mut violations, object, &["spec", "replicas"]);
    match object::path(object, &["spec", "selector"]) {
        None | Some(Value::Null) => violations.push(FieldViolation::required("spec.selector", "")),
        Some(selector) => match label_selector(selector) {
            Some(selector) => {
                let labels = object::path(object, &["spec", "template", "metadata", "labels"]);
                if !selector.matches_labels(labels.and_then(Value::as_object)) {
                    violations.push(FieldViolation::invalid(
                        "spec.template.metadata.labels",
                        labels.unwrap_or(&Value::Null),
                        "`selector` does not match template `labels`",
                    ));
                }
            }
            None => violations.push(FieldViolation::invalid(
                "spec.selector",
                selector,
                &format!("empty selector is invalid for {kind}"),
            )),
        },
    }
    violations.extend(validate_pod_spec(
        object::path(object, &["spec", "template", "spec"]),
        "spec.template.spec",
    ));
    violations
}

/// `IsValidPortNum`'s message.
const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";

/// The container checks of `ValidatePodSpec` that children written by plugins meet most: every container has a
/// unique DNS-label name and an image, and its ports are in range.
pub fn validate_pod_spec(spec: Option<&Value>, path: &str) -> Vec<FieldViolation> {
    let mut violations = Vec::new();
    let containers = spec.and_then(|s| s.get("containers")).and_then(Value::as_array);
    let Some(containers) = containers.filter(|c| !c.is_empty()) else {
        violations.push(FieldViolation::required(format!("{path}.containers"), ""));
        return violations;
    };
    let init_containers = spec
        .and_then(|s| s.get("initContainers"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (list, items) in [("initContainers", &init_containers), ("containers", containers)] {
        let mut names: Vec<&str> = Vec::new();
        for (index, container) in items.iter().enumerate() {
            let at = format!("{path}.{list}[{index}]");
            let name = container.get("name").and_then(Value::as_str).unwrap_or_default();
            if name.is_empty() {
                violations.push(FieldViolation::required(format!("{at}.name"), ""));
            } else {
                for message in crate::schema::dns1123_label_errors(name) {
                    violations.push(FieldViolation::invalid(
                        format!("{at}.name"),
                        &Value::String(name.into()),
                        &message,
                    ));
                }
            }
            if container
                .get("image")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .is_empty()
            {
                violations.push(FieldViolation::required(format!("{at}.image"), ""));
            }
            for (port_index, port) in container
                .get("ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let port_path = format!("{at}.ports[{port_index}]");
                match port.get("containerPort").and_then(Value::as_i64).unwrap_or(0) {
                    0 => violations.push(FieldViolation::required(format!("{port_path}.containerPort"), "")),
                    number if !(1..=65535).contains(&number) => violations.push(FieldViolation::invalid(
                        format!("{port_path}.containerPort"),
                        &Value::from(number),
                        PORT_RANGE,
                    )),
                    _ => {}
                }
                if let Some(host) = port.get("hostPort").and_then(Value::as_i64)
                    && host != 0
                    && !(1..=65535).contains(&host)
                {
                    violations.push(FieldViolation::invalid(
                        format!("{port_path}.hostPort"),
                        &Value::from(host),
                        PORT_RANGE,
                    ));
                }
            }
            if names.contains(&name) {
                violations.push(FieldViolation {
                    field: format!("{at}.name"),
                    reason: "FieldValueDuplicate".into(),
                    message: format!("Duplicate value: {}", crate::go_format::quote(name)),
                });
            } else {
                names.push(name);
            }
        }
    }
    violations
}

/// `ValidateImmutableField` for each path: on an update, a changed value is `field is immutable`.
fn immutable_fields(object: &Value, old: Option<&Value>, paths: &[&[&str]]) -> Vec<FieldViolation> {
    let Some(old) = old else {
        return Vec::new();
    };
    paths
        .iter()
        .filter_map(|path| {
            let new_value = object::path(object, path);
            let old_value = object::path(old, path);
            let empty = |v: Option<&Value>| v.is_none_or(|v| v.is_null() || v.as_str() == Some(""));
            if new_value == old_value || (empty(new_value) && empty(old_value)) {
                return None;
            }
            let shown = new_value.cloned().unwrap_or(Value::Null);
            let shown = match shown {
                Value::Object(_) | Value::Array(_) => Value::String(go_format::json_text(&shown)),
                other => other,
            };
            let mut violation = FieldViolation::invalid(path.join("."), &shown, "field is immutable");
            if matches!(new_value, Some(Value::Object(_) | Value::Array(_))) {
                // Go prints a struct's JSON, unquoted.
                violation.message = format!(
                    "Invalid value: {}: field is immutable",
                    go_format::json_text(new_value.unwrap_or(&Value::Null))
                );
            }
            Some(violation)
        })
        .collect()
}

fn validate_lease(lease: &Value) -> Vec<FieldViolation> {
    let mut violations = Vec::new();
    if let Some(duration) = object::path(lease, &["spec", "leaseDurationSeconds"]).and_then(Value::as_i64)
        && duration <= 0
    {
        violations.push(FieldViolation::invalid(
            "spec.leaseDurationSeconds",
            &Value::from(duration),
            "must be greater than 0",
        ));
    }
    non_negative(&mut violations, lease, &["spec", "leaseTransitions"]);
    violations
}

/// `ValidateEventCreate`: the legacy checks for every Event, and the strict ones for `events.k8s.io`.
fn validate_event_create(event: &Value, request_group: &str) -> Vec<FieldViolation> {
    let mut violations = Vec::new();
    let text = |path: &[&str]| object::path_str(event, path).to_string();
    let namespace = object::namespace(event);
    let involved_namespace = text(&["involvedObject", "namespace"]);
    let has_event_time = object::path(event, &["eventTime"]).is_some_and(|t| !t.is_null());
    let mismatch = || {
        FieldViolation::invalid(
            "involvedObject.namespace",
            &Value::String(involved_namespace.clone()),
            "does not match event.namespace",
        )
    };
    let controller_field = if request_group.is_empty() {
        "reportingComponent"
    } else {
        "reportingController"
    };
    if !has_event_time {
        let matches = if involved_namespace.is_empty() {
            namespace.is_empty() || namespace == "default"
        } else {
            namespace == involved_namespace
        };
        if !matches {
            violations.push(mismatch());
        }
    } else {
        if involved_namespace.is_empty() && namespace != "default" && namespace != "kube-system" {
            violations.push(mismatch());
        }
        let controller = text(&["reportingComponent"]);
        if controller.is_empty() {
            violations.push(FieldViolation::required(controller_field, ""));
        }
        for message in crate::schema::qualified_name_errors(&controller) {
            violations.push(FieldViolation::invalid(
                controller_field,
                &Value::String(controller.clone()),
                &message,
            ));
        }
        for (field, limit) in [("reportingInstance", 128), ("action", 128), ("reason", 128)] {
            let value = text(&[field]);
            if value.is_empty() {
                violations.push(FieldViolation::required(field, ""));
            } else if value.len() > limit {
                violations.push(FieldViolation::invalid(
                    field,
                    &Value::String(String::new()),
                    &format!("can have at most {limit} characters"),
                ));
            }
        }
        if text(&["message"]).len() > 1024 {
            violations.push(FieldViolation::invalid(
                "message",
                &Value::String(String::new()),
                "can have at most 1024 characters",
            ));
        }
    }
    if request_group != "events.k8s.io" {
        return violations;
    }
    if let Some(series) = event.get("series").filter(|s| !s.is_null()) {
        if series.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
            violations.push(FieldViolation::invalid(
                "series.count",
                &Value::String(String::new()),
                "should be at least 2",
            ));
        }
        if series.get("lastObservedTime").is_none_or(Value::is_null) {
            violations.push(FieldViolation::required("series.lastObservedTime", ""));
        }
    }
    if !has_event_time {
        violations.push(FieldViolation::required("eventTime", ""));
    }
    let event_type = text(&["type"]);
    if event_type != "Normal" && event_type != "Warning" {
        violations.push(FieldViolation::invalid(
            "type",
            &Value::String(String::new()),
            &format!("has invalid value: {event_type}"),
        ));
    }
    for field in ["firstTimestamp", "lastTimestamp"] {
        if object::path(event, &[field]).is_some_and(|t| !t.is_null()) {
            violations.push(FieldViolation::invalid(
                field,
                &Value::String(String::new()),
                "needs to be unset",
            ));
        }
    }
    if object::path(event, &["count"]).and_then(Value::as_i64).unwrap_or(0) != 0 {
        violations.push(FieldViolation::invalid(
            "count",
            &Value::String(String::new()),
            "needs to be unset",
        ));
    }
    if !text(&["source", "component"]).is_empty() || !text(&["source", "host"]).is_empty() {
        violations.push(FieldViolation::invalid(
            "source",
            &Value::String(String::new()),
            "needs to be unset",
        ));
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use serde_json::json;

    #[test]
    fn micro_times_need_six_digits() {
        assert_eq!(micro_time_problem("2026-01-02T03:04:05.123456Z"), None);
        assert_eq!(micro_time_problem("2026-01-02T03:04:05.123456+02:00"), None);
        assert_eq!(
            micro_time_problem("2026-01-02T03:04:15.5Z").unwrap(),
            r#"parsing time "2026-01-02T03:04:15.5Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse ".5Z" as ".000000""#
        );
        assert!(
            micro_time_problem("2026-01-02T03:04:15Z")
                .unwrap()
                .ends_with(r#"cannot parse "Z" as ".000000""#)
        );
        assert!(
            micro_time_problem("yesterday")
                .unwrap()
                .ends_with(r#"cannot parse "yesterday" as "2006""#)
        );
    }

    #[test]
    fn lease_and_deployment_checks() {
        let registry = Registry::build([]);
        let leases = registry.lookup("coordination.k8s.io", "v1", "leases").unwrap();
        let lines: Vec<String> = validate(
            &leases,
            &json!({"spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1}}),
            None,
            "coordination.k8s.io",
        )
        .iter()
        .map(FieldViolation::line)
        .collect();
        assert_eq!(
            lines,
            [
                "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
                "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0"
            ]
        );
        let deployments = registry.lookup("apps", "v1", "deployments").unwrap();
        let deployment = json!({"spec": {"replicas": -2, "selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "b"}}, "spec": {"containers": []}}}});
        let lines: Vec<String> = validate(&deployments, &deployment, None, "apps")
            .iter()
            .map(FieldViolation::line)
            .collect();
        assert_eq!(
            lines,
            [
                "spec.replicas: Invalid value: -2: must be greater than or equal to 0",
                r#"spec.template.metadata.labels: Invalid value: {"app":"b"}: `selector` does not match template `labels`"#,
                "spec.template.spec.containers: Required value"
            ]
        );
    }

    #[test]
    fn events_through_events_k8s_io_are_checked_strictly() {
        let registry = Registry::build([]);
        let events = registry.lookup("events.k8s.io", "v1", "events").unwrap();
        let event = json!({"metadata": {"name": "e", "namespace": "apps"}, "reason": "Missing", "type": "Sideways"});
        let lines: Vec<String> = validate(&events, &event, None, "events.k8s.io")
            .iter()
            .map(FieldViolation::line)
            .collect();
        assert_eq!(
            lines,
            [
                r#"involvedObject.namespace: Invalid value: "": does not match event.namespace"#,
                "eventTime: Required value",
                r#"type: Invalid value: "": has invalid value: Sideways"#
            ]
        );
        assert!(
            validate(&events, &event, None, "").len() == 1,
            "core/v1 keeps only the legacy checks"
        );
    }

    #[test]
    fn unknown_top_level_and_metadata_fields_are_pruned() {
        let registry = Registry::build([]);
        let config_maps = registry.lookup("", "v1", "configmaps").unwrap();
        let mut object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labelz": {}},
                                "color": "blue", "data": {"a": "b"}, "spec": {}});
        let unknown = prune_unknown_fields(&config_maps, &mut object);
        assert_eq!(unknown, ["metadata.labelz", "color", "spec"], "in document order");
        assert_eq!(
            object,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"a": "b"}})
        );
    }

    #[test]
    fn config_map_keys() {
        let registry = Registry::build([]);
        let config_maps = registry.lookup("", "v1", "configmaps").unwrap();
        let violations = validate(&config_maps, &json!({"data": {"bad/key": "x", "ok": "y"}}), None, "");
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].field, "data[bad/key]");
        assert_eq!(
            decode_problem(&config_maps, &json!({"data": {"a": 1}})).unwrap(),
            "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
        );
        let deployments = registry.lookup("apps", "v1", "deployments").unwrap();
        assert_eq!(
            decode_problem(&deployments, &json!({"spec": {"replicas": "many"}})).unwrap(),
            "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
        );
    }
}
