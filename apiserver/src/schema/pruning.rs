//! Pruning of unknown fields, of non-nullable nulls, and trimming of `metadata` to `ObjectMeta`.

use serde_json::{Map, Value};

use super::field_error::FieldPath;
use super::object_meta;
use super::structural::Structural;

const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

impl Structural {
    /// Prunes `obj` as the API server does when it decodes a custom resource, and returns the
    /// paths of the unknown fields it dropped, in the server's order and format: unknown
    /// `metadata` fields first (`metadata.foo`), then pruned fields sorted (`spec.foo`,
    /// `spec.items[0].bar`), then unknown fields in the metadata of embedded resources.
    ///
    /// Fields under `x-kubernetes-preserve-unknown-fields` are kept; `apiVersion`, `kind` and
    /// `metadata` are kept at the root and in embedded resources, with `metadata` trimmed to
    /// `ObjectMeta`'s fields. `null` values of non-nullable fields without a default are dropped
    /// too (`PruneNonNullableNullsWithoutDefaults`), without being reported.
    ///
    /// Use [`super::unknown_field_warning`] / [`super::strict_decoding_message`] to report them.
    pub fn prune(&self, obj: &mut Value) -> Vec<String> {
        let mut unknown = Vec::new();
        if let Value::Object(map) = obj
            && let Some(metadata) = map.get_mut("metadata")
        {
            trim_object_meta(metadata, &FieldPath::root().child("metadata"), &mut unknown);
        }
        let mut tracker = PathTracker {
            segments: Vec::new(),
            found: Some(Vec::new()),
        };
        prune_node(obj, Some(self), true, &mut tracker);
        let mut pruned = tracker.found.unwrap_or_default();
        pruned.sort();
        unknown.extend(pruned);
        prune_non_nullable_nulls(obj, Some(self));
        coerce_embedded(obj, self, &FieldPath::root(), &mut unknown);
        unknown
    }
}

/// Pruning without path reporting, used to check that defaults are pruned.
pub(crate) fn prune_without_tracking(obj: &mut Value, s: &Structural, is_resource: bool) {
    let mut tracker = PathTracker {
        segments: Vec::new(),
        found: None,
    };
    prune_node(obj, Some(s), is_resource, &mut tracker);
}

/// `UnknownFieldPathOptions`: the path being visited and the unknown fields found.
struct PathTracker {
    segments: Vec<String>,
    found: Option<Vec<String>>,
}

impl PathTracker {
    fn append_key(&mut self, key: &str) {
        if !self.segments.is_empty() {
            self.segments.push(".".into());
        }
        self.segments.push(key.into());
    }

    fn append_index(&mut self, index: usize) {
        self.segments.push(format!("[{index}]"));
    }

    fn record(&mut self, key: &str) {
        if self.found.is_none() {
            return;
        }
        let depth = self.segments.len();
        self.append_key(key);
        let path = self.segments.concat();
        self.segments.truncate(depth);
        if let Some(found) = &mut self.found {
            found.push(path);
        }
    }
}

/// `pruning.prune`; `is_resource` marks the root or an embedded resource.
fn prune_node(x: &mut Value, s: Option<&Structural>, is_resource: bool, tracker: &mut PathTracker) {
    if let Some(schema) = s
        && schema.preserve_unknown_fields
    {
        skip_prune(x, schema, is_resource, tracker);
        return;
    }
    let depth = tracker.segments.len();
    match x {
        Value::Object(map) => {
            let Some(schema) = s else {
                for key in map.keys() {
                    tracker.record(key);
                }
                map.clear();
                return;
            };
            let mut removed = Vec::new();
            for (key, value) in map.iter_mut() {
                if is_resource && META_FIELDS.contains(&key.as_str()) {
                    continue;
                }
                if let Some(property) = schema.property(key) {
                    tracker.append_key(key);
                    prune_node(value, Some(property), property.embedded_resource, tracker);
                    tracker.segments.truncate(depth);
                } else if schema.additional_properties.is_some() {
                    let additional = schema.additional_properties_schema();
                    tracker.append_key(key);
                    prune_node(
                        value,
                        additional,
                        additional.is_some_and(|a| a.embedded_resource),
                        tracker,
                    );
                    tracker.segments.truncate(depth);
                } else {
                    if !META_FIELDS.contains(&key.as_str()) || depth > 0 {
                        tracker.record(key);
                    }
                    removed.push(key.clone());
                }
            }
            for key in removed {
                map.shift_remove(&key);
            }
        }
        Value::Array(items) => {
            let item_schema = s.and_then(|schema| schema.items.as_deref());
            for (i, item) in items.iter_mut().enumerate() {
                tracker.append_index(i);
                prune_node(
                    item,
                    item_schema,
                    item_schema.is_some_and(|i| i.embedded_resource),
                    tracker,
                );
                tracker.segments.truncate(depth);
            }
        }
        _ => {}
    }
}

/// `pruning.skipPrune`: unknown fields stay, known ones are pruned below.
fn skip_prune(x: &mut Value, s: &Structural, is_resource: bool, tracker: &mut PathTracker) {
    let depth = tracker.segments.len();
    match x {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                if is_resource && META_FIELDS.contains(&key.as_str()) {
                    continue;
                }
                if let Some(property) = s.property(key) {
                    tracker.append_key(key);
                    prune_node(value, Some(property), property.embedded_resource, tracker);
                    tracker.segments.truncate(depth);
                } else if s.additional_properties.is_some() {
                    let additional = s.additional_properties_schema();
                    tracker.append_key(key);
                    prune_node(
                        value,
                        additional,
                        additional.is_some_and(|a| a.embedded_resource),
                        tracker,
                    );
                    tracker.segments.truncate(depth);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = &s.items {
                for (i, item) in items.iter_mut().enumerate() {
                    tracker.append_index(i);
                    skip_prune(item, item_schema, item_schema.embedded_resource, tracker);
                    tracker.segments.truncate(depth);
                }
            }
        }
        _ => {}
    }
}

/// `defaulting.PruneNonNullableNullsWithoutDefaults`.
fn prune_non_nullable_nulls(x: &mut Value, s: Option<&Structural>) {
    match x {
        Value::Object(map) => {
            let field_schema = |key: &str| s.and_then(|s| s.property(key).or_else(|| s.additional_properties_schema()));
            let doomed: Vec<String> = map
                .iter()
                .filter(|(key, value)| {
                    value.is_null() && field_schema(key).is_some_and(|fs| !fs.nullable && fs.default.is_none())
                })
                .map(|(key, _)| key.clone())
                .collect();
            for key in doomed {
                map.shift_remove(&key);
            }
            for (key, value) in map.iter_mut() {
                prune_non_nullable_nulls(value, field_schema(key));
            }
        }
        Value::Array(items) => {
            let item_schema = s.and_then(|s| s.items.as_deref());
            for item in items {
                prune_non_nullable_nulls(item, item_schema);
            }
        }
        _ => {}
    }
}

/// `objectmeta.CoerceWithOptions(nil, obj, s, false, ...)`: trims the metadata of embedded resources.
fn coerce_embedded(x: &mut Value, s: &Structural, path: &FieldPath, unknown: &mut Vec<String>) {
    match x {
        Value::Object(map) => {
            if s.embedded_resource
                && let Some(metadata) = map.get_mut("metadata")
            {
                trim_object_meta(metadata, &path.child("metadata"), unknown);
            }
            for (key, value) in map.iter_mut() {
                if let Some(property) = s.property(key) {
                    coerce_embedded(value, property, &path.child(key), unknown);
                } else if let Some(additional) = s.additional_properties_schema() {
                    coerce_embedded(value, additional, &path.key(key), unknown);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = &s.items {
                for (i, item) in items.iter_mut().enumerate() {
                    coerce_embedded(item, item_schema, &path.index(i), unknown);
                }
            }
        }
        _ => {}
    }
}

/// Round-trips `metadata` through `ObjectMeta`: unknown fields are reported and dropped, empty
/// `omitempty` fields vanish and timestamps are normalised. Malformed metadata is left untouched
/// (validation reports it).
fn trim_object_meta(metadata: &mut Value, path: &FieldPath, unknown: &mut Vec<String>) {
    if object_meta::decode_problem(metadata).is_some() {
        return;
    }
    let Value::Object(map) = metadata else { return };
    let prefix = path.as_str();
    let mut trimmed = Map::new();
    for (key, value) in std::mem::take(map) {
        if !object_meta::OBJECT_META_FIELDS.contains(&key.as_str()) {
            unknown.push(format!("{prefix}.{key}"));
            continue;
        }
        if let Some(value) = normalize_meta_field(&key, value, prefix, unknown) {
            trimmed.insert(key, value);
        }
    }
    *map = trimmed;
}

fn normalize_meta_field(key: &str, value: Value, prefix: &str, unknown: &mut Vec<String>) -> Option<Value> {
    match (key, value) {
        (_, Value::Null) => None,
        ("generation", Value::Number(n)) if n.as_i64() == Some(0) => None,
        ("creationTimestamp" | "deletionTimestamp", Value::String(text)) => {
            object_meta::normalize_time(&text).map(Value::String)
        }
        ("labels" | "annotations", Value::Object(entries)) => {
            let entries: Map<String, Value> = entries
                .into_iter()
                .map(|(k, v)| (k, if v.is_null() { Value::String(String::new()) } else { v }))
                .collect();
            (!entries.is_empty()).then_some(Value::Object(entries))
        }
        ("finalizers", Value::Array(items)) => {
            let items: Vec<Value> = items
                .into_iter()
                .map(|v| if v.is_null() { Value::String(String::new()) } else { v })
                .collect();
            (!items.is_empty()).then_some(Value::Array(items))
        }
        ("ownerReferences", Value::Array(items)) => {
            let items: Vec<Value> = items
                .into_iter()
                .enumerate()
                .filter_map(|(i, item)| {
                    trim_entry(
                        item,
                        &format!("{prefix}.ownerReferences[{i}]"),
                        &object_meta::OWNER_REFERENCE_FIELDS,
                        &["apiVersion", "kind", "name", "uid"],
                        unknown,
                    )
                })
                .collect();
            (!items.is_empty()).then_some(Value::Array(items))
        }
        ("managedFields", Value::Array(items)) => {
            let items: Vec<Value> = items
                .into_iter()
                .enumerate()
                .filter_map(|(i, item)| {
                    trim_entry(
                        item,
                        &format!("{prefix}.managedFields[{i}]"),
                        &object_meta::MANAGED_FIELDS_ENTRY_FIELDS,
                        &[],
                        unknown,
                    )
                })
                .collect();
            (!items.is_empty()).then_some(Value::Array(items))
        }
        (_, Value::String(text)) if text.is_empty() => None,
        (_, value) => Some(value),
    }
}

/// Trims one `ownerReferences`/`managedFields` entry; `always` fields are not `omitempty`.
fn trim_entry(item: Value, prefix: &str, known: &[&str], always: &[&str], unknown: &mut Vec<String>) -> Option<Value> {
    let Value::Object(map) = item else { return Some(item) };
    let mut out = Map::new();
    for field in always {
        out.insert((*field).to_string(), Value::String(String::new()));
    }
    for (key, value) in map {
        if !known.contains(&key.as_str()) {
            unknown.push(format!("{prefix}.{key}"));
            continue;
        }
        match value {
            Value::Null => {}
            Value::String(text) if text.is_empty() && !always.contains(&key.as_str()) => {}
            Value::String(text) if key == "time" => {
                if let Some(time) = object_meta::normalize_time(&text) {
                    out.insert(key, Value::String(time));
                }
            }
            value => {
                out.insert(key, value);
            }
        }
    }
    Some(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(value: Value) -> Structural {
        Structural::from_openapi_v3(&value).unwrap_or_else(|e| panic!("schema: {e:?}"))
    }

    fn simple() -> Structural {
        schema(json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "replicas": {"type": "integer"},
                "items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {
                    "known": {"type": "object", "properties": {"a": {"type": "string"}}}
                }}
            }},
            "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
        }}))
    }

    #[test]
    fn unknown_fields_are_removed_and_reported_sorted() {
        let mut obj = json!({
            "apiVersion": "example.com/v1",
            "kind": "Thing",
            "metadata": {"name": "a"},
            "spec": {"replicas": 1, "zzz": true, "items": [{"name": "x", "extra": 1}], "labels": {"k": "v"}},
            "top": 1
        });
        let paths = simple().prune(&mut obj);
        assert_eq!(paths, vec!["spec.items[0].extra", "spec.zzz", "top"]);
        assert_eq!(
            obj,
            json!({
                "apiVersion": "example.com/v1",
                "kind": "Thing",
                "metadata": {"name": "a"},
                "spec": {"replicas": 1, "items": [{"name": "x"}], "labels": {"k": "v"}}
            })
        );
    }

    #[test]
    fn preserve_unknown_fields_keeps_unknowns_but_prunes_known_subtrees() {
        let mut obj = json!({"spec": {"config": {"anything": {"deep": 1}, "known": {"a": "x", "b": "pruned"}}}});
        let paths = simple().prune(&mut obj);
        assert_eq!(paths, vec!["spec.config.known.b"]);
        assert_eq!(
            obj["spec"]["config"],
            json!({"anything": {"deep": 1}, "known": {"a": "x"}})
        );
    }

    #[test]
    fn metadata_is_trimmed_to_object_meta() {
        let mut obj = json!({"metadata": {
            "name": "a", "namespace": "default", "labels": {}, "bogus": 1, "generation": 0,
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "u", "odd": true}]
        }});
        let paths = simple().prune(&mut obj);
        assert_eq!(paths, vec!["metadata.bogus", "metadata.ownerReferences[0].odd"]);
        assert_eq!(
            obj["metadata"],
            json!({"name": "a", "namespace": "default", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "u"}]})
        );
    }

    #[test]
    fn embedded_resources_keep_type_meta_and_trim_their_metadata() {
        let s = schema(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "template": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {
                    "spec": {"type": "object", "properties": {"image": {"type": "string"}}}
                }}
            }}}}),
        );
        let mut obj = json!({"spec": {"template": {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "unknownMeta": "x"},
            "spec": {"image": "nginx", "junk": 1}
        }}});
        let paths = s.prune(&mut obj);
        assert_eq!(
            paths,
            vec!["spec.template.spec.junk", "spec.template.metadata.unknownMeta"]
        );
        assert_eq!(
            obj["spec"]["template"],
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"image": "nginx"}})
        );
    }

    #[test]
    fn nested_preserve_unknown_fields_inside_a_pruned_tree() {
        let s = schema(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "plugins": {"type": "array", "items": {"type": "object", "properties": {
                    "name": {"type": "string"},
                    "settings": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                }}}
            }}}}),
        );
        let mut obj = json!({"spec": {"plugins": [{"name": "a", "settings": {"x": {"y": 1}}, "drop": 1}]}});
        let paths = s.prune(&mut obj);
        assert_eq!(paths, vec!["spec.plugins[0].drop"]);
        assert_eq!(
            obj["spec"]["plugins"][0],
            json!({"name": "a", "settings": {"x": {"y": 1}}})
        );
    }

    #[test]
    fn non_nullable_nulls_without_defaults_are_dropped() {
        let s = schema(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "a": {"type": "string"},
                "b": {"type": "string", "nullable": true},
                "c": {"type": "string", "default": "x"}
            }}}}),
        );
        let mut obj = json!({"spec": {"a": null, "b": null, "c": null}});
        assert!(s.prune(&mut obj).is_empty());
        assert_eq!(obj["spec"], json!({"b": null, "c": null}));
    }

    #[test]
    fn root_preserve_unknown_fields_keeps_everything_unknown() {
        let s = schema(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
        let mut obj = json!({"spec": {"anything": 1}, "other": [1, 2]});
        assert!(s.prune(&mut obj).is_empty());
        assert_eq!(obj, json!({"spec": {"anything": 1}, "other": [1, 2]}));
    }
}
