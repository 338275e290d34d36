//! Conversion between the stored form of an object and the version a request is served at.

use serde_json::{Map, Value};

use super::ResourceInfo;

/// Pairs of (events.k8s.io/v1 field, core/v1 field) that differ only in name.
const EVENT_FIELD_RENAMES: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    ("reportingController", "reportingComponent"),
];

/// A field Go writes with its zero value: the served group, the field, and the zero value.
type ZeroValue = (&'static str, &'static str, fn() -> Value);

/// Fields of an Event that Go writes even when unset (structs, and fields without `omitempty`), by served group:
/// an answer carries them as the real server's does, storage does not.
const EVENT_ZERO_VALUES: &[ZeroValue] = &[
    ("", "involvedObject", || Value::Object(Map::new())),
    ("", "source", || Value::Object(Map::new())),
    ("", "firstTimestamp", || Value::Null),
    ("", "lastTimestamp", || Value::Null),
    ("", "eventTime", || Value::Null),
    ("", "reportingComponent", || Value::String(String::new())),
    ("", "reportingInstance", || Value::String(String::new())),
    ("events.k8s.io", "eventTime", || Value::Null),
    ("events.k8s.io", "regarding", || Value::Object(Map::new())),
    ("events.k8s.io", "deprecatedSource", || Value::Object(Map::new())),
    ("events.k8s.io", "deprecatedFirstTimestamp", || Value::Null),
    ("events.k8s.io", "deprecatedLastTimestamp", || Value::Null),
];

fn is_event(info: &ResourceInfo) -> bool {
    info.kind == "Event" && (info.group.is_empty() || info.group == "events.k8s.io") && info.is_builtin()
}

/// Whether an answer differs from the stored object (other version, or zero values added).
pub fn changes_on_serving(info: &ResourceInfo) -> bool {
    info.api_version() != info.storage_api_version || is_event(info)
}

/// Convert a stored object to the resource's served version, as an answer shows it.
pub fn to_served(info: &ResourceInfo, object: Value) -> Value {
    let mut object = to_request_version(info, object);
    if is_event(info)
        && let Some(map) = object.as_object_mut()
    {
        for (group, field, zero) in EVENT_ZERO_VALUES {
            if *group == info.group && !map.contains_key(*field) {
                map.insert((*field).to_string(), zero());
            }
        }
        if info.group == "events.k8s.io" {
            // omitempty in events.k8s.io/v1, not in core/v1.
            for field in ["reportingController", "reportingInstance"] {
                if map.get(field).and_then(Value::as_str) == Some("") {
                    map.remove(field);
                }
            }
        }
    }
    object
}

/// A stored object in the fields of the resource's served version, without what only answers carry (what
/// managedFields are computed on).
pub fn to_request_version(info: &ResourceInfo, mut object: Value) -> Value {
    let served = info.api_version();
    if served == info.storage_api_version {
        return object;
    }
    if info.group == "events.k8s.io" {
        rename_fields(&mut object, |(new, old)| (old, new));
    }
    set_api_version(&mut object, &served);
    object
}

/// Convert an object received at the resource's served version to its stored form.
pub fn to_storage(info: &ResourceInfo, mut object: Value) -> Value {
    if is_event(info)
        && let Some(map) = object.as_object_mut()
    {
        // The zero values answers carry are not stored (nor owned by anyone).
        for (group, field, zero) in EVENT_ZERO_VALUES {
            if *group == info.group && map.get(*field) == Some(&zero()) {
                map.remove(*field);
            }
        }
    }
    if info.api_version() == info.storage_api_version {
        return object;
    }
    if info.group == "events.k8s.io" {
        rename_fields(&mut object, |pair| pair);
    }
    set_api_version(&mut object, &info.storage_api_version);
    object
}

fn set_api_version(object: &mut Value, api_version: &str) {
    if let Some(map) = object.as_object_mut() {
        map.insert("apiVersion".into(), Value::String(api_version.to_string()));
    }
}

fn rename_fields(object: &mut Value, direction: impl Fn((&'static str, &'static str)) -> (&'static str, &'static str)) {
    let Some(map) = object.as_object_mut() else {
        return;
    };
    let mut renamed = Map::new();
    for (key, value) in std::mem::take(map) {
        let target = EVENT_FIELD_RENAMES
            .iter()
            .map(|pair| direction(*pair))
            .find(|(from, _)| *from == key)
            .map(|(_, to)| to.to_string())
            .unwrap_or(key);
        renamed.insert(target, value);
    }
    *map = renamed;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use serde_json::json;

    #[test]
    fn events_round_trip_between_groups() {
        let registry = Registry::build([]);
        let new_events = registry.lookup("events.k8s.io", "v1", "events").unwrap();
        let incoming = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e"}, "regarding": {"kind": "Pod", "name": "p"}, "note": "hi",
            "reportingController": "ctl", "reason": "Started"});
        let stored = to_storage(&new_events, incoming.clone());
        assert_eq!(stored["apiVersion"], "v1");
        assert_eq!(stored["involvedObject"]["name"], "p");
        assert_eq!(stored["message"], "hi");
        assert_eq!(stored["reportingComponent"], "ctl");
        assert_eq!(to_request_version(&new_events, stored.clone()), incoming);
        let served = to_served(&new_events, stored);
        assert_eq!(served["deprecatedSource"], json!({}));
        assert_eq!(served["deprecatedFirstTimestamp"], Value::Null);
        assert_eq!(to_storage(&new_events, served), to_storage(&new_events, incoming));
    }

    #[test]
    fn core_events_carry_go_zero_values() {
        let registry = Registry::build([]);
        let events = registry.lookup("", "v1", "events").unwrap();
        let stored = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}, "reason": "Started"});
        let served = to_served(&events, stored.clone());
        assert_eq!(served["eventTime"], Value::Null);
        assert_eq!(served["reportingComponent"], "");
        assert_eq!(served["source"], json!({}));
        assert_eq!(to_storage(&events, served), stored);
    }
}
