//! The bridge between request handling and the pure `patch` and `schema` modules: patch documents,
//! managedFields for each write, and CRD schema pruning, defaulting and validation.

use std::sync::Arc;

use serde_json::Value;

use super::{FieldValidation, PatchKind, WriteRequest};
use crate::error::{ApiError, ApiResult, FieldViolation};
use crate::object;
use crate::patch::{self, ApplyOptions, FieldPath, FieldSet, PatchError, UpdateOptions};
use crate::registry::{ResourceInfo, conversion};
use crate::schema::{self, FieldError};

/// Finalizer names built-in kinds accept without a domain.
const STANDARD_FINALIZERS: &[&str] = &["kubernetes", "orphan", "foregroundDeletion"];

/// A `PatchError` as the API error the server answers with.
pub fn patch_error(error: PatchError) -> ApiError {
    let mut api = ApiError::new(error.code(), error.reason(), error.status_message());
    let causes = error.status_causes();
    if !causes.is_empty() {
        api = api.with_details(serde_json::json!({"causes": causes}));
    } else if matches!(error, PatchError::Unprocessable(_)) {
        api = api.with_details(serde_json::json!({}));
    }
    api
}

/// A schema `FieldError` as a Status cause.
pub fn violation(error: &FieldError) -> FieldViolation {
    FieldViolation {
        field: error.field.clone(),
        reason: error.reason().to_string(),
        message: error.cause_message(),
    }
}

/// Parse a PATCH body as the real server decodes it, with its messages: JSON for the JSON patch types (a body that
/// is not JSON is an `invalid JSON patch`), YAML or JSON for server-side apply; a document of the wrong shape is
/// refused with the error Go's decoder gives for the type the server decodes it into, which depends on
/// `fieldValidation` for JSON and merge patches (strict decoding first unless it is `Ignore`).
pub fn parse_patch(kind: PatchKind, body: &[u8], validation: FieldValidation) -> ApiResult<Value> {
    let strict = validation != FieldValidation::Ignore;
    let document: Value = match kind {
        PatchKind::Apply { .. } => match serde_json::from_slice(body) {
            Ok(value) => value,
            Err(_) => {
                serde_yaml::from_slice(body).map_err(|e| ApiError::bad_request(format!("error encoding patch: {e}")))?
            }
        },
        _ => serde_json::from_slice(body).map_err(|_| ApiError::bad_request("invalid JSON patch"))?,
    };
    let unmarshal = |target: &str| {
        format!(
            "json: cannot unmarshal {} into Go value of type {target}",
            patch::go_json_kind(&document)
        )
    };
    match kind {
        PatchKind::Apply { .. } if !document.is_object() => Err(ApiError::bad_request(format!(
            "error decoding patch: error unmarshaling JSON: while decoding JSON: {}",
            unmarshal("map[string]interface {}")
        ))),
        PatchKind::Json if strict && !document.is_array() && !document.is_null() => Err(ApiError::bad_request(
            format!("error decoding patch: {}", unmarshal("[]handlers.jsonPatchOp")),
        )),
        PatchKind::Json if strict => {
            match document
                .as_array()
                .and_then(|ops| ops.iter().find(|op| !op.is_object() && !op.is_null()))
            {
                Some(bad) => Err(ApiError::bad_request(format!(
                    "error decoding patch: json: cannot unmarshal {} into Go value of type handlers.jsonPatchOp",
                    patch::go_json_kind(bad)
                ))),
                None => Ok(document),
            }
        }
        PatchKind::Merge if strict && !document.is_object() && !document.is_null() => Err(ApiError::bad_request(
            format!("error decoding patch: {}", unmarshal("map[string]interface {}")),
        )),
        PatchKind::Merge => {
            patch::check_merge_patch_document(&document).map_err(patch_error)?;
            Ok(document)
        }
        PatchKind::Strategic if !document.is_object() && !document.is_null() => {
            Err(ApiError::bad_request(unmarshal("map[string]interface {}")))
        }
        PatchKind::Strategic if document.is_null() => Ok(serde_json::json!({})),
        _ => Ok(document),
    }
}

/// Checks of an apply configuration before anything else happens.
pub fn check_apply_config(request: &WriteRequest, _name: &str, document: &Value) -> ApiResult<()> {
    if request.manager.is_empty() {
        return Err(ApiError::invalid_fields(
            "meta.k8s.io",
            "PatchOptions",
            "",
            &[FieldViolation::required("fieldManager", "is required for apply patch")],
        ));
    }
    if !document.is_object() {
        return Err(ApiError::bad_request(
            "error decoding YAML: the apply configuration must be an object",
        ));
    }
    Ok(())
}

/// RFC 7386 merge patch.
pub fn merge_patch(target: &Value, document: &Value) -> Value {
    patch::merge_patch(target, document)
}

/// RFC 6902 JSON patch.
pub fn json_patch(target: &Value, document: &Value) -> ApiResult<Value> {
    patch::json_patch(target, document).map_err(patch_error)
}

/// Strategic merge patch with the kind's merge keys.
pub fn strategic_patch(info: &ResourceInfo, target: &Value, document: &Value) -> ApiResult<Value> {
    patch::strategic_merge_patch(target, document, &info.field_type).map_err(patch_error)
}

fn ignored_fields(request: &WriteRequest) -> FieldSet {
    if request.is_status() {
        FieldSet::from_paths([FieldPath::fields(["spec"])])
    } else if request.info.status_subresource {
        FieldSet::from_paths([FieldPath::fields(["status"])])
    } else {
        FieldSet::new()
    }
}

/// Server-side apply of `config` onto `live` (served form).
pub fn apply(request: &WriteRequest, live: Option<&Value>, config: &Value, force: bool) -> ApiResult<Value> {
    let options = ApplyOptions {
        manager: request.manager.clone(),
        force,
        ty: &request.info.field_type,
        api_version: request.info.api_version(),
        kind: request.info.kind.clone(),
        subresource: request.subresource.clone(),
        time: object::now_rfc3339(),
        ignored_fields: ignored_fields(request),
    };
    patch::apply(live, config, &options).map_err(patch_error)
}

/// Record managedFields for a create, update or non-apply patch, in the fields of the request's version.
pub fn record(request: &WriteRequest, old: Option<&Arc<Value>>, new: Value) -> Value {
    let info = &request.info;
    let old = old.map(|o| conversion::to_request_version(info, (**o).clone()));
    let new = conversion::to_request_version(info, new);
    let options = UpdateOptions {
        manager: request.manager.clone(),
        ty: &request.info.field_type,
        api_version: request.info.api_version(),
        kind: request.info.kind.clone(),
        subresource: request.subresource.clone(),
        time: object::now_rfc3339(),
        ignored_fields: ignored_fields(request),
    };
    conversion::to_storage(info, patch::record_update(old.as_ref(), &new, &options))
}

/// Prune unknown fields and apply defaults of a custom resource's schema, honouring `fieldValidation`.
pub fn apply_schema(request: &WriteRequest, object: &mut Value, warnings: &mut Vec<String>) -> ApiResult<()> {
    let structural = request.info.custom.as_ref().and_then(|c| c.structural.as_ref());
    let unknown = match structural {
        Some(structural) => structural.prune(object),
        None => crate::registry::validation::prune_unknown_fields(&request.info, object),
    };
    if !unknown.is_empty() {
        match request.validation {
            FieldValidation::Strict => {
                return Err(ApiError::bad_request(schema::strict_decoding_message(
                    &request.info.kind,
                    &request.info.version,
                    &unknown,
                )));
            }
            FieldValidation::Warn => {
                warnings.extend(unknown.iter().map(|path| schema::unknown_field_warning(path)));
            }
            FieldValidation::Ignore => {}
        }
    }
    if let Some(structural) = structural {
        structural.apply_defaults(object);
    }
    Ok(())
}

/// Validate object metadata (all kinds), the schema and its CEL rules (custom resources); `old` is the stored object
/// on updates. Rules whose failure is ratcheted (the value did not change) add warnings instead.
pub fn validate(
    request: &WriteRequest,
    object: &Value,
    old: Option<&Value>,
    warnings: &mut Vec<String>,
) -> Vec<FieldViolation> {
    let info = &request.info;
    let rule = if !info.is_builtin() {
        schema::NameRule::Dns1123Subdomain
    } else {
        match (info.group.as_str(), info.kind.as_str()) {
            ("", "Namespace") => schema::NameRule::Dns1123Label,
            ("", "Service") => schema::NameRule::Dns1035Label,
            (_, "Event") | ("rbac.authorization.k8s.io", _) => schema::NameRule::PathSegment,
            _ => schema::NameRule::Dns1123Subdomain,
        }
    };
    let metadata = object.get("metadata").cloned().unwrap_or(Value::Null);
    let mut violations: Vec<FieldViolation> = schema::validate_object_meta(&metadata, info.namespaced, rule)
        .iter()
        .map(violation)
        .collect();
    if info.is_builtin() {
        // Built-in kinds also refuse finalizers without a domain unless they are the standard ones.
        for (index, finalizer) in object::finalizers(object).iter().enumerate() {
            if !finalizer.contains('/') && !STANDARD_FINALIZERS.contains(&finalizer.as_str()) {
                violations.push(FieldViolation::invalid(
                    format!("metadata.finalizers[{index}]"),
                    &Value::String(finalizer.clone()),
                    "name is neither a standard finalizer name nor is it fully qualified",
                ));
            }
        }
    }
    if let Some(structural) = info.custom.as_ref().and_then(|c| c.structural.as_ref()) {
        violations.extend(structural.validate(object).iter().map(violation));
        violations.extend(super::scale::validate_custom(info, object));
        if structural.has_rules() {
            let blocking = [
                "FieldValueNotSupported",
                "FieldValueRequired",
                "FieldValueTooLong",
                "FieldValueTooMany",
                "FieldValueTypeInvalid",
            ];
            if violations.iter().any(|v| blocking.contains(&v.reason.as_str())) {
                violations.push(violation(&schema::rules::rules_not_checked()));
            } else {
                let verdict = structural.validate_rules(object, old);
                violations.extend(verdict.errors.iter().map(violation));
                warnings.extend(verdict.warnings);
            }
        }
    }
    violations
}
