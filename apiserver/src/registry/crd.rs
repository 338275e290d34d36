//! CustomResourceDefinitions: defaulting, validation, the status the server sets, and the resources they serve.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::{CustomVersion, PrinterColumn, ResourceInfo};
use crate::error::FieldViolation;
use crate::object;

/// Finalizer that holds a deleted CRD until its custom resources are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Whether the CRD has condition `Established=True`.
pub fn is_established(crd: &Value) -> bool {
    has_condition(crd, "Established")
}

fn has_condition(crd: &Value, condition: &str) -> bool {
    object::path(crd, &["status", "conditions"])
        .and_then(Value::as_array)
        .is_some_and(|conditions| {
            conditions.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some(condition)
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

/// The storage version's name.
pub fn storage_version(crd: &Value) -> Option<String> {
    versions(crd)
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name").and_then(Value::as_str))
        .map(str::to_string)
}

fn versions(crd: &Value) -> Vec<Value> {
    object::path(crd, &["spec", "versions"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Fill the defaults the real server applies to a CRD.
pub fn apply_defaults(crd: &mut Value) {
    let spec = object::ensure_object(crd, &["spec"]);
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names.get("kind").and_then(Value::as_str).unwrap_or("").to_string();
        if !names.contains_key("singular") && !kind.is_empty() {
            names.insert("singular".into(), Value::String(kind.to_lowercase()));
        }
        if !names.contains_key("listKind") && !kind.is_empty() {
            names.insert("listKind".into(), Value::String(format!("{kind}List")));
        }
    }
    if !spec.contains_key("conversion") {
        spec.insert("conversion".into(), json!({"strategy": "None"}));
    }
}

/// Whether every version has the same value at `field`: the real server then moves it to the top of its internal
/// spec (`spec.validation` for schemas), which is where its errors point.
fn identical_across_versions(versions: &[Value], field: &str) -> bool {
    versions.windows(2).all(|pair| pair[0].get(field) == pair[1].get(field))
}

/// The versions as the real server's messages print them: its internal Go structs, with the fields that are the
/// same in every version moved out (null).
fn internal_versions(versions: &[Value]) -> Value {
    let hoisted = |field: &str| identical_across_versions(versions, field);
    let schema = hoisted("schema");
    let subresources = hoisted("subresources");
    let columns = hoisted("additionalPrinterColumns");
    let selectable = hoisted("selectableFields");
    let per_version = |version: &Value, field: &str, moved: bool| {
        if moved {
            Value::Null
        } else {
            version.get(field).cloned().unwrap_or(Value::Null)
        }
    };
    Value::Array(
        versions
            .iter()
            .map(|version| {
                json!({
                    "Name": version.get("name").and_then(Value::as_str).unwrap_or_default(),
                    "Served": version.get("served").and_then(Value::as_bool).unwrap_or(false),
                    "Storage": version.get("storage").and_then(Value::as_bool).unwrap_or(false),
                    "Deprecated": version.get("deprecated").and_then(Value::as_bool).unwrap_or(false),
                    "DeprecationWarning": version.get("deprecationWarning").cloned().unwrap_or(Value::Null),
                    "Schema": per_version(version, "schema", schema),
                    "Subresources": per_version(version, "subresources", subresources),
                    "AdditionalPrinterColumns": per_version(version, "additionalPrinterColumns", columns),
                    "SelectableFields": per_version(version, "selectableFields", selectable),
                })
            })
            .collect(),
    )
}

/// Validate a CRD the way the apiextensions server does (the rules that matter in practice).
pub fn validate(crd: &Value) -> Vec<FieldViolation> {
    let mut violations = Vec::new();
    let name = object::name(crd);
    let group = object::path_str(crd, &["spec", "group"]);
    let plural = object::path_str(crd, &["spec", "names", "plural"]);
    let kind = object::path_str(crd, &["spec", "names", "kind"]);
    let scope = object::path_str(crd, &["spec", "scope"]);
    if !plural.is_empty() && !group.is_empty() && name != format!("{plural}.{group}") {
        violations.push(FieldViolation::invalid(
            "metadata.name",
            &json!(name),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    if group.is_empty() {
        violations.push(FieldViolation::required("spec.group", ""));
    } else if !group.contains('.') {
        violations.push(FieldViolation::invalid(
            "spec.group",
            &json!(group),
            "should be a domain with at least one dot",
        ));
    }
    if plural.is_empty() {
        violations.push(FieldViolation::required("spec.names.plural", ""));
    } else if plural != plural.to_lowercase() {
        violations.push(FieldViolation::invalid(
            "spec.names.plural",
            &json!(plural),
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        ));
    }
    if kind.is_empty() {
        violations.push(FieldViolation::required("spec.names.kind", ""));
    }
    match scope {
        "Namespaced" | "Cluster" => {}
        "" => violations.push(FieldViolation::required("spec.scope", "")),
        other => violations.push(FieldViolation::not_supported(
            "spec.scope",
            other,
            &["Cluster", "Namespaced"],
        )),
    }
    let versions = versions(crd);
    if versions.is_empty() {
        violations.push(FieldViolation::invalid(
            "spec.versions",
            &json!(null),
            "must have exactly one version marked as storage version",
        ));
    } else {
        let storage = versions
            .iter()
            .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
            .count();
        if storage != 1 {
            violations.push(FieldViolation::invalid(
                "spec.versions",
                &internal_versions(&versions),
                "must have exactly one version marked as storage version",
            ));
        }
        let schemas_hoisted = identical_across_versions(&versions, "schema");
        for (index, version) in versions.iter().enumerate() {
            if version.get("name").and_then(Value::as_str).unwrap_or("").is_empty() {
                violations.push(FieldViolation::required(format!("spec.versions[{index}].name"), ""));
            }
            match version.get("schema").and_then(|s| s.get("openAPIV3Schema")) {
                None => violations.push(FieldViolation::required(
                    format!("spec.versions[{index}].schema.openAPIV3Schema"),
                    "schemas are required",
                )),
                Some(_) if schemas_hoisted && index > 0 => {}
                Some(schema) => {
                    let at = if schemas_hoisted {
                        "spec.validation.openAPIV3Schema".to_string()
                    } else {
                        format!("spec.versions[{index}].schema.openAPIV3Schema")
                    };
                    if let Err(errors) = crate::schema::Structural::from_openapi_v3_at(schema, &at) {
                        violations.extend(errors.iter().map(crate::lifecycle::patching::violation));
                    }
                }
            }
        }
        if !versions
            .iter()
            .any(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        {
            violations.push(FieldViolation::invalid(
                "spec.versions",
                &internal_versions(&versions),
                "must have at least one version marked as served",
            ));
        }
    }
    if storage_version(crd).is_none() {
        // The create strategy records the storage version as the first stored version; without one there is none.
        violations.push(FieldViolation::invalid(
            "status.storedVersions",
            &Value::Null,
            "must have at least one stored version",
        ));
    }
    violations
}

/// The status a CRD gets once its names are accepted (`conflict` names another CRD's use of the plural).
pub fn accepted_status(crd: &Value, previous: Option<&Value>, conflict: Option<&str>) -> Value {
    let now = object::now_rfc3339();
    let previous_time = |condition: &str| -> Option<Value> {
        object::path(previous?, &["status", "conditions"])?
            .as_array()?
            .iter()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(condition))
            .and_then(|c| c.get("lastTransitionTime").cloned())
    };
    let mut conditions = Vec::new();
    let mut accepted_names = Value::Object(Map::new());
    match conflict {
        None => {
            conditions.push(json!({
                "type": "NamesAccepted", "status": "True",
                "lastTransitionTime": previous_time("NamesAccepted").unwrap_or(json!(now)),
                "reason": "NoConflicts", "message": "no conflicts found"
            }));
            conditions.push(json!({
                "type": "Established", "status": "True",
                "lastTransitionTime": previous_time("Established").unwrap_or(json!(now)),
                "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"
            }));
            if let Some(names) = object::path(crd, &["spec", "names"]) {
                accepted_names = names.clone();
            }
        }
        Some(other) => {
            conditions.push(json!({
                "type": "NamesAccepted", "status": "False", "lastTransitionTime": now,
                "reason": "PluralConflict",
                "message": format!("\"{}\" is already in use", other)
            }));
            conditions.push(json!({
                "type": "Established", "status": "False", "lastTransitionTime": now,
                "reason": "NotAccepted", "message": "not all names are accepted"
            }));
        }
    }
    if object::is_deleting(crd) {
        conditions.push(json!({
            "type": "Terminating", "status": "True", "lastTransitionTime": now,
            "reason": "InstanceDeletionInProgress",
            "message": "CustomResource deletion is in progress"
        }));
    }
    let mut stored: Vec<Value> = object::path(previous.unwrap_or(crd), &["status", "storedVersions"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(version) = storage_version(crd)
        && !stored.iter().any(|v| v.as_str() == Some(version.as_str()))
    {
        stored.push(Value::String(version));
    }
    json!({
        "conditions": conditions,
        "acceptedNames": accepted_names,
        "storedVersions": stored,
    })
}

/// The resources one CRD serves, one per served version.
pub fn served_resources(crd: &Value) -> Vec<ResourceInfo> {
    let group = object::path_str(crd, &["spec", "group"]).to_string();
    let names = object::path(crd, &["spec", "names"]).cloned().unwrap_or(json!({}));
    let name_of = |key: &str| names.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    let plural = name_of("plural");
    let kind = name_of("kind");
    let singular = {
        let singular = name_of("singular");
        if singular.is_empty() {
            kind.to_lowercase()
        } else {
            singular
        }
    };
    let list_kind = {
        let list_kind = name_of("listKind");
        if list_kind.is_empty() {
            format!("{kind}List")
        } else {
            list_kind
        }
    };
    let namespaced = object::path_str(crd, &["spec", "scope"]) != "Cluster";
    let Some(storage_version) = storage_version(crd) else {
        return Vec::new();
    };
    let storage: super::StorageId = format!("{group}/{plural}").into();
    let crd_name = object::name(crd).to_string();
    versions(crd)
        .into_iter()
        .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        .map(|version| {
            let version_name = version.get("name").and_then(Value::as_str).unwrap_or("").to_string();
            let schema = version.get("schema").and_then(|s| s.get("openAPIV3Schema")).cloned();
            let printer_columns = version
                .get("additionalPrinterColumns")
                .and_then(Value::as_array)
                .map(|columns| columns.iter().map(printer_column).collect())
                .unwrap_or_default();
            let status_subresource = version.get("subresources").and_then(|s| s.get("status")).is_some();
            let scale = version.get("subresources").and_then(|s| s.get("scale")).map(|scale| {
                let text = |key: &str| scale.get(key).and_then(Value::as_str).map(str::to_string);
                super::ScalePaths {
                    spec_replicas: text("specReplicasPath").unwrap_or_default(),
                    status_replicas: text("statusReplicasPath").unwrap_or_default(),
                    label_selector: text("labelSelectorPath"),
                }
            });
            let field_type = Arc::new(
                schema
                    .as_ref()
                    .map(crate::patch::from_openapi_v3)
                    .unwrap_or(crate::patch::FieldType::Untyped),
            );
            ResourceInfo {
                field_type,
                group: group.clone(),
                version: version_name,
                plural: plural.clone(),
                singular: singular.clone(),
                kind: kind.clone(),
                list_kind: list_kind.clone(),
                namespaced,
                short_names: object::string_list(names.get("shortNames")),
                categories: object::string_list(names.get("categories")),
                status_subresource,
                scale,
                generation: true,
                storage: storage.clone(),
                storage_api_version: format!("{group}/{storage_version}"),
                custom: Some(Arc::new(CustomVersion::new(crd_name.clone(), schema, printer_columns))),
            }
        })
        .collect()
}

fn printer_column(column: &Value) -> PrinterColumn {
    let text = |key: &str| column.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    PrinterColumn {
        name: text("name"),
        column_type: text("type"),
        format: text("format"),
        description: text("description"),
        priority: column.get("priority").and_then(Value::as_i64).unwrap_or(0),
        json_path: text("jsonPath"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widget_crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
                "versions": [
                    {"name": "v1", "served": true, "storage": true,
                     "schema": {"openAPIV3Schema": {"type": "object"}},
                     "subresources": {"status": {}},
                     "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]},
                    {"name": "v1beta1", "served": true, "storage": false,
                     "schema": {"openAPIV3Schema": {"type": "object"}}}
                ]
            }
        })
    }

    #[test]
    fn valid_crd_serves_each_version_from_one_store() {
        let mut crd = widget_crd();
        apply_defaults(&mut crd);
        assert!(validate(&crd).is_empty());
        let resources = served_resources(&crd);
        assert_eq!(resources.len(), 2);
        assert!(resources.iter().all(|r| r.storage_api_version == "example.com/v1"));
        assert!(resources[0].status_subresource);
        assert!(!resources[1].status_subresource);
        assert_eq!(resources[0].singular, "widget");
        assert_eq!(resources[0].list_kind, "WidgetList");
    }

    #[test]
    fn wrong_name_and_two_storage_versions_are_invalid() {
        let mut crd = widget_crd();
        crd["metadata"]["name"] = json!("gadgets.example.com");
        crd["spec"]["versions"][1]["storage"] = json!(true);
        let fields: Vec<String> = validate(&crd).into_iter().map(|v| v.field).collect();
        assert_eq!(fields, ["metadata.name", "spec.versions"]);
    }

    #[test]
    fn accepted_status_establishes() {
        let crd = widget_crd();
        let status = accepted_status(&crd, None, None);
        let mut with_status = crd.clone();
        with_status["status"] = status;
        assert!(is_established(&with_status));
        assert_eq!(with_status["status"]["storedVersions"], json!(["v1"]));
    }
}
