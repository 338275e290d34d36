//! What two worlds are compared on, and how a difference is told: a primary's children and status with what the
//! API server assigns and the clock writes taken out, and a short list of the paths that differ.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// Metadata the API server assigns, which no plugin decides: left out when worlds are compared.
const SERVER_METADATA: [&str; 6] = [
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
];

/// Most differing paths listed in one comparison.
const MAX_LISTED: usize = 12;

/// The state a sequence of reconciles ends in, as compared: children by `kind/name` and the status.
#[derive(Debug, Clone, PartialEq)]
pub struct EndState {
    /// Each child (`apiVersion/kind name` → object) without server-assigned fields.
    pub children: BTreeMap<String, Value>,
    /// The status without timestamps; `observedGeneration` reduced to whether it is current.
    pub status: Value,
}

impl EndState {
    /// The comparable form of `primary` (`None` once it is gone) and its `children`.
    pub fn of(primary: Option<&Value>, children: &[Value]) -> Self {
        let generation = primary
            .and_then(|primary| primary.pointer("/metadata/generation"))
            .cloned();
        Self {
            children: children
                .iter()
                .map(|child| (child_label(child), comparable_child(child)))
                .collect(),
            status: primary
                .and_then(|primary| primary.get("status"))
                .map_or(Value::Null, |status| comparable_status(status, generation.as_ref())),
        }
    }

    /// The differences from `other`, one line each (at most a dozen, then how many more), named `this_side` and
    /// `other_side`; empty when the states are the same.
    pub fn differences(&self, other: &Self, this_side: &str, other_side: &str) -> Vec<String> {
        let mut lines = Vec::new();
        for (label, child) in &self.children {
            match other.children.get(label) {
                None => lines.push(format!("child {label}: in {this_side}, not in {other_side}")),
                Some(theirs) => {
                    for difference in value_differences(child, theirs) {
                        lines.push(format!("child {label} {difference} ({this_side} vs {other_side})"));
                    }
                }
            }
        }
        for label in other.children.keys() {
            if !self.children.contains_key(label) {
                lines.push(format!("child {label}: in {other_side}, not in {this_side}"));
            }
        }
        for difference in value_differences(&self.status, &other.status) {
            lines.push(format!("status{difference} ({this_side} vs {other_side})"));
        }
        if lines.len() > MAX_LISTED {
            let more = lines.len() - MAX_LISTED;
            lines.truncate(MAX_LISTED);
            lines.push(format!("... and {more} more"));
        }
        lines
    }
}

/// `apiVersion/kind name` of an object.
pub fn child_label(object: &Value) -> String {
    format!(
        "{}/{} {}",
        object["apiVersion"].as_str().unwrap_or_default(),
        object["kind"].as_str().unwrap_or_default(),
        object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
    )
}

/// A child without what the API server assigns: server metadata, the owner's uid in ownerReferences, a
/// Service's allocated addresses.
pub fn comparable_child(child: &Value) -> Value {
    let mut child = child.clone();
    if let Some(metadata) = child.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in SERVER_METADATA {
            metadata.remove(field);
        }
        if let Some(references) = metadata.get_mut("ownerReferences").and_then(Value::as_array_mut) {
            for reference in references.iter_mut().filter_map(Value::as_object_mut) {
                reference.remove("uid");
            }
        }
    }
    if child["kind"] == "Service"
        && child["apiVersion"] == "v1"
        && let Some(spec) = child.get_mut("spec").and_then(Value::as_object_mut)
    {
        spec.remove("clusterIP");
        spec.remove("clusterIPs");
    }
    child
}

/// A status modulo time: conditions sorted by type without `lastTransitionTime`, and every `observedGeneration`
/// (of the status and of each condition) reduced to `"current"` when it is the primary's generation.
pub fn comparable_status(status: &Value, generation: Option<&Value>) -> Value {
    let mut status = status.clone();
    let Some(fields) = status.as_object_mut() else {
        return status;
    };
    reduce_generation(fields, generation);
    if let Some(conditions) = fields.get_mut("conditions").and_then(Value::as_array_mut) {
        for condition in conditions.iter_mut().filter_map(Value::as_object_mut) {
            condition.remove("lastTransitionTime");
            reduce_generation(condition, generation);
        }
        conditions.sort_by(|a, b| a["type"].to_string().cmp(&b["type"].to_string()));
    }
    status
}

fn reduce_generation(fields: &mut Map<String, Value>, generation: Option<&Value>) {
    if let Some(observed) = fields.get_mut("observedGeneration")
        && generation.is_some_and(|generation| numbers_equal(observed, generation))
    {
        *observed = Value::String("current".into());
    }
}

fn numbers_equal(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(a), Some(b)) => a == b,
        _ => a == b,
    }
}

/// The paths where `a` and `b` differ, each as `.path: a-value vs b-value` (values cut short).
pub fn value_differences(a: &Value, b: &Value) -> Vec<String> {
    let mut differences = Vec::new();
    collect_differences(a, b, &mut String::new(), &mut differences);
    differences
}

fn collect_differences(a: &Value, b: &Value, path: &mut String, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(a_fields), Value::Object(b_fields)) => {
            let keys: std::collections::BTreeSet<&String> = a_fields.keys().chain(b_fields.keys()).collect();
            for key in keys {
                let length = path.len();
                path.push('.');
                path.push_str(key);
                match (a_fields.get(key), b_fields.get(key)) {
                    (Some(a), Some(b)) => collect_differences(a, b, path, out),
                    (Some(a), None) => out.push(format!("{path}: {} vs absent", short(a))),
                    (None, Some(b)) => out.push(format!("{path}: absent vs {}", short(b))),
                    (None, None) => {}
                }
                path.truncate(length);
            }
        }
        (Value::Array(a_items), Value::Array(b_items)) if a_items.len() == b_items.len() => {
            for (index, (a, b)) in a_items.iter().zip(b_items).enumerate() {
                let length = path.len();
                path.push_str(&format!("[{index}]"));
                collect_differences(a, b, path, out);
                path.truncate(length);
            }
        }
        _ if a == b || (a.is_number() && numbers_equal(a, b)) => {}
        _ => out.push(format!("{path}: {} vs {}", short(a), short(b))),
    }
}

/// Where `observed` does not hold what `desired` sets (the fields that make [`crate::apply::children::is_subset`]
/// false), each as `.path: desired-value vs observed-value`.
pub fn subset_differences(desired: &Value, observed: &Value) -> Vec<String> {
    let mut differences = Vec::new();
    collect_subset_differences(desired, observed, &mut String::new(), &mut differences);
    differences
}

fn collect_subset_differences(desired: &Value, observed: &Value, path: &mut String, out: &mut Vec<String>) {
    match (desired, observed) {
        (Value::Object(desired), Value::Object(observed)) => {
            for (key, value) in desired {
                let length = path.len();
                path.push('.');
                path.push_str(key);
                match observed.get(key) {
                    Some(observed) => collect_subset_differences(value, observed, path, out),
                    None => out.push(format!("{path}: {} vs absent", short(value))),
                }
                path.truncate(length);
            }
        }
        (Value::Array(desired_items), Value::Array(observed_items)) if desired_items.len() == observed_items.len() => {
            for (index, (desired, observed)) in desired_items.iter().zip(observed_items).enumerate() {
                let length = path.len();
                path.push_str(&format!("[{index}]"));
                collect_subset_differences(desired, observed, path, out);
                path.truncate(length);
            }
        }
        _ if desired == observed || (desired.is_number() && numbers_equal(desired, observed)) => {}
        _ => out.push(format!("{path}: {} vs {}", short(desired), short(observed))),
    }
}

/// JSON text of a value, cut to 80 characters.
pub fn short(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn child(name: &str, data: Value, uid: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "uid": uid,
            "resourceVersion": "7", "creationTimestamp": "2026-01-01T00:00:00Z", "managedFields": [{}],
            "ownerReferences": [{"kind": "Set", "name": "s", "uid": uid, "controller": true}]}, "data": data})
    }

    fn primary(generation: i64, status: Value) -> Value {
        json!({"metadata": {"name": "s", "generation": generation}, "status": status})
    }

    #[test]
    fn server_assigned_fields_and_times_do_not_count() {
        let a = EndState::of(
            Some(&primary(
                5,
                json!({"replicas": 1, "observedGeneration": 5, "conditions": [
                    {"type": "Reconciled", "status": "True", "lastTransitionTime": "T2", "observedGeneration": 5},
                    {"type": "Ready", "status": "True", "lastTransitionTime": "T1", "observedGeneration": 5}]}),
            )),
            &[child("a", json!({"k": "v"}), "u-1")],
        );
        let b = EndState::of(
            Some(&primary(
                1,
                json!({"replicas": 1, "observedGeneration": 1, "conditions": [
                    {"type": "Ready", "status": "True", "lastTransitionTime": "T9", "observedGeneration": 1},
                    {"type": "Reconciled", "status": "True", "lastTransitionTime": "T9", "observedGeneration": 1}]}),
            )),
            &[child("a", json!({"k": "v"}), "u-2")],
        );
        assert_eq!(a, b);
        assert!(a.differences(&b, "sequence", "fresh").is_empty());
    }

    #[test]
    fn differences_name_the_child_or_status_path_and_both_values() {
        let sequence = EndState::of(
            Some(&primary(3, json!({"replicas": 3, "observedGeneration": 2}))),
            &[child("a", json!({"k": "old"}), "u"), child("stale", json!({}), "u")],
        );
        let fresh = EndState::of(
            Some(&primary(1, json!({"replicas": 0, "observedGeneration": 1}))),
            &[child("a", json!({"k": "new"}), "u")],
        );
        assert_eq!(
            sequence.differences(&fresh, "sequence", "fresh apply"),
            [
                "child v1/ConfigMap a .data.k: \"old\" vs \"new\" (sequence vs fresh apply)",
                "child v1/ConfigMap stale: in sequence, not in fresh apply",
                "status.observedGeneration: 2 vs \"current\" (sequence vs fresh apply)",
                "status.replicas: 3 vs 0 (sequence vs fresh apply)",
            ]
        );
    }

    #[test]
    fn subset_differences_name_what_the_server_did_not_keep() {
        let desired = json!({"metadata": {"name": "a", "annotations": {}}, "data": {"k": "v"}, "n": 1});
        let stored = json!({"metadata": {"name": "a", "uid": "u"}, "data": {"k": "w", "x": "y"}, "n": 1.0});
        assert_eq!(
            subset_differences(&desired, &stored),
            [".metadata.annotations: {} vs absent", ".data.k: \"v\" vs \"w\""]
        );
        assert!(subset_differences(&json!({"l": [{"a": 1}]}), &json!({"l": [{"a": 1, "b": 2}]})).is_empty());
    }

    #[test]
    fn long_values_are_cut() {
        let long = json!("x".repeat(200));
        assert_eq!(short(&long).chars().count(), 81);
        assert_eq!(value_differences(&json!([1, 2]), &json!([1])), [": [1,2] vs [1]"]);
    }
}
