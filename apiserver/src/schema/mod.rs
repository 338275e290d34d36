//! CRD structural schemas: validation, pruning and defaulting of custom objects as kube-apiserver v1.33 does them.
//!
//! Everything here is pure (JSON in, JSON and errors out) and mirrors the Go code paths so that a
//! client sees the same behaviour and the same words as against a real cluster:
//!
//! * [`Structural::from_openapi_v3_at`] parses a CRD version's `openAPIV3Schema` and refuses what
//!   `apiextensions.k8s.io/v1` refuses (`ValidateStructural`, `ValidateDefaults`,
//!   `ValidateCustomResourceDefinitionOpenAPISchema`): missing `type`, `properties` together with
//!   `additionalProperties`, types or defaults inside `allOf`/`anyOf`/`oneOf`/`not`, fields only
//!   named in value validations, root `metadata` restrictions beyond `name`/`generateName`,
//!   embedded-resource and int-or-string rules, list/map-type markers, unsupported keywords
//!   (`$ref`, `patternProperties`, …), `uniqueItems`, invalid `pattern`s, and defaults that do not
//!   validate or are not pruned.
//! * [`Structural::prune`] drops unknown fields (keeping `x-kubernetes-preserve-unknown-fields`
//!   subtrees, and `apiVersion`/`kind`/`metadata` of the root and of embedded resources), trims
//!   `metadata` to `ObjectMeta`, drops `null`s of non-nullable fields without defaults, and returns
//!   the unknown paths for `fieldValidation=Strict|Warn` ([`strict_decoding_message`],
//!   [`unknown_field_warning`]).
//! * [`Structural::apply_defaults`] applies `default`s (after pruning, on writes and on reads).
//! * [`Structural::validate`] is kube-openapi's schema validator (types, `nullable`, `enum`,
//!   bounds, lengths, `pattern`, item and property counts, `required`, supported `format`s,
//!   `allOf`/`anyOf`/`oneOf`/`not`), converted to field errors the way the CRD handler does,
//!   plus TypeMeta/ObjectMeta checks of embedded resources and `x-kubernetes-list-type`
//!   `set`/`map` uniqueness. [`validate_object_meta`] and [`validate_type_meta`] are the checks the
//!   server runs on every object's own metadata; call them first (type meta, then object meta,
//!   then [`Structural::validate`]) to get the server's error order, and build the 422 message
//!   with [`invalid_message`].
//!
//! * [`Structural::validate_rules`] evaluates the CEL `x-kubernetes-validations` rules compiled when
//!   the schema was parsed (see [`rules`]).
//!
//! Knowingly not done: validation ratcheting of the OpenAPI checks on update (CEL rules are ratcheted);
//! the status-subresource restriction of root schema fields; CRD checks outside the schema
//! (names, versions, conversion, printer and selectable columns); Go's exact wording for
//! malformed `metadata` (which the server rejects as a 400 decode error). Approximations:
//! the choice of the "closest" `anyOf`/`oneOf` alternative whose errors are reported
//! (kube-openapi's match counting), and the `uri`, `email` and `creditcard` formats. `pattern`s
//! are Go regular expressions read with Go's grammar and matched by the `regex` crate, whose
//! Unicode tables are newer than Go's (see `go_regexp`). As on the real server,
//! `format: int32|int64|float|double` and unknown formats are not enforced, integral floats such
//! as `1.0` pass as integers, and `null` never matches an `enum`. Errors among sibling properties come in schema declaration
//! order (Go's map order is random).

mod defaulting;
mod field_error;
mod formats;
mod go_regexp;
mod object_meta;
mod pruning;
pub mod rules;
mod structural;
mod validation;

use serde_json::Value;

pub use field_error::{
    FieldError, FieldErrorKind, invalid_message, strict_decoding_error, strict_decoding_message, unknown_field_warning,
};
pub(crate) use object_meta::OBJECT_META_FIELDS;
pub(crate) use object_meta::decode_problem as metadata_decode_problem;
pub use object_meta::{
    NameRule, dns1035_label_errors, dns1123_label_errors, dns1123_subdomain_errors, label_value_errors,
    qualified_name_errors, validate_object_meta, validate_type_meta,
};
pub use structural::{AdditionalProperties, Structural};

use field_error::FieldPath;

impl Structural {
    /// Validates a (pruned and defaulted) custom object against this schema, returning the field
    /// errors the API server would put into a 422 `Invalid` Status, in the server's order:
    /// schema errors, then embedded-resource metadata errors, then list-type duplicates.
    pub fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errors = validation::validate_against(self, obj, None);
        validation::validate_embedded_resources(self, obj, &FieldPath::root(), &mut errors);
        validation::validate_list_sets_and_maps(self, obj, &FieldPath::root(), &mut errors);
        errors
    }

    /// Whether any node has compiled CEL rules.
    pub fn has_rules(&self) -> bool {
        !self.compiled_rules.is_empty()
            || self.properties.iter().any(|(_, property)| property.has_rules())
            || self.items.as_deref().is_some_and(Structural::has_rules)
            || self.additional_properties_schema().is_some_and(Structural::has_rules)
            || self.all_of.iter().any(Structural::has_rules)
    }

    /// Evaluates the CEL rules on a (pruned, defaulted and otherwise valid) custom object; `old` is the stored
    /// object on updates, for transition rules and ratcheting.
    pub fn validate_rules(&self, obj: &Value, old: Option<&Value>) -> rules::RulesVerdict {
        rules::evaluate(self, obj, old)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The whole write path of a custom object: prune, default, then validate.
    #[test]
    fn write_path_end_to_end() {
        let schema = Structural::from_openapi_v3_at(
            &json!({
                "type": "object",
                "properties": {
                    "spec": {"type": "object", "required": ["replicas"], "properties": {
                        "replicas": {"type": "integer", "minimum": 0, "maximum": 10},
                        "mode": {"type": "string", "enum": ["Fast", "Safe"], "default": "Safe"}
                    }}
                }
            }),
            "spec.validation.openAPIV3Schema",
        )
        .expect("valid schema");
        let mut obj = json!({
            "apiVersion": "example.com/v1",
            "kind": "ConfigMapSet",
            "metadata": {"name": "demo", "namespace": "default"},
            "spec": {"replicas": "three", "extra": true}
        });
        let unknown = schema.prune(&mut obj);
        assert_eq!(unknown, vec!["spec.extra"]);
        assert_eq!(
            strict_decoding_message("ConfigMapSet", "v1", &unknown),
            r#"ConfigMapSet in version "v1" cannot be handled as a ConfigMapSet: strict decoding error: unknown field "spec.extra""#
        );
        schema.apply_defaults(&mut obj);
        assert_eq!(obj["spec"]["mode"], json!("Safe"));

        let mut errors = validate_type_meta(&obj, "example.com/v1", "ConfigMapSet");
        errors.extend(validate_object_meta(&obj["metadata"], true, NameRule::Dns1123Subdomain));
        errors.extend(schema.validate(&obj));
        assert_eq!(
            invalid_message("ConfigMapSet.example.com", "demo", &errors),
            r#"ConfigMapSet.example.com "demo" is invalid: spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string""#
        );
        assert_eq!(errors[0].reason(), "FieldValueTypeInvalid");
        assert_eq!(errors[0].field, "spec.replicas");
        assert_eq!(
            errors[0].cause_message(),
            r#"Invalid value: "string": spec.replicas in body must be of type integer: "string""#
        );
    }
}
