//! The `/scale` subresource of Deployments, ReplicaSets, StatefulSets and CRDs that declare one: an
//! `autoscaling/v1` `Scale` read from the parent, and writes of it (PUT or PATCH) that change only the parent's
//! replicas, with the real server's validation.

use serde_json::{Value, json};

use super::{Cluster, PatchKind, WriteOutcome, WriteRequest, patching};
use crate::error::{ApiError, ApiResult, FieldViolation};
use crate::object;
use crate::registry::{ResourceInfo, ScalePaths, conversion};
use crate::storage::ObjectKey;

/// The fields of a dotted JSON path (`.spec.replicas` → `spec`, `replicas`).
fn fields(path: &str) -> Vec<&str> {
    path.trim_start_matches('.')
        .split('.')
        .filter(|f| !f.is_empty())
        .collect()
}

/// `labels.Selector.String()` of a `metav1.LabelSelector`: requirements sorted by key.
pub fn selector_text(selector: &Value) -> String {
    let mut requirements: Vec<(String, String)> = Vec::new();
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        for (key, value) in labels {
            requirements.push((key.clone(), format!("{key}={}", value.as_str().unwrap_or_default())));
        }
    }
    for expression in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = expression.get("key").and_then(Value::as_str).unwrap_or_default();
        let mut values = object::string_list(expression.get("values"));
        values.sort();
        let text = match expression.get("operator").and_then(Value::as_str).unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => continue,
        };
        requirements.push((key.to_string(), text));
    }
    requirements.sort_by(|a, b| a.0.cmp(&b.0));
    requirements
        .into_iter()
        .map(|(_, text)| text)
        .collect::<Vec<_>>()
        .join(",")
}

/// The `Scale` of a parent object (in storage form).
pub fn scale_of(paths: &ScalePaths, builtin: bool, parent: &Value) -> Value {
    let integer = |path: &str| object::path(parent, &fields(path)).and_then(Value::as_i64).unwrap_or(0);
    let selector = if builtin {
        object::path(parent, &["spec", "selector"])
            .map(selector_text)
            .unwrap_or_default()
    } else {
        paths
            .label_selector
            .as_deref()
            .and_then(|path| object::path(parent, &fields(path)))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let meta = object::metadata(parent).cloned().unwrap_or_default();
    let mut metadata = serde_json::Map::new();
    for field in ["name", "namespace", "uid", "resourceVersion", "creationTimestamp"] {
        if let Some(value) = meta.get(field).filter(|v| v.as_str().is_some_and(|s| !s.is_empty())) {
            metadata.insert(field.into(), value.clone());
        }
    }
    let mut status = json!({"replicas": integer(&paths.status_replicas)});
    if !selector.is_empty() {
        status["selector"] = json!(selector);
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": {"replicas": integer(&paths.spec_replicas)},
        "status": status,
    })
}

fn paths_of(info: &ResourceInfo) -> ApiResult<&ScalePaths> {
    info.scale.as_ref().ok_or_else(ApiError::no_route)
}

impl Cluster {
    fn parent(&self, request: &WriteRequest, name: &str) -> ApiResult<std::sync::Arc<Value>> {
        let key = ObjectKey::new(&request.info.storage, &request.namespace, name);
        self.store
            .get(&key)
            .ok_or_else(|| ApiError::not_found(request.info.subject(name)))
    }

    /// GET `/scale`.
    pub fn get_scale(&self, request: &WriteRequest, name: &str) -> ApiResult<Value> {
        let paths = paths_of(&request.info)?;
        let parent = self.parent(request, name)?;
        Ok(scale_of(paths, request.info.is_builtin(), &parent))
    }

    /// PUT `/scale`.
    pub fn update_scale(&self, request: &WriteRequest, name: &str, body: Value) -> ApiResult<WriteOutcome> {
        let parent = self.parent(request, name)?;
        self.write_scale(request, name, &parent, body)
    }

    /// PATCH `/scale` (JSON, merge or strategic merge patch of the `Scale`; server-side apply is read as a merge of
    /// the applied fields).
    pub fn patch_scale(
        &self,
        request: &WriteRequest,
        name: &str,
        kind: PatchKind,
        body: &[u8],
    ) -> ApiResult<WriteOutcome> {
        let paths = paths_of(&request.info)?;
        let document = patching::parse_patch(kind, body, request.validation)?;
        let parent = self.parent(request, name)?;
        let current = scale_of(paths, request.info.is_builtin(), &parent);
        let patched = match kind {
            PatchKind::Json => patching::json_patch(&current, &document)?,
            PatchKind::Merge | PatchKind::Strategic | PatchKind::Apply { .. } => {
                patching::merge_patch(&current, &document)
            }
        };
        self.write_scale(request, name, &parent, patched)
    }

    fn write_scale(&self, request: &WriteRequest, name: &str, parent: &Value, scale: Value) -> ApiResult<WriteOutcome> {
        let info = &request.info;
        let paths = paths_of(info)?;
        if !scale.is_object() {
            return Err(ApiError::bad_request("the body of the request was not a JSON object"));
        }
        for (field, expected) in [("kind", "Scale"), ("apiVersion", "autoscaling/v1")] {
            if let Some(given) = scale
                .get(field)
                .and_then(Value::as_str)
                .filter(|g| !g.is_empty() && *g != expected)
            {
                return Err(ApiError::bad_request(format!(
                    "the {} in the data ({given}) does not match the expected {} ({expected})",
                    if field == "kind" { "kind" } else { "API version" },
                    if field == "kind" { "kind" } else { "API version" },
                )));
            }
        }
        let replicas = match object::path(&scale, &["spec", "replicas"]) {
            None | Some(Value::Null) => None,
            Some(Value::Number(number)) if number.as_i64().is_some_and(|n| i32::try_from(n).is_ok()) => number.as_i64(),
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "Scale in version \"v1\" cannot be handled as a Scale: json: cannot unmarshal {} into Go struct \
                     field ScaleSpec.spec.replicas of type int32",
                    crate::go_format::type_name(other)
                )));
            }
        };
        let spec_fields = fields(&paths.spec_replicas);
        if info.is_builtin() {
            let replicas = replicas.unwrap_or(0);
            if replicas < 0 {
                return Err(ApiError::invalid_fields(
                    "autoscaling",
                    "Scale",
                    name,
                    &[FieldViolation::invalid(
                        "spec.replicas",
                        &json!(replicas),
                        "must be greater than or equal to 0",
                    )],
                ));
            }
        } else if replicas.is_none() && object::path(parent, &spec_fields).is_none() {
            return Err(ApiError::bad_request(format!(
                "the spec replicas field {} cannot be empty",
                crate::go_format::quote(&paths.spec_replicas)
            )));
        }
        let uid = object::path_str(&scale, &["metadata", "uid"]);
        if !uid.is_empty() && uid != object::uid(parent) {
            return Err(ApiError::conflict(
                crate::error::Subject {
                    group: &info.group,
                    resource: &format!("{}/scale", info.plural),
                    name,
                },
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    object::uid(parent)
                ),
            ));
        }
        let mut updated = conversion::to_served(info, parent.clone());
        if let Some((last, path)) = spec_fields.split_last() {
            object::ensure_object(&mut updated, path).insert((*last).to_string(), json!(replicas.unwrap_or(0)));
        }
        let requested_version = object::path_str(&scale, &["metadata", "resourceVersion"]).to_string();
        let meta = object::metadata_mut(&mut updated);
        if requested_version.is_empty() {
            if info.is_builtin() {
                meta.remove("resourceVersion");
            }
        } else {
            meta.insert("resourceVersion".into(), json!(requested_version));
        }
        let mut parent_request = request.clone();
        parent_request.subresource = Some("scale".into());
        let outcome = self.update(&parent_request, name, updated)?;
        let stored = conversion::to_storage(info, outcome.object);
        Ok(WriteOutcome {
            object: scale_of(paths, info.is_builtin(), &stored),
            created: false,
            warnings: outcome.warnings,
        })
    }
}

/// The CRD scale checks on every write of a custom object (`ValidateScaleSpec`, `ValidateScaleStatus`).
pub fn validate_custom(info: &ResourceInfo, object: &Value) -> Vec<FieldViolation> {
    let Some(paths) = info.scale.as_ref().filter(|_| !info.is_builtin()) else {
        return Vec::new();
    };
    let mut violations = Vec::new();
    for path in [&paths.spec_replicas, &paths.status_replicas] {
        let Some(value) = object::path(object, &fields(path)) else {
            continue;
        };
        match value.as_i64() {
            Some(n) if n < 0 => violations.push(FieldViolation::invalid(
                path.as_str(),
                &json!(n),
                "should be a non-negative integer",
            )),
            Some(n) if n > i64::from(i32::MAX) => violations.push(FieldViolation::invalid(
                path.as_str(),
                &json!(n),
                &format!("should be less than or equal to {}", i32::MAX),
            )),
            _ => {}
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_print_like_go() {
        assert_eq!(
            selector_text(&json!({"matchLabels": {"tier": "web", "app": "a"},
                "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]},
                                     {"key": "zz", "operator": "DoesNotExist"}]})),
            "app=a,env in (dev,prod),tier=web,!zz"
        );
    }

    #[test]
    fn scale_of_a_deployment() {
        let deployment = json!({"metadata": {"name": "web", "namespace": "d", "uid": "u", "resourceVersion": "7",
            "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"x": "y"}},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}}, "status": {"replicas": 2}});
        assert_eq!(
            scale_of(&ScalePaths::builtin(), true, &deployment),
            json!({"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {"name": "web", "namespace": "d", "uid": "u", "resourceVersion": "7",
                    "creationTimestamp": "2026-01-01T00:00:00Z"},
                "spec": {"replicas": 3}, "status": {"replicas": 2, "selector": "app=web"}})
        );
    }
}
