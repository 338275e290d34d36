//! Pure patch semantics of kube-apiserver 1.33: merge, JSON, strategic merge and server-side apply
//! patches, plus `metadata.managedFields` bookkeeping.
//!
//! Everything here works on `serde_json::Value` objects and does no I/O; the request handlers decide
//! which function a request needs, and turn a [`PatchError`] into a `Status` with
//! [`PatchError::to_status`].
//!
//! # Semantics
//!
//! - [`merge_patch`]: RFC 7386 (`application/merge-patch+json`). [`check_merge_patch_document`]
//!   rejects non-object documents like the apiserver (`Invalid JSON Patch`, 400).
//! - [`json_patch`]: RFC 6902 (`application/json-patch+json`) with the behaviour of
//!   `gopkg.in/evanphx/json-patch.v4`, which the apiserver uses: `replace` of a missing object
//!   member adds it, negative array indices count from the end, copying a missing member copies
//!   `null`, at most 10000 operations (413). A failing operation is a 422 whose `Status` message is
//!   the generic "the server rejected our request due to an error in our request"; the library
//!   message is kept in the error for logs.
//! - [`strategic_merge_patch`] (`application/strategic-merge-patch+json`): lists merge by the Go
//!   `patchMergeKey` (not the apply keys: container ports merge by `containerPort`, service ports
//!   by `port`), scalar lists with `patchStrategy=merge` (`finalizers`) are unions, other lists are
//!   replaced. `$patch: replace|delete` in maps and list items, `$retainKeys`,
//!   `$deleteFromPrimitiveList/<field>` and `$setElementOrder/<field>` work as in
//!   `k8s.io/apimachinery/pkg/util/strategicpatch`, including its item order (new list items come
//!   before the live-only ones unless `$setElementOrder` says otherwise). `$patch: merge` in a map
//!   is an error there and here. Directives and `null`s never reach the result.
//! - [`apply`] (`application/apply-patch+yaml`): structured-merge-diff semantics. Maps merge,
//!   associative lists merge by their `x-kubernetes-list-map-keys` (key defaults such as
//!   `protocol: TCP` included), sets are unions, atomic lists and maps are replaced. The applier owns
//!   exactly the fields of its configuration; fields it applied before and no longer applies are
//!   removed unless another manager owns them (a struct field counts as owned when anything below it
//!   is). Changing a field another manager owns is a conflict unless forced, in which case ownership
//!   moves. Entries are per manager for appliers and per manager and apiVersion for updaters,
//!   sorted like the apiserver sorts them, and carry the request time only when the object changed.
//!   Applying to an untracked object first attributes its fields to `before-first-apply`; applies by
//!   `kubectl` honour and refresh the client-side `last-applied-configuration` annotation.
//! - [`record_update`]: ownership for create, update and non-apply patches: the fields that changed
//!   move to the request's manager (operation `Update`); managed fields sent by the client are kept
//!   when valid and reset by `[]` or `[{}]`; more than ten update managers are merged into
//!   `ancient-changes`.
//! - [`builtin`] and [`from_openapi_v3`] describe types ([`FieldType`]); fields missing from the
//!   built-in tables are untyped (maps merge field by field, lists are atomic).
//!
//! # Differences from kube-apiserver
//!
//! - Only one version per kind is served, so managed fields of other API versions are compared
//!   without conversion, and schema changes between atomic and granular are not reconciled.
//! - The built-in tables cover the kinds this server serves and their common fields; a field they
//!   miss is untyped, which can add `.` entries below it in FieldsV1 that a real server would not
//!   write, and strategic merge replaces lists it does not know.
//! - Go decoding is not reproduced: callers default and normalise objects (the apiserver owns
//!   defaulted fields on create because it defaults before recording ownership). When apply removes
//!   the last field of a map or list the field is dropped, where structured-merge-diff leaves a
//!   `null` that Go decoding or CRD pruning drops.
//! - Scalar values are not checked against their declared types; only list keys and duplicates
//!   are validated before an apply.
//! - Go map iteration makes some strategic-merge outcomes random in the apiserver (a value both added
//!   and deleted by one patch); here deletion lists are processed last.

mod apply;
mod builtin_kinds;
mod fieldpath;
mod json_patch;
mod managed_fields;
mod merge;
mod strategic;
mod typed;
mod typeinfo;

pub use apply::{ApplyOptions, apply};
pub use fieldpath::{FieldPath, FieldSet, PathElement};
pub use json_patch::{go_json_kind, json_patch};
pub use managed_fields::{UpdateOptions, manager_from_user_agent, record_update, sanitize_managed_fields};
pub use merge::{check_merge_patch_document, merge_patch};
pub use strategic::strategic_merge_patch;
pub use typeinfo::{FieldType, ListKind, ListPatch, builtin, from_openapi_v3};

use managed_fields::{ManagerKey, Operation};
use serde_json::{Map, Value, json};

/// Message the apiserver returns for JSON patch operations that do not apply.
const GENERIC_UNPROCESSABLE_MESSAGE: &str = "the server rejected our request due to an error in our request";

/// A field another manager owns, which an apply wanted to change.
#[derive(Clone, Debug, PartialEq)]
pub struct Conflict {
    /// Name of the owning manager.
    pub manager: String,
    /// `Apply` or `Update`.
    pub operation: String,
    /// API version of an `Update` owner (empty for appliers).
    pub api_version: String,
    /// Subresource the owner wrote through, if any.
    pub subresource: String,
    /// The contested field.
    pub path: FieldPath,
}

impl Conflict {
    pub(crate) fn new(owner: &ManagerKey, path: FieldPath) -> Conflict {
        Conflict {
            manager: owner.manager.clone(),
            operation: owner.operation.as_str().to_string(),
            api_version: owner.api_version.clone(),
            subresource: owner.subresource.clone(),
            path,
        }
    }

    fn key(&self) -> ManagerKey {
        ManagerKey {
            manager: self.manager.clone(),
            operation: if self.operation == "Apply" {
                Operation::Apply
            } else {
                Operation::Update
            },
            api_version: self.api_version.clone(),
            subresource: self.subresource.clone(),
        }
    }

    /// The apiserver's manager identifier, used to sort conflicts by manager.
    pub fn identifier(&self) -> String {
        self.key().identifier()
    }

    /// The manager as conflict messages name it, e.g. `"kubectl-client-side-apply" using v1`.
    pub fn manager_description(&self) -> String {
        self.key().describe()
    }

    /// The field as conflict messages print it, e.g. `.data.key`.
    pub fn field(&self) -> String {
        self.path.to_string()
    }
}

/// The apiserver's apply conflict message.
fn conflict_message(conflicts: &[Conflict]) -> String {
    if let [single] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            single.manager_description(),
            single.field()
        );
    }
    let mut managers: Vec<(String, String, Vec<String>)> = Vec::new();
    for conflict in conflicts {
        let identifier = conflict.identifier();
        match managers.iter_mut().find(|(id, _, _)| *id == identifier) {
            Some((_, _, fields)) => fields.push(conflict.field()),
            None => managers.push((identifier, conflict.manager_description(), vec![conflict.field()])),
        }
    }
    managers.sort_by(|a, b| a.0.cmp(&b.0));
    let mut lines = Vec::new();
    for (_, description, fields) in managers {
        lines.push(format!("conflicts with {description}:"));
        lines.extend(fields.into_iter().map(|f| format!("- {f}")));
    }
    format!("Apply failed with {} conflicts: {}", conflicts.len(), lines.join("\n"))
}

/// Why a patch could not be applied, with the HTTP status the apiserver answers with.
#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    /// Malformed patch document: 400 BadRequest.
    #[error("{0}")]
    BadRequest(String),
    /// The patch does not apply to the object: 422 Invalid with a generic message.
    #[error("{0}")]
    Unprocessable(String),
    /// Too many JSON patch operations: 413.
    #[error("{0}")]
    RequestEntityTooLarge(String),
    /// Apply conflicts: 409 Conflict with `FieldManagerConflict` causes.
    #[error("{}", conflict_message(.0))]
    Conflict(Vec<Conflict>),
    /// The patch type is not accepted for this resource: 415.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// Errors the apiserver reports without a status reason: 500.
    #[error("{0}")]
    Internal(String),
}

impl PatchError {
    /// The 415 error for a patch type not in `accepted` (e.g. strategic merge on a custom resource).
    pub fn unsupported_patch_type(accepted: &[&str]) -> PatchError {
        PatchError::UnsupportedMediaType(format!(
            "the body of the request was in an unknown format - accepted media types include: {}",
            accepted.join(", ")
        ))
    }

    /// HTTP status code.
    pub fn code(&self) -> u16 {
        match self {
            PatchError::BadRequest(_) => 400,
            PatchError::Unprocessable(_) => 422,
            PatchError::RequestEntityTooLarge(_) => 413,
            PatchError::Conflict(_) => 409,
            PatchError::UnsupportedMediaType(_) => 415,
            PatchError::Internal(_) => 500,
        }
    }

    /// `Status.reason` (empty for errors without a reason).
    pub fn reason(&self) -> &'static str {
        match self {
            PatchError::BadRequest(_) => "BadRequest",
            PatchError::Unprocessable(_) => "Invalid",
            PatchError::RequestEntityTooLarge(_) => "RequestEntityTooLarge",
            PatchError::Conflict(_) => "Conflict",
            PatchError::UnsupportedMediaType(_) => "UnsupportedMediaType",
            PatchError::Internal(_) => "",
        }
    }

    /// `Status.message`.
    pub fn status_message(&self) -> String {
        match self {
            PatchError::Unprocessable(_) => GENERIC_UNPROCESSABLE_MESSAGE.to_string(),
            PatchError::RequestEntityTooLarge(message) => format!("Request entity too large: {message}"),
            other => other.to_string(),
        }
    }

    /// `Status.details.causes`: one `FieldManagerConflict` per conflicting field.
    pub fn status_causes(&self) -> Vec<Value> {
        match self {
            PatchError::Conflict(conflicts) => conflicts
                .iter()
                .map(|c| {
                    json!({
                        "reason": "FieldManagerConflict",
                        "message": format!("conflict with {}", c.manager_description()),
                        "field": c.field(),
                    })
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The whole `Status` object the apiserver would answer with.
    pub fn to_status(&self) -> Value {
        let mut status = Map::new();
        status.insert("kind".into(), json!("Status"));
        status.insert("apiVersion".into(), json!("v1"));
        status.insert("metadata".into(), json!({}));
        status.insert("status".into(), json!("Failure"));
        status.insert("message".into(), json!(self.status_message()));
        if !self.reason().is_empty() {
            status.insert("reason".into(), json!(self.reason()));
        }
        match self {
            PatchError::Conflict(_) => {
                status.insert("details".into(), json!({"causes": self.status_causes()}));
            }
            PatchError::Unprocessable(_) => {
                status.insert("details".into(), json!({}));
            }
            _ => {}
        }
        status.insert("code".into(), json!(self.code()));
        Value::Object(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflict_status_matches_the_apiserver() {
        let err = PatchError::Conflict(vec![Conflict {
            manager: "kubectl-client-side-apply".into(),
            operation: "Update".into(),
            api_version: "v1".into(),
            subresource: String::new(),
            path: FieldPath::fields(["data", "key"]),
        }]);
        assert_eq!(
            err.to_status(),
            json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using v1: .data.key",
                "reason": "Conflict",
                "details": {"causes": [{"reason": "FieldManagerConflict",
                    "message": "conflict with \"kubectl-client-side-apply\" using v1", "field": ".data.key"}]},
                "code": 409
            })
        );
    }

    #[test]
    fn unsupported_and_internal_statuses() {
        let err = PatchError::unsupported_patch_type(&["application/json-patch+json", "application/merge-patch+json"]);
        assert_eq!(err.code(), 415);
        assert_eq!(err.reason(), "UnsupportedMediaType");
        let internal = PatchError::Internal("boom".into()).to_status();
        assert!(internal.get("reason").is_none());
        assert_eq!(internal["code"], 500);
    }
}
