//! Validation of an object against a structural schema: a port of kube-openapi's `SchemaValidator`
//! and of how the CRD handler turns its results into field errors.

use serde_json::{Map, Number, Value};

use super::field_error::{FieldError, FieldPath};
use super::formats;
use super::object_meta::{self, NameRule};
use super::structural::{AdditionalProperties, Structural};
use crate::go_format;

/// kube-openapi's error codes that the CRD handler distinguishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Code {
    InvalidType,
    Required,
    TooLong,
    Enum,
    MaxItems,
    TooManyProperties,
    Other,
}

/// One kube-openapi error: a `*errors.Validation` or a composite (`errors.New`) message.
#[derive(Debug, Clone)]
enum Issue {
    Validation {
        code: Code,
        name: String,
        message: String,
        value: Option<Value>,
        values: Vec<Value>,
        valid: Option<i64>,
    },
    Composite(String),
}

impl Issue {
    fn new(code: Code, name: &str, message: String, value: Option<Value>) -> Self {
        Issue::Validation {
            code,
            name: name.to_string(),
            message,
            value,
            values: Vec::new(),
            valid: None,
        }
    }

    fn with_valid(mut self, limit: i64) -> Self {
        if let Issue::Validation { valid, .. } = &mut self {
            *valid = Some(limit);
        }
        self
    }
}

/// A kube-openapi `Result`: errors plus the count of checks that applied (used to pick the
/// closest `anyOf`/`oneOf` alternative).
#[derive(Debug, Default)]
struct Outcome {
    issues: Vec<Issue>,
    matches: usize,
}

impl Outcome {
    fn merge(&mut self, other: Outcome) {
        self.issues.extend(other.issues);
        self.matches += other.matches;
    }

    fn is_valid(&self) -> bool {
        self.issues.is_empty()
    }

    fn fail(issue: Issue) -> Self {
        Self {
            issues: vec![issue],
            matches: 0,
        }
    }
}

/// Validates `data` against `schema` and converts the result like `kubeOpenAPIResultToFieldErrors`.
/// `prefix` is the field path the schema applies at (`None` is Go's nil path, printed `<nil>`).
pub(crate) fn validate_against(schema: &Structural, data: &Value, prefix: Option<&FieldPath>) -> Vec<FieldError> {
    let outcome = validate_value(schema, "", data);
    outcome
        .issues
        .into_iter()
        .map(|issue| to_field_error(issue, prefix))
        .collect()
}

fn nil_or(prefix: Option<&FieldPath>) -> String {
    prefix.map(String::from).unwrap_or_else(|| "<nil>".to_string())
}

fn to_field_error(issue: Issue, prefix: Option<&FieldPath>) -> FieldError {
    let (code, name, message, value, values, valid) = match issue {
        Issue::Composite(message) => {
            return FieldError::invalid(nil_or(prefix), Value::String(String::new()), message);
        }
        Issue::Validation {
            code,
            name,
            message,
            value,
            values,
            valid,
        } => (code, name, message, value, values, valid),
    };
    let path = if !name.is_empty() && name != "." {
        let child = name.strip_prefix('.').unwrap_or(&name);
        match prefix {
            Some(prefix) if !prefix.as_str().is_empty() => prefix.child(child).into(),
            _ => child.to_string(),
        }
    } else {
        nil_or(prefix)
    };
    let value_or_empty = value.clone().unwrap_or_else(|| Value::String(String::new()));
    match code {
        Code::Required => FieldError::required(path, ""),
        Code::Enum => {
            let supported: Vec<String> = values
                .iter()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => go_format::json_text(other),
                })
                .collect();
            FieldError::not_supported(path, value.unwrap_or(Value::Null), &supported)
        }
        Code::TooLong => FieldError::too_long(path, valid.unwrap_or(-1)),
        Code::MaxItems | Code::TooManyProperties => {
            let actual = value.as_ref().and_then(Value::as_i64).unwrap_or(-1);
            FieldError::too_many(path, actual, valid.unwrap_or(-1))
        }
        Code::InvalidType => FieldError::type_invalid(path, value_or_empty, message),
        Code::Other => FieldError::invalid(path, value_or_empty, message),
    }
}

/// The schema types as kube-openapi sees them (`x-kubernetes-int-or-string` is `integer,string`).
fn schema_types(s: &Structural) -> Vec<&str> {
    if s.int_or_string {
        vec!["integer", "string"]
    } else {
        s.type_name.as_deref().into_iter().collect()
    }
}

/// `SchemaValidator.Validate`.
fn validate_value(s: &Structural, path: &str, data: &Value) -> Outcome {
    let mut result = Outcome::default();
    let types = schema_types(s);
    let format = formats::supported_format(s.format.as_deref());

    if data.is_null() {
        if !types.is_empty() && !s.nullable {
            result.merge(Outcome::fail(invalid_type(path, &types.join(","), "null")));
        }
        result.merge(validate_enum(s, path, data));
        return result;
    }

    if !types.is_empty() || format.is_some() {
        result.merge(validate_type(&types, format, path, data));
        result.matches += 1;
    }
    result.merge(validate_junctors(s, path, data));
    result.matches += 1;
    if let Value::String(text) = data {
        result.merge(validate_string(s, path, text));
        result.matches += 1;
        if let Some(format) = format {
            if !formats::is_valid(format, text) {
                result.issues.push(Issue::new(
                    Code::InvalidType,
                    path,
                    type_message(path, format, text),
                    Some(data.clone()),
                ));
            }
            result.matches += 1;
        }
    }
    if let Value::Number(number) = data {
        result.merge(validate_number(s, path, number, data));
        result.matches += 1;
    }
    if let Value::Array(items) = data {
        result.merge(validate_array(s, path, items));
        result.matches += 1;
    }
    result.merge(validate_enum(s, path, data));
    result.matches += 1;
    if let Value::Object(map) = data {
        result.merge(validate_object(s, path, map));
        result.matches += 1;
    }
    result.matches += 1;
    result
}

fn type_message(path: &str, type_name: &str, value: &str) -> String {
    format!(
        "{path} in body must be of type {type_name}: {}",
        go_format::quote(value)
    )
}

fn invalid_type(path: &str, type_name: &str, value: &str) -> Issue {
    Issue::new(
        Code::InvalidType,
        path,
        type_message(path, type_name, value),
        Some(Value::String(value.to_string())),
    )
}

/// The JSON type and Go format of decoded data (`schemaInfoForType`).
fn data_type(data: &Value) -> (&'static str, &'static str) {
    match data {
        Value::Bool(_) => ("boolean", ""),
        Value::String(_) => ("string", ""),
        Value::Number(n) if n.as_i64().is_some() => ("integer", "int64"),
        Value::Number(_) => ("number", "float64"),
        Value::Array(_) => ("array", ""),
        Value::Object(_) | Value::Null => ("object", ""),
    }
}

/// `typeValidator.Validate` for non-null data.
fn validate_type(types: &[&str], format: Option<&str>, path: &str, data: &Value) -> Outcome {
    let (data_type, data_format) = data_type(data);
    let contains = |t: &str| types.contains(&t);
    let float_is_int =
        data_type == "number" && data.as_f64().is_some_and(is_float64_a_json_integer) && contains("integer");
    let int_is_float = data_type == "integer" && contains("number");
    let is_string_or_slice = matches!(data, Value::String(_) | Value::Array(_));
    if let Some(format) = format {
        if !(is_string_or_slice || contains(data_type) || data_format == format || float_is_int || int_is_float) {
            return Outcome::fail(invalid_type(path, format, data_format));
        }
        if !(contains("number") || contains("integer")) && is_string_or_slice {
            return Outcome {
                issues: Vec::new(),
                matches: 1,
            };
        }
    }
    if !(contains(data_type) || float_is_int || int_is_float) {
        return Outcome::fail(invalid_type(path, &types.join(","), data_type));
    }
    Outcome {
        issues: Vec::new(),
        matches: 1,
    }
}

/// swag's `IsFloat64AJSONInteger`: integral (within a relative 1e-9) and within ±2^53.
pub(crate) fn is_float64_a_json_integer(f: f64) -> bool {
    const LIMIT: f64 = 9_007_199_254_740_992.0;
    if !f.is_finite() || !(-LIMIT..=LIMIT).contains(&f) {
        return false;
    }
    if f.fract() == 0.0 {
        return true;
    }
    if f < 0.0 {
        return false;
    }
    let g = f.trunc();
    let diff = f - g;
    if g == 0.0 {
        return false;
    }
    diff / (f + g) < 1e-9
}

/// `schemaPropsValidator`: anyOf, oneOf, allOf and not.
fn validate_junctors(s: &Structural, path: &str, data: &Value) -> Outcome {
    let mut main = Outcome::default();
    let quoted = go_format::quote(path);
    if !s.any_of.is_empty() {
        let mut best: Option<Outcome> = None;
        let mut first_success: Option<Outcome> = None;
        for alternative in &s.any_of {
            let result = validate_value(alternative, path, data);
            if result.is_valid() {
                best = None;
                first_success = Some(result);
                break;
            }
            if best.as_ref().is_none_or(|b| result.matches > b.matches) {
                best = Some(result);
            }
        }
        if first_success.is_none() {
            main.issues.push(Issue::Composite(format!(
                "{quoted} must validate at least one schema (anyOf)"
            )));
        }
        if let Some(best) = best.or(first_success) {
            main.merge(best);
        }
    }
    if !s.one_of.is_empty() {
        let mut best: Option<Outcome> = None;
        let mut first_success: Option<Outcome> = None;
        let mut validated = 0;
        for alternative in &s.one_of {
            let result = validate_value(alternative, path, data);
            if result.is_valid() {
                validated += 1;
                best = None;
                if first_success.is_none() {
                    first_success = Some(result);
                }
                continue;
            }
            if validated == 0 && best.as_ref().is_none_or(|b| result.matches > b.matches) {
                best = Some(result);
            }
        }
        if validated != 1 {
            let detail = if validated == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {validated} valid alternatives")
            };
            main.issues.push(Issue::Composite(format!(
                "{quoted} must validate one and only one schema (oneOf). {detail}"
            )));
            if let Some(best) = best {
                main.merge(best);
            }
        } else if let Some(success) = first_success {
            main.merge(success);
        }
    }
    if !s.all_of.is_empty() {
        let mut validated = 0;
        for part in &s.all_of {
            let result = validate_value(part, path, data);
            if result.is_valid() {
                validated += 1;
            }
            main.merge(result);
        }
        if validated != s.all_of.len() {
            let detail = if validated == 0 { ". None validated" } else { "" };
            main.issues.push(Issue::Composite(format!(
                "{quoted} must validate all the schemas (allOf){detail}"
            )));
        }
    }
    if let Some(not) = &s.not
        && validate_value(not, path, data).is_valid()
    {
        main.issues
            .push(Issue::Composite(format!("{quoted} must not validate the schema (not)")));
    }
    main.matches += 1;
    main
}

/// `stringValidator`: stops at the first failing check.
fn validate_string(s: &Structural, path: &str, text: &str) -> Outcome {
    let length = text.chars().count() as i64;
    let value = Some(Value::String(text.to_string()));
    if let Some(max) = s.max_length
        && length > max
    {
        let message = format!("{path} in body should be at most {max} chars long");
        return Outcome::fail(Issue::new(Code::TooLong, path, message, value).with_valid(max));
    }
    if let Some(min) = s.min_length
        && length < min
    {
        let message = format!("{path} in body should be at least {min} chars long");
        return Outcome::fail(Issue::new(Code::Other, path, message, value));
    }
    if let Some(pattern) = &s.pattern {
        // Schemas from `from_openapi_v3` carry the compiled pattern; hand-built ones compile here.
        let compiled = match &s.pattern_regex {
            Some(regex) => Ok(regex.clone()),
            None => super::go_regexp::Regex::new(pattern),
        };
        let message = match compiled {
            Ok(regex) if regex.is_match(text) => return Outcome::default(),
            Ok(_) => format!("{path} in body should match '{pattern}'"),
            Err(error) => format!("{path} in body should match '{pattern}, but pattern is invalid: {error}'"),
        };
        return Outcome::fail(Issue::new(Code::Other, path, message, value));
    }
    Outcome::default()
}

/// `numberValidator` at schema level (no type or format: native comparisons of int64 or float64 data).
fn validate_number(s: &Structural, path: &str, number: &Number, data: &Value) -> Outcome {
    let mut outcome = Outcome {
        issues: Vec::new(),
        matches: 1,
    };
    let integer = number.as_i64();
    let float = number.as_f64().unwrap_or(0.0);
    let value = Some(data.clone());
    if let Some(factor) = s.multiple_of {
        let truncated = factor as i64;
        match integer {
            Some(v) if truncated != 0 => {
                if truncated < 0 {
                    let message = format!("factor MultipleOf declared for {path} must be positive: {truncated}");
                    outcome
                        .issues
                        .push(Issue::new(Code::Other, path, message, Some(Value::from(truncated))));
                } else if v % truncated != 0 {
                    let message = format!("{path} in body should be a multiple of {truncated}");
                    outcome
                        .issues
                        .push(Issue::new(Code::Other, path, message, value.clone()));
                }
            }
            _ => {
                if factor < 0.0 {
                    let message = format!(
                        "factor MultipleOf declared for {path} must be positive: {}",
                        go_format::float_v(factor)
                    );
                    outcome
                        .issues
                        .push(Issue::new(Code::Other, path, message, Some(Value::from(factor))));
                } else {
                    let multiple = if factor < 1.0 {
                        1.0 / factor * float
                    } else {
                        float / factor
                    };
                    if !is_float64_a_json_integer(multiple) {
                        let message = format!("{path} in body should be a multiple of {}", go_format::float_v(factor));
                        outcome
                            .issues
                            .push(Issue::new(Code::Other, path, message, value.clone()));
                    }
                }
            }
        }
    }
    if let Some(minimum) = s.minimum {
        let exclusive = s.exclusive_minimum;
        let (fails, shown) = match integer {
            Some(v) => {
                let limit = minimum as i64;
                (
                    (!exclusive && v < limit) || (exclusive && v <= limit),
                    limit.to_string(),
                )
            }
            None => (
                (!exclusive && float < minimum) || (exclusive && float <= minimum),
                go_format::float_v(minimum),
            ),
        };
        if fails {
            let relation = if exclusive {
                "greater than"
            } else {
                "greater than or equal to"
            };
            let message = format!("{path} in body should be {relation} {shown}");
            outcome
                .issues
                .push(Issue::new(Code::Other, path, message, value.clone()));
        }
    }
    if let Some(maximum) = s.maximum {
        let exclusive = s.exclusive_maximum;
        let (fails, shown) = match integer {
            Some(v) => {
                let limit = maximum as i64;
                (
                    (!exclusive && v > limit) || (exclusive && v >= limit),
                    limit.to_string(),
                )
            }
            None => (
                (!exclusive && float > maximum) || (exclusive && float >= maximum),
                go_format::float_v(maximum),
            ),
        };
        if fails {
            let relation = if exclusive {
                "less than"
            } else {
                "less than or equal to"
            };
            let message = format!("{path} in body should be {relation} {shown}");
            outcome.issues.push(Issue::new(Code::Other, path, message, value));
        }
    }
    outcome
}

/// `schemaSliceValidator`: items first, then minItems, maxItems and uniqueItems.
fn validate_array(s: &Structural, path: &str, items: &[Value]) -> Outcome {
    let mut outcome = Outcome::default();
    if let Some(item_schema) = &s.items {
        for (i, item) in items.iter().enumerate() {
            outcome.merge(validate_value(item_schema, &format!("{path}[{i}]"), item));
        }
    }
    let size = items.len() as i64;
    if let Some(min) = s.min_items
        && size < min
    {
        let message = format!("{path} in body should have at least {min} items");
        outcome
            .issues
            .push(Issue::new(Code::Other, path, message, Some(Value::from(size))));
    }
    if let Some(max) = s.max_items
        && size > max
    {
        let message = format!("{path} in body should have at most {max} items");
        outcome
            .issues
            .push(Issue::new(Code::MaxItems, path, message, Some(Value::from(size))).with_valid(max));
    }
    if s.unique_items {
        let duplicated = items.iter().enumerate().any(|(i, a)| items[..i].iter().any(|b| a == b));
        if duplicated {
            outcome.issues.push(Issue::new(
                Code::Other,
                path,
                format!("{path} in body shouldn't contain duplicates"),
                None,
            ));
        }
    }
    outcome.matches += 1;
    outcome
}

/// `basicCommonValidator`: enum membership with Go's reflect conversion rules.
fn validate_enum(s: &Structural, path: &str, data: &Value) -> Outcome {
    if s.enum_values.is_empty() || s.enum_values.iter().any(|allowed| enum_matches(data, allowed)) {
        return Outcome::default();
    }
    let listed: Vec<String> = s.enum_values.iter().map(go_format::value_v).collect();
    let message = format!("{path} in body should be one of [{}]", listed.join(" "));
    Outcome::fail(Issue::Validation {
        code: Code::Enum,
        name: path.to_string(),
        message,
        value: Some(data.clone()),
        values: s.enum_values.clone(),
        valid: None,
    })
}

/// Whether `data` equals the enum value after Go's `reflect.Value.Convert` to the enum value's type.
fn enum_matches(data: &Value, allowed: &Value) -> bool {
    match (data, allowed) {
        // A null enum value is skipped, and null data never matches.
        (Value::Null, _) | (_, Value::Null) => false,
        (Value::Number(d), Value::Number(a)) => match (d.as_i64(), a.as_i64()) {
            (Some(d), Some(a)) => d == a,
            // float64 data converted to int64 truncates.
            (None, Some(a)) => d.as_f64().is_some_and(|f| f as i64 == a),
            (Some(d), None) => a.as_f64() == Some(d as f64),
            (None, None) => d.as_f64() == a.as_f64(),
        },
        // int64 converts to string as a code point.
        (Value::Number(d), Value::String(a)) => d
            .as_i64()
            .is_some_and(|code| char::from_u32(code as u32).unwrap_or('\u{FFFD}').to_string() == *a),
        (data, allowed) => data == allowed,
    }
}

/// `objectValidator`.
fn validate_object(s: &Structural, path: &str, map: &Map<String, Value>) -> Outcome {
    let count = map.len() as i64;
    if let Some(min) = s.min_properties
        && count < min
    {
        let message = format!("{path} in body should have at least {min} properties");
        return Outcome::fail(Issue::new(Code::Other, path, message, Some(Value::from(count))));
    }
    if let Some(max) = s.max_properties
        && count > max
    {
        let message = format!("{path} in body should have at most {max} properties");
        return Outcome::fail(
            Issue::new(Code::TooManyProperties, path, message, Some(Value::from(count))).with_valid(max),
        );
    }
    let mut outcome = Outcome::default();
    match &s.additional_properties {
        Some(AdditionalProperties::Allows(false)) => {
            for key in map.keys().filter(|k| s.property(k).is_none()) {
                let message = format!("{path}.{key} in body is a forbidden property");
                outcome
                    .issues
                    .push(Issue::new(Code::Other, path, message, Some(Value::String(key.clone()))));
            }
        }
        Some(AdditionalProperties::Schema(schema)) => {
            for (key, value) in map.iter().filter(|(k, _)| s.property(k).is_none()) {
                outcome.merge(validate_value(schema, &format!("{path}.{key}"), value));
            }
        }
        _ => {}
    }
    for (name, property) in &s.properties {
        if let Some(value) = map.get(name) {
            let child = if path.is_empty() {
                name.clone()
            } else {
                format!("{path}.{name}")
            };
            outcome.merge(validate_value(property, &child, value));
        }
    }
    for key in &s.required {
        if !map.contains_key(key) {
            let name = format!("{path}.{key}");
            let message = format!("{name} in body is required");
            outcome.issues.push(Issue::new(Code::Required, &name, message, None));
        }
    }
    outcome
}

/// `objectmeta.Validate(nil, obj, schema, false)`: TypeMeta and ObjectMeta of embedded resources.
pub(crate) fn validate_embedded_resources(
    s: &Structural,
    data: &Value,
    path: &FieldPath,
    errors: &mut Vec<FieldError>,
) {
    match data {
        Value::Object(map) => {
            if s.embedded_resource {
                validate_embedded_resource(map, path, errors);
            }
            for (key, value) in map {
                if let Some(property) = s.property(key) {
                    validate_embedded_resources(property, value, &path.child(key), errors);
                } else if let Some(additional) = s.additional_properties_schema() {
                    validate_embedded_resources(additional, value, &path.key(key), errors);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = &s.items {
                for (i, item) in items.iter().enumerate() {
                    validate_embedded_resources(item_schema, item, &path.index(i), errors);
                }
            }
        }
        _ => {}
    }
}

fn validate_embedded_resource(map: &Map<String, Value>, path: &FieldPath, errors: &mut Vec<FieldError>) {
    if !map.contains_key("apiVersion") {
        errors.push(FieldError::required(path.child("apiVersion"), ""));
    }
    if !map.contains_key("kind") {
        errors.push(FieldError::required(path.child("kind"), ""));
    }
    if let Some(api_version) = map.get("apiVersion") {
        match api_version {
            Value::String(text) if text.is_empty() => errors.push(FieldError::required(path.child("apiVersion"), "")),
            Value::String(text) if text.matches('/').count() > 1 => errors.push(FieldError::invalid(
                path.child("apiVersion"),
                api_version.clone(),
                format!("unexpected GroupVersion string: {text}"),
            )),
            Value::String(_) => {}
            other => errors.push(FieldError::invalid(
                path.child("apiVersion"),
                other.clone(),
                "must be a string",
            )),
        }
    }
    if let Some(kind) = map.get("kind") {
        match kind {
            Value::String(text) if text.is_empty() => errors.push(FieldError::required(path.child("kind"), "")),
            Value::String(text) => {
                let problems = object_meta::dns1035_label_errors(&text.to_lowercase());
                if !problems.is_empty() {
                    errors.push(FieldError::invalid(
                        path.child("kind"),
                        kind.clone(),
                        format!(
                            "may have mixed case, but should otherwise match: {}",
                            problems.join(",")
                        ),
                    ));
                }
            }
            other => errors.push(FieldError::invalid(
                path.child("kind"),
                other.clone(),
                "must be a string",
            )),
        }
    }
    if let Some(metadata) = map.get("metadata") {
        let metadata_path = path.child("metadata");
        if let Some(problem) = object_meta::decode_problem(metadata) {
            errors.push(FieldError::invalid(&metadata_path, metadata.clone(), problem));
            return;
        }
        let mut meta = metadata.clone();
        if let Value::Object(meta_map) = &mut meta
            && meta_map.get("name").and_then(Value::as_str).is_none_or(str::is_empty)
        {
            meta_map.insert("name".into(), Value::String("fakename".into()));
        }
        let namespaced = meta
            .get("namespace")
            .and_then(Value::as_str)
            .is_some_and(|ns| !ns.is_empty());
        errors.extend(object_meta::validate_object_meta_at(
            &meta,
            namespaced,
            NameRule::PathSegment,
            &metadata_path,
        ));
    }
}

/// `listtype.ValidateListSetsAndMaps`: uniqueness of `set` items and `map` keys.
pub(crate) fn validate_list_sets_and_maps(
    s: &Structural,
    data: &Value,
    path: &FieldPath,
    errors: &mut Vec<FieldError>,
) {
    match data {
        Value::Object(map) => {
            if let Some(additional) = s.additional_properties_schema() {
                for (key, value) in map {
                    validate_list_sets_and_maps(additional, value, &path.key(key), errors);
                }
            }
            for (key, value) in map {
                if let Some(property) = s.property(key) {
                    validate_list_sets_and_maps(property, value, &path.child(key), errors);
                }
            }
        }
        Value::Array(items) => {
            match s.list_type.as_deref() {
                Some("set") => {
                    for i in non_unique_indices(items) {
                        errors.push(FieldError::duplicate(path.index(i), items[i].clone()));
                    }
                }
                Some("map") => validate_list_map(s, items, path, errors),
                _ => {}
            }
            if let Some(item_schema) = &s.items {
                for (i, item) in items.iter().enumerate() {
                    validate_list_sets_and_maps(item_schema, item, &path.index(i), errors);
                }
            }
        }
        _ => {}
    }
}

/// Indices of the second appearance of each repeated element (`validateListSet`).
fn non_unique_indices(items: &[Value]) -> Vec<usize> {
    let mut counts: Vec<(String, usize)> = Vec::new();
    let mut indices = Vec::new();
    for (i, item) in items.iter().enumerate() {
        // Go keys scalars by typed value and compounds by their JSON text; %#v distinguishes both.
        let key = match item {
            Value::String(s) => format!("s{s}"),
            other => format!("v{}", go_format::sharp_v(other)),
        };
        match counts.iter_mut().find(|(k, _)| *k == key) {
            Some((_, count)) => {
                *count += 1;
                if *count == 2 {
                    indices.push(i);
                }
            }
            None => counts.push((key, 1)),
        }
    }
    indices
}

fn validate_list_map(s: &Structural, items: &[Value], path: &FieldPath, errors: &mut Vec<FieldError>) {
    for (i, item) in items.iter().enumerate() {
        if !item.is_null() && !item.is_object() {
            errors.push(FieldError::invalid(
                path.index(i),
                item.clone(),
                "must be an object for an array of list-type map",
            ));
            return;
        }
    }
    if items.len() <= 1 {
        return;
    }
    let keys: Vec<Value> = items
        .iter()
        .map(|item| {
            let mut key = Map::new();
            if let Value::Object(map) = item {
                for field in &s.list_map_keys {
                    if let Some(value) = map.get(field) {
                        key.insert(field.clone(), value.clone());
                    }
                }
            }
            Value::Object(key)
        })
        .collect();
    for i in non_unique_indices(&keys) {
        errors.push(FieldError::duplicate(path.index(i), keys[i].clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(value: Value) -> Structural {
        Structural::from_openapi_v3(&value).unwrap_or_else(|e| panic!("schema: {e:?}"))
    }

    fn messages(s: &Structural, obj: Value) -> Vec<String> {
        s.validate(&obj).iter().map(ToString::to_string).collect()
    }

    fn spec_schema(spec_properties: Value) -> Structural {
        schema(json!({"type": "object", "properties": {"spec": {"type": "object", "properties": spec_properties}}}))
    }

    #[test]
    fn type_mismatch_is_type_invalid() {
        // Expected wording from kube-openapi errors.InvalidType + field.TypeInvalid.
        let s = spec_schema(json!({"replicas": {"type": "integer"}}));
        let errors = s.validate(&json!({"spec": {"replicas": "string"}}));
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].reason(), "FieldValueTypeInvalid");
        assert_eq!(
            errors[0].to_string(),
            r#"spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string""#
        );
    }

    #[test]
    fn integral_floats_count_as_integers() {
        // typeValidator: isFloatInt when the float is a JSON integer.
        let s = spec_schema(json!({"replicas": {"type": "integer"}}));
        assert!(s.validate(&json!({"spec": {"replicas": 3.0}})).is_empty());
        assert_eq!(
            messages(&s, json!({"spec": {"replicas": 1.5}})),
            vec![r#"spec.replicas: Invalid value: "number": spec.replicas in body must be of type integer: "number""#]
        );
        let n = spec_schema(json!({"ratio": {"type": "number"}}));
        assert!(n.validate(&json!({"spec": {"ratio": 3}})).is_empty());
    }

    #[test]
    fn null_for_non_nullable_typed_field() {
        let s = spec_schema(json!({"name": {"type": "string"}, "opt": {"type": "string", "nullable": true}}));
        assert_eq!(
            messages(&s, json!({"spec": {"name": null, "opt": null}})),
            vec![r#"spec.name: Invalid value: "null": spec.name in body must be of type string: "null""#]
        );
    }

    #[test]
    fn enum_mismatch_is_not_supported() {
        let s = spec_schema(
            json!({"mode": {"type": "string", "enum": ["a", "b"]}, "level": {"type": "integer", "enum": [1, 2]}}),
        );
        assert_eq!(
            messages(&s, json!({"spec": {"mode": "x", "level": 3}})),
            vec![
                r#"spec.mode: Unsupported value: "x": supported values: "a", "b""#,
                r#"spec.level: Unsupported value: 3: supported values: "1", "2""#,
            ]
        );
    }

    #[test]
    fn enum_values_are_listed_as_go_json() {
        // The CRD handler lists non-string enum values with json.Marshal of the float64 Go decoded.
        let s = spec_schema(json!({"ratio": {"type": "number", "enum": [0.5, 100.0, 1e21, 1e-7]}}));
        assert_eq!(
            messages(&s, json!({"spec": {"ratio": 3}})),
            vec![r#"spec.ratio: Unsupported value: 3: supported values: "0.5", "100", "1e+21", "1e-7""#]
        );
    }

    #[test]
    fn unicode_patterns_match_as_in_go() {
        let s = spec_schema(json!({
            "title": {"type": "string", "pattern": "^\\p{Lu}\\p{Thai}+$"},
            "street": {"type": "string", "pattern": "(?i)^straße$"}
        }));
        assert!(
            s.validate(&json!({"spec": {"title": "Aไทย", "street": "STRAẞE"}}))
                .is_empty()
        );
        assert_eq!(
            messages(&s, json!({"spec": {"title": "aไทย", "street": "STRASSE"}})),
            vec![
                r#"spec.title: Invalid value: "aไทย": spec.title in body should match '^\p{Lu}\p{Thai}+$'"#,
                r#"spec.street: Invalid value: "STRASSE": spec.street in body should match '(?i)^straße$'"#,
            ]
        );
    }

    #[test]
    fn null_never_matches_an_enum() {
        // basicCommonValidator skips nil enum values, and nil data matches nothing.
        let s = spec_schema(json!({"mode": {"type": "string", "nullable": true, "enum": ["a", null]}}));
        assert_eq!(
            messages(&s, json!({"spec": {"mode": null}})),
            vec![r#"spec.mode: Unsupported value: "null": supported values: "a", "null""#]
        );
    }

    #[test]
    fn required_fields() {
        let s = schema(json!({"type": "object", "required": ["spec"], "properties": {
            "spec": {"type": "object", "required": ["replicas"], "properties": {"replicas": {"type": "integer"}}}
        }}));
        assert_eq!(messages(&s, json!({})), vec!["spec: Required value"]);
        assert_eq!(messages(&s, json!({"spec": {}})), vec!["spec.replicas: Required value"]);
    }

    #[test]
    fn numeric_bounds() {
        let s = spec_schema(json!({
            "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
            "ratio": {"type": "number", "maximum": 1.5, "exclusiveMaximum": true},
            "step": {"type": "integer", "multipleOf": 5}
        }));
        assert_eq!(
            messages(&s, json!({"spec": {"replicas": 11, "ratio": 1.5, "step": 7}})),
            vec![
                "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10",
                "spec.ratio: Invalid value: 1.5: spec.ratio in body should be less than 1.5",
                "spec.step: Invalid value: 7: spec.step in body should be a multiple of 5",
            ]
        );
        assert_eq!(
            messages(&s, json!({"spec": {"replicas": 0}})),
            vec!["spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1"]
        );
    }

    #[test]
    fn string_constraints() {
        let s = spec_schema(json!({
            "short": {"type": "string", "maxLength": 5},
            "long": {"type": "string", "minLength": 2},
            "slug": {"type": "string", "pattern": "^[a-z]+$"}
        }));
        assert_eq!(
            messages(&s, json!({"spec": {"short": "abcdef", "long": "a", "slug": "ABC"}})),
            vec![
                "spec.short: Too long: may not be more than 5 bytes",
                r#"spec.long: Invalid value: "a": spec.long in body should be at least 2 chars long"#,
                r#"spec.slug: Invalid value: "ABC": spec.slug in body should match '^[a-z]+$'"#,
            ]
        );
        // maxLength counts characters, not bytes.
        assert!(s.validate(&json!({"spec": {"short": "ééééé"}})).is_empty());
    }

    #[test]
    fn array_and_object_cardinality() {
        let s = spec_schema(json!({
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}, "minProperties": 1, "maxProperties": 2}
        }));
        assert_eq!(
            messages(&s, json!({"spec": {"tags": ["a", "b", "c"], "labels": {}}})),
            vec![
                "spec.tags: Too many: 3: must have at most 2 items",
                "spec.labels: Invalid value: 0: spec.labels in body should have at least 1 properties",
            ]
        );
        assert_eq!(
            messages(
                &s,
                json!({"spec": {"tags": [], "labels": {"a": "1", "b": "2", "c": "3"}}})
            ),
            vec![
                "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items",
                "spec.labels: Too many: 3: must have at most 2 items",
            ]
        );
    }

    #[test]
    fn item_and_additional_property_paths() {
        let s = spec_schema(json!({
            "containers": {"type": "array", "items": {"type": "object", "properties": {"port": {"type": "integer"}}}},
            "env": {"type": "object", "additionalProperties": {"type": "string"}}
        }));
        assert_eq!(
            messages(
                &s,
                json!({"spec": {"containers": [{"port": 1}, {"port": "x"}], "env": {"A": 1}}})
            ),
            vec![
                r#"spec.containers[1].port: Invalid value: "string": spec.containers[1].port in body must be of type integer: "string""#,
                r#"spec.env.A: Invalid value: "integer": spec.env.A in body must be of type string: "integer""#,
            ]
        );
    }

    #[test]
    fn any_of_failures_report_a_nil_path_composite() {
        // Seen from a real server: `<nil>: Invalid value: "": "spec" must validate at least one schema (anyOf)`.
        let s = schema(json!({"type": "object", "properties": {"spec": {
            "type": "object",
            "properties": {"ingress": {"type": "array", "items": {"type": "string"}}, "egress": {"type": "array", "items": {"type": "string"}}},
            "anyOf": [{"required": ["ingress"]}, {"required": ["egress"]}]
        }}}));
        assert_eq!(
            messages(&s, json!({"spec": {}})),
            vec![
                r#"<nil>: Invalid value: "": "spec" must validate at least one schema (anyOf)"#,
                "spec.ingress: Required value"
            ]
        );
        assert!(s.validate(&json!({"spec": {"egress": []}})).is_empty());
    }

    #[test]
    fn one_of_with_two_matches() {
        let s = schema(json!({"type": "object", "properties": {"source": {
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            "oneOf": [{"required": ["a"]}, {"required": ["b"]}]
        }}}));
        assert_eq!(
            messages(&s, json!({"source": {"a": "x", "b": "y"}})),
            vec![
                r#"<nil>: Invalid value: "": "source" must validate one and only one schema (oneOf). Found 2 valid alternatives"#
            ]
        );
    }

    #[test]
    fn int_or_string() {
        let s = spec_schema(
            json!({"port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]}}),
        );
        assert!(s.validate(&json!({"spec": {"port": 80}})).is_empty());
        assert!(s.validate(&json!({"spec": {"port": "http"}})).is_empty());
        assert_eq!(
            messages(&s, json!({"spec": {"port": true}})),
            vec![
                r#"spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean""#,
                r#"<nil>: Invalid value: "": "spec.port" must validate at least one schema (anyOf)"#,
                r#"spec.port: Invalid value: "boolean": spec.port in body must be of type integer: "boolean""#,
            ]
        );
    }

    #[test]
    fn formats_date_time_and_byte() {
        let s = spec_schema(json!({
            "when": {"type": "string", "format": "date-time"},
            "data": {"type": "string", "format": "byte"},
            "count": {"type": "integer", "format": "int32"}
        }));
        assert!(
            s.validate(
                &json!({"spec": {"when": "2024-01-02T03:04:05Z", "data": "aGVsbG8=", "count": 3_000_000_000_i64}})
            )
            .is_empty()
        );
        assert_eq!(
            messages(&s, json!({"spec": {"when": "yesterday", "data": "not base64!"}})),
            vec![
                r#"spec.when: Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday""#,
                r#"spec.data: Invalid value: "not base64!": spec.data in body must be of type byte: "not base64!""#,
            ]
        );
    }

    #[test]
    fn list_type_set_and_map_duplicates() {
        let s = spec_schema(json!({
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}}
        }));
        assert_eq!(
            messages(
                &s,
                json!({"spec": {"tags": ["a", "b", "a"], "ports": [{"name": "a"}, {"name": "a"}]}})
            ),
            vec![
                r#"spec.tags[2]: Duplicate value: "a""#,
                r#"spec.ports[1]: Duplicate value: map[string]interface {}{"name":"a"}"#,
            ]
        );
    }

    #[test]
    fn embedded_resources_need_type_meta_and_valid_metadata() {
        let s = spec_schema(
            json!({"template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}),
        );
        assert_eq!(
            messages(&s, json!({"spec": {"template": {"metadata": {"name": "a/b"}}}})),
            vec![
                "spec.template.apiVersion: Required value",
                "spec.template.kind: Required value",
                r#"spec.template.metadata.name: Invalid value: "a/b": may not contain '/'"#,
            ]
        );
        assert!(
            s.validate(&json!({"spec": {"template": {"apiVersion": "v1", "kind": "ConfigMap"}}}))
                .is_empty()
        );
    }

    #[test]
    fn several_errors_aggregate_into_one_status_message() {
        let s = spec_schema(
            json!({"replicas": {"type": "integer", "maximum": 10}, "mode": {"type": "string", "enum": ["a"]}}),
        );
        let errors = s.validate(&json!({"spec": {"replicas": 20, "mode": "b"}}));
        assert_eq!(
            super::super::invalid_message("ConfigMapSet.example.com", "demo", &errors),
            r#"ConfigMapSet.example.com "demo" is invalid: [spec.replicas: Invalid value: 20: spec.replicas in body should be less than or equal to 10, spec.mode: Unsupported value: "b": supported values: "a"]"#
        );
    }
}
