//! Applying schema `default`s to objects, and checking defaults when a CRD is created.

use serde_json::Value;

use super::field_error::{FieldError, FieldPath};
use super::pruning;
use super::structural::Structural;
use super::validation;

impl Structural {
    /// Applies `default` values as the API server does on every decode (requests and reads from
    /// storage), after pruning: a missing property gets its default, and so does a `null` one when
    /// the property is not `nullable`. Defaults apply inside `items` and `additionalProperties` too,
    /// and defaulted objects receive their own nested defaults.
    pub fn apply_defaults(&self, obj: &mut Value) {
        default_value(obj, self);
    }
}

fn default_value(x: &mut Value, s: &Structural) {
    match x {
        Value::Object(map) => {
            for (key, property) in &s.properties {
                let Some(default) = &property.default else { continue };
                let missing = match map.get(key) {
                    None => true,
                    Some(Value::Null) => !property.nullable,
                    Some(_) => false,
                };
                if missing {
                    map.insert(key.clone(), default.clone());
                }
            }
            let additional = s.additional_properties_schema();
            for (key, value) in map.iter_mut() {
                if let Some(property) = s.property(key) {
                    default_value(value, property);
                } else if let Some(additional) = additional {
                    if value.is_null()
                        && !additional.nullable
                        && let Some(default) = &additional.default
                    {
                        *value = default.clone();
                    }
                    default_value(value, additional);
                }
            }
        }
        Value::Array(items) => {
            let Some(item_schema) = &s.items else { return };
            for item in items.iter_mut() {
                if item.is_null()
                    && !item_schema.nullable
                    && let Some(default) = &item_schema.default
                {
                    *item = default.clone();
                }
                default_value(item, item_schema);
            }
        }
        _ => {}
    }
}

/// `defaulting.ValidateDefaults` with `isResourceRoot` and `requirePrunedDefaults` set, as for
/// new `apiextensions.k8s.io/v1` CRDs.
pub(crate) fn validate_defaults(root: &Structural, path: &FieldPath) -> Vec<FieldError> {
    let mut errors = Vec::new();
    walk(root, path, false, true, &mut errors);
    errors
}

fn walk(s: &Structural, path: &FieldPath, inside_meta: bool, is_root: bool, errors: &mut Vec<FieldError>) {
    let is_resource = s.embedded_resource || is_root;
    let inside_meta = inside_meta && !is_resource;
    if let Some(default) = &s.default {
        let default_path = path.child("default");
        if inside_meta {
            // Defaults of TypeMeta/ObjectMeta fields are checked against their own schema.
            errors.extend(validation::validate_against(s, default, Some(&default_path)));
        } else {
            let mut pruned = default.clone();
            pruning::prune_without_tracking(&mut pruned, s, is_resource);
            if pruned != *default {
                errors.push(FieldError::invalid(
                    &default_path,
                    default.clone(),
                    "must not have unknown fields",
                ));
            }
            let mut meta_errors = Vec::new();
            if is_resource {
                if let Value::Object(map) = default {
                    let mut as_embedded = s.clone();
                    as_embedded.embedded_resource = true;
                    validation::validate_embedded_resources(
                        &as_embedded,
                        &Value::Object(map.clone()),
                        &default_path,
                        &mut meta_errors,
                    );
                }
            } else {
                validation::validate_embedded_resources(s, default, &default_path, &mut meta_errors);
            }
            if meta_errors.is_empty() {
                errors.extend(validation::validate_against(s, default, Some(&default_path)));
            } else {
                errors.extend(meta_errors);
            }
        }
    }
    if let Some(items) = &s.items {
        walk(items, &path.child("items"), inside_meta, false, errors);
    }
    for (key, property) in &s.properties {
        let child_inside_meta =
            inside_meta || (is_resource && matches!(key.as_str(), "metadata" | "apiVersion" | "kind"));
        walk(
            property,
            &path.child("properties").key(key),
            child_inside_meta,
            false,
            errors,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(value: Value) -> Structural {
        Structural::from_openapi_v3(&value).unwrap_or_else(|e| panic!("schema: {e:?}"))
    }

    #[test]
    fn missing_fields_get_defaults_and_nested_defaults() {
        let s = schema(json!({"type": "object", "properties": {"spec": {
            "type": "object",
            "default": {},
            "properties": {
                "replicas": {"type": "integer", "default": 1},
                "strategy": {"type": "object", "default": {}, "properties": {"type": {"type": "string", "default": "Rolling"}}}
            }
        }}}));
        let mut obj = json!({"apiVersion": "example.com/v1", "kind": "Thing"});
        s.apply_defaults(&mut obj);
        assert_eq!(obj["spec"], json!({"replicas": 1, "strategy": {"type": "Rolling"}}));
    }

    #[test]
    fn present_values_are_kept_and_nulls_follow_nullable() {
        let s = schema(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "a": {"type": "integer", "default": 1},
                "b": {"type": "integer", "default": 2},
                "c": {"type": "integer", "nullable": true, "default": 3}
            }}}}),
        );
        let mut obj = json!({"spec": {"a": 5, "b": null, "c": null}});
        s.apply_defaults(&mut obj);
        assert_eq!(obj["spec"], json!({"a": 5, "b": 2, "c": null}));
    }

    #[test]
    fn defaults_inside_array_items_and_maps() {
        let s = schema(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "ports": {"type": "array", "items": {"type": "object", "properties": {
                    "protocol": {"type": "string", "default": "TCP"}, "port": {"type": "integer"}
                }}},
                "limits": {"type": "object", "additionalProperties": {"type": "object", "properties": {
                    "max": {"type": "integer", "default": 10}
                }}}
            }}}}),
        );
        let mut obj = json!({"spec": {"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}], "limits": {"cpu": {}, "mem": {"max": 3}}}});
        s.apply_defaults(&mut obj);
        assert_eq!(
            obj["spec"]["ports"],
            json!([{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}])
        );
        assert_eq!(obj["spec"]["limits"], json!({"cpu": {"max": 10}, "mem": {"max": 3}}));
    }

    #[test]
    fn null_array_items_take_the_item_default() {
        let s = schema(
            json!({"type": "object", "properties": {"names": {"type": "array", "items": {"type": "string", "default": "x"}}}}),
        );
        let mut obj = json!({"names": ["a", null]});
        s.apply_defaults(&mut obj);
        assert_eq!(obj["names"], json!(["a", "x"]));
    }
}
