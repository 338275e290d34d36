//! JSON values as CEL sees them under a structural schema: typed numbers, `date-time`/`duration`/`byte` strings,
//! escaped property names, and the root's restricted `metadata` (apiextensions-apiserver's `UnstructuredToVal`).

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine as _;
use kube_cel::cel::Value as CelValue;
use kube_cel::cel::objects::{Key, Map};
use serde_json::Value;

use crate::schema::{AdditionalProperties, Structural};

/// Words CEL reserves; a property of that name is reached as `__name__`.
const RESERVED: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// The name a property has in CEL (`cel.Escape`), or None when it cannot be reached from CEL at all.
pub(crate) fn escape(name: &str) -> Option<String> {
    let first = name.bytes().next()?;
    if first.is_ascii_digit() {
        return None;
    }
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let allowed = |b: u8| b.is_ascii_alphanumeric() || b"_.-/".contains(&b);
    if !name.bytes().all(allowed) {
        return None;
    }
    let mut escaped = String::with_capacity(name.len());
    let bytes = name.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'_' if bytes.get(i + 1) == Some(&b'_') => {
                escaped.push_str("__underscores__");
                i += 2;
                continue;
            }
            b'.' => escaped.push_str("__dot__"),
            b'-' => escaped.push_str("__dash__"),
            b'/' => escaped.push_str("__slash__"),
            other => escaped.push(other as char),
        }
        i += 1;
    }
    Some(escaped)
}

fn map_of(entries: HashMap<Key, CelValue>) -> CelValue {
    CelValue::Map(Map { map: Arc::new(entries) })
}

fn string_key(key: &str) -> Key {
    Key::String(Arc::new(key.to_string()))
}

/// A value of no declared type (`x-kubernetes-preserve-unknown-fields` subtrees): CEL's dynamic reading of JSON.
pub(crate) fn dynamic(value: &Value) -> CelValue {
    match value {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => CelValue::Int(i),
            None => CelValue::Float(n.as_f64().unwrap_or_default()),
        },
        Value::String(s) => CelValue::String(Arc::new(s.clone())),
        Value::Array(items) => CelValue::List(Arc::new(items.iter().map(dynamic).collect())),
        Value::Object(map) => map_of(map.iter().map(|(k, v)| (string_key(k), dynamic(v))).collect()),
    }
}

/// The root of a custom resource: its schema plus `apiVersion`, `kind` and `metadata.name`/`generateName`
/// (`model.WithTypeAndObjectMeta`).
pub(crate) fn root(value: &Value, schema: &Structural) -> CelValue {
    let mut converted = typed(value, schema);
    if let (CelValue::Map(map), Some(object)) = (&mut converted, value.as_object()) {
        let mut entries = (*map.map).clone();
        for field in ["apiVersion", "kind"] {
            match object.get(field) {
                Some(Value::String(text)) => {
                    entries.insert(string_key(field), CelValue::String(Arc::new(text.clone())));
                }
                _ => {
                    entries.remove(&string_key(field));
                }
            }
        }
        let mut metadata = HashMap::new();
        if let Some(meta) = object.get("metadata").and_then(Value::as_object) {
            for field in ["name", "generateName"] {
                if let Some(Value::String(text)) = meta.get(field) {
                    metadata.insert(string_key(field), CelValue::String(Arc::new(text.clone())));
                }
            }
        }
        entries.insert(string_key("metadata"), map_of(metadata));
        map.map = Arc::new(entries);
    }
    converted
}

/// `value` read under `schema`.
pub(crate) fn typed(value: &Value, schema: &Structural) -> CelValue {
    match value {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => match schema.type_name.as_deref() {
            Some("number") => CelValue::Float(n.as_f64().unwrap_or_default()),
            Some("integer") => match n.as_i64() {
                Some(i) => CelValue::Int(i),
                None => CelValue::Int(n.as_f64().unwrap_or_default() as i64),
            },
            _ => dynamic(value),
        },
        Value::String(text) => string(text, schema),
        Value::Array(items) => match &schema.items {
            Some(item_schema) => CelValue::List(Arc::new(items.iter().map(|item| typed(item, item_schema)).collect())),
            None => dynamic(value),
        },
        Value::Object(map) => {
            if schema.embedded_resource || (schema.properties.is_empty() && schema.preserve_unknown_fields) {
                let mut entries: HashMap<Key, CelValue> = map
                    .iter()
                    .filter(|(key, _)| schema.property(key).is_none())
                    .map(|(key, value)| (string_key(key), dynamic(value)))
                    .collect();
                for (name, property) in &schema.properties {
                    if let (Some(value), Some(escaped)) = (map.get(name), escape(name)) {
                        entries.insert(string_key(&escaped), typed(value, property));
                    }
                }
                return map_of(entries);
            }
            if let Some(AdditionalProperties::Schema(item_schema)) = &schema.additional_properties {
                return map_of(
                    map.iter()
                        .map(|(key, value)| (string_key(key), typed(value, item_schema)))
                        .collect(),
                );
            }
            if matches!(schema.additional_properties, Some(AdditionalProperties::Allows(true))) {
                return dynamic(value);
            }
            let mut entries = HashMap::new();
            for (name, property) in &schema.properties {
                if let (Some(value), Some(escaped)) = (map.get(name), escape(name)) {
                    entries.insert(string_key(&escaped), typed(value, property));
                }
            }
            if schema.preserve_unknown_fields {
                for (key, value) in map {
                    if schema.property(key).is_none() {
                        entries.insert(string_key(key), dynamic(value));
                    }
                }
            }
            map_of(entries)
        }
    }
}

fn string(text: &str, schema: &Structural) -> CelValue {
    let fallback = || CelValue::String(Arc::new(text.to_string()));
    if schema.type_name.as_deref() != Some("string") {
        return fallback();
    }
    match schema.format.as_deref() {
        Some("date-time") => chrono::DateTime::parse_from_rfc3339(text)
            .map(CelValue::Timestamp)
            .unwrap_or_else(|_| fallback()),
        Some("date") => chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .ok()
            .and_then(|date| date.and_hms_opt(0, 0, 0))
            .map(|time| CelValue::Timestamp(time.and_utc().fixed_offset()))
            .unwrap_or_else(fallback),
        Some("duration") => go_duration(text).map(CelValue::Duration).unwrap_or_else(fallback),
        Some("byte") => base64::engine::general_purpose::STANDARD
            .decode(text)
            .map(|bytes| CelValue::Bytes(Arc::new(bytes)))
            .unwrap_or_else(|_| fallback()),
        _ => fallback(),
    }
}

/// Go's `time.ParseDuration`: a sequence of decimal numbers with units `ns`, `us`/`µs`, `ms`, `s`, `m`, `h`.
pub(crate) fn go_duration(text: &str) -> Option<chrono::Duration> {
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Some(chrono::Duration::zero());
    }
    if rest.is_empty() {
        return None;
    }
    let mut nanos: f64 = 0.0;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..number_end].parse().ok()?;
        rest = &rest[number_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_end..];
        nanos += number * scale;
    }
    let nanos = if negative { -nanos } else { nanos };
    Some(chrono::Duration::nanoseconds(nanos as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_like_kubernetes() {
        assert_eq!(escape("replicas").as_deref(), Some("replicas"));
        assert_eq!(escape("namespace").as_deref(), Some("__namespace__"));
        assert_eq!(escape("foo-bar").as_deref(), Some("foo__dash__bar"));
        assert_eq!(escape("a.b/c").as_deref(), Some("a__dot__b__slash__c"));
        assert_eq!(escape("my_field").as_deref(), Some("my_field"));
        assert_eq!(escape("a__b").as_deref(), Some("a__underscores__b"));
        assert_eq!(escape("1st"), None);
        assert_eq!(escape("has space"), None);
    }

    #[test]
    fn parses_go_durations() {
        assert_eq!(go_duration("1h30m"), Some(chrono::Duration::minutes(90)));
        assert_eq!(go_duration("1.5s"), Some(chrono::Duration::milliseconds(1500)));
        assert_eq!(go_duration("-2ms"), Some(chrono::Duration::milliseconds(-2)));
        assert_eq!(go_duration("5"), None);
    }
}
