//! The structural schema: parsing an `openAPIV3Schema` and refusing what the CRD API refuses.

use serde_json::{Map, Value};

use super::field_error::{FieldError, FieldPath};
use super::go_regexp::Regex;

/// `additionalProperties`: a boolean or a schema.
#[derive(Debug, Clone)]
pub enum AdditionalProperties {
    /// `additionalProperties: true|false` (no schema).
    Allows(bool),
    /// `additionalProperties: {schema}`.
    Schema(Box<Structural>),
}

/// A parsed structural schema node (the CRD `JSONSchemaProps` kept by the server).
///
/// The same type holds the value validations nested under `allOf`/`anyOf`/`oneOf`/`not`; in those
/// the structural rules forbid `type` and the other generic fields (except the int-or-string
/// `anyOf: [{type: integer}, {type: string}]` pattern).
#[derive(Debug, Clone, Default)]
pub struct Structural {
    /// `type`: object, array, string, integer, number or boolean.
    pub type_name: Option<String>,
    /// `title`.
    pub title: Option<String>,
    /// `description`.
    pub description: Option<String>,
    /// `properties`, in declaration order.
    pub properties: Vec<(String, Structural)>,
    /// `items` (a single schema).
    pub items: Option<Box<Structural>>,
    /// `additionalProperties`.
    pub additional_properties: Option<AdditionalProperties>,
    /// `required`.
    pub required: Vec<String>,
    /// `enum`.
    pub enum_values: Vec<Value>,
    /// `nullable`.
    pub nullable: bool,
    /// `default`.
    pub default: Option<Value>,
    /// `format` as written; only the formats the server validates are enforced.
    pub format: Option<String>,
    /// `maximum`.
    pub maximum: Option<f64>,
    /// `exclusiveMaximum`.
    pub exclusive_maximum: bool,
    /// `minimum`.
    pub minimum: Option<f64>,
    /// `exclusiveMinimum`.
    pub exclusive_minimum: bool,
    /// `multipleOf`.
    pub multiple_of: Option<f64>,
    /// `maxLength` (in characters).
    pub max_length: Option<i64>,
    /// `minLength` (in characters).
    pub min_length: Option<i64>,
    /// `pattern` (Go RE2 syntax).
    pub pattern: Option<String>,
    /// `maxItems`.
    pub max_items: Option<i64>,
    /// `minItems`.
    pub min_items: Option<i64>,
    /// `uniqueItems`.
    pub unique_items: bool,
    /// `maxProperties`.
    pub max_properties: Option<i64>,
    /// `minProperties`.
    pub min_properties: Option<i64>,
    /// `allOf` value validations.
    pub all_of: Vec<Structural>,
    /// `anyOf` value validations.
    pub any_of: Vec<Structural>,
    /// `oneOf` value validations.
    pub one_of: Vec<Structural>,
    /// `not` value validation.
    pub not: Option<Box<Structural>>,
    /// `x-kubernetes-preserve-unknown-fields: true`.
    pub preserve_unknown_fields: bool,
    /// `x-kubernetes-int-or-string: true`.
    pub int_or_string: bool,
    /// `x-kubernetes-embedded-resource: true`.
    pub embedded_resource: bool,
    /// `x-kubernetes-list-type`.
    pub list_type: Option<String>,
    /// `x-kubernetes-list-map-keys`.
    pub list_map_keys: Vec<String>,
    /// `x-kubernetes-map-type`.
    pub map_type: Option<String>,
    /// `x-kubernetes-validations`, as written.
    pub validations: Vec<Value>,
    /// The rules of `validations`, compiled (see [`super::rules`]).
    pub(crate) compiled_rules: Vec<std::sync::Arc<super::rules::CompiledRule>>,
    /// `externalDocs`, kept verbatim.
    pub external_docs: Option<Value>,
    pub(crate) pattern_regex: Option<Regex>,
}

/// Whether a node is the root, an array item or an object field (`ValidateStructural`'s level).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// Keywords the CRD API rejects, with the `validate` wording of `specStandardValidatorV3`.
const UNSUPPORTED: [(&str, &str); 6] = [
    ("id", "id is not supported"),
    ("additionalItems", "additionalItems is not supported"),
    ("patternProperties", "patternProperties is not supported"),
    ("definitions", "definitions is not supported"),
    ("dependencies", "dependencies is not supported"),
    ("$ref", "$ref is not supported"),
];

const OPENAPI_V3_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];

impl Structural {
    /// Parses and checks an `openAPIV3Schema`, reporting errors with paths relative to the schema
    /// (`properties[spec].type`).
    pub fn from_openapi_v3(schema: &Value) -> Result<Structural, Vec<FieldError>> {
        Self::from_openapi_v3_at(schema, "")
    }

    /// Like [`Structural::from_openapi_v3`], with error paths under `schema_path`, which should be
    /// where the API server reports it: `spec.validation.openAPIV3Schema` when every version of
    /// the CRD has the same schema (always so with one version), otherwise
    /// `spec.versions[i].schema.openAPIV3Schema`.
    pub fn from_openapi_v3_at(schema: &Value, schema_path: &str) -> Result<Structural, Vec<FieldError>> {
        let path = FieldPath::from_text(schema_path);
        let mut decode_errors = Vec::new();
        let structural = parse_node(schema, &path, &mut decode_errors);
        if !decode_errors.is_empty() {
            return Err(decode_errors);
        }

        let mut errors = Vec::new();
        if structural.nullable {
            errors.push(FieldError::forbidden(
                path.child("nullable"),
                "nullable cannot be true at the root",
            ));
        }
        let has_unsupported = schema_has_unsupported(schema);
        if !has_unsupported {
            let mut structural_errors = Vec::new();
            validate_invariants(&structural, Level::Root, &path, &mut structural_errors);
            validate_completeness(&structural, &path, &mut structural_errors);
            structural_errors.sort_by_key(|e| e.to_string());
            if structural_errors.is_empty() {
                errors.extend(super::defaulting::validate_defaults(&structural, &path));
            } else {
                errors.extend(structural_errors);
            }
        }
        validate_openapi_schema(schema, &structural, &path, SpecContext::root(), true, &mut errors);
        if !errors.is_empty() {
            return Err(errors);
        }
        let mut structural = structural;
        let rule_errors = super::rules::compile(&mut structural, &path);
        if rule_errors.is_empty() {
            Ok(structural)
        } else {
            Err(rule_errors)
        }
    }

    /// The schema of property `name`, if declared.
    pub fn property(&self, name: &str) -> Option<&Structural> {
        self.properties
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, schema)| schema)
    }

    /// The schema applying to `additionalProperties`, when one is given.
    pub fn additional_properties_schema(&self) -> Option<&Structural> {
        match &self.additional_properties {
            Some(AdditionalProperties::Schema(schema)) => Some(schema),
            _ => None,
        }
    }
}

/// Whether the schema (at any depth) uses a keyword that `NewStructural` cannot convert.
fn schema_has_unsupported(schema: &Value) -> bool {
    let Some(map) = schema.as_object() else { return false };
    if UNSUPPORTED.iter().any(|(key, _)| map.contains_key(*key))
        || map.contains_key("$schema")
        || map.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false))
    {
        return true;
    }
    if matches!(map.get("items"), Some(Value::Array(_))) {
        return true;
    }
    let mut children: Vec<&Value> = Vec::new();
    if let Some(Value::Object(props)) = map.get("properties") {
        children.extend(props.values());
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(list)) = map.get(key) {
            children.extend(list.iter());
        }
    }
    for key in ["not", "items", "additionalProperties"] {
        if let Some(child @ Value::Object(_)) = map.get(key) {
            children.push(child);
        }
    }
    children.into_iter().any(schema_has_unsupported)
}

fn parse_node(value: &Value, path: &FieldPath, errors: &mut Vec<FieldError>) -> Structural {
    let mut node = Structural::default();
    let Some(map) = value.as_object() else {
        errors.push(FieldError::invalid(path, value.clone(), "must be an object"));
        return node;
    };
    let string = |key: &str, errors: &mut Vec<FieldError>| -> Option<String> {
        match map.get(key)? {
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            other => {
                errors.push(FieldError::invalid(path.child(key), other.clone(), "must be a string"));
                None
            }
        }
    };
    let boolean = |key: &str, errors: &mut Vec<FieldError>| -> bool {
        match map.get(key) {
            Some(Value::Bool(b)) => *b,
            None | Some(Value::Null) => false,
            Some(other) => {
                errors.push(FieldError::invalid(path.child(key), other.clone(), "must be a boolean"));
                false
            }
        }
    };
    let number = |key: &str, errors: &mut Vec<FieldError>| -> Option<f64> {
        match map.get(key)? {
            Value::Number(n) => n.as_f64(),
            Value::Null => None,
            other => {
                errors.push(FieldError::invalid(path.child(key), other.clone(), "must be a number"));
                None
            }
        }
    };
    let integer = |key: &str, errors: &mut Vec<FieldError>| -> Option<i64> {
        match map.get(key)? {
            Value::Number(n) if n.as_i64().is_some() => n.as_i64(),
            Value::Null => None,
            other => {
                errors.push(FieldError::invalid(
                    path.child(key),
                    other.clone(),
                    "must be an integer",
                ));
                None
            }
        }
    };
    let strings = |key: &str, errors: &mut Vec<FieldError>| -> Vec<String> {
        match map.get(key) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) if items.iter().all(Value::is_string) => {
                items.iter().filter_map(|v| v.as_str().map(str::to_string)).collect()
            }
            Some(other) => {
                errors.push(FieldError::invalid(
                    path.child(key),
                    other.clone(),
                    "must be a list of strings",
                ));
                Vec::new()
            }
        }
    };

    node.type_name = string("type", errors).filter(|t| !t.is_empty());
    node.title = string("title", errors).filter(|t| !t.is_empty());
    node.description = string("description", errors).filter(|t| !t.is_empty());
    node.format = string("format", errors).filter(|t| !t.is_empty());
    node.pattern = string("pattern", errors).filter(|t| !t.is_empty());
    node.nullable = boolean("nullable", errors);
    node.exclusive_maximum = boolean("exclusiveMaximum", errors);
    node.exclusive_minimum = boolean("exclusiveMinimum", errors);
    node.unique_items = boolean("uniqueItems", errors);
    node.int_or_string = boolean("x-kubernetes-int-or-string", errors);
    node.embedded_resource = boolean("x-kubernetes-embedded-resource", errors);
    node.preserve_unknown_fields = boolean("x-kubernetes-preserve-unknown-fields", errors);
    node.maximum = number("maximum", errors);
    node.minimum = number("minimum", errors);
    node.multiple_of = number("multipleOf", errors);
    node.max_length = integer("maxLength", errors);
    node.min_length = integer("minLength", errors);
    node.max_items = integer("maxItems", errors);
    node.min_items = integer("minItems", errors);
    node.max_properties = integer("maxProperties", errors);
    node.min_properties = integer("minProperties", errors);
    node.required = strings("required", errors);
    node.list_map_keys = strings("x-kubernetes-list-map-keys", errors);
    node.list_type = string("x-kubernetes-list-type", errors);
    node.map_type = string("x-kubernetes-map-type", errors);
    node.default = map.get("default").filter(|v| !v.is_null()).cloned();
    node.external_docs = map.get("externalDocs").filter(|v| !v.is_null()).cloned();
    match map.get("enum") {
        None | Some(Value::Null) => {}
        Some(Value::Array(values)) => node.enum_values = values.clone(),
        Some(other) => errors.push(FieldError::invalid(path.child("enum"), other.clone(), "must be a list")),
    }
    match map.get("x-kubernetes-validations") {
        None | Some(Value::Null) => {}
        Some(Value::Array(rules)) => node.validations = rules.clone(),
        Some(other) => errors.push(FieldError::invalid(
            path.child("x-kubernetes-validations"),
            other.clone(),
            "must be a list",
        )),
    }
    match map.get("properties") {
        None | Some(Value::Null) => {}
        Some(Value::Object(props)) => {
            let props_path = path.child("properties");
            node.properties = props
                .iter()
                .map(|(k, v)| (k.clone(), parse_node(v, &props_path.key(k), errors)))
                .collect();
        }
        Some(other) => errors.push(FieldError::invalid(
            path.child("properties"),
            other.clone(),
            "must be an object",
        )),
    }
    match map.get("items") {
        None | Some(Value::Null) | Some(Value::Array(_)) => {}
        Some(items) => node.items = Some(Box::new(parse_node(items, &path.child("items"), errors))),
    }
    match map.get("additionalProperties") {
        None | Some(Value::Null) => {}
        Some(Value::Bool(b)) => node.additional_properties = Some(AdditionalProperties::Allows(*b)),
        Some(schema) => {
            let parsed = parse_node(schema, &path.child("additionalProperties"), errors);
            node.additional_properties = Some(AdditionalProperties::Schema(Box::new(parsed)));
        }
    }
    for (key, target) in [
        ("allOf", &mut node.all_of),
        ("anyOf", &mut node.any_of),
        ("oneOf", &mut node.one_of),
    ] {
        match map.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::Array(list)) => {
                let list_path = path.child(key);
                *target = list
                    .iter()
                    .enumerate()
                    .map(|(i, v)| parse_node(v, &list_path.index(i), errors))
                    .collect();
            }
            Some(other) => errors.push(FieldError::invalid(path.child(key), other.clone(), "must be a list")),
        }
    }
    if let Some(not) = map.get("not").filter(|v| !v.is_null()) {
        node.not = Some(Box::new(parse_node(not, &path.child("not"), errors)));
    }
    if let Some(pattern) = &node.pattern {
        node.pattern_regex = Regex::new(pattern).ok();
    }
    node
}

/// `validateStructuralInvariants`.
fn validate_invariants(s: &Structural, level: Level, path: &FieldPath, errors: &mut Vec<FieldError>) {
    if s.type_name.as_deref() == Some("array") && s.items.is_none() {
        errors.push(FieldError::required(path.child("items"), "must be specified"));
    }
    if let Some(items) = &s.items {
        validate_invariants(items, Level::Item, &path.child("items"), errors);
    }
    for (key, property) in &s.properties {
        validate_invariants(property, Level::Field, &path.child("properties").key(key), errors);
    }
    if let Some(additional) = &s.additional_properties {
        if level == Level::Root {
            errors.push(FieldError::forbidden(
                path.child("additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let AdditionalProperties::Schema(schema) = additional {
            validate_invariants(schema, Level::Field, &path.child("additionalProperties"), errors);
        }
    }

    if s.int_or_string && s.preserve_unknown_fields {
        errors.push(FieldError::invalid(
            path.child("x-kubernetes-preserve-unknown-fields"),
            Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if s.int_or_string && s.embedded_resource {
        errors.push(FieldError::invalid(
            path.child("x-kubernetes-embedded-resource"),
            Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }

    let skip_any_of = is_int_or_string_any_of(&s.any_of);
    let skip_first_all_of_any_of = s
        .all_of
        .first()
        .is_some_and(|first| is_int_or_string_any_of(&first.any_of));
    validate_value_validation(s, skip_any_of, skip_first_all_of_any_of, path, errors);

    let check_metadata = level == Level::Root || s.embedded_resource;
    let type_name = s.type_name.as_deref().unwrap_or("");
    if s.embedded_resource && type_name != "object" {
        if type_name.is_empty() {
            errors.push(FieldError::required(
                path.child("type"),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        } else {
            errors.push(FieldError::invalid(
                path.child("type"),
                Value::String(type_name.into()),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        }
    } else if type_name.is_empty() && !s.int_or_string && !s.preserve_unknown_fields {
        let detail = match level {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errors.push(FieldError::required(path.child("type"), detail));
    }
    if s.embedded_resource && s.additional_properties.is_some() {
        errors.push(FieldError::forbidden(
            path.child("additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if level == Level::Root && !type_name.is_empty() && type_name != "object" {
        errors.push(FieldError::invalid(
            path.child("type"),
            Value::String(type_name.into()),
            "must be object at the root",
        ));
    }
    if check_metadata {
        for field in ["kind", "apiVersion"] {
            if let Some(property) = s.property(field) {
                let property_type = property.type_name.clone().unwrap_or_default();
                if property_type != "string" {
                    errors.push(FieldError::invalid(
                        path.child("properties").key(field).child("type"),
                        Value::String(property_type),
                        "must be string",
                    ));
                }
            }
        }
    }
    if let Some(metadata) = s.property("metadata") {
        let metadata_path = path.child("properties").key("metadata");
        if check_metadata && metadata.type_name.as_deref() != Some("object") {
            errors.push(FieldError::invalid(
                metadata_path.child("type"),
                Value::String(metadata.type_name.clone().unwrap_or_default()),
                "must be object",
            ));
        }
        if level == Level::Root && !metadata_restricts_only_names(metadata) {
            errors.push(FieldError::forbidden(
                metadata_path,
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
    if s.embedded_resource && !s.preserve_unknown_fields && s.properties.is_empty() {
        errors.push(FieldError::required(
            path.child("properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// The root `metadata` schema may only carry `type`, `default` and restrictions of `name`/`generateName`.
fn metadata_restricts_only_names(metadata: &Structural) -> bool {
    let names_only = match metadata.properties.len() {
        0 => true,
        1 => metadata.property("name").is_some() || metadata.property("generateName").is_some(),
        2 => metadata.property("name").is_some() && metadata.property("generateName").is_some(),
        _ => false,
    };
    let mut stripped = metadata.clone();
    stripped.type_name = None;
    stripped.default = None;
    stripped.properties.clear();
    names_only && is_empty_schema(&stripped)
}

fn is_empty_schema(s: &Structural) -> bool {
    s.type_name.is_none()
        && s.title.is_none()
        && s.description.is_none()
        && s.properties.is_empty()
        && s.items.is_none()
        && s.additional_properties.is_none()
        && s.required.is_empty()
        && s.enum_values.is_empty()
        && !s.nullable
        && s.default.is_none()
        && s.format.is_none()
        && s.maximum.is_none()
        && !s.exclusive_maximum
        && s.minimum.is_none()
        && !s.exclusive_minimum
        && s.multiple_of.is_none()
        && s.max_length.is_none()
        && s.min_length.is_none()
        && s.pattern.is_none()
        && s.max_items.is_none()
        && s.min_items.is_none()
        && !s.unique_items
        && s.max_properties.is_none()
        && s.min_properties.is_none()
        && s.all_of.is_empty()
        && s.any_of.is_empty()
        && s.one_of.is_empty()
        && s.not.is_none()
        && !s.preserve_unknown_fields
        && !s.int_or_string
        && !s.embedded_resource
        && s.list_type.is_none()
        && s.list_map_keys.is_empty()
        && s.map_type.is_none()
        && s.validations.is_empty()
        && s.external_docs.is_none()
}

/// `anyOf: [{type: integer}, {type: string}]` exactly (`intOrStringAnyOf`).
fn is_int_or_string_any_of(any_of: &[Structural]) -> bool {
    let only_type = |s: &Structural, t: &str| {
        let mut rest = s.clone();
        let matches = rest.type_name.as_deref() == Some(t);
        rest.type_name = None;
        matches && is_empty_schema(&rest)
    };
    any_of.len() == 2 && only_type(&any_of[0], "integer") && only_type(&any_of[1], "string")
}

/// `validateValueValidation`: checks the junctors below a node and its pattern.
fn validate_value_validation(
    s: &Structural,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    path: &FieldPath,
    errors: &mut Vec<FieldError>,
) {
    if !skip_any_of {
        for (i, nested) in s.any_of.iter().enumerate() {
            validate_nested(nested, false, &path.child("anyOf").index(i), errors);
        }
    }
    for (i, nested) in s.all_of.iter().enumerate() {
        validate_nested(
            nested,
            skip_first_all_of_any_of && i == 0,
            &path.child("allOf").index(i),
            errors,
        );
    }
    for (i, nested) in s.one_of.iter().enumerate() {
        validate_nested(nested, false, &path.child("oneOf").index(i), errors);
    }
    if let Some(not) = &s.not {
        validate_nested(not, false, &path.child("not"), errors);
    }
    // A pattern that compiled while parsing is valid; compile again only for the error.
    if let Some(pattern) = &s.pattern
        && s.pattern_regex.is_none()
        && let Err(error) = Regex::new(pattern)
    {
        errors.push(FieldError::invalid(
            path.child("pattern"),
            Value::String(pattern.clone()),
            format!("must be a valid regular expression, but isn't: {error}"),
        ));
    }
}

/// `validateNestedValueValidation`: what may not appear inside `allOf`/`anyOf`/`oneOf`/`not`.
fn validate_nested(v: &Structural, skip_any_of: bool, path: &FieldPath, errors: &mut Vec<FieldError>) {
    validate_value_validation(v, skip_any_of, false, path, errors);
    if let Some(items) = &v.items {
        validate_nested(items, false, &path.child("items"), errors);
    }
    for (key, property) in &v.properties {
        validate_nested(property, false, &path.child("properties").key(key), errors);
    }
    if v.type_name.is_some() {
        errors.push(FieldError::forbidden(
            path.child("type"),
            "must be empty to be structural",
        ));
    }
    if v.additional_properties.is_some() {
        errors.push(FieldError::forbidden(
            path.child("additionalProperties"),
            "must be undefined to be structural",
        ));
    }
    if v.default.is_some() {
        errors.push(FieldError::forbidden(
            path.child("default"),
            "must be undefined to be structural",
        ));
    }
    if v.title.is_some() {
        errors.push(FieldError::forbidden(
            path.child("title"),
            "must be empty to be structural",
        ));
    }
    if v.description.is_some() {
        errors.push(FieldError::forbidden(
            path.child("description"),
            "must be empty to be structural",
        ));
    }
    if v.nullable {
        errors.push(FieldError::forbidden(
            path.child("nullable"),
            "must be false to be structural",
        ));
    }
    if v.external_docs.is_some() {
        errors.push(FieldError::forbidden(
            path.child("externalDocs"),
            "must be undefined to be structural",
        ));
    }
    if v.preserve_unknown_fields {
        errors.push(FieldError::forbidden(
            path.child("x-kubernetes-preserve-unknown-fields"),
            "must be false to be structural",
        ));
    }
    if v.embedded_resource {
        errors.push(FieldError::forbidden(
            path.child("x-kubernetes-embedded-resource"),
            "must be false to be structural",
        ));
    }
    if v.int_or_string {
        errors.push(FieldError::forbidden(
            path.child("x-kubernetes-int-or-string"),
            "must be false to be structural",
        ));
    }
    if !v.list_map_keys.is_empty() {
        errors.push(FieldError::forbidden(
            path.child("x-kubernetes-list-map-keys"),
            "must be empty to be structural",
        ));
    }
    if v.list_type.is_some() {
        errors.push(FieldError::forbidden(
            path.child("x-kubernetes-list-type"),
            "must be undefined to be structural",
        ));
    }
    if v.map_type.is_some() {
        errors.push(FieldError::forbidden(
            path.child("x-kubernetes-map-type"),
            "must be undefined to be structural",
        ));
    }
    if !v.validations.is_empty() {
        errors.push(FieldError::forbidden(
            path.child("x-kubernetes-validations"),
            "must be empty to be structural",
        ));
    }
    if v.property("metadata").is_some() {
        errors.push(FieldError::forbidden(
            path.child("properties").key("metadata"),
            "must not be specified in a nested context",
        ));
    }
}

/// `validateStructuralCompleteness`: fields named in the root's value validations must be
/// specified structurally too.
fn validate_completeness(s: &Structural, path: &FieldPath, errors: &mut Vec<FieldError>) {
    completeness_of_junctors(s, s, path, path, errors);
}

fn completeness_of_junctors(
    v: &Structural,
    s: &Structural,
    s_path: &FieldPath,
    v_path: &FieldPath,
    errors: &mut Vec<FieldError>,
) {
    if let Some(not) = &v.not {
        completeness_of_nested(not, Some(s), s_path, &v_path.child("not"), errors);
    }
    for (name, list) in [("allOf", &v.all_of), ("anyOf", &v.any_of), ("oneOf", &v.one_of)] {
        for (i, nested) in list.iter().enumerate() {
            completeness_of_nested(nested, Some(s), s_path, &v_path.child(name).index(i), errors);
        }
    }
}

fn completeness_of_nested(
    v: &Structural,
    s: Option<&Structural>,
    s_path: &FieldPath,
    v_path: &FieldPath,
    errors: &mut Vec<FieldError>,
) {
    let Some(s) = s else {
        errors.push(FieldError::required(
            s_path,
            format!("because it is defined in {v_path}"),
        ));
        return;
    };
    completeness_of_junctors(v, s, s_path, v_path, errors);
    if let Some(items) = &v.items {
        completeness_of_nested(
            items,
            s.items.as_deref(),
            &s_path.child("items"),
            &v_path.child("items"),
            errors,
        );
    }
    for (key, property) in &v.properties {
        let v_child = v_path.child("properties").key(key);
        match s.property(key) {
            Some(s_property) => completeness_of_nested(
                property,
                Some(s_property),
                &s_path.child("properties").key(key),
                &v_child,
                errors,
            ),
            None => errors.push(FieldError::required(
                s_path.child("properties").key(key),
                format!("because it is defined in {v_child}"),
            )),
        }
    }
}

/// Context threaded through `ValidateCustomResourceDefinitionOpenAPISchema`.
#[derive(Debug, Clone)]
struct SpecContext {
    allow_defaults: bool,
    disallow_defaults_reason: String,
    inside_resource_meta: bool,
}

impl SpecContext {
    fn root() -> Self {
        Self {
            allow_defaults: true,
            disallow_defaults_reason: String::new(),
            inside_resource_meta: false,
        }
    }

    fn forbid_defaults(&self, reason: &str) -> Self {
        Self {
            allow_defaults: false,
            disallow_defaults_reason: reason.to_string(),
            ..self.clone()
        }
    }
}

/// `ValidateCustomResourceDefinitionOpenAPISchema` with `specStandardValidatorV3`, walking the raw schema.
fn validate_openapi_schema(
    raw: &Value,
    s: &Structural,
    path: &FieldPath,
    context: SpecContext,
    is_root: bool,
    errors: &mut Vec<FieldError>,
) {
    let Some(map) = raw.as_object() else { return };
    validate_spec_standard(map, s, path, &context, errors);

    if s.unique_items {
        errors.push(FieldError::forbidden(
            path.child("uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    if let Some(additional) = map.get("additionalProperties").filter(|v| !v.is_null()) {
        let allows_without_schema = matches!(additional, Value::Bool(true));
        if !s.properties.is_empty() && !allows_without_schema {
            errors.push(FieldError::forbidden(
                path.child("additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        if let (Value::Object(_), Some(AdditionalProperties::Schema(schema))) = (additional, &s.additional_properties) {
            let sub_context = if context.inside_resource_meta {
                context.forbid_defaults("inside additionalProperties applying to object metadata")
            } else {
                context.clone()
            };
            validate_openapi_schema(
                additional,
                schema,
                &path.child("additionalProperties"),
                sub_context,
                false,
                errors,
            );
        }
    }
    if let Some(Value::Object(raw_props)) = map.get("properties") {
        for (key, property) in &s.properties {
            let Some(raw_property) = raw_props.get(key) else {
                continue;
            };
            let mut sub_context = context.clone();
            if (is_root || s.embedded_resource) && matches!(key.as_str(), "metadata" | "kind" | "apiVersion") {
                sub_context.inside_resource_meta = true;
                if is_root {
                    sub_context = sub_context.forbid_defaults(&format!("in top-level {key}"));
                }
            }
            validate_openapi_schema(
                raw_property,
                property,
                &path.child("properties").key(key),
                sub_context,
                false,
                errors,
            );
        }
    }
    if let (Some(raw_not), Some(not)) = (map.get("not"), &s.not) {
        validate_openapi_schema(raw_not, not, &path.child("not"), context.clone(), false, errors);
    }
    for (name, list) in [("allOf", &s.all_of), ("oneOf", &s.one_of), ("anyOf", &s.any_of)] {
        if let Some(Value::Array(raw_list)) = map.get(name) {
            for (i, (raw_item, item)) in raw_list.iter().zip(list.iter()).enumerate() {
                validate_openapi_schema(
                    raw_item,
                    item,
                    &path.child(name).index(i),
                    context.clone(),
                    false,
                    errors,
                );
            }
        }
    }
    if let (Some(raw_items), Some(items)) = (map.get("items"), &s.items) {
        validate_openapi_schema(raw_items, items, &path.child("items"), context.clone(), false, errors);
    }
    if let Some(Value::Bool(false)) = map.get("x-kubernetes-preserve-unknown-fields") {
        errors.push(FieldError::invalid(
            path.child("x-kubernetes-preserve-unknown-fields"),
            Value::Bool(false),
            "must be true or undefined",
        ));
    }
    validate_list_and_map_markers(s, path, errors);
    validate_rule_shapes(s, path, errors);
}

/// `specStandardValidatorV3.validate`.
fn validate_spec_standard(
    map: &Map<String, Value>,
    s: &Structural,
    path: &FieldPath,
    context: &SpecContext,
    errors: &mut Vec<FieldError>,
) {
    if let Some(type_name) = &s.type_name
        && !OPENAPI_V3_TYPES.contains(&type_name.as_str())
    {
        let supported: Vec<String> = OPENAPI_V3_TYPES.iter().map(|t| t.to_string()).collect();
        errors.push(FieldError::not_supported(
            path.child("type"),
            Value::String(type_name.clone()),
            &supported,
        ));
    }
    if s.default.is_some() && !context.allow_defaults {
        let mut detail = "must not be set".to_string();
        if !context.disallow_defaults_reason.is_empty() {
            detail.push(' ');
            detail.push_str(&context.disallow_defaults_reason);
        }
        errors.push(FieldError::forbidden(path.child("default"), detail));
    }
    for (key, detail) in UNSUPPORTED {
        let present = match map.get(key) {
            None | Some(Value::Null) => false,
            Some(Value::String(text)) => !text.is_empty(),
            Some(Value::Object(object)) => key == "additionalItems" || key == "dependencies" || !object.is_empty(),
            Some(_) => true,
        };
        if present {
            errors.push(FieldError::forbidden(path.child(key), detail));
        }
    }
    if s.type_name.as_deref() == Some("null") {
        errors.push(FieldError::forbidden(
            path.child("type"),
            "type cannot be set to null, use nullable as an alternative",
        ));
    }
    if matches!(map.get("items"), Some(Value::Array(list)) if !list.is_empty()) {
        errors.push(FieldError::forbidden(
            path.child("items"),
            "items must be a schema object and not an array",
        ));
    }
    if context.inside_resource_meta && s.embedded_resource {
        errors.push(FieldError::forbidden(
            path.child("x-kubernetes-embedded-resource"),
            "must not be used inside of resource meta",
        ));
    }
}

/// The `x-kubernetes-map-type`, `x-kubernetes-list-type` and `x-kubernetes-list-map-keys` rules.
fn validate_list_and_map_markers(s: &Structural, path: &FieldPath, errors: &mut Vec<FieldError>) {
    let type_name = s.type_name.clone().unwrap_or_default();
    if let Some(map_type) = &s.map_type {
        if type_name != "object" {
            if type_name.is_empty() {
                errors.push(FieldError::required(
                    path.child("type"),
                    "must be object if x-kubernetes-map-type is specified",
                ));
            } else {
                errors.push(FieldError::invalid(
                    path.child("type"),
                    Value::String(type_name.clone()),
                    "must be object if x-kubernetes-map-type is specified",
                ));
            }
        }
        if map_type != "atomic" && map_type != "granular" {
            errors.push(FieldError::not_supported(
                path.child("x-kubernetes-map-type"),
                Value::String(map_type.clone()),
                &["atomic".into(), "granular".into()],
            ));
        }
    }
    if let Some(list_type) = &s.list_type {
        if type_name != "array" {
            if type_name.is_empty() {
                errors.push(FieldError::required(
                    path.child("type"),
                    "must be array if x-kubernetes-list-type is specified",
                ));
            } else {
                errors.push(FieldError::invalid(
                    path.child("type"),
                    Value::String(type_name.clone()),
                    "must be array if x-kubernetes-list-type is specified",
                ));
            }
        } else if list_type == "set"
            && let Some(items) = &s.items
        {
            match items.type_name.as_deref() {
                Some("array") if items.list_type.as_deref().is_some_and(|t| t != "atomic") => {
                    errors.push(FieldError::invalid(
                        path.child("items").child("x-kubernetes-list-type"),
                        Value::String(items.list_type.clone().unwrap_or_default()),
                        "must be atomic as item of a list with x-kubernetes-list-type=set",
                    ));
                }
                Some("object") if items.map_type.as_deref() != Some("atomic") => {
                    // The server reports the item's list type here, which is normally unset.
                    let value = items.list_type.clone().map(Value::String).unwrap_or(Value::Null);
                    errors.push(FieldError::invalid(
                        path.child("items").child("x-kubernetes-map-type"),
                        value,
                        "must be atomic as item of a list with x-kubernetes-list-type=set",
                    ));
                }
                _ => {}
            }
        }
        if !matches!(list_type.as_str(), "atomic" | "set" | "map") {
            errors.push(FieldError::not_supported(
                path.child("x-kubernetes-list-type"),
                Value::String(list_type.clone()),
                &["atomic".into(), "set".into(), "map".into()],
            ));
        }
    }
    if !s.list_map_keys.is_empty() {
        match s.list_type.as_deref() {
            None => errors.push(FieldError::required(
                path.child("x-kubernetes-list-type"),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            Some("map") => {}
            Some(other) => errors.push(FieldError::invalid(
                path.child("x-kubernetes-list-type"),
                Value::String(other.to_string()),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
        }
    }
    let keys_value = Value::Array(s.list_map_keys.iter().cloned().map(Value::String).collect());
    if s.list_type.as_deref() == Some("map") {
        if s.list_map_keys.is_empty() {
            errors.push(FieldError::required(
                path.child("x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        match &s.items {
            None => errors.push(FieldError::required(
                path.child("items"),
                "must have a schema if x-kubernetes-list-type is map",
            )),
            Some(items) if items.type_name.as_deref() != Some("object") => errors.push(FieldError::invalid(
                path.child("items").child("type"),
                Value::String(items.type_name.clone().unwrap_or_default()),
                "must be object if parent array's x-kubernetes-list-type is map",
            )),
            Some(items) => {
                let mut seen: Vec<&str> = Vec::new();
                for key in &s.list_map_keys {
                    match items.property(key) {
                        Some(property) => {
                            if matches!(property.type_name.as_deref(), Some("array" | "object")) {
                                errors.push(FieldError::invalid(
                                    path.child("items").child("properties").key(key).child("type"),
                                    Value::String("object".into()),
                                    "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                ));
                            }
                        }
                        None => errors.push(FieldError::invalid(
                            path.child("x-kubernetes-list-map-keys"),
                            keys_value.clone(),
                            "entries must all be names of item properties",
                        )),
                    }
                    if seen.contains(&key.as_str()) {
                        errors.push(FieldError::invalid(
                            path.child("x-kubernetes-list-map-keys"),
                            keys_value.clone(),
                            "must not contain duplicate entries",
                        ));
                    }
                    seen.push(key);
                }
            }
        }
    }
    // validateMapListKeysMapSet (required for new CRDs).
    if let (Some(list_type @ ("set" | "map")), Some(items)) = (s.list_type.as_deref(), &s.items) {
        if items.nullable {
            errors.push(FieldError::forbidden(
                path.child("items").child("nullable"),
                format!("cannot be nullable when x-kubernetes-list-type is {list_type}"),
            ));
        }
        if list_type == "map" {
            for key in &s.list_map_keys {
                let Some(property) = items.property(key) else { continue };
                if !items.required.contains(key) && property.default.is_none() {
                    errors.push(FieldError::required(
                        path.child("items").child("properties").key(key).child("default"),
                        "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                    ));
                }
                if property.nullable {
                    errors.push(FieldError::forbidden(
                        path.child("items").child("properties").key(key).child("nullable"),
                        "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                    ));
                }
            }
        }
    }
}

/// The shape checks of `x-kubernetes-validations` entries (the rules are compiled by `rules::compile`).
fn validate_rule_shapes(s: &Structural, path: &FieldPath, errors: &mut Vec<FieldError>) {
    const REASONS: [&str; 4] = [
        "FieldValueDuplicate",
        "FieldValueForbidden",
        "FieldValueInvalid",
        "FieldValueRequired",
    ];
    for (i, rule) in s.validations.iter().enumerate() {
        let rule_path = path.child("x-kubernetes-validations").index(i);
        let text = |key: &str| rule.get(key).and_then(Value::as_str).unwrap_or("").to_string();
        let (expression, message, message_expression) = (text("rule"), text("message"), text("messageExpression"));
        let has_newline = |t: &str| t.contains('\n') || t.contains('\r');
        if expression.trim().is_empty() {
            errors.push(FieldError::required(rule_path.child("rule"), "rule is not specified"));
        } else if !message.is_empty() && message.trim().is_empty() {
            errors.push(FieldError::invalid(
                rule_path.child("message"),
                Value::String(message.clone()),
                "message must be non-empty if specified",
            ));
        } else if has_newline(message.trim()) {
            errors.push(FieldError::invalid(
                rule_path.child("message"),
                Value::String(message.clone()),
                "message must not contain line breaks",
            ));
        } else if has_newline(expression.trim()) && message.trim().is_empty() {
            errors.push(FieldError::required(
                rule_path.child("message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        if !message_expression.is_empty() && message_expression.trim().is_empty() {
            errors.push(FieldError::required(
                rule_path.child("messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(reason) = rule.get("reason").and_then(Value::as_str)
            && !REASONS.contains(&reason)
        {
            let supported: Vec<String> = REASONS.iter().map(|r| r.to_string()).collect();
            errors.push(FieldError::not_supported(
                rule_path.child("reason"),
                Value::String(reason.into()),
                &supported,
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ROOT: &str = "spec.validation.openAPIV3Schema";

    fn errors_of(schema: Value) -> Vec<String> {
        match Structural::from_openapi_v3_at(&schema, ROOT) {
            Ok(_) => Vec::new(),
            Err(errors) => errors.iter().map(ToString::to_string).collect(),
        }
    }

    #[test]
    fn accepts_a_typical_controller_gen_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": {
                    "type": "object",
                    "required": ["replicas"],
                    "properties": {
                        "replicas": {"type": "integer", "format": "int32", "minimum": 0, "default": 1},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                        "ports": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name"],
                            "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}
                        }
                    }
                },
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
            }
        });
        let structural = Structural::from_openapi_v3(&schema).expect("structural");
        let spec = structural.property("spec").expect("spec");
        assert_eq!(
            spec.property("replicas").and_then(|r| r.default.clone()),
            Some(json!(1))
        );
        assert!(spec.property("port").is_some_and(|p| p.int_or_string));
    }

    #[test]
    fn accepts_controller_gen_constructs_seen_in_published_crds() {
        // Fragments of prometheus-operator's ServiceMonitor CRD (controller-gen v0.18).
        let schema = json!({
            "type": "object",
            "description": "The ServiceMonitor custom resource definition",
            "properties": {
                "apiVersion": {"type": "string", "description": "APIVersion"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": {"type": "object", "required": ["selector"], "properties": {
                    "bodySizeLimit": {"type": "string", "pattern": "(^0|([0-9]*[.])?[0-9]+((K|M|G|T|E|P)i?)?B)$"},
                    "endpoints": {"type": "array", "items": {"type": "object", "properties": {
                        "bearerTokenSecret": {
                            "type": "object",
                            "required": ["key"],
                            "x-kubernetes-map-type": "atomic",
                            "properties": {
                                "key": {"type": "string"},
                                "name": {"type": "string", "default": ""},
                                "optional": {"type": "boolean"}
                            }
                        },
                        "interval": {"type": "string", "pattern": "^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"},
                        "metricRelabelings": {"type": "array", "items": {"type": "object", "properties": {
                            "action": {"type": "string", "default": "replace", "enum": ["replace", "Replace", "keep", "Keep"]},
                            "modulus": {"type": "integer", "format": "int64"}
                        }}},
                        "targetPort": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": true}
                    }}},
                    "selector": {"type": "object", "x-kubernetes-map-type": "atomic", "properties": {
                        "matchExpressions": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {
                            "type": "object",
                            "required": ["key", "operator"],
                            "properties": {
                                "key": {"type": "string"},
                                "operator": {"type": "string"},
                                "values": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "atomic"}
                            }
                        }},
                        "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}
                    }}
                }}
            },
            "required": ["spec"]
        });
        let structural = Structural::from_openapi_v3_at(&schema, ROOT).unwrap_or_else(|e| panic!("{e:?}"));
        let errors = structural.validate(&json!({
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "ServiceMonitor",
            "metadata": {"name": "m"},
            "spec": {"selector": {}, "bodySizeLimit": "10MiB", "endpoints": [{"interval": "30s", "targetPort": "web"}]}
        }));
        assert!(errors.is_empty(), "{errors:?}");
        let errors: Vec<String> = structural
            .validate(&json!({"spec": {"selector": {}, "endpoints": [{"interval": "30x"}]}}))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errors,
            vec![
                r#"spec.endpoints[0].interval: Invalid value: "30x": spec.endpoints[0].interval in body should match '^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$'"#
            ]
        );
    }

    #[test]
    fn missing_type_at_a_field_is_required() {
        // ValidateStructural: field.Required(type, "must not be empty for specified object fields").
        let errors =
            errors_of(json!({"type": "object", "properties": {"spec": {"properties": {"a": {"type": "string"}}}}}));
        assert_eq!(
            errors,
            vec![
                "spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"
            ]
        );
    }

    #[test]
    fn missing_type_at_root_and_items() {
        let errors = errors_of(json!({"properties": {"list": {"type": "array", "items": {}}}}));
        assert!(errors.contains(
            &"spec.validation.openAPIV3Schema.type: Required value: must not be empty at the root".to_string()
        ));
        assert!(errors.contains(
            &"spec.validation.openAPIV3Schema.properties[list].items.type: Required value: must not be empty for specified array items".to_string()
        ));
    }

    #[test]
    fn array_without_items() {
        let errors = errors_of(json!({"type": "object", "properties": {"list": {"type": "array"}}}));
        assert_eq!(
            errors,
            vec!["spec.validation.openAPIV3Schema.properties[list].items: Required value: must be specified"]
        );
    }

    #[test]
    fn properties_and_additional_properties_are_exclusive() {
        let errors = errors_of(json!({"type": "object", "properties": {"spec": {
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "additionalProperties": {"type": "string"}
        }}}));
        assert_eq!(
            errors,
            vec![
                "spec.validation.openAPIV3Schema.properties[spec].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"
            ]
        );
    }

    #[test]
    fn default_must_validate() {
        // Observed on a real cluster: `... .default: Invalid value: "boolean":  in body must be of type string: "boolean"`.
        let errors = errors_of(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "desiredPowerState": {"type": "string", "default": true}
            }}}}),
        );
        assert_eq!(
            errors,
            vec![
                r#"spec.validation.openAPIV3Schema.properties[spec].properties[desiredPowerState].default: Invalid value: "boolean":  in body must be of type string: "boolean""#
            ]
        );
    }

    #[test]
    fn default_must_be_pruned() {
        let errors = errors_of(json!({"type": "object", "properties": {"spec": {
            "type": "object",
            "default": {"unknown": 1},
            "properties": {"a": {"type": "string"}}
        }}}));
        assert_eq!(
            errors,
            vec![
                r#"spec.validation.openAPIV3Schema.properties[spec].default: Invalid value: map[string]interface {}{"unknown":1}: must not have unknown fields"#
            ]
        );
    }

    #[test]
    fn defaults_in_top_level_metadata_are_forbidden() {
        let errors =
            errors_of(json!({"type": "object", "properties": {"metadata": {"type": "object", "default": {}}}}));
        assert!(errors.contains(
            &"spec.validation.openAPIV3Schema.properties[metadata].default: Forbidden: must not be set in top-level metadata".to_string()
        ));
    }

    #[test]
    fn types_inside_value_validations_are_not_structural() {
        let errors = errors_of(json!({"type": "object", "properties": {"spec": {
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "anyOf": [{"type": "object", "required": ["a"]}]
        }}}));
        assert_eq!(
            errors,
            vec![
                "spec.validation.openAPIV3Schema.properties[spec].anyOf[0].type: Forbidden: must be empty to be structural"
            ]
        );
    }

    #[test]
    fn unsupported_keywords_and_types() {
        let errors = errors_of(json!({"type": "object", "properties": {
            "a": {"$ref": "#/definitions/x"},
            "b": {"type": "null"},
            "c": {"type": "string", "uniqueItems": true}
        }}));
        assert!(errors.contains(
            &"spec.validation.openAPIV3Schema.properties[a].$ref: Forbidden: $ref is not supported".to_string()
        ));
        assert!(errors.contains(
            &r#"spec.validation.openAPIV3Schema.properties[b].type: Unsupported value: "null": supported values: "array", "boolean", "integer", "number", "object", "string""#.to_string()
        ));
        assert!(errors.contains(
            &"spec.validation.openAPIV3Schema.properties[b].type: Forbidden: type cannot be set to null, use nullable as an alternative".to_string()
        ));
        assert!(errors.contains(
            &"spec.validation.openAPIV3Schema.properties[c].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic".to_string()
        ));
    }

    #[test]
    fn invalid_pattern_is_reported_with_go_wording() {
        let errors = errors_of(json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "(abc"}}}));
        assert_eq!(
            errors,
            vec![
                "spec.validation.openAPIV3Schema.properties[a].pattern: Invalid value: \"(abc\": must be a valid regular expression, but isn't: error parsing regexp: missing closing ): `(abc`"
            ]
        );
    }

    #[test]
    fn go_patterns_are_accepted_and_refused_as_go_does() {
        let valid = [
            r"^\p{Thai}+$",
            r"\p{Lu}",
            r"(?i)straße",
            r"\Qa.b\E",
            r"[[:alpha:]]",
            r"^a{,5}$",
            r"\<x\>",
        ];
        for pattern in valid {
            let errors =
                errors_of(json!({"type": "object", "properties": {"a": {"type": "string", "pattern": pattern}}}));
            assert!(errors.is_empty(), "{pattern}: {errors:?}");
        }
        let errors = errors_of(json!({"type": "object", "properties": {
            "a": {"type": "string", "pattern": r"\p{Letter}"},
            "b": {"type": "string", "pattern": "(?<name>x"},
            "c": {"type": "string", "pattern": "(a{500}){3}"}
        }}));
        assert_eq!(
            errors,
            vec![
                r#"spec.validation.openAPIV3Schema.properties[a].pattern: Invalid value: "\\p{Letter}": must be a valid regular expression, but isn't: error parsing regexp: invalid character class range: `\p{Letter}`"#,
                "spec.validation.openAPIV3Schema.properties[b].pattern: Invalid value: \"(?<name>x\": must be a valid regular expression, but isn't: error parsing regexp: missing closing ): `(?<name>x`",
                "spec.validation.openAPIV3Schema.properties[c].pattern: Invalid value: \"(a{500}){3}\": must be a valid regular expression, but isn't: error parsing regexp: invalid repeat count: `{3}`",
            ]
        );
    }

    #[test]
    fn root_metadata_may_only_restrict_names() {
        let errors = errors_of(json!({"type": "object", "properties": {"metadata": {
            "type": "object", "properties": {"labels": {"type": "object"}}
        }}}));
        assert_eq!(
            errors,
            vec![
                "spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
            ]
        );
        assert!(
            errors_of(json!({"type": "object", "properties": {"metadata": {
                "type": "object", "properties": {"name": {"type": "string", "maxLength": 10}}
            }}}))
            .is_empty()
        );
    }

    #[test]
    fn embedded_resource_rules() {
        let errors =
            errors_of(json!({"type": "object", "properties": {"template": {"x-kubernetes-embedded-resource": true}}}));
        assert!(errors.contains(
            &"spec.validation.openAPIV3Schema.properties[template].type: Required value: must be object if x-kubernetes-embedded-resource is true".to_string()
        ));
        assert!(errors.contains(
            &"spec.validation.openAPIV3Schema.properties[template].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields".to_string()
        ));
    }

    #[test]
    fn list_map_markers() {
        let errors = errors_of(json!({"type": "object", "properties": {"ports": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["port"],
            "items": {"type": "object", "properties": {"port": {"type": "integer"}}}
        }}}));
        assert_eq!(
            errors,
            vec![
                "spec.validation.openAPIV3Schema.properties[ports].items.properties[port].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"
            ]
        );
    }

    #[test]
    fn root_additional_properties_and_root_type() {
        let errors = errors_of(json!({"type": "string", "additionalProperties": {"type": "string"}}));
        assert!(
            errors.contains(
                &"spec.validation.openAPIV3Schema.additionalProperties: Forbidden: must not be used at the root"
                    .to_string()
            )
        );
        assert!(errors.contains(
            &r#"spec.validation.openAPIV3Schema.type: Invalid value: "string": must be object at the root"#.to_string()
        ));
    }

    #[test]
    fn completeness_of_value_validations() {
        let errors = errors_of(json!({"type": "object", "properties": {"a": {"type": "string"}},
            "anyOf": [{"properties": {"b": {"minLength": 1}}}]}));
        assert_eq!(
            errors,
            vec![
                "spec.validation.openAPIV3Schema.properties[b]: Required value: because it is defined in spec.validation.openAPIV3Schema.anyOf[0].properties[b]"
            ]
        );
    }

    #[test]
    fn preserve_unknown_fields_false_is_invalid() {
        let errors = errors_of(
            json!({"type": "object", "properties": {"a": {"type": "object", "x-kubernetes-preserve-unknown-fields": false}}}),
        );
        assert_eq!(
            errors,
            vec![
                "spec.validation.openAPIV3Schema.properties[a].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"
            ]
        );
    }
}
