//! Field paths and field sets as structured-merge-diff models them, with the FieldsV1 wire format.

use crate::go_format;
use serde_json::{Map, Value};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// One step of a [`FieldPath`]: a map field, an associative-list key, a set value, or a list index.
#[derive(Clone, Debug)]
pub enum PathElement {
    /// A field of a map or struct (`f:name` in FieldsV1, `.name` in messages).
    Field(String),
    /// An item of an associative list, by its key fields sorted by name (`k:{...}`, `[a=1,b="x"]`).
    Key(Vec<(String, Value)>),
    /// An item of a set (`v:"x"`, `[="x"]`).
    Value(Value),
    /// An item of a list by position (`i:0`, `[0]`); only used for unknown list kinds.
    Index(usize),
}

impl PathElement {
    /// Builds an associative-list key element; the fields are sorted by name.
    pub fn key(fields: impl IntoIterator<Item = (impl Into<String>, Value)>) -> Self {
        let mut fields: Vec<(String, Value)> = fields.into_iter().map(|(k, v)| (k.into(), v)).collect();
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        PathElement::Key(fields)
    }

    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }

    /// The FieldsV1 key of this element (`f:name`, `k:{"port":80}`, `v:"x"`, `i:3`).
    pub fn to_fields_v1_key(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(name, value)| format!("{}:{}", go_format::json_string(name), go_format::json_text(value)))
                    .collect();
                format!("k:{{{}}}", parts.join(","))
            }
            PathElement::Value(value) => format!("v:{}", go_format::json_text(value)),
            PathElement::Index(index) => format!("i:{index}"),
        }
    }

    /// Parses a FieldsV1 key. `Ok(None)` means an element type this version does not know (ignored).
    pub fn from_fields_v1_key(key: &str) -> Result<Option<Self>, String> {
        let bytes = key.as_bytes();
        if bytes.len() < 2 {
            return Err("key must be 2 characters long:".into());
        }
        if bytes[1] != b':' {
            return Err(format!("missing colon: {key}"));
        }
        let rest = &key[2..];
        match bytes[0] {
            b'f' => Ok(Some(PathElement::Field(rest.to_string()))),
            b'v' => serde_json::from_str::<Value>(rest)
                .map(|v| Some(PathElement::Value(v)))
                .map_err(|e| e.to_string()),
            b'k' => match serde_json::from_str::<Value>(rest).map_err(|e| e.to_string())? {
                Value::Object(map) => Ok(Some(PathElement::key(map))),
                other => Err(format!("expected a key object, got {other}")),
            },
            b'i' => rest
                .trim_start_matches('+')
                .parse::<usize>()
                .map(|i| Some(PathElement::Index(i)))
                .map_err(|e| format!("strconv.Atoi: parsing {}: {e}", go_format::quote(rest))),
            _ => Ok(None),
        }
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for PathElement {
    /// structured-merge-diff's `PathElement.Compare`: fields, then keys, then values, then indices.
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => compare_key_fields(a, b),
            (PathElement::Value(a), PathElement::Value(b)) => compare_values(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl fmt::Display for PathElement {
    /// structured-merge-diff's `PathElement.String`, as used in conflict messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(n, v)| format!("{n}={}", value_to_string(v)))
                    .collect();
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(v) => write!(f, "[={}]", value_to_string(v)),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// structured-merge-diff's `value.ToString`.
fn value_to_string(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_format::number_v(n),
        Value::String(s) => go_format::quote(s),
        Value::Array(items) => format!("[{}]", items.iter().map(value_to_string).collect::<Vec<_>>().join(",")),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k}={}", value_to_string(v)))
            .collect::<String>(),
    }
}

fn compare_key_fields(a: &[(String, Value)], b: &[(String, Value)]) -> Ordering {
    for (x, y) in a.iter().zip(b.iter()) {
        let ord = x.0.cmp(&y.0).then_with(|| compare_values(&x.1, &y.1));
        if ord != Ordering::Equal {
            return ord;
        }
    }
    a.len().cmp(&b.len())
}

fn value_rank(v: &Value) -> u8 {
    match v {
        Value::Number(_) => 0,
        Value::String(_) => 1,
        Value::Bool(_) => 2,
        Value::Array(_) => 3,
        Value::Object(_) => 4,
        Value::Null => 5,
    }
}

/// structured-merge-diff's `value.Compare`: a total order over JSON values.
pub(crate) fn compare_values(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y),
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (l, r) in x.iter().zip(y.iter()) {
                let ord = compare_values(l, r);
                if ord != Ordering::Equal {
                    return ord;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            let mut xs: Vec<(&String, &Value)> = x.iter().collect();
            let mut ys: Vec<(&String, &Value)> = y.iter().collect();
            xs.sort_by(|p, q| p.0.cmp(q.0));
            ys.sort_by(|p, q| p.0.cmp(q.0));
            for (l, r) in xs.iter().zip(ys.iter()) {
                let ord = l.0.cmp(r.0).then_with(|| compare_values(l.1, r.1));
                if ord != Ordering::Equal {
                    return ord;
                }
            }
            xs.len().cmp(&ys.len())
        }
        (Value::Null, Value::Null) => Ordering::Equal,
        _ => value_rank(a).cmp(&value_rank(b)),
    }
}

fn compare_numbers(x: &serde_json::Number, y: &serde_json::Number) -> Ordering {
    if let (Some(a), Some(b)) = (x.as_i64(), y.as_i64()) {
        return a.cmp(&b);
    }
    if let (Some(a), Some(b)) = (x.as_u64(), y.as_u64()) {
        return a.cmp(&b);
    }
    let a = x.as_f64().unwrap_or(0.0);
    let b = y.as_f64().unwrap_or(0.0);
    a.partial_cmp(&b).unwrap_or(Ordering::Equal)
}

/// A path from the object root to one field, list item or set value.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct FieldPath(pub Vec<PathElement>);

impl FieldPath {
    /// A path made of map field names only, e.g. `["spec", "replicas"]`.
    pub fn fields<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        FieldPath(names.into_iter().map(|n| PathElement::Field(n.into())).collect())
    }

    pub(crate) fn child(&self, element: PathElement) -> FieldPath {
        let mut elements = self.0.clone();
        elements.push(element);
        FieldPath(elements)
    }
}

impl fmt::Display for FieldPath {
    /// The path as kube-apiserver prints it in conflicts, e.g. `.spec.ports[port=80,protocol="TCP"].name`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for element in &self.0 {
            write!(f, "{element}")?;
        }
        Ok(())
    }
}

/// A set of field paths, stored as a tree like structured-merge-diff's `fieldpath.Set`.
///
/// A path is a member when its last element is in `members` of the node reached by the others.
/// Child nodes never are empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSet {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// A set of the given paths.
    pub fn from_paths(paths: impl IntoIterator<Item = FieldPath>) -> Self {
        let mut set = FieldSet::new();
        for path in paths {
            set.insert(&path.0);
        }
        set
    }

    /// Whether the set has no member at all.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.values().all(FieldSet::is_empty)
    }

    /// Adds a path. The empty path (the whole object) is never a member.
    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// Whether `path` is a member.
    pub fn contains(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.contains(rest)),
        }
    }

    pub(crate) fn has_member(&self, element: &PathElement) -> bool {
        self.members.contains(element)
    }

    /// The paths below `element`, without it.
    pub(crate) fn child(&self, element: &PathElement) -> Option<&FieldSet> {
        self.children.get(element).filter(|c| !c.is_empty())
    }

    pub(crate) fn members(&self) -> impl Iterator<Item = &PathElement> {
        self.members.iter()
    }

    pub(crate) fn children(&self) -> impl Iterator<Item = (&PathElement, &FieldSet)> {
        self.children.iter()
    }

    pub(crate) fn from_parts(members: BTreeSet<PathElement>, children: BTreeMap<PathElement, FieldSet>) -> Self {
        let children = children.into_iter().filter(|(_, c)| !c.is_empty()).collect();
        FieldSet { members, children }
    }

    /// Paths in either set.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.union(&other.members).cloned().collect();
        let mut children = self.children.clone();
        for (pe, set) in &other.children {
            let merged = match children.get(pe) {
                Some(mine) => mine.union(set),
                None => set.clone(),
            };
            children.insert(pe.clone(), merged);
        }
        FieldSet::from_parts(members, children)
    }

    /// Paths in both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.intersection(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(pe, set)| other.children.get(pe).map(|o| (pe.clone(), set.intersection(o))))
            .collect();
        FieldSet::from_parts(members, children)
    }

    /// Paths in `self` that are not in `other` (a member of `other` does not remove its children).
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .map(|(pe, set)| match other.children.get(pe) {
                Some(o) => (pe.clone(), set.difference(o)),
                None => (pe.clone(), set.clone()),
            })
            .collect();
        FieldSet::from_parts(members, children)
    }

    /// Paths in `self` that neither are in `other` nor have a prefix in `other`.
    pub fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter(|(pe, _)| !other.members.contains(pe))
            .map(|(pe, set)| match other.children.get(pe) {
                Some(o) => (pe.clone(), set.recursive_difference(o)),
                None => (pe.clone(), set.clone()),
            })
            .collect();
        FieldSet::from_parts(members, children)
    }

    /// All member paths, in structured-merge-diff's iteration order (members before children).
    pub fn paths(&self) -> Vec<FieldPath> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<FieldPath>) {
        for member in &self.members {
            let mut path = prefix.clone();
            path.push(member.clone());
            out.push(FieldPath(path));
        }
        for (pe, child) in &self.children {
            prefix.push(pe.clone());
            child.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// The FieldsV1 representation (`{"f:metadata":{"f:labels":{".":{},"f:app":{}}}}`).
    pub fn to_fields_v1(&self) -> Value {
        Value::Object(self.emit_fields_v1(false))
    }

    fn emit_fields_v1(&self, include_self: bool) -> Map<String, Value> {
        let mut out = Map::new();
        if include_self && !(self.members.is_empty() && self.children.is_empty()) {
            out.insert(".".into(), Value::Object(Map::new()));
        }
        let mut members = self.members.iter().peekable();
        let mut children = self.children.iter().peekable();
        loop {
            match (members.peek(), children.peek()) {
                (Some(m), Some((c, _))) if *m < *c => {
                    out.insert(m.to_fields_v1_key(), Value::Object(Map::new()));
                    members.next();
                }
                (Some(m), Some((c, set))) if *m == *c => {
                    out.insert(c.to_fields_v1_key(), Value::Object(set.emit_fields_v1(true)));
                    members.next();
                    children.next();
                }
                (_, Some((c, set))) => {
                    out.insert(c.to_fields_v1_key(), Value::Object(set.emit_fields_v1(false)));
                    children.next();
                }
                (Some(m), None) => {
                    out.insert(m.to_fields_v1_key(), Value::Object(Map::new()));
                    members.next();
                }
                (None, None) => break,
            }
        }
        out
    }

    /// Parses the FieldsV1 representation.
    pub fn from_fields_v1(value: &Value) -> Result<FieldSet, String> {
        let (set, _) = read_fields_v1(value)?;
        Ok(set.unwrap_or_default())
    }
}

/// Returns the subtree (if it has members or children) and whether the node itself is a member.
fn read_fields_v1(value: &Value) -> Result<(Option<FieldSet>, bool), String> {
    let Value::Object(map) = value else {
        return Err(format!("expected an object in FieldsV1, got {value}"));
    };
    let mut is_member = false;
    let mut node: Option<FieldSet> = None;
    for (key, child) in map {
        if key == "." {
            is_member = true;
            continue;
        }
        let Some(pe) = PathElement::from_fields_v1_key(key).map_err(|e| format!("parsing key as path element: {e}"))?
        else {
            continue;
        };
        let (grandchildren, child_is_member) = read_fields_v1(child)?;
        if child_is_member {
            node.get_or_insert_with(FieldSet::new).members.insert(pe.clone());
        }
        if let Some(grandchildren) = grandchildren {
            node.get_or_insert_with(FieldSet::new)
                .children
                .insert(pe, grandchildren);
        }
    }
    if node.is_none() {
        is_member = true;
    }
    Ok((node, is_member))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(name: &str) -> PathElement {
        PathElement::Field(name.into())
    }

    #[test]
    fn fields_v1_round_trip_keeps_exact_key_format() {
        let text = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:ports": {
                "k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}, "f:protocol": {}}
            }},
            "f:metadata2": {"f:finalizers": {"v:\"example.com/x\"": {}}}
        });
        let set = FieldSet::from_fields_v1(&text).unwrap();
        assert!(set.contains(&[f("metadata"), f("labels"), f("app")]));
        assert!(set.contains(&[f("metadata"), f("labels")]));
        let key = PathElement::key([("protocol", json!("TCP")), ("port", json!(80))]);
        assert!(set.contains(&[f("spec"), f("ports"), key.clone()]));
        assert!(set.contains(&[f("spec"), f("ports"), key, f("port")]));
        assert!(set.contains(&[
            f("metadata2"),
            f("finalizers"),
            PathElement::Value(json!("example.com/x"))
        ]));
        let back = set.to_fields_v1();
        assert_eq!(
            serde_json::to_string(&back).unwrap(),
            r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:metadata2":{"f:finalizers":{"v:\"example.com/x\"":{}}},"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:port":{},"f:protocol":{}}}}}"#
        );
    }

    #[test]
    fn path_strings_match_structured_merge_diff() {
        let path = FieldPath(vec![
            f("spec"),
            f("ports"),
            PathElement::key([("port", json!(80)), ("protocol", json!("TCP"))]),
            f("name"),
        ]);
        assert_eq!(path.to_string(), r#".spec.ports[port=80,protocol="TCP"].name"#);
        let set_item = FieldPath(vec![f("metadata"), f("finalizers"), PathElement::Value(json!("a"))]);
        assert_eq!(set_item.to_string(), r#".metadata.finalizers[="a"]"#);
    }

    #[test]
    fn element_order_is_fields_keys_values_indices() {
        let mut elements = [
            PathElement::Index(0),
            PathElement::Value(json!("x")),
            PathElement::key([("a", json!(1))]),
            f("z"),
        ];
        elements.sort();
        assert!(matches!(elements[0], PathElement::Field(_)));
        assert!(matches!(elements[3], PathElement::Index(_)));
        assert!(PathElement::Value(json!(5)) < PathElement::Value(json!("a")));
    }

    #[test]
    fn set_operations() {
        let a = FieldSet::from_paths([FieldPath::fields(["a", "b"]), FieldPath::fields(["c"])]);
        let b = FieldSet::from_paths([FieldPath::fields(["a"]), FieldPath::fields(["c"])]);
        assert_eq!(a.difference(&b), FieldSet::from_paths([FieldPath::fields(["a", "b"])]));
        assert!(a.recursive_difference(&b).is_empty());
        assert_eq!(a.intersection(&b), FieldSet::from_paths([FieldPath::fields(["c"])]));
        let u = a.union(&b);
        assert_eq!(u.paths().len(), 3);
        assert_eq!(u.paths()[0].to_string(), ".a");
        assert_eq!(u.paths()[2].to_string(), ".a.b");
    }

    #[test]
    fn empty_node_in_fields_v1_is_a_member() {
        let set = FieldSet::from_fields_v1(&json!({"f:a": {}, "f:b": {"f:c": {}}, "x:unknown": {}})).unwrap();
        assert!(set.contains(&[f("a")]));
        assert!(!set.contains(&[f("b")]));
        assert!(set.contains(&[f("b"), f("c")]));
        assert!(FieldSet::from_fields_v1(&json!({"k:notjson": {}})).is_err());
    }
}
