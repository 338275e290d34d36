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

/// Convert a stored object to the resource's served version.
pub fn to_served(info: &ResourceInfo, mut object: Value) -> Value {
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
        assert_eq!(to_served(&new_events, stored), incoming);
    }
}
