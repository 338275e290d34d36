//! Field-level validation errors shaped like `k8s.io/apimachinery/pkg/util/validation/field`.

use std::fmt;

use serde_json::Value;

use crate::go_format;

/// The kinds of `field.ErrorType`; each maps to a Status cause `reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldErrorKind {
    /// `FieldValueNotFound`.
    NotFound,
    /// `FieldValueRequired`.
    Required,
    /// `FieldValueDuplicate`.
    Duplicate,
    /// `FieldValueInvalid`.
    Invalid,
    /// `FieldValueNotSupported` (enum mismatches).
    NotSupported,
    /// `FieldValueForbidden`.
    Forbidden,
    /// `FieldValueTooLong` (maxLength, annotation size).
    TooLong,
    /// `FieldValueTooMany` (maxItems, maxProperties).
    TooMany,
    /// `InternalError`.
    Internal,
    /// `FieldValueTypeInvalid`: what the CRD validator emits for schema type mismatches.
    TypeInvalid,
}

impl FieldErrorKind {
    /// The Status cause `reason` (Go's `field.ErrorType` string).
    pub fn reason(self) -> &'static str {
        match self {
            Self::NotFound => "FieldValueNotFound",
            Self::Required => "FieldValueRequired",
            Self::Duplicate => "FieldValueDuplicate",
            Self::Invalid => "FieldValueInvalid",
            Self::NotSupported => "FieldValueNotSupported",
            Self::Forbidden => "FieldValueForbidden",
            Self::TooLong => "FieldValueTooLong",
            Self::TooMany => "FieldValueTooMany",
            Self::Internal => "InternalError",
            Self::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// The human phrase Go's `ErrorType.String()` gives.
    pub fn phrase(self) -> &'static str {
        match self {
            Self::NotFound => "Not found",
            Self::Required => "Required value",
            Self::Duplicate => "Duplicate value",
            Self::Invalid | Self::TypeInvalid => "Invalid value",
            Self::NotSupported => "Unsupported value",
            Self::Forbidden => "Forbidden",
            Self::TooLong => "Too long",
            Self::TooMany => "Too many",
            Self::Internal => "Internal error",
        }
    }
}

/// One field-level validation error, as in Go's `field.Error`.
///
/// `bad_value: None` means the value is omitted from the message (Go's `omitValue`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}: {}", self.cause_message())]
pub struct FieldError {
    /// What went wrong.
    pub kind: FieldErrorKind,
    /// The field path as the server prints it (`spec.items[0].name`, `metadata.labels`).
    pub field: String,
    /// Extra detail appended after the value.
    pub detail: String,
    /// The offending value, printed the way Go prints the decoded value.
    pub bad_value: Option<Value>,
}

impl FieldError {
    /// `field.Required`.
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(
            FieldErrorKind::Required,
            field,
            Some(Value::String(String::new())),
            detail,
        )
    }

    /// `field.Invalid`.
    pub fn invalid(field: impl Into<String>, value: Value, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorKind::Invalid, field, Some(value), detail)
    }

    /// `field.TypeInvalid`.
    pub fn type_invalid(field: impl Into<String>, value: Value, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorKind::TypeInvalid, field, Some(value), detail)
    }

    /// `field.NotSupported`: the detail lists the quoted supported values.
    pub fn not_supported(field: impl Into<String>, value: Value, supported: &[String]) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| go_format::quote(s)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(FieldErrorKind::NotSupported, field, Some(value), detail)
    }

    /// `field.Forbidden`.
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(
            FieldErrorKind::Forbidden,
            field,
            Some(Value::String(String::new())),
            detail,
        )
    }

    /// `field.TooLong` (Kubernetes 1.32+ wording): `may not be more than N bytes`.
    pub fn too_long(field: impl Into<String>, max_length: i64) -> Self {
        let detail = if max_length >= 0 {
            format!(
                "may not be more than {max_length} {}",
                if max_length == 1 { "byte" } else { "bytes" }
            )
        } else {
            "value is too long".to_string()
        };
        Self::new(
            FieldErrorKind::TooLong,
            field,
            Some(Value::String("<value omitted>".into())),
            detail,
        )
    }

    /// `field.TooMany` (Kubernetes 1.32+ wording): `must have at most N items`.
    pub fn too_many(field: impl Into<String>, actual: i64, max: i64) -> Self {
        let detail = if max >= 0 {
            format!("must have at most {max} {}", if max == 1 { "item" } else { "items" })
        } else {
            "has too many items".to_string()
        };
        let value = (actual >= 0).then(|| Value::from(actual));
        Self::new(FieldErrorKind::TooMany, field, value, detail)
    }

    /// `field.Duplicate`.
    pub fn duplicate(field: impl Into<String>, value: Value) -> Self {
        Self::new(FieldErrorKind::Duplicate, field, Some(value), "")
    }

    /// `field.InternalError`.
    pub fn internal(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorKind::Internal, field, None, detail)
    }

    fn new(
        kind: FieldErrorKind,
        field: impl Into<String>,
        bad_value: Option<Value>,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            field: field.into(),
            detail: detail.into(),
            bad_value,
        }
    }

    /// The Status cause `reason` for this error.
    pub fn reason(&self) -> &'static str {
        self.kind.reason()
    }

    /// The Status cause `message`: Go's `ErrorBody()`, i.e. the error without the field path.
    pub fn cause_message(&self) -> String {
        let mut body = match (self.kind, &self.bad_value) {
            (
                FieldErrorKind::Required
                | FieldErrorKind::Forbidden
                | FieldErrorKind::TooLong
                | FieldErrorKind::Internal,
                _,
            )
            | (_, None) => self.kind.phrase().to_string(),
            (_, Some(value)) => format!("{}: {}", self.kind.phrase(), render_bad_value(value)),
        };
        if !self.detail.is_empty() {
            body.push_str(": ");
            body.push_str(&self.detail);
        }
        body
    }
}

/// How Go's `ErrorBody` prints a decoded JSON value.
fn render_bad_value(value: &Value) -> String {
    match value {
        // A nil BadValue becomes the string "null", which is then quoted.
        Value::Null => go_format::quote("null"),
        Value::String(s) => go_format::quote(s),
        Value::Number(n) => go_format::number_v(n),
        Value::Bool(b) => b.to_string(),
        Value::Array(_) | Value::Object(_) => go_format::sharp_v(value),
    }
}

/// The Status `message` of a 422 Invalid error, exactly as `apierrors.NewInvalid` builds it.
///
/// `kind` is the group-qualified kind (`ConfigMapSet.example.com`, or `Pod` for the core group).
/// Identical messages are reported once; several errors are joined as `[a, b]`.
pub fn invalid_message(kind: &str, name: &str, errors: &[FieldError]) -> String {
    let mut seen: Vec<String> = Vec::new();
    for error in errors {
        let message = error.to_string();
        if !seen.contains(&message) {
            seen.push(message);
        }
    }
    let head = format!("{kind} {} is invalid", go_format::quote(name));
    match seen.len() {
        0 => head,
        1 => format!("{head}: {}", seen[0]),
        _ => format!("{head}: [{}]", seen.join(", ")),
    }
}

/// The text of one unknown-field problem: the `Warning` header text for `fieldValidation=Warn`.
pub fn unknown_field_warning(path: &str) -> String {
    format!("unknown field {}", go_format::quote(path))
}

/// `runtime.NewStrictDecodingError(...).Error()` for the given unknown field paths.
pub fn strict_decoding_error(unknown_field_paths: &[String]) -> String {
    let parts: Vec<String> = unknown_field_paths.iter().map(|p| unknown_field_warning(p)).collect();
    format!("strict decoding error: {}", parts.join(", "))
}

/// The 400 BadRequest Status `message` for `fieldValidation=Strict` with unknown fields, as built by
/// the handlers' `transformDecodeError`: `Kind in version "v1" cannot be handled as a Kind: strict decoding error: ...`.
pub fn strict_decoding_message(kind: &str, version: &str, unknown_field_paths: &[String]) -> String {
    format!(
        "{kind} in version {} cannot be handled as a {kind}: {}",
        go_format::quote(version),
        strict_decoding_error(unknown_field_paths)
    )
}

/// A Go `field.Path` rendered as text while it is built.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FieldPath(String);

impl FieldPath {
    /// The empty root path.
    pub(crate) fn root() -> Self {
        Self(String::new())
    }

    /// A path starting with already-rendered text (e.g. `spec.validation.openAPIV3Schema`).
    pub(crate) fn from_text(text: &str) -> Self {
        Self(text.to_string())
    }

    /// `Path.Child(name)`.
    pub(crate) fn child(&self, name: &str) -> Self {
        if self.0.is_empty() {
            Self(name.to_string())
        } else {
            Self(format!("{}.{name}", self.0))
        }
    }

    /// `Path.Key(key)`.
    pub(crate) fn key(&self, key: &str) -> Self {
        Self(format!("{}[{key}]", self.0))
    }

    /// `Path.Index(i)`.
    pub(crate) fn index(&self, index: usize) -> Self {
        Self(format!("{}[{index}]", self.0))
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<FieldPath> for String {
    fn from(path: FieldPath) -> Self {
        path.0
    }
}

impl From<&FieldPath> for String {
    fn from(path: &FieldPath) -> Self {
        path.0.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn type_error_reads_like_the_crd_validator() {
        // kubeOpenAPIResultToFieldErrors: field.TypeInvalid(path, err.Value, err.Error()).
        let error = FieldError::type_invalid(
            "spec.replicas",
            json!("string"),
            r#"spec.replicas in body must be of type integer: "string""#,
        );
        assert_eq!(
            error.to_string(),
            r#"spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string""#
        );
        assert_eq!(error.reason(), "FieldValueTypeInvalid");
    }

    #[test]
    fn required_and_forbidden_omit_the_value() {
        assert_eq!(
            FieldError::required("spec.foo", "").to_string(),
            "spec.foo: Required value"
        );
        assert_eq!(
            FieldError::forbidden("metadata.namespace", "not allowed on this type").to_string(),
            "metadata.namespace: Forbidden: not allowed on this type"
        );
    }

    #[test]
    fn not_supported_quotes_each_value() {
        let error = FieldError::not_supported("spec.mode", json!("x"), &["a".into(), "b".into()]);
        assert_eq!(
            error.to_string(),
            r#"spec.mode: Unsupported value: "x": supported values: "a", "b""#
        );
        assert_eq!(error.reason(), "FieldValueNotSupported");
    }

    #[test]
    fn too_long_and_too_many_use_current_wording() {
        // Kubernetes 1.32+: "Too long: may not be more than 63 bytes", "Too many: 2: must have at most 1 item".
        assert_eq!(
            FieldError::too_long("spec.aws.region", 63).to_string(),
            "spec.aws.region: Too long: may not be more than 63 bytes"
        );
        assert_eq!(
            FieldError::too_many("spec.recommenders", 2, 1).to_string(),
            "spec.recommenders: Too many: 2: must have at most 1 item"
        );
        assert_eq!(
            FieldError::too_many("spec.x", 3, 2).cause_message(),
            "Too many: 3: must have at most 2 items"
        );
    }

    #[test]
    fn duplicate_prints_maps_as_go_does() {
        let error = FieldError::duplicate("spec.ports[1]", json!({"name": "a"}));
        assert_eq!(
            error.to_string(),
            r#"spec.ports[1]: Duplicate value: map[string]interface {}{"name":"a"}"#
        );
    }

    #[test]
    fn invalid_message_with_one_error() {
        let errors = [FieldError::type_invalid(
            "spec.replicas",
            json!("string"),
            r#"spec.replicas in body must be of type integer: "string""#,
        )];
        assert_eq!(
            invalid_message("ConfigMapSet.example.com", "x", &errors),
            r#"ConfigMapSet.example.com "x" is invalid: spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string""#
        );
    }

    #[test]
    fn invalid_message_aggregates_and_deduplicates() {
        let errors = [
            FieldError::required("spec.a", ""),
            FieldError::required("spec.b", ""),
            FieldError::required("spec.a", ""),
        ];
        assert_eq!(
            invalid_message("Foo.example.com", "n", &errors),
            r#"Foo.example.com "n" is invalid: [spec.a: Required value, spec.b: Required value]"#
        );
        assert_eq!(
            invalid_message("Foo.example.com", "n", &[]),
            r#"Foo.example.com "n" is invalid"#
        );
    }

    #[test]
    fn strict_and_warn_texts() {
        let paths = vec!["spec.foo".to_string(), "spec.bar[0].baz".to_string()];
        assert_eq!(unknown_field_warning("spec.foo"), r#"unknown field "spec.foo""#);
        assert_eq!(
            strict_decoding_message("ConfigMapSet", "v1", &paths),
            r#"ConfigMapSet in version "v1" cannot be handled as a ConfigMapSet: strict decoding error: unknown field "spec.foo", unknown field "spec.bar[0].baz""#
        );
    }

    #[test]
    fn field_paths_render_like_go() {
        let root = FieldPath::root();
        assert_eq!(root.child("spec").child("items").index(0).as_str(), "spec.items[0]");
        assert_eq!(
            root.child("properties").key("spec").child("type").as_str(),
            "properties[spec].type"
        );
    }
}
