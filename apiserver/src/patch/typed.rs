//! Typed walks over objects for server-side apply: field sets, comparison, merge and removal,
//! following sigs.k8s.io/structured-merge-diff (`typed` package).

use super::fieldpath::{FieldPath, FieldSet, PathElement};
use super::typeinfo::{FieldType, ListKind};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;

/// How a node is walked.
enum Shape<'a> {
    /// Compared and replaced as one value.
    Leaf,
    /// Walked field by field; the type answers `child()`.
    Map(&'a FieldType),
    /// Walked item by item, items identified by `kind`.
    List(&'a ListKind, &'a FieldType),
}

/// The walk shape of `ty` for the given values (absent values are `None`). Values that do not match
/// the type, and pairs that are both empty, are treated as leaves.
fn shape<'a>(ty: &'a FieldType, values: &[Option<&Value>], promote_empty: bool) -> Shape<'a> {
    match ty {
        FieldType::Scalar | FieldType::Map { atomic: true, .. } => Shape::Leaf,
        FieldType::List {
            kind: ListKind::Atomic, ..
        } => Shape::Leaf,
        FieldType::Map { .. } | FieldType::Untyped => {
            let fits = values.iter().flatten().all(|v| v.is_object() || v.is_null());
            let all_empty = values
                .iter()
                .all(|v| v.is_none_or(|v| v.as_object().is_none_or(Map::is_empty)));
            if !fits || (promote_empty && all_empty) || values.iter().flatten().all(|v| v.is_null()) {
                Shape::Leaf
            } else {
                Shape::Map(ty)
            }
        }
        FieldType::List { kind, items, .. } => {
            let fits = values.iter().flatten().all(|v| v.is_array() || v.is_null());
            let all_empty = values
                .iter()
                .all(|v| v.is_none_or(|v| v.as_array().is_none_or(Vec::is_empty)));
            if !fits || (promote_empty && all_empty) || values.iter().flatten().all(|v| v.is_null()) {
                Shape::Leaf
            } else {
                Shape::List(kind, items)
            }
        }
    }
}

/// The path element identifying `item` in a list of `kind`.
pub(crate) fn item_path_element(kind: &ListKind, item: &Value) -> Result<PathElement, String> {
    match kind {
        ListKind::Map { keys, defaults } => {
            let Value::Object(map) = item else {
                return Err(if item.is_null() {
                    "associative list with keys may not have a null element".into()
                } else {
                    "associative list with keys may not have non-map elements".into()
                });
            };
            let mut fields = Vec::with_capacity(keys.len());
            for key in keys {
                match map.get(key).or_else(|| defaults.get(key)) {
                    Some(v) => fields.push((key.clone(), v.clone())),
                    None => {
                        return Err(format!(
                            "associative list with keys has an element that omits key field {} (and doesn't have default value)",
                            crate::go_format::quote(key)
                        ));
                    }
                }
            }
            Ok(PathElement::key(fields))
        }
        ListKind::Set => match item {
            Value::Object(_) => Err("associative list without keys has an element that's a map type".into()),
            Value::Array(_) => Err("not supported: associative list with lists as elements".into()),
            Value::Null => Err("associative list without keys has an element that's an explicit null".into()),
            scalar => Ok(PathElement::Value(scalar.clone())),
        },
        ListKind::Atomic => Err("invalid indexing of non-associative list".into()),
    }
}

/// One problem found while checking an object against its type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ValidationError {
    pub path: String,
    pub message: String,
}

/// structured-merge-diff's `ValidationErrors.Error()` text.
pub(crate) struct ValidationErrors<'a>(pub &'a [ValidationError]);

impl fmt::Display for ValidationErrors<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let line = |e: &ValidationError| {
            if e.path.is_empty() {
                e.message.clone()
            } else {
                format!("{}: {}", e.path, e.message)
            }
        };
        match self.0 {
            [single] => write!(f, "{}", line(single)),
            many => {
                write!(f, "errors:")?;
                for e in many {
                    write!(f, "\n  {}", line(e))?;
                }
                Ok(())
            }
        }
    }
}

/// Checks list items against their list kind (keys present, no duplicates unless allowed).
pub(crate) fn validate(value: &Value, ty: &FieldType, allow_duplicates: bool) -> Vec<ValidationError> {
    let mut errors = Vec::new();
    validate_node(&FieldPath::default(), value, ty, allow_duplicates, &mut errors);
    errors
}

fn validate_node(
    path: &FieldPath,
    value: &Value,
    ty: &FieldType,
    allow_duplicates: bool,
    errors: &mut Vec<ValidationError>,
) {
    let expected = match ty {
        FieldType::Map { .. } if !(value.is_object() || value.is_null()) => Some("map"),
        FieldType::List { .. } if !(value.is_array() || value.is_null()) => Some("list"),
        _ => None,
    };
    if let Some(expected) = expected {
        let message = format!("expected {expected}, got {}", crate::go_format::value_v(value));
        errors.push(ValidationError {
            path: path.to_string(),
            message,
        });
        return;
    }
    match shape(ty, &[Some(value)], false) {
        Shape::Leaf => {}
        Shape::Map(ty) => {
            if let Value::Object(map) = value {
                for (k, child) in map {
                    validate_node(
                        &path.child(PathElement::Field(k.clone())),
                        child,
                        ty.child(k).0,
                        allow_duplicates,
                        errors,
                    );
                }
            }
        }
        Shape::List(kind, items) => {
            let Value::Array(list) = value else { return };
            let mut seen = BTreeSet::new();
            for (i, item) in list.iter().enumerate() {
                match item_path_element(kind, item) {
                    Err(message) => errors.push(ValidationError {
                        path: path.to_string(),
                        message: format!("element {i}: {message}"),
                    }),
                    Ok(pe) => {
                        if !seen.insert(pe.clone()) && !allow_duplicates {
                            errors.push(ValidationError {
                                path: path.to_string(),
                                message: format!("duplicate entries for key {pe}"),
                            });
                        }
                        validate_node(&path.child(pe), item, items, allow_duplicates, errors);
                    }
                }
            }
        }
    }
}

/// The set of fields `value` sets (structured-merge-diff `ToFieldSet`, duplicates allowed).
pub(crate) fn to_field_set(value: &Value, ty: &FieldType) -> FieldSet {
    let mut set = FieldSet::new();
    field_set_node(&mut Vec::new(), value, ty, &mut set);
    set
}

fn field_set_node(path: &mut Vec<PathElement>, value: &Value, ty: &FieldType, set: &mut FieldSet) {
    match shape(ty, &[Some(value)], false) {
        Shape::Leaf => set.insert(path),
        Shape::Map(ty) => {
            let Value::Object(map) = value else { return };
            for (k, child) in map {
                let (child_ty, declared) = ty.child(k);
                path.push(PathElement::Field(k.clone()));
                field_set_node(path, child, child_ty, set);
                let empty_map = child.as_object().is_some_and(Map::is_empty);
                if child.is_null() || empty_map || !declared {
                    set.insert(path);
                }
                path.pop();
            }
        }
        Shape::List(kind, items) => {
            let Value::Array(list) = value else { return };
            let elements: Vec<Option<PathElement>> =
                list.iter().map(|item| item_path_element(kind, item).ok()).collect();
            let mut counts: BTreeMap<&PathElement, usize> = BTreeMap::new();
            for pe in elements.iter().flatten() {
                *counts.entry(pe).or_default() += 1;
            }
            for (item, pe) in list.iter().zip(elements.iter()) {
                let Some(pe) = pe else { continue };
                path.push(pe.clone());
                if counts[pe] == 1 {
                    field_set_node(path, item, items, set);
                }
                set.insert(path);
                path.pop();
            }
        }
    }
}

/// Fields added, modified and removed between two versions of an object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Comparison {
    pub added: FieldSet,
    pub modified: FieldSet,
    pub removed: FieldSet,
}

impl Comparison {
    /// Drops every path under (or equal to) a path of `ignored`.
    pub(crate) fn exclude(self, ignored: &FieldSet) -> Comparison {
        Comparison {
            added: self.added.recursive_difference(ignored),
            modified: self.modified.recursive_difference(ignored),
            removed: self.removed.recursive_difference(ignored),
        }
    }
}

/// Compares `old` with `new` (structured-merge-diff `Compare`, with its non-leaf hook that records
/// added and removed maps, lists and list items themselves).
pub(crate) fn compare(old: &Value, new: &Value, ty: &FieldType) -> Comparison {
    let mut out = Comparison::default();
    compare_node(&mut Vec::new(), Some(old), Some(new), ty, &mut out);
    out
}

fn compare_leaf(path: &[PathElement], lhs: Option<&Value>, rhs: Option<&Value>, out: &mut Comparison) {
    match (lhs, rhs) {
        (None, Some(_)) => out.added.insert(path),
        (Some(_), None) => out.removed.insert(path),
        (Some(l), Some(r)) if l != r => out.modified.insert(path),
        _ => {}
    }
}

fn compare_node(
    path: &mut Vec<PathElement>,
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    ty: &FieldType,
    out: &mut Comparison,
) {
    match shape(ty, &[lhs, rhs], true) {
        Shape::Leaf => return compare_leaf(path, lhs, rhs, out),
        Shape::Map(ty) => {
            let empty = Map::new();
            let lmap = lhs.and_then(Value::as_object).unwrap_or(&empty);
            let rmap = rhs.and_then(Value::as_object).unwrap_or(&empty);
            let keys = lmap.keys().chain(rmap.keys().filter(|k| !lmap.contains_key(*k)));
            for k in keys {
                path.push(PathElement::Field(k.clone()));
                compare_node(path, lmap.get(k), rmap.get(k), ty.child(k).0, out);
                path.pop();
            }
        }
        Shape::List(kind, items) => {
            let left = index_items(kind, lhs);
            let right = index_items(kind, rhs);
            let mut order: Vec<&PathElement> = left.order.iter().collect();
            order.extend(right.order.iter().filter(|pe| !left.items.contains_key(*pe)));
            for pe in order {
                let l = left.items.get(pe).map(Vec::as_slice).unwrap_or_default();
                let r = right.items.get(pe).map(Vec::as_slice).unwrap_or_default();
                path.push(pe.clone());
                if l.len() > 1 || r.len() > 1 {
                    // Duplicated keys are compared as one atomic value.
                    match (l.is_empty(), r.is_empty()) {
                        (true, _) => out.added.insert(path),
                        (_, true) => out.removed.insert(path),
                        _ if l != r => out.modified.insert(path),
                        _ => {}
                    }
                } else {
                    compare_node(path, l.first().copied(), r.first().copied(), items, out);
                }
                path.pop();
            }
        }
    }
    match (lhs, rhs) {
        (None, Some(_)) => out.added.insert(path),
        (Some(_), None) => out.removed.insert(path),
        _ => {}
    }
}

/// The items of a list grouped by path element, in first-appearance order.
struct IndexedItems<'a> {
    order: Vec<PathElement>,
    items: BTreeMap<PathElement, Vec<&'a Value>>,
}

fn index_items<'a>(kind: &ListKind, list: Option<&'a Value>) -> IndexedItems<'a> {
    let mut indexed = IndexedItems {
        order: Vec::new(),
        items: BTreeMap::new(),
    };
    for item in list.and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default() {
        let Ok(pe) = item_path_element(kind, item) else {
            continue;
        };
        let entry = indexed.items.entry(pe.clone()).or_default();
        if entry.is_empty() {
            indexed.order.push(pe);
        }
        entry.push(item);
    }
    indexed
}

/// Merges an applied configuration into the live object (structured-merge-diff `Merge` with the
/// keep-right-hand-side rule): maps merge, associative lists merge by key, the rest is replaced.
pub(crate) fn merge(live: &Value, config: &Value, ty: &FieldType) -> Value {
    merge_node(Some(live), Some(config), ty).unwrap_or(Value::Null)
}

fn merge_node(lhs: Option<&Value>, rhs: Option<&Value>, ty: &FieldType) -> Option<Value> {
    let (l, r) = match (lhs, rhs) {
        (None, None) => return None,
        (Some(l), None) => return Some(l.clone()),
        (None, Some(r)) => return Some(r.clone()),
        (Some(l), Some(r)) => (l, r),
    };
    match shape(ty, &[lhs, rhs], true) {
        Shape::Leaf => Some(r.clone()),
        Shape::Map(ty) => {
            let empty = Map::new();
            let lmap = l.as_object().unwrap_or(&empty);
            let rmap = r.as_object().unwrap_or(&empty);
            let mut out = Map::new();
            for (k, lv) in lmap {
                if let Some(v) = merge_node(Some(lv), rmap.get(k), ty.child(k).0) {
                    out.insert(k.clone(), v);
                }
            }
            for (k, rv) in rmap {
                if !lmap.contains_key(k) {
                    out.insert(k.clone(), rv.clone());
                }
            }
            Some(Value::Object(out))
        }
        Shape::List(kind, items) => Some(Value::Array(merge_lists(kind, items, l, r))),
    }
}

/// structured-merge-diff's list merge: right-hand-side order wins for shared items, left-only items
/// stay where they were.
fn merge_lists(kind: &ListKind, item_ty: &FieldType, lhs: &Value, rhs: &Value) -> Vec<Value> {
    let empty = Vec::new();
    let llist = lhs.as_array().unwrap_or(&empty);
    let rlist = rhs.as_array().unwrap_or(&empty);
    let lhs_entries: Vec<(PathElement, &Value)> = llist
        .iter()
        .filter_map(|item| item_path_element(kind, item).ok().map(|pe| (pe, item)))
        .collect();
    let mut lhs_counts: BTreeMap<&PathElement, usize> = BTreeMap::new();
    for (pe, _) in &lhs_entries {
        *lhs_counts.entry(pe).or_default() += 1;
    }
    let observed_lhs: BTreeMap<&PathElement, Option<&Value>> = lhs_entries
        .iter()
        .map(|(pe, item)| (pe, if lhs_counts[pe] > 1 { None } else { Some(*item) }))
        .collect();
    let mut rhs_entries: Vec<(PathElement, &Value)> = Vec::new();
    let mut observed_rhs: BTreeMap<PathElement, &Value> = BTreeMap::new();
    for item in rlist {
        if let Ok(pe) = item_path_element(kind, item)
            && observed_rhs.insert(pe.clone(), item).is_none()
        {
            rhs_entries.push((pe, item));
        }
    }
    let mut shared: VecDeque<&PathElement> = rhs_entries
        .iter()
        .map(|(pe, _)| pe)
        .filter(|pe| observed_lhs.contains_key(pe))
        .collect();
    let mut next_shared = shared.pop_front();
    let mut merged_rhs: BTreeSet<&PathElement> = BTreeSet::new();
    let mut out = Vec::with_capacity(llist.len().max(rlist.len()));
    let (mut li, mut ri) = (0, 0);
    while li < lhs_entries.len() || ri < rhs_entries.len() {
        if li < lhs_entries.len() && ri < rhs_entries.len() {
            let pe = &lhs_entries[li].0;
            if *pe == rhs_entries[ri].0 {
                merged_rhs.insert(pe);
                let l = observed_lhs.get(pe).copied().flatten();
                if let Some(v) = merge_node(l, Some(rhs_entries[ri].1), item_ty) {
                    out.push(v);
                }
                li += 1;
                ri += 1;
                next_shared = shared.pop_front();
                continue;
            }
            if observed_rhs.contains_key(pe) && next_shared.is_some_and(|n| n != pe) {
                li += 1;
                continue;
            }
        }
        if li < lhs_entries.len() {
            let pe = &lhs_entries[li].0;
            if !observed_rhs.contains_key(pe) {
                out.push(lhs_entries[li].1.clone());
                li += 1;
                continue;
            } else if merged_rhs.contains(pe) {
                li += 1;
                continue;
            }
        }
        if ri < rhs_entries.len() {
            let (pe, item) = &rhs_entries[ri];
            merged_rhs.insert(pe);
            let l = observed_lhs.get(pe).copied().flatten();
            if let Some(v) = merge_node(l, Some(item), item_ty) {
                out.push(v);
            }
            ri += 1;
            if next_shared == Some(pe) {
                next_shared = shared.pop_front();
            }
        }
    }
    out
}

/// Removes every path of `set` from `value`. A map or list emptied by the removal disappears (the
/// API server drops the resulting `null`).
pub(crate) fn remove_items(value: &Value, set: &FieldSet, ty: &FieldType) -> Value {
    remove_node(value, set, ty).unwrap_or_else(|| Value::Object(Map::new()))
}

fn remove_node(value: &Value, set: &FieldSet, ty: &FieldType) -> Option<Value> {
    if set.is_empty() {
        return Some(value.clone());
    }
    match shape(ty, &[Some(value)], false) {
        Shape::Leaf => Some(value.clone()),
        Shape::Map(ty) => {
            let Value::Object(map) = value else {
                return Some(value.clone());
            };
            let mut out = Map::new();
            let mut removed = false;
            for (k, child) in map {
                let pe = PathElement::Field(k.clone());
                if set.has_member(&pe) {
                    removed = true;
                    continue;
                }
                match set.child(&pe) {
                    Some(sub) => {
                        removed = true;
                        if let Some(v) = remove_node(child, sub, ty.child(k).0) {
                            out.insert(k.clone(), v);
                        }
                    }
                    None => {
                        out.insert(k.clone(), child.clone());
                    }
                }
            }
            if out.is_empty() && removed {
                None
            } else {
                Some(Value::Object(out))
            }
        }
        Shape::List(kind, items) => {
            let Value::Array(list) = value else {
                return Some(value.clone());
            };
            let mut out = Vec::with_capacity(list.len());
            let mut removed = false;
            for item in list {
                let Ok(pe) = item_path_element(kind, item) else {
                    out.push(item.clone());
                    continue;
                };
                if set.has_member(&pe) {
                    removed = true;
                    continue;
                }
                match set.child(&pe) {
                    Some(sub) => {
                        removed = true;
                        out.push(remove_node(item, sub, items).unwrap_or_else(|| Value::Object(Map::new())));
                    }
                    None => out.push(item.clone()),
                }
            }
            if out.is_empty() && removed {
                None
            } else {
                Some(Value::Array(out))
            }
        }
    }
}

/// Adds to the set every declared struct field that has members below it (structured-merge-diff
/// `EnsureNamedFieldsAreMembers`), so that owning `spec.replicas` also means owning `spec`.
pub(crate) fn ensure_named_fields_are_members(set: &FieldSet, ty: &FieldType) -> FieldSet {
    let mut members: BTreeSet<PathElement> = set.members().cloned().collect();
    let mut children = BTreeMap::new();
    for (pe, child) in set.children() {
        let child_ty = match (pe, ty) {
            (PathElement::Field(name), FieldType::Map { .. } | FieldType::Untyped) => {
                let (child_ty, declared) = ty.child(name);
                if declared {
                    members.insert(pe.clone());
                }
                child_ty
            }
            (PathElement::Key(_), FieldType::List { .. }) => ty.items(),
            _ => &super::typeinfo::UNTYPED,
        };
        children.insert(pe.clone(), ensure_named_fields_are_members(child, child_ty));
    }
    FieldSet::from_parts(members, children)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::typeinfo::builtin;
    use serde_json::json;

    fn fields_v1(set: &FieldSet) -> String {
        serde_json::to_string(&set.to_fields_v1()).unwrap()
    }

    #[test]
    fn field_set_of_applied_service() {
        let svc = json!({
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "labels": {"app": "x"}},
            "spec": {"ports": [{"port": 80, "name": "http"}], "selector": {"app": "x"}}
        });
        let set = to_field_set(&svc, &builtin("v1", "Service"));
        assert_eq!(
            fields_v1(&set),
            r#"{"f:apiVersion":{},"f:kind":{},"f:metadata":{"f:labels":{"f:app":{}},"f:name":{}},"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{}}},"f:selector":{}}}"#
        );
    }

    #[test]
    fn untyped_maps_mark_their_nodes() {
        let ty = builtin("example.com/v1", "Widget");
        let set = to_field_set(&json!({"spec": {"a": {"b": 1}, "list": [1, 2]}}), &ty);
        assert_eq!(fields_v1(&set), r#"{"f:spec":{"f:a":{".":{},"f:b":{}},"f:list":{}}}"#);
    }

    #[test]
    fn duplicates_are_owned_as_one_item() {
        let ty = builtin("v1", "Pod");
        let pod = json!({"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "a", "image": "y"}]}});
        let set = to_field_set(&pod, &ty);
        assert_eq!(
            fields_v1(&set),
            r#"{"f:spec":{"f:containers":{"k:{\"name\":\"a\"}":{}}}}"#
        );
        let errors = validate(&pod, &ty, false);
        assert_eq!(
            ValidationErrors(&errors).to_string(),
            r#".spec.containers: duplicate entries for key [name="a"]"#
        );
    }

    #[test]
    fn values_of_the_wrong_shape_are_reported() {
        let ty = builtin("v1", "Pod");
        let errors = validate(
            &json!({"spec": {"containers": {"name": "a"}, "nodeSelector": "x"}}),
            &ty,
            false,
        );
        assert_eq!(
            ValidationErrors(&errors).to_string(),
            "errors:\n  .spec.containers: expected list, got map[name:a]\n  .spec.nodeSelector: expected map, got x"
        );
    }

    #[test]
    fn compare_marks_added_nodes() {
        let ty = builtin("v1", "ConfigMap");
        let c = compare(
            &json!({"metadata": {"name": "x"}}),
            &json!({"metadata": {"name": "x", "labels": {"a": "1"}}, "data": {"k": "v"}}),
            &ty,
        );
        assert_eq!(
            fields_v1(&c.added),
            r#"{"f:data":{".":{},"f:k":{}},"f:metadata":{"f:labels":{".":{},"f:a":{}}}}"#
        );
        assert!(c.modified.is_empty() && c.removed.is_empty());
        let c = compare(
            &json!({"data": {"k": "v", "gone": "1"}}),
            &json!({"data": {"k": "w"}}),
            &ty,
        );
        assert_eq!(fields_v1(&c.modified), r#"{"f:data":{"f:k":{}}}"#);
        assert_eq!(fields_v1(&c.removed), r#"{"f:data":{"f:gone":{}}}"#);
    }

    #[test]
    fn merge_keeps_live_only_items_in_place() {
        let ty = builtin("v1", "Pod");
        let live = json!({"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}, {"name": "c", "image": "1"}]}});
        let config = json!({"spec": {"containers": [{"name": "c", "image": "2"}, {"name": "a", "image": "2"}, {"name": "d", "image": "2"}]}});
        let merged = merge(&live, &config, &ty);
        let names: Vec<&str> = merged["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["b", "c", "a", "d"]);
        assert_eq!(merged["spec"]["containers"][1]["image"], json!("2"));
        assert_eq!(merged["spec"]["containers"][0]["image"], json!("1"));
    }

    #[test]
    fn remove_items_drops_emptied_maps() {
        let ty = builtin("v1", "ConfigMap");
        let set = FieldSet::from_paths([FieldPath::fields(["data", "a"])]);
        let out = remove_items(&json!({"metadata": {"name": "x"}, "data": {"a": "1"}}), &set, &ty);
        assert_eq!(out, json!({"metadata": {"name": "x"}}));
    }

    #[test]
    fn named_fields_become_members() {
        let ty = builtin("v1", "ConfigMap");
        let set = FieldSet::from_paths([
            FieldPath::fields(["data", "a"]),
            FieldPath::fields(["metadata", "labels", "x"]),
        ]);
        let ensured = ensure_named_fields_are_members(&set, &ty);
        assert!(ensured.contains(&FieldPath::fields(["data"]).0));
        assert!(ensured.contains(&FieldPath::fields(["metadata", "labels"]).0));
        assert!(!ensured.contains(&FieldPath::fields(["metadata", "labels", "x", "y"]).0));
    }
}
