//! `ObjectMeta` and `TypeMeta` checks every object gets (`ValidateObjectMetaAccessor` and friends).

use serde_json::{Map, Value};

use super::field_error::{FieldError, FieldPath};

/// The JSON fields of `metav1.ObjectMeta`.
pub(crate) const OBJECT_META_FIELDS: [&str; 15] = [
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
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// The JSON fields of `metav1.OwnerReference`.
pub(crate) const OWNER_REFERENCE_FIELDS: [&str; 6] =
    ["apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"];

/// The JSON fields of `metav1.ManagedFieldsEntry`.
pub(crate) const MANAGED_FIELDS_ENTRY_FIELDS: [&str; 7] = [
    "manager",
    "operation",
    "apiVersion",
    "time",
    "fieldsType",
    "fieldsV1",
    "subresource",
];

/// Total size limit of annotation keys and values (`TotalAnnotationSizeLimitB`).
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// How `metadata.name` (and `generateName`, as a prefix) must look for a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// `NameIsDNSSubdomain`: most kinds, custom resources included.
    Dns1123Subdomain,
    /// `NameIsDNSLabel`: namespaces (and nodes' labels of that form).
    Dns1123Label,
    /// `NameIsDNS1035Label`: services.
    Dns1035Label,
    /// `ValidatePathSegmentName`: names only need to be a URL path segment (e.g. RBAC objects,
    /// and the metadata of embedded resources).
    PathSegment,
}

impl NameRule {
    fn check(self, name: &str, prefix: bool) -> Vec<String> {
        let masked;
        let name = if prefix && self != NameRule::PathSegment {
            masked = mask_trailing_dash(name);
            masked.as_str()
        } else {
            name
        };
        match self {
            NameRule::Dns1123Subdomain => dns1123_subdomain_errors(name),
            NameRule::Dns1123Label => dns1123_label_errors(name),
            NameRule::Dns1035Label => dns1035_label_errors(name),
            NameRule::PathSegment => path_segment_errors(name, prefix),
        }
    }
}

/// `maskTrailingDash`: a generateName may end in `-`.
fn mask_trailing_dash(name: &str) -> String {
    if name.len() > 1 && name.ends_with('-') {
        format!("{}a", &name[..name.len() - 2])
    } else {
        name.to_string()
    }
}

fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} characters")
}

/// `validation.RegexError`, including its doubled space between examples.
fn regex_error(message: &str, pattern: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{message} (regex used for validation is '{pattern}')");
    }
    let mut out = format!("{message} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{example}', "));
    }
    out.push_str(&format!("regex used for validation is '{pattern}')"));
    out
}

fn is_dns1123_label(value: &str) -> bool {
    let bytes = value.as_bytes();
    !bytes.is_empty()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes[0] != b'-'
        && bytes[bytes.len() - 1] != b'-'
}

fn is_dns1123_subdomain(value: &str) -> bool {
    value.split('.').all(is_dns1123_label)
}

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";

/// `IsDNS1123Subdomain`.
pub fn dns1123_subdomain_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 253 {
        errors.push(max_len_error(253));
    }
    if !is_dns1123_subdomain(value) {
        errors.push(regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errors
}

/// `IsDNS1123Label`.
pub fn dns1123_label_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push(max_len_error(63));
    }
    if !is_dns1123_label(value) {
        if is_dns1123_subdomain(value) {
            errors.push("must not contain dots".to_string());
        } else {
            errors.push(regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errors
}

/// `IsDNS1035Label`.
pub fn dns1035_label_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push(max_len_error(63));
    }
    if !(is_dns1123_label(value) && value.as_bytes()[0].is_ascii_lowercase()) {
        errors.push(regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errors
}

/// `IsValidPathSegmentName` / `IsValidPathSegmentPrefix`.
fn path_segment_errors(name: &str, prefix: bool) -> Vec<String> {
    if !prefix {
        for illegal in [".", ".."] {
            if name == illegal {
                return vec![format!("may not be '{illegal}'")];
            }
        }
    }
    ["/", "%"]
        .iter()
        .filter(|c| name.contains(**c))
        .map(|c| format!("may not contain '{c}'"))
        .collect()
}

fn is_qualified_name_part(value: &str) -> bool {
    let bytes = value.as_bytes();
    !bytes.is_empty()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
}

/// `IsQualifiedName` (label keys, annotation keys, finalizers).
pub fn qualified_name_errors(value: &str) -> Vec<String> {
    const MESSAGE: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
    let examples = ["MyName", "my.name", "123-abc"];
    let mut errors = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_string());
            } else {
                errors.extend(
                    dns1123_subdomain_errors(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            return vec![format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(MESSAGE, QUALIFIED_NAME_FMT, &examples)
            )];
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errors.push(format!("name part {}", max_len_error(63)));
    }
    if !is_qualified_name_part(name) {
        errors.push(format!(
            "name part {}",
            regex_error(MESSAGE, QUALIFIED_NAME_FMT, &examples)
        ));
    }
    errors
}

/// `IsValidLabelValue`.
pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push(max_len_error(63));
    }
    if !(value.is_empty() || is_qualified_name_part(value)) {
        errors.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errors
}

/// Normalises a `metav1.Time` JSON string (RFC 3339, re-encoded in UTC with second precision).
pub(crate) fn normalize_time(text: &str) -> Option<String> {
    chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&chrono::Utc).format("%Y-%m-%dT%H:%M:%SZ").to_string())
}

fn json_kind(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(n) if n.is_f64() => format!("number {}", crate::go_format::number_v(n)),
        Value::Number(_) => "number".into(),
        Value::String(_) => "string".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
    }
}

fn type_error(value: &Value, field: &str, go_type: &str) -> String {
    format!(
        "json: cannot unmarshal {} into Go struct field {field} of type {go_type}",
        json_kind(value)
    )
}

/// Why `metadata` cannot be decoded into `ObjectMeta` (the server answers such requests with a
/// decode error), worded like Go's `encoding/json`.
pub(crate) fn decode_problem(metadata: &Value) -> Option<String> {
    let Value::Object(map) = metadata else {
        if metadata.is_null() {
            return None;
        }
        return Some(format!(
            "json: cannot unmarshal {} into Go value of type v1.ObjectMeta",
            json_kind(metadata)
        ));
    };
    for (key, value) in map {
        if value.is_null() {
            continue;
        }
        let problem = match key.as_str() {
            "name" | "generateName" | "namespace" | "selfLink" | "resourceVersion" => {
                (!value.is_string()).then(|| type_error(value, &format!("ObjectMeta.{key}"), "string"))
            }
            "uid" => (!value.is_string()).then(|| type_error(value, "ObjectMeta.uid", "types.UID")),
            "generation" | "deletionGracePeriodSeconds" => {
                (value.as_i64().is_none()).then(|| type_error(value, &format!("ObjectMeta.{key}"), "int64"))
            }
            "creationTimestamp" | "deletionTimestamp" => match value {
                Value::String(text) if normalize_time(text).is_some() => None,
                Value::String(text) => Some(format!(
                    "parsing time {} as \"2006-01-02T15:04:05Z07:00\": cannot parse as RFC3339",
                    crate::go_format::quote(text)
                )),
                other => Some(type_error(other, &format!("ObjectMeta.{key}"), "string")),
            },
            "labels" | "annotations" => match value {
                Value::Object(entries) => entries
                    .values()
                    .find(|v| !v.is_string() && !v.is_null())
                    .map(|v| type_error(v, &format!("ObjectMeta.{key}"), "string")),
                other => Some(type_error(other, &format!("ObjectMeta.{key}"), "map[string]string")),
            },
            "finalizers" => match value {
                Value::Array(items) => items
                    .iter()
                    .find(|v| !v.is_string() && !v.is_null())
                    .map(|v| type_error(v, "ObjectMeta.finalizers", "string")),
                other => Some(type_error(other, "ObjectMeta.finalizers", "[]string")),
            },
            "ownerReferences" => match value {
                Value::Array(items) => items.iter().find_map(|item| match item {
                    Value::Object(reference) => reference.iter().find_map(|(k, v)| match k.as_str() {
                        "apiVersion" | "kind" | "name" | "uid" if !v.is_string() && !v.is_null() => {
                            Some(type_error(v, &format!("ObjectMeta.ownerReferences.{k}"), "string"))
                        }
                        "controller" | "blockOwnerDeletion" if !v.is_boolean() && !v.is_null() => {
                            Some(type_error(v, &format!("ObjectMeta.ownerReferences.{k}"), "bool"))
                        }
                        _ => None,
                    }),
                    Value::Null => None,
                    other => Some(type_error(other, "ObjectMeta.ownerReferences", "v1.OwnerReference")),
                }),
                other => Some(type_error(other, "ObjectMeta.ownerReferences", "[]v1.OwnerReference")),
            },
            "managedFields" => match value {
                Value::Array(items) => items.iter().find_map(|item| match item {
                    Value::Object(_) | Value::Null => None,
                    other => Some(type_error(other, "ObjectMeta.managedFields", "v1.ManagedFieldsEntry")),
                }),
                other => Some(type_error(other, "ObjectMeta.managedFields", "[]v1.ManagedFieldsEntry")),
            },
            _ => None,
        };
        if problem.is_some() {
            return problem;
        }
    }
    None
}

/// Validates an object's `metadata` as every API server write does (`ValidateObjectMetaAccessor`):
/// name or generateName present and well-formed per `name_rule`, namespace required (and a
/// DNS-1123 label) for namespaced kinds and forbidden otherwise, non-negative generation, label
/// keys and values, annotation keys and total size, owner references, finalizers and managed
/// fields. Errors are reported under `metadata.`.
pub fn validate_object_meta(meta: &Value, namespaced: bool, name_rule: NameRule) -> Vec<FieldError> {
    validate_object_meta_at(meta, namespaced, name_rule, &FieldPath::root().child("metadata"))
}

pub(crate) fn validate_object_meta_at(
    meta: &Value,
    namespaced: bool,
    name_rule: NameRule,
    path: &FieldPath,
) -> Vec<FieldError> {
    if let Some(problem) = decode_problem(meta) {
        return vec![FieldError::invalid(path, meta.clone(), problem)];
    }
    let empty = Map::new();
    let map = meta.as_object().unwrap_or(&empty);
    let text = |key: &str| map.get(key).and_then(Value::as_str).unwrap_or("");
    let mut errors = Vec::new();

    let generate_name = text("generateName");
    if !generate_name.is_empty() {
        for message in name_rule.check(generate_name, true) {
            errors.push(FieldError::invalid(
                path.child("generateName"),
                Value::String(generate_name.into()),
                message,
            ));
        }
    }
    let name = text("name");
    if name.is_empty() {
        errors.push(FieldError::required(
            path.child("name"),
            "name or generateName is required",
        ));
    } else {
        for message in name_rule.check(name, false) {
            errors.push(FieldError::invalid(
                path.child("name"),
                Value::String(name.into()),
                message,
            ));
        }
    }
    let namespace = text("namespace");
    if namespaced {
        if namespace.is_empty() {
            errors.push(FieldError::required(path.child("namespace"), ""));
        } else {
            for message in NameRule::Dns1123Label.check(namespace, false) {
                errors.push(FieldError::invalid(
                    path.child("namespace"),
                    Value::String(namespace.into()),
                    message,
                ));
            }
        }
    } else if !namespace.is_empty() {
        errors.push(FieldError::forbidden(
            path.child("namespace"),
            "not allowed on this type",
        ));
    }
    if let Some(generation) = map.get("generation").and_then(Value::as_i64)
        && generation < 0
    {
        errors.push(FieldError::invalid(
            path.child("generation"),
            Value::from(generation),
            "must be greater than or equal to 0",
        ));
    }
    let labels_path = path.child("labels");
    if let Some(Value::Object(labels)) = map.get("labels") {
        for (key, value) in labels {
            for message in qualified_name_errors(key) {
                errors.push(FieldError::invalid(&labels_path, Value::String(key.clone()), message));
            }
            let value = value.as_str().unwrap_or("");
            for message in label_value_errors(value) {
                errors.push(FieldError::invalid(&labels_path, Value::String(value.into()), message));
            }
        }
    }
    let annotations_path = path.child("annotations");
    if let Some(Value::Object(annotations)) = map.get("annotations") {
        let mut total = 0;
        for (key, value) in annotations {
            for message in qualified_name_errors(&key.to_lowercase()) {
                errors.push(FieldError::invalid(
                    &annotations_path,
                    Value::String(key.clone()),
                    message,
                ));
            }
            total += key.len() + value.as_str().map_or(0, str::len);
        }
        if total > TOTAL_ANNOTATION_SIZE_LIMIT {
            errors.push(FieldError::too_long(
                &annotations_path,
                TOTAL_ANNOTATION_SIZE_LIMIT as i64,
            ));
        }
    }
    if let Some(Value::Array(references)) = map.get("ownerReferences") {
        validate_owner_references(references, &path.child("ownerReferences"), &mut errors);
    }
    if let Some(Value::Array(finalizers)) = map.get("finalizers") {
        let finalizers_path = path.child("finalizers");
        let names: Vec<&str> = finalizers.iter().map(|f| f.as_str().unwrap_or("")).collect();
        for finalizer in &names {
            for message in qualified_name_errors(finalizer) {
                errors.push(FieldError::invalid(
                    &finalizers_path,
                    Value::String((*finalizer).into()),
                    message,
                ));
            }
        }
        if names.contains(&"orphan") && names.contains(&"foregroundDeletion") {
            errors.push(FieldError::invalid(
                &finalizers_path,
                Value::Array(finalizers.clone()),
                "finalizer orphan and foregroundDeletion cannot be both set",
            ));
        }
    }
    if let Some(Value::Array(entries)) = map.get("managedFields") {
        for (i, entry) in entries.iter().enumerate() {
            let entry_path = path.child("managedFields").index(i);
            let field = |key: &str| entry.get(key).and_then(Value::as_str).unwrap_or("").to_string();
            let operation = field("operation");
            if operation != "Apply" && operation != "Update" {
                errors.push(FieldError::invalid(
                    entry_path.child("operation"),
                    Value::String(operation),
                    "must be `Apply` or `Update`",
                ));
            }
            let fields_type = field("fieldsType");
            if !fields_type.is_empty() && fields_type != "FieldsV1" {
                errors.push(FieldError::invalid(
                    entry_path.child("fieldsType"),
                    Value::String(fields_type),
                    "must be `FieldsV1`",
                ));
            }
            let manager = field("manager");
            if manager.len() > 128 {
                errors.push(FieldError::too_long(entry_path.child("manager"), 128));
            }
        }
    }
    errors
}

/// `ValidateOwnerReferences`: note the server reports these without an index.
fn validate_owner_references(references: &[Value], path: &FieldPath, errors: &mut Vec<FieldError>) {
    let mut first_controller: Option<String> = None;
    for reference in references {
        let field = |key: &str| reference.get(key).and_then(Value::as_str).unwrap_or("").to_string();
        let (api_version, kind, name, uid) = (field("apiVersion"), field("kind"), field("name"), field("uid"));
        let version = match api_version.split_once('/') {
            Some((_, version)) => version.to_string(),
            None => api_version.clone(),
        };
        if version.is_empty() {
            errors.push(FieldError::invalid(
                path.child("apiVersion"),
                Value::String(api_version.clone()),
                "version must not be empty",
            ));
        }
        if kind.is_empty() {
            errors.push(FieldError::invalid(
                path.child("kind"),
                Value::String(kind.clone()),
                "must not be empty",
            ));
        }
        if name.is_empty() {
            errors.push(FieldError::invalid(
                path.child("name"),
                Value::String(name.clone()),
                "must not be empty",
            ));
        }
        if uid.is_empty() {
            errors.push(FieldError::invalid(
                path.child("uid"),
                Value::String(uid),
                "must not be empty",
            ));
        }
        if api_version == "v1" && kind == "Event" {
            errors.push(FieldError::invalid(
                path,
                reference.clone(),
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if reference.get("controller").and_then(Value::as_bool) == Some(true) {
            let current = format!("{kind}/{name}");
            match &first_controller {
                Some(first) => errors.push(FieldError::invalid(
                    path,
                    Value::Array(references.to_vec()),
                    format!("Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}"),
                )),
                None => first_controller = Some(current),
            }
        }
    }
}

/// `customResourceValidator.ValidateTypeMeta`: `kind` and `apiVersion` must match the endpoint.
pub fn validate_type_meta(obj: &Value, api_version: &str, kind: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let actual_kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    if actual_kind != kind {
        errors.push(FieldError::invalid(
            "kind",
            Value::String(actual_kind.into()),
            format!("must be {kind}"),
        ));
    }
    let actual_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if actual_version != api_version {
        errors.push(FieldError::invalid(
            "apiVersion",
            Value::String(actual_version.into()),
            format!("must be {api_version}"),
        ));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(meta: Value, namespaced: bool, rule: NameRule) -> Vec<String> {
        validate_object_meta(&meta, namespaced, rule)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn name_must_be_a_dns_subdomain() {
        // Real server: `metadata.name: Invalid value: "nginx-teamA": a lowercase RFC 1123 subdomain ...`.
        assert_eq!(
            messages(
                json!({"name": "nginx-teamA", "namespace": "default"}),
                true,
                NameRule::Dns1123Subdomain
            ),
            vec![
                r#"metadata.name: Invalid value: "nginx-teamA": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#
            ]
        );
    }

    #[test]
    fn name_or_generate_name_is_required() {
        assert_eq!(
            messages(json!({"namespace": "default"}), true, NameRule::Dns1123Subdomain),
            vec!["metadata.name: Required value: name or generateName is required"]
        );
    }

    #[test]
    fn generate_name_may_end_with_a_dash() {
        assert!(
            messages(
                json!({"generateName": "web-", "name": "web-x1", "namespace": "a"}),
                true,
                NameRule::Dns1123Subdomain
            )
            .is_empty()
        );
    }

    #[test]
    fn namespace_rules() {
        assert_eq!(
            messages(json!({"name": "a"}), true, NameRule::Dns1123Subdomain),
            vec!["metadata.namespace: Required value"]
        );
        assert_eq!(
            messages(
                json!({"name": "a", "namespace": "x"}),
                false,
                NameRule::Dns1123Subdomain
            ),
            vec!["metadata.namespace: Forbidden: not allowed on this type"]
        );
    }

    #[test]
    fn dns_labels_for_namespaces_and_services() {
        assert_eq!(
            messages(json!({"name": "a.b"}), false, NameRule::Dns1123Label),
            vec![r#"metadata.name: Invalid value: "a.b": must not contain dots"#]
        );
        assert_eq!(
            messages(json!({"name": "1abc", "namespace": "d"}), true, NameRule::Dns1035Label),
            vec![
                r#"metadata.name: Invalid value: "1abc": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"#
            ]
        );
    }

    #[test]
    fn labels_keys_and_values() {
        assert_eq!(
            messages(
                json!({"name": "a", "labels": {"bad key": "ok", "k": "bad value"}}),
                false,
                NameRule::Dns1123Subdomain
            ),
            vec![
                r#"metadata.labels: Invalid value: "bad key": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#,
                r#"metadata.labels: Invalid value: "bad value": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"#,
            ]
        );
    }

    #[test]
    fn label_value_too_long() {
        let long = "a".repeat(64);
        assert_eq!(
            messages(
                json!({"name": "a", "labels": {"k": long}}),
                false,
                NameRule::Dns1123Subdomain
            ),
            vec![format!(
                r#"metadata.labels: Invalid value: "{long}": must be no more than 63 characters"#
            )]
        );
    }

    #[test]
    fn annotation_size_limit() {
        let big = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT);
        assert_eq!(
            messages(
                json!({"name": "a", "annotations": {"k": big}}),
                false,
                NameRule::Dns1123Subdomain
            ),
            vec!["metadata.annotations: Too long: may not be more than 262144 bytes"]
        );
    }

    #[test]
    fn owner_references_and_finalizers() {
        assert_eq!(
            messages(
                json!({"name": "a", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c"}], "finalizers": ["bad finalizer"]}),
                false,
                NameRule::Dns1123Subdomain
            ),
            vec![
                r#"metadata.ownerReferences.uid: Invalid value: "": must not be empty"#,
                r#"metadata.finalizers: Invalid value: "bad finalizer": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#,
            ]
        );
    }

    #[test]
    fn path_segment_names() {
        assert_eq!(
            messages(json!({"name": ".."}), false, NameRule::PathSegment),
            vec![r#"metadata.name: Invalid value: "..": may not be '..'"#]
        );
    }

    #[test]
    fn malformed_metadata_is_reported() {
        let errors = validate_object_meta(
            &json!({"name": "a", "labels": "oops"}),
            false,
            NameRule::Dns1123Subdomain,
        );
        assert_eq!(errors.len(), 1);
        assert!(errors[0].detail.contains(
            "json: cannot unmarshal string into Go struct field ObjectMeta.labels of type map[string]string"
        ));
    }

    #[test]
    fn type_meta_must_match() {
        let errors: Vec<String> = validate_type_meta(
            &json!({"apiVersion": "example.com/v2", "kind": "Other"}),
            "example.com/v1",
            "Thing",
        )
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(
            errors,
            vec![
                r#"kind: Invalid value: "Other": must be Thing"#,
                r#"apiVersion: Invalid value: "example.com/v2": must be example.com/v1"#,
            ]
        );
    }
}
