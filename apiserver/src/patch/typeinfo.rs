//! Type information that patches need: map/list semantics for server-side apply and strategic merge.

use super::builtin_kinds;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The shape of a field as far as merging is concerned.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldType {
    /// A leaf value (string, number, bool, quantity, int-or-string ...).
    Scalar,
    /// A struct (`fields`) and/or a string-keyed map (`additional`). `atomic` maps are replaced whole.
    /// Fields absent from `fields` when `additional` is `None` are treated as declared [`FieldType::Untyped`].
    Map {
        fields: BTreeMap<String, FieldType>,
        additional: Option<Box<FieldType>>,
        atomic: bool,
    },
    /// A list: `kind` drives server-side apply, `patch` drives strategic merge patch.
    List {
        items: Box<FieldType>,
        kind: ListKind,
        patch: ListPatch,
    },
    /// Unknown content, deduced from the value: maps merge key by key, lists are atomic.
    Untyped,
}

/// How server-side apply treats a list (`x-kubernetes-list-type`).
#[derive(Clone, Debug, PartialEq)]
pub enum ListKind {
    /// The list is one value, replaced whole.
    Atomic,
    /// A set of scalars; items are owned one by one.
    Set,
    /// An associative list keyed by `keys`; `defaults` supplies key values omitted in an item.
    Map {
        keys: Vec<String>,
        defaults: BTreeMap<String, Value>,
    },
}

/// How strategic merge patch treats a list (Go struct tags `patchStrategy` / `patchMergeKey`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListPatch {
    /// The patch list replaces the whole list (no `patchStrategy`).
    Replace,
    /// `patchStrategy:"merge"` on a list of scalars: union, `$deleteFromPrimitiveList` removes.
    MergeScalars,
    /// `patchStrategy:"merge"` with `patchMergeKey`: items merge by that key.
    MergeByKey(String),
}

pub(crate) static UNTYPED: FieldType = FieldType::Untyped;

impl FieldType {
    /// A struct with the given fields.
    pub fn structure<I, S>(fields: I) -> FieldType
    where
        I: IntoIterator<Item = (S, FieldType)>,
        S: Into<String>,
    {
        FieldType::Map {
            fields: fields.into_iter().map(|(k, v)| (k.into(), v)).collect(),
            additional: None,
            atomic: false,
        }
    }

    /// A granular string-keyed map of `values`.
    pub fn map_of(values: FieldType) -> FieldType {
        FieldType::Map {
            fields: BTreeMap::new(),
            additional: Some(Box::new(values)),
            atomic: false,
        }
    }

    /// Marks a map or struct atomic (`x-kubernetes-map-type: atomic`); no effect on other types.
    pub fn atomic(self) -> FieldType {
        match self {
            FieldType::Map { fields, additional, .. } => FieldType::Map {
                fields,
                additional,
                atomic: true,
            },
            other => other,
        }
    }

    /// An atomic list (replaced whole by both apply and strategic merge).
    pub fn atomic_list(items: FieldType) -> FieldType {
        FieldType::List {
            items: Box::new(items),
            kind: ListKind::Atomic,
            patch: ListPatch::Replace,
        }
    }

    /// A set of scalars, merged as a union by strategic merge patch.
    pub fn set_list(items: FieldType) -> FieldType {
        FieldType::List {
            items: Box::new(items),
            kind: ListKind::Set,
            patch: ListPatch::MergeScalars,
        }
    }

    /// An associative list keyed by `keys`; strategic merge merges by the first key.
    pub fn keyed_list(items: FieldType, keys: &[&str]) -> FieldType {
        let patch = keys
            .first()
            .map_or(ListPatch::Replace, |k| ListPatch::MergeByKey((*k).to_string()));
        FieldType::List {
            items: Box::new(items),
            kind: ListKind::Map {
                keys: keys.iter().map(|k| (*k).to_string()).collect(),
                defaults: BTreeMap::new(),
            },
            patch,
        }
    }

    /// Sets the default of a list key field (used when an item omits it, like `protocol: TCP`).
    pub fn with_key_default(self, key: &str, default: Value) -> FieldType {
        match self {
            FieldType::List {
                items,
                kind: ListKind::Map { keys, mut defaults },
                patch,
            } => {
                defaults.insert(key.to_string(), default);
                FieldType::List {
                    items,
                    kind: ListKind::Map { keys, defaults },
                    patch,
                }
            }
            other => other,
        }
    }

    /// Overrides the strategic-merge-patch strategy of a list.
    pub fn with_patch(self, strategy: ListPatch) -> FieldType {
        match self {
            FieldType::List { items, kind, .. } => FieldType::List {
                items,
                kind,
                patch: strategy,
            },
            other => other,
        }
    }

    /// The type of field `name` of a map-like type and whether it is a declared (struct) field.
    pub(crate) fn child(&self, name: &str) -> (&FieldType, bool) {
        match self {
            FieldType::Map { fields, additional, .. } => match fields.get(name) {
                Some(t) => (t, true),
                None => match additional {
                    Some(t) => (t, false),
                    None => (&UNTYPED, true),
                },
            },
            _ => (&UNTYPED, false),
        }
    }

    /// The item type of a list type.
    pub(crate) fn items(&self) -> &FieldType {
        match self {
            FieldType::List { items, .. } => items,
            _ => &UNTYPED,
        }
    }
}

/// Type information of a built-in kind served by the API server. Unknown kinds get object metadata
/// and untyped content.
pub fn builtin(api_version: &str, kind: &str) -> FieldType {
    builtin_kinds::root_type(api_version, kind)
}

/// The Go zero value of a built-in kind as the API server sees it before a create (used for the
/// ownership computed on create); `{}` for other kinds.
pub(crate) fn zero_value(api_version: &str, kind: &str) -> Value {
    builtin_kinds::zero_value(api_version, kind)
}

/// Type information of a custom resource from its version's `openAPIV3Schema`.
pub fn from_openapi_v3(schema: &Value) -> FieldType {
    let mut root = openapi_node(schema);
    if let FieldType::Map { fields, .. } = &mut root {
        add_object_envelope(fields);
    } else {
        let mut fields = BTreeMap::new();
        add_object_envelope(&mut fields);
        root = FieldType::Map {
            fields,
            additional: Some(Box::new(FieldType::Untyped)),
            atomic: false,
        };
    }
    root
}

fn add_object_envelope(fields: &mut BTreeMap<String, FieldType>) {
    fields.insert("apiVersion".into(), FieldType::Scalar);
    fields.insert("kind".into(), FieldType::Scalar);
    fields.insert("metadata".into(), builtin_kinds::object_meta());
}

fn openapi_node(schema: &Value) -> FieldType {
    let Value::Object(node) = schema else {
        return FieldType::Untyped;
    };
    if flag(node, "x-kubernetes-int-or-string") {
        return FieldType::Scalar;
    }
    let preserve_unknown = flag(node, "x-kubernetes-preserve-unknown-fields");
    let embedded = flag(node, "x-kubernetes-embedded-resource");
    let declared_type = node.get("type").and_then(Value::as_str);
    let has_properties = node.get("properties").is_some_and(Value::is_object);
    let additional = node.get("additionalProperties").filter(|v| v.is_object());
    match declared_type {
        Some("array") => openapi_list(node),
        Some("object") | None if has_properties || additional.is_some() || embedded || preserve_unknown => {
            let mut fields: BTreeMap<String, FieldType> = node
                .get("properties")
                .and_then(Value::as_object)
                .map(|props| props.iter().map(|(k, v)| (k.clone(), openapi_node(v))).collect())
                .unwrap_or_default();
            if embedded {
                add_object_envelope(&mut fields);
            }
            let additional = match additional {
                Some(schema) => Some(Box::new(openapi_node(schema))),
                None if preserve_unknown => Some(Box::new(FieldType::Untyped)),
                None if fields.is_empty() => Some(Box::new(FieldType::Untyped)),
                None => None,
            };
            let atomic = node.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic");
            FieldType::Map {
                fields,
                additional,
                atomic,
            }
        }
        Some("object") | None => FieldType::Untyped,
        Some(_) => FieldType::Scalar,
    }
}

fn openapi_list(node: &Map<String, Value>) -> FieldType {
    let items = node.get("items").map_or(FieldType::Untyped, openapi_node);
    let kind = match node.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => ListKind::Set,
        Some("map") => {
            let keys: Vec<String> = node
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|keys| keys.iter().filter_map(|k| k.as_str().map(str::to_string)).collect())
                .unwrap_or_default();
            let defaults = node
                .get("items")
                .and_then(|i| i.get("properties"))
                .and_then(Value::as_object)
                .map(|props| {
                    keys.iter()
                        .filter_map(|k| {
                            props
                                .get(k)
                                .and_then(|p| p.get("default"))
                                .map(|d| (k.clone(), d.clone()))
                        })
                        .collect()
                })
                .unwrap_or_default();
            ListKind::Map { keys, defaults }
        }
        _ => ListKind::Atomic,
    };
    // Custom resources do not support strategic merge patch, so the strategy only mirrors apply.
    let patch = match &kind {
        ListKind::Atomic => ListPatch::Replace,
        ListKind::Set => ListPatch::MergeScalars,
        ListKind::Map { keys, .. } => keys
            .first()
            .map_or(ListPatch::Replace, |k| ListPatch::MergeByKey(k.clone())),
    };
    FieldType::List {
        items: Box::new(items),
        kind,
        patch,
    }
}

fn flag(node: &Map<String, Value>, name: &str) -> bool {
    node.get(name).and_then(Value::as_bool).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn openapi_list_types_and_map_types_are_read() {
        let schema = json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "items": {"type": "array", "items": {"type": "object", "properties": {
                            "name": {"type": "string"}, "port": {"type": "integer", "default": 80}}},
                            "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "port"]},
                        "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                        "args": {"type": "array", "items": {"type": "string"}},
                        "selector": {"type": "object", "additionalProperties": {"type": "string"},
                            "x-kubernetes-map-type": "atomic"},
                        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "port": {"x-kubernetes-int-or-string": true}
                    }
                }
            }
        });
        let root = from_openapi_v3(&schema);
        let (spec, declared) = root.child("spec");
        assert!(declared);
        match spec.child("items").0 {
            FieldType::List {
                kind: ListKind::Map { keys, defaults },
                ..
            } => {
                assert_eq!(keys, &vec!["name".to_string(), "port".to_string()]);
                assert_eq!(defaults.get("port"), Some(&json!(80)));
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(matches!(
            spec.child("tags").0,
            FieldType::List {
                kind: ListKind::Set,
                ..
            }
        ));
        assert!(matches!(
            spec.child("args").0,
            FieldType::List {
                kind: ListKind::Atomic,
                ..
            }
        ));
        assert!(matches!(spec.child("selector").0, FieldType::Map { atomic: true, .. }));
        assert_eq!(spec.child("extra").0.child("anything"), (&FieldType::Untyped, false));
        assert_eq!(spec.child("port").0, &FieldType::Scalar);
        // metadata always carries ObjectMeta semantics.
        assert!(matches!(
            root.child("metadata").0.child("finalizers").0,
            FieldType::List {
                kind: ListKind::Set,
                ..
            }
        ));
    }

    #[test]
    fn builtin_pod_containers_are_keyed_by_name() {
        let pod = builtin("v1", "Pod");
        let containers = pod.child("spec").0.child("containers").0;
        assert!(
            matches!(containers, FieldType::List { kind: ListKind::Map { .. }, patch: ListPatch::MergeByKey(k), .. } if k == "name")
        );
        let unknown = builtin("example.com/v1", "Widget");
        assert_eq!(unknown.child("spec").0, &FieldType::Untyped);
    }
}
