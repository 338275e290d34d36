//! Accessors for the metadata of objects held as JSON, and the server clock's timestamp format.

use serde_json::{Map, Value};

/// Current time as Kubernetes writes it (`2024-01-02T03:04:05Z`).
pub fn now_rfc3339() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Current time with microseconds (`MicroTime`, used by events and leases).
pub fn now_micro() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// `metadata` of an object, if present.
pub fn metadata(object: &Value) -> Option<&Map<String, Value>> {
    object.get("metadata")?.as_object()
}

/// `metadata`, created if missing.
pub fn metadata_mut(object: &mut Value) -> &mut Map<String, Value> {
    let map = object.as_object_mut().expect("objects are JSON objects");
    let entry = map.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    entry.as_object_mut().expect("metadata is an object")
}

/// A string field of `metadata` ("" when absent).
pub fn meta_str<'a>(object: &'a Value, field: &str) -> &'a str {
    metadata(object)
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `metadata.name`.
pub fn name(object: &Value) -> &str {
    meta_str(object, "name")
}

/// `metadata.namespace`.
pub fn namespace(object: &Value) -> &str {
    meta_str(object, "namespace")
}

/// `metadata.uid`.
pub fn uid(object: &Value) -> &str {
    meta_str(object, "uid")
}

/// `metadata.resourceVersion`.
pub fn resource_version(object: &Value) -> &str {
    meta_str(object, "resourceVersion")
}

/// Whether `metadata.deletionTimestamp` is set.
pub fn is_deleting(object: &Value) -> bool {
    metadata(object)
        .and_then(|m| m.get("deletionTimestamp"))
        .is_some_and(|v| !v.is_null())
}

/// `metadata.finalizers`.
pub fn finalizers(object: &Value) -> Vec<String> {
    string_list(metadata(object).and_then(|m| m.get("finalizers")))
}

/// Replace `metadata.finalizers` (removed when empty).
pub fn set_finalizers(object: &mut Value, finalizers: &[String]) {
    let meta = metadata_mut(object);
    if finalizers.is_empty() {
        meta.remove("finalizers");
    } else {
        meta.insert(
            "finalizers".into(),
            Value::Array(finalizers.iter().cloned().map(Value::String).collect()),
        );
    }
}

/// Drops what Go's `ObjectMeta` leaves out of JSON (its fields are `omitempty`): empty strings, maps and lists, and
/// nulls — so that removing the last label leaves no `labels: {}` behind. An empty `managedFields` stays: it asks
/// for the managed fields to be reset.
pub fn drop_empty_metadata(object: &mut Value) {
    let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    meta.retain(|key, value| match value {
        Value::Array(_) if key == "managedFields" => true,
        Value::Null => false,
        Value::String(text) => !text.is_empty(),
        Value::Object(map) => !map.is_empty(),
        Value::Array(items) => !items.is_empty(),
        _ => true,
    });
}

/// `metadata.labels` as pairs.
pub fn labels(object: &Value) -> Option<&Map<String, Value>> {
    metadata(object)?.get("labels")?.as_object()
}

/// `metadata.ownerReferences`.
pub fn owner_references(object: &Value) -> &[Value] {
    metadata(object)
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// A list of strings, ignoring non-strings.
pub fn string_list(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// Follow a dotted path of object keys.
pub fn path<'a>(object: &'a Value, keys: &[&str]) -> Option<&'a Value> {
    let mut current = object;
    for key in keys {
        current = current.get(key)?;
    }
    Some(current)
}

/// A string at a dotted path ("" when absent).
pub fn path_str<'a>(object: &'a Value, keys: &[&str]) -> &'a str {
    path(object, keys).and_then(Value::as_str).unwrap_or("")
}

/// Ensure an object exists at `keys` and return it.
pub fn ensure_object<'a>(object: &'a mut Value, keys: &[&str]) -> &'a mut Map<String, Value> {
    let mut current = object;
    for key in keys {
        let map = current.as_object_mut().expect("path through objects");
        let entry = map.entry(key.to_string()).or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        current = entry;
    }
    current.as_object_mut().expect("object")
}

/// Parse a Kubernetes timestamp.
pub fn parse_time(text: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&chrono::Utc))
}
