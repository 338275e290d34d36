//! API errors as Kubernetes `metav1.Status` responses, worded like kube-apiserver's.

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde_json::{Map, Value, json};

/// A failed API request: rendered as a `Status` object with the matching HTTP code.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{reason} ({code}): {message}")]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// `Status.reason` (`NotFound`, `Conflict`, ...).
    pub reason: String,
    /// `Status.message`, the text kubectl prints.
    pub message: String,
    /// `Status.details`, when there is something to say.
    pub details: Option<Box<Value>>,
}

/// Result of an API operation.
pub type ApiResult<T> = std::result::Result<T, ApiError>;

/// The resource an error is about: `configmaps` / `deployments.apps` plus the object name.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    /// API group ("" for core).
    pub group: &'a str,
    /// Plural resource name.
    pub resource: &'a str,
    /// Object name.
    pub name: &'a str,
}

impl Subject<'_> {
    /// `configmaps` or `deployments.apps`, as error messages name a resource.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.resource.to_string()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }

    pub(crate) fn details(&self) -> Value {
        let mut details = Map::new();
        if !self.name.is_empty() {
            details.insert("name".into(), Value::String(self.name.to_string()));
        }
        if !self.group.is_empty() {
            details.insert("group".into(), Value::String(self.group.to_string()));
        }
        details.insert("kind".into(), Value::String(self.resource.to_string()));
        Value::Object(details)
    }
}

impl ApiError {
    /// A bare error with code, reason and message.
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason: reason.to_string(),
            message: message.into(),
            details: None,
        }
    }

    /// Attach `Status.details`.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(Box::new(details));
        self
    }

    /// 404 for an object: `configmaps "x" not found`.
    pub fn not_found(subject: Subject<'_>) -> Self {
        ApiError::new(
            404,
            "NotFound",
            format!("{} \"{}\" not found", subject.qualified(), subject.name),
        )
        .with_details(subject.details())
    }

    /// 404 for a path no resource serves.
    pub fn no_route() -> Self {
        ApiError::new(404, "NotFound", "the server could not find the requested resource").with_details(json!({}))
    }

    /// 409 AlreadyExists.
    pub fn already_exists(subject: Subject<'_>) -> Self {
        ApiError::new(
            409,
            "AlreadyExists",
            format!("{} \"{}\" already exists", subject.qualified(), subject.name),
        )
        .with_details(subject.details())
    }

    /// 409 Conflict: `Operation cannot be fulfilled on configmaps "x": <why>`.
    pub fn conflict(subject: Subject<'_>, why: &str) -> Self {
        ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{}\": {}",
                subject.qualified(),
                subject.name,
                why
            ),
        )
        .with_details(subject.details())
    }

    /// 409 Conflict on a stale resourceVersion.
    pub fn stale(subject: Subject<'_>) -> Self {
        ApiError::conflict(
            subject,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 Invalid with per-field causes (`causes` are Status causes).
    pub fn invalid(group: &str, kind: &str, name: &str, message: String, causes: Vec<Value>) -> Self {
        let mut details = Map::new();
        if !name.is_empty() {
            details.insert("name".into(), Value::String(name.to_string()));
        }
        if !group.is_empty() {
            details.insert("group".into(), Value::String(group.to_string()));
        }
        details.insert("kind".into(), Value::String(kind.to_string()));
        if !causes.is_empty() {
            details.insert("causes".into(), Value::Array(causes));
        }
        ApiError::new(422, "Invalid", message).with_details(Value::Object(details))
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(400, "BadRequest", message)
    }

    /// 403 Forbidden about an object.
    pub fn forbidden(subject: Subject<'_>, why: &str) -> Self {
        ApiError::new(
            403,
            "Forbidden",
            format!("{} \"{}\" is forbidden: {}", subject.qualified(), subject.name, why),
        )
        .with_details(subject.details())
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed() -> Self {
        ApiError::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
        .with_details(json!({}))
    }

    /// 415 UnsupportedMediaType for a patch type the resource cannot take.
    pub fn unsupported_patch(content_type: &str, accepted: &[&str]) -> Self {
        let _ = content_type;
        ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
    }

    /// 410 Gone / Expired.
    pub fn expired(message: impl Into<String>) -> Self {
        ApiError::new(410, "Expired", message)
    }

    /// 500 InternalError.
    pub fn internal(message: impl Into<String>) -> Self {
        let message = message.into();
        ApiError::new(500, "InternalError", format!("Internal error occurred: {message}"))
            .with_details(json!({"causes": [{"message": message}]}))
    }

    /// 401 Unauthorized.
    pub fn unauthorized() -> Self {
        ApiError::new(401, "Unauthorized", "Unauthorized")
    }

    /// The `Status` object.
    pub fn status(&self) -> Value {
        let mut status = Map::new();
        status.insert("kind".into(), json!("Status"));
        status.insert("apiVersion".into(), json!("v1"));
        status.insert("metadata".into(), json!({}));
        status.insert("status".into(), json!("Failure"));
        status.insert("message".into(), Value::String(self.message.clone()));
        if !self.reason.is_empty() {
            status.insert("reason".into(), Value::String(self.reason.clone()));
        }
        if let Some(details) = &self.details {
            status.insert("details".into(), (**details).clone());
        }
        status.insert("code".into(), json!(self.code));
        Value::Object(status)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = serde_json::to_vec(&self.status()).unwrap_or_default();
        let mut response = (code, body).into_response();
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        response
    }
}

/// One field-level problem, as a `Status` cause and a line of the `Invalid` message.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldViolation {
    /// Field path (`metadata.name`, `spec.replicas`).
    pub field: String,
    /// Cause reason (`FieldValueInvalid`, `FieldValueRequired`, ...).
    pub reason: String,
    /// Message without the field (`Invalid value: "x": must be ...`).
    pub message: String,
}

impl FieldViolation {
    /// `Invalid value: <value>: <detail>`.
    pub fn invalid(field: impl Into<String>, value: &Value, detail: &str) -> Self {
        let shown = match value {
            Value::String(s) => format!("{s:?}"),
            Value::Null => "null".to_string(),
            other => other.to_string(),
        };
        FieldViolation {
            field: field.into(),
            reason: "FieldValueInvalid".into(),
            message: if detail.is_empty() {
                format!("Invalid value: {shown}")
            } else {
                format!("Invalid value: {shown}: {detail}")
            },
        }
    }

    /// `Required value[: <detail>]`.
    pub fn required(field: impl Into<String>, detail: &str) -> Self {
        FieldViolation {
            field: field.into(),
            reason: "FieldValueRequired".into(),
            message: if detail.is_empty() {
                "Required value".to_string()
            } else {
                format!("Required value: {detail}")
            },
        }
    }

    /// `Forbidden: <detail>`.
    pub fn forbidden(field: impl Into<String>, detail: &str) -> Self {
        FieldViolation {
            field: field.into(),
            reason: "FieldValueForbidden".into(),
            message: format!("Forbidden: {detail}"),
        }
    }

    /// `Unsupported value: "x": supported values: "a", "b"`.
    pub fn not_supported(field: impl Into<String>, value: &str, allowed: &[&str]) -> Self {
        let allowed: Vec<String> = allowed.iter().map(|a| format!("{a:?}")).collect();
        FieldViolation {
            field: field.into(),
            reason: "FieldValueNotSupported".into(),
            message: format!("Unsupported value: {value:?}: supported values: {}", allowed.join(", ")),
        }
    }

    /// `field: message`, as the aggregate message lists it.
    pub fn line(&self) -> String {
        if self.field.is_empty() {
            self.message.clone()
        } else {
            format!("{}: {}", self.field, self.message)
        }
    }
}

impl ApiError {
    /// 422 Invalid from field violations: `Kind.group "name" is invalid: <field>: <message>`.
    pub fn invalid_fields(group: &str, kind: &str, name: &str, violations: &[FieldViolation]) -> Self {
        let qualified = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let lines: Vec<String> = violations.iter().map(FieldViolation::line).collect();
        let joined = if lines.len() == 1 {
            lines[0].clone()
        } else {
            format!("[{}]", lines.join(", "))
        };
        let causes = violations
            .iter()
            .map(|v| json!({"reason": v.reason, "message": v.message, "field": v.field}))
            .collect();
        ApiError::invalid(
            group,
            kind,
            name,
            format!("{qualified} \"{name}\" is invalid: {joined}"),
            causes,
        )
    }
}
