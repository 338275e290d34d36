//! `metadata.managedFields`: decoding and encoding entries, and recording ownership for
//! create/update/patch requests the way the apiserver field manager does.

use super::fieldpath::{FieldPath, FieldSet};
use super::typed::{self, Comparison};
use super::typeinfo::{self, FieldType};
use crate::go_format;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Update managers beyond this many are merged into `ancient-changes` entries, oldest first.
const MAX_UPDATE_MANAGERS: usize = 10;
/// Name of the bucket entries old update managers are merged into.
const ANCIENT_CHANGES_MANAGER: &str = "ancient-changes";
/// Manager that takes ownership of existing fields on the first apply to an untracked object.
pub(crate) const BEFORE_FIRST_APPLY_MANAGER: &str = "before-first-apply";
/// Longest manager name the apiserver derives from a user agent.
const FIELD_MANAGER_MAX_LENGTH: usize = 128;

/// The operation of a managed fields entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Operation {
    Apply,
    Update,
}

impl Operation {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// Identity of a managed fields entry: manager, operation, apiVersion (updates only), subresource.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ManagerKey {
    pub manager: String,
    pub operation: Operation,
    /// Empty for appliers: an applier keeps one entry whatever version it applies with.
    pub api_version: String,
    pub subresource: String,
}

impl ManagerKey {
    pub(crate) fn apply(manager: &str, subresource: &str) -> ManagerKey {
        ManagerKey {
            manager: non_empty_manager(manager),
            operation: Operation::Apply,
            api_version: String::new(),
            subresource: subresource.to_string(),
        }
    }

    pub(crate) fn update(manager: &str, api_version: &str, subresource: &str) -> ManagerKey {
        ManagerKey {
            manager: non_empty_manager(manager),
            operation: Operation::Update,
            api_version: api_version.to_string(),
            subresource: subresource.to_string(),
        }
    }

    /// The apiserver's manager identifier (`BuildManagerIdentifier`): the entry as Go JSON without
    /// time and fields.
    pub(crate) fn identifier(&self) -> String {
        let mut parts = Vec::new();
        if !self.manager.is_empty() {
            parts.push(format!("\"manager\":{}", go_format::json_string(&self.manager)));
        }
        parts.push(format!("\"operation\":\"{}\"", self.operation.as_str()));
        if !self.api_version.is_empty() {
            parts.push(format!("\"apiVersion\":{}", go_format::json_string(&self.api_version)));
        }
        if !self.subresource.is_empty() {
            parts.push(format!("\"subresource\":{}", go_format::json_string(&self.subresource)));
        }
        format!("{{{}}}", parts.join(","))
    }

    /// How conflict messages name the manager (`printManager`), e.g. `"kubectl" using v1`.
    pub(crate) fn describe(&self) -> String {
        let mut text = go_format::quote(&self.manager);
        if !self.subresource.is_empty() {
            text = format!("{text} with subresource {}", go_format::quote(&self.subresource));
        }
        if self.operation == Operation::Update {
            text = format!("{text} using {}", self.api_version);
        }
        text
    }
}

fn non_empty_manager(manager: &str) -> String {
    if manager.is_empty() {
        "unknown".into()
    } else {
        manager.to_string()
    }
}

/// One decoded entry.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ManagedEntry {
    pub set: FieldSet,
    pub api_version: String,
    pub time: Option<String>,
}

/// All entries of an object, by identity.
pub(crate) type Managed = BTreeMap<ManagerKey, ManagedEntry>;

/// Decodes `metadata.managedFields`; any invalid entry makes the whole list invalid, as in the apiserver.
pub(crate) fn decode(entries: Option<&Value>) -> Result<Managed, String> {
    let mut managed = Managed::new();
    let list = match entries {
        None | Some(Value::Null) => return Ok(managed),
        Some(Value::Array(list)) => list,
        Some(other) => return Err(format!("managedFields must be a list, got {other}")),
    };
    for (index, entry) in list.iter().enumerate() {
        let (key, value) = decode_entry(index, entry)?;
        managed.insert(key, value);
    }
    Ok(managed)
}

fn decode_entry(index: usize, entry: &Value) -> Result<(ManagerKey, ManagedEntry), String> {
    let Value::Object(map) = entry else {
        return Err(format!("managed fields entry {index} is not an object"));
    };
    let text = |name: &str| -> Result<String, String> {
        match map.get(name) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(format!("{name} must be a string, got {other}")),
        }
    };
    let operation = match text("operation")?.as_str() {
        "Apply" => Operation::Apply,
        "Update" => Operation::Update,
        _ => return Err("operation must be `Apply` or `Update`".into()),
    };
    let api_version = text("apiVersion")?;
    if api_version.is_empty() {
        return Err("apiVersion must not be empty".into());
    }
    match text("fieldsType")?.as_str() {
        "FieldsV1" => {}
        "" => return Err(format!("missing fieldsType in managed fields entry {index}")),
        other => {
            return Err(format!(
                "invalid fieldsType {} in managed fields entry {index}",
                go_format::quote(other)
            ));
        }
    }
    let time = match map.get("time") {
        None | Some(Value::Null) => None,
        Some(Value::String(t)) if unix_seconds(t).is_some() => Some(t.clone()),
        Some(other) => return Err(format!("invalid time {other} in managed fields entry {index}")),
    };
    let set = match map.get("fieldsV1") {
        None | Some(Value::Null) => FieldSet::new(),
        Some(fields) => FieldSet::from_fields_v1(fields).map_err(|e| format!("error decoding versioned set: {e}"))?,
    };
    let manager = text("manager")?;
    let subresource = text("subresource")?;
    let key = ManagerKey {
        manager,
        operation,
        api_version: if operation == Operation::Apply {
            String::new()
        } else {
            api_version.clone()
        },
        subresource,
    };
    Ok((key, ManagedEntry { set, api_version, time }))
}

/// Encodes entries in the apiserver's order: operation, time, manager, apiVersion, subresource.
pub(crate) fn encode(managed: &Managed) -> Option<Value> {
    if managed.is_empty() {
        return None;
    }
    let mut entries: Vec<(&ManagerKey, &ManagedEntry)> = managed.iter().collect();
    entries.sort_by(|(pk, pe), (qk, qe)| {
        pk.operation
            .cmp(&qk.operation)
            .then_with(|| time_seconds(pe).cmp(&time_seconds(qe)))
            .then_with(|| pk.manager.cmp(&qk.manager))
            .then_with(|| pe.api_version.cmp(&qe.api_version))
            .then_with(|| pk.subresource.cmp(&qk.subresource))
    });
    let list = entries
        .into_iter()
        .map(|(key, entry)| {
            let mut out = Map::new();
            if !key.manager.is_empty() {
                out.insert("manager".into(), Value::String(key.manager.clone()));
            }
            out.insert("operation".into(), Value::String(key.operation.as_str().into()));
            out.insert("apiVersion".into(), Value::String(entry.api_version.clone()));
            if let Some(time) = &entry.time {
                out.insert("time".into(), Value::String(time.clone()));
            }
            out.insert("fieldsType".into(), Value::String("FieldsV1".into()));
            out.insert("fieldsV1".into(), entry.set.to_fields_v1());
            if !key.subresource.is_empty() {
                out.insert("subresource".into(), Value::String(key.subresource.clone()));
            }
            Value::Object(out)
        })
        .collect();
    Some(Value::Array(list))
}

fn time_seconds(entry: &ManagedEntry) -> i64 {
    entry.time.as_deref().and_then(unix_seconds).unwrap_or(0)
}

/// Seconds since the epoch of an RFC 3339 timestamp (`2024-05-01T10:00:00Z`, offsets and fractions allowed).
pub(crate) fn unix_seconds(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    if bytes.len() < 20 || bytes[4] != b'-' || bytes[7] != b'-' || !matches!(bytes[10], b'T' | b't') {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<i64> { text.get(range)?.parse().ok() };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if bytes[13] != b':' || bytes[16] != b':' || !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let mut rest = &text[19..];
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        rest = &fraction[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6 && (rest.starts_with('+') || rest.starts_with('-')) && &rest[3..4] == ":" => {
            let sign = if rest.starts_with('-') { -1 } else { 1 };
            sign * (rest[1..3].parse::<i64>().ok()? * 3600 + rest[4..6].parse::<i64>().ok()? * 60)
        }
        _ => return None,
    };
    // Days from civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hour * 3600 + minute * 60 + second - offset)
}

/// Paths never recorded as owned (apiserver `stripMetaManager`).
pub(crate) fn strip_set() -> FieldSet {
    FieldSet::from_paths([
        FieldPath::fields(["apiVersion"]),
        FieldPath::fields(["kind"]),
        FieldPath::fields(["metadata"]),
        FieldPath::fields(["metadata", "name"]),
        FieldPath::fields(["metadata", "namespace"]),
        FieldPath::fields(["metadata", "creationTimestamp"]),
        FieldPath::fields(["metadata", "selfLink"]),
        FieldPath::fields(["metadata", "uid"]),
        FieldPath::fields(["metadata", "clusterName"]),
        FieldPath::fields(["metadata", "generation"]),
        FieldPath::fields(["metadata", "managedFields"]),
        FieldPath::fields(["metadata", "resourceVersion"]),
    ])
}

/// Records a non-apply change for `key`: every manager loses the fields that changed or were removed,
/// and `key` gains the changed fields (structured-merge-diff `Update` through the apiserver's
/// `managedFieldsUpdater` and `stripMetaManager`).
pub(crate) fn record_change(
    managed: &mut Managed,
    comparison: &Comparison,
    key: ManagerKey,
    api_version: &str,
    time: &str,
) {
    let changed = comparison.modified.union(&comparison.added);
    for entry in managed.values_mut() {
        entry.set = entry.set.difference(&changed).difference(&comparison.removed);
    }
    managed.retain(|_, entry| !entry.set.is_empty());
    let current = changed.difference(&comparison.removed).difference(&strip_set());
    if current.is_empty() {
        return;
    }
    let set = match managed.remove(&key) {
        Some(previous) => current.union(&previous.set),
        None => current,
    };
    managed.insert(
        key,
        ManagedEntry {
            set,
            api_version: api_version.to_string(),
            time: Some(time.to_string()),
        },
    );
}

/// Merges the oldest update managers into per-version `ancient-changes` entries (apiserver `capManagersManager`).
pub(crate) fn cap_update_managers(managed: &mut Managed) {
    let mut updaters: Vec<(ManagerKey, i64)> = managed
        .iter()
        .filter(|(key, _)| key.operation == Operation::Update)
        .map(|(key, entry)| (key.clone(), time_seconds(entry)))
        .collect();
    if updaters.len() <= MAX_UPDATE_MANAGERS {
        return;
    }
    updaters.sort_by(|(a, at), (b, bt)| at.cmp(bt).then_with(|| a.identifier().cmp(&b.identifier())));
    let mut first_of_version: BTreeMap<String, ManagerKey> = BTreeMap::new();
    let mut remaining = updaters.len();
    for (key, _) in updaters {
        if remaining <= MAX_UPDATE_MANAGERS {
            break;
        }
        let Some(entry) = managed.get(&key).cloned() else {
            continue;
        };
        let version = entry.api_version.clone();
        let bucket = ManagerKey::update(ANCIENT_CHANGES_MANAGER, &version, "");
        match first_of_version.get(&version) {
            Some(first) => {
                if !managed.contains_key(&bucket)
                    && let Some(first_entry) = managed.remove(first)
                {
                    managed.insert(bucket.clone(), first_entry);
                }
                if let Some(bucket_entry) = managed.get_mut(&bucket) {
                    bucket_entry.set = entry.set.union(&bucket_entry.set);
                    bucket_entry.api_version = version.clone();
                    bucket_entry.time = entry.time.clone();
                }
                managed.remove(&key);
                remaining -= 1;
            }
            None => {
                first_of_version.insert(version, key);
            }
        }
    }
}

/// Options of a create, update or non-apply patch.
#[derive(Clone, Debug)]
pub struct UpdateOptions<'a> {
    /// Field manager (`?fieldManager=`, or [`manager_from_user_agent`]).
    pub manager: String,
    /// Type information of the kind.
    pub ty: &'a FieldType,
    /// `apiVersion` of the request (group/version).
    pub api_version: String,
    /// Kind of the object.
    pub kind: String,
    /// `Some("status")` for the status subresource.
    pub subresource: Option<String>,
    /// RFC 3339 time of the request, recorded in the manager's entry.
    pub time: String,
    /// Fields the endpoint resets (e.g. `status` on the main resource); never owned.
    pub ignored_fields: FieldSet,
}

/// Records ownership for a create (`old` is `None`), update or non-apply patch and returns `new` with
/// `metadata.managedFields` updated. Managed fields sent in `new` are kept when valid (and `[]` or
/// `[{}]` resets them), otherwise the live ones are used, as the apiserver does.
pub fn record_update(old: Option<&Value>, new: &Value, opts: &UpdateOptions<'_>) -> Value {
    let subresource = opts.subresource.clone().unwrap_or_default();
    let mut managed = managed_for_update(old, new, !subresource.is_empty());
    let mut object = without_managed_fields(new);
    let is_create = old.is_none_or(|o| {
        o.pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
    });
    if managed.is_empty() && !is_create {
        // An object whose managed fields were reset is not tracked again until the next apply.
        return object;
    }
    let before = match old {
        Some(o) => without_managed_fields(o),
        None => typeinfo::zero_value(&opts.api_version, &opts.kind),
    };
    let comparison = typed::compare(&before, &object, opts.ty).exclude(&opts.ignored_fields);
    let key = ManagerKey::update(&opts.manager, &opts.api_version, &subresource);
    record_change(&mut managed, &comparison, key, &opts.api_version, &opts.time);
    cap_update_managers(&mut managed);
    set_managed_fields(&mut object, encode(&managed));
    object
}

fn managed_for_update(old: Option<&Value>, new: &Value, subresource: bool) -> Managed {
    let live = || decode(old.and_then(|o| o.pointer("/metadata/managedFields"))).unwrap_or_default();
    if subresource {
        return live();
    }
    let requested = new.pointer("/metadata/managedFields");
    if let Some(Value::Array(entries)) = requested {
        let reset = entries.is_empty() || (entries.len() == 1 && entries[0].as_object().is_some_and(Map::is_empty));
        if reset {
            return Managed::new();
        }
    }
    match decode(requested) {
        Ok(managed) if !managed.is_empty() => managed,
        _ => live(),
    }
}

pub(crate) fn without_managed_fields(object: &Value) -> Value {
    let mut object = object.clone();
    set_managed_fields(&mut object, None);
    object
}

pub(crate) fn set_managed_fields(object: &mut Value, entries: Option<Value>) {
    let Some(root) = object.as_object_mut() else { return };
    match entries {
        Some(entries) => {
            let metadata = root.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
            if let Some(metadata) = metadata.as_object_mut() {
                metadata.insert("managedFields".into(), entries);
            }
        }
        None => {
            if let Some(metadata) = root.get_mut("metadata").and_then(Value::as_object_mut) {
                metadata.remove("managedFields");
            }
        }
    }
}

/// Drops malformed entries from `metadata.managedFields` (and the field itself when none is left).
pub fn sanitize_managed_fields(object: &mut Value) {
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let keep = match metadata.get("managedFields") {
        None => return,
        Some(Value::Array(entries)) => entries
            .iter()
            .enumerate()
            .filter(|(i, entry)| decode_entry(*i, entry).is_ok())
            .map(|(_, entry)| entry.clone())
            .collect(),
        Some(_) => Vec::new(),
    };
    if keep.is_empty() {
        metadata.remove("managedFields");
    } else {
        metadata.insert("managedFields".into(), Value::Array(keep));
    }
}

/// The manager name the apiserver uses when a request has no `fieldManager`: the user agent up to
/// the first `/`, printable characters only, at most 128 bytes.
pub fn manager_from_user_agent(user_agent: &str) -> String {
    let prefix = user_agent.split('/').next().unwrap_or("");
    let mut out = String::new();
    for c in prefix.chars().filter(|c| !c.is_control()) {
        if out.len() + c.len_utf8() > FIELD_MANAGER_MAX_LENGTH {
            break;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::typeinfo::builtin;
    use serde_json::json;

    fn opts<'a>(ty: &'a FieldType, manager: &str, time: &str) -> UpdateOptions<'a> {
        UpdateOptions {
            manager: manager.into(),
            ty,
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            subresource: None,
            time: time.into(),
            ignored_fields: FieldSet::new(),
        }
    }

    fn entries(object: &Value) -> &Vec<Value> {
        object["metadata"]["managedFields"].as_array().unwrap()
    }

    #[test]
    fn create_owns_every_field_present() {
        let ty = builtin("v1", "ConfigMap");
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "d", "labels": {"a": "b"}}, "data": {"k": "v"}});
        let out = record_update(None, &cm, &opts(&ty, "kubectl-create", "2024-01-01T00:00:00Z"));
        assert_eq!(
            entries(&out)[0],
            json!({"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1",
                "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {".": {}, "f:k": {}}, "f:metadata": {"f:labels": {".": {}, "f:a": {}}}}})
        );
    }

    #[test]
    fn update_moves_changed_fields_to_the_updater() {
        let ty = builtin("v1", "ConfigMap");
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "uid": "u"}, "data": {"a": "1", "b": "1"}});
        let created = record_update(None, &cm, &opts(&ty, "creator", "2024-01-01T00:00:00Z"));
        let mut changed = created.clone();
        changed["data"]["a"] = json!("2");
        let out = record_update(Some(&created), &changed, &opts(&ty, "editor", "2024-01-02T00:00:00Z"));
        let list = entries(&out);
        assert_eq!(list.len(), 2);
        assert_eq!(list[0]["manager"], "creator");
        assert_eq!(list[0]["fieldsV1"], json!({"f:data": {".": {}, "f:b": {}}}));
        assert_eq!(list[1]["manager"], "editor");
        assert_eq!(list[1]["fieldsV1"], json!({"f:data": {"f:a": {}}}));
    }

    #[test]
    fn unchanged_update_keeps_entries_and_times() {
        let ty = builtin("v1", "ConfigMap");
        let cm = json!({"metadata": {"name": "c", "uid": "u"}, "data": {"a": "1"}});
        let created = record_update(None, &cm, &opts(&ty, "creator", "2024-01-01T00:00:00Z"));
        let out = record_update(Some(&created), &created, &opts(&ty, "editor", "2024-01-02T00:00:00Z"));
        assert_eq!(out, created);
    }

    #[test]
    fn reset_and_invalid_managed_fields() {
        let ty = builtin("v1", "ConfigMap");
        let created = record_update(
            None,
            &json!({"metadata": {"name": "c", "uid": "u"}, "data": {"a": "1"}}),
            &opts(&ty, "m", "2024-01-01T00:00:00Z"),
        );
        let mut reset = created.clone();
        reset["metadata"]["managedFields"] = json!([{}]);
        let out = record_update(Some(&created), &reset, &opts(&ty, "m", "2024-01-01T00:00:00Z"));
        assert!(out["metadata"].get("managedFields").is_none());
        let mut invalid = created.clone();
        invalid["metadata"]["managedFields"] = json!([{"manager": "x", "operation": "Bogus"}]);
        let out = record_update(Some(&created), &invalid, &opts(&ty, "m", "2024-01-01T00:00:00Z"));
        assert_eq!(out["metadata"]["managedFields"], created["metadata"]["managedFields"]);
    }

    /// Matches what `kubectl create deployment` leaves: nodes present in the Go zero value (spec,
    /// template, containers) get no `.`, nodes the request added (labels, rollingUpdate, items) do.
    #[test]
    fn create_of_a_deployment_follows_the_go_zero_value() {
        let ty = builtin("apps/v1", "Deployment");
        let dep = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "web"}},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}
                }
            }
        });
        let opts = UpdateOptions {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            ..opts(&ty, "kubectl-create", "2024-01-01T00:00:00Z")
        };
        let out = record_update(None, &dep, &opts);
        assert_eq!(
            serde_json::to_string(&entries(&out)[0]["fieldsV1"]).unwrap(),
            concat!(
                r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:replicas":{},"f:selector":{},"#,
                r#""f:strategy":{"f:rollingUpdate":{".":{},"f:maxSurge":{},"f:maxUnavailable":{}},"f:type":{}},"#,
                r#""f:template":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"#,
                r#""f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:name":{}}}}}}}"#
            )
        );
    }

    #[test]
    fn status_updates_keep_live_managed_fields_and_skip_reset_fields() {
        let ty = builtin("v1", "ConfigMap");
        let created = record_update(
            None,
            &json!({"metadata": {"name": "c", "uid": "u"}, "data": {"a": "1"}}),
            &opts(&ty, "m", "2024-01-01T00:00:00Z"),
        );
        let mut changed = created.clone();
        changed["metadata"]["managedFields"] = json!([]);
        changed["data"]["a"] = json!("2");
        changed["data"]["b"] = json!("3");
        let status_opts = UpdateOptions {
            subresource: Some("status".into()),
            ignored_fields: FieldSet::from_paths([FieldPath::fields(["data", "b"])]),
            ..opts(&ty, "ctl", "2024-01-02T00:00:00Z")
        };
        let out = record_update(Some(&created), &changed, &status_opts);
        let list = entries(&out);
        assert_eq!(list.len(), 2);
        assert_eq!(list[0]["manager"], "m");
        assert_eq!(list[0]["fieldsV1"], json!({"f:data": {}}));
        assert_eq!(list[1]["manager"], "ctl");
        assert_eq!(list[1]["subresource"], "status");
        assert_eq!(list[1]["fieldsV1"], json!({"f:data": {"f:a": {}}}));
    }

    #[test]
    fn sanitize_drops_malformed_entries() {
        let mut obj = json!({"metadata": {"managedFields": [
            {"manager": "a", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}},
            {"manager": "b", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV2"},
            {"manager": "c", "operation": "Apply", "fieldsType": "FieldsV1"},
            "garbage"
        ]}});
        sanitize_managed_fields(&mut obj);
        assert_eq!(entries(&obj).len(), 1);
        assert_eq!(entries(&obj)[0]["manager"], "a");
    }

    #[test]
    fn more_than_ten_updaters_are_capped() {
        let mut managed = Managed::new();
        for i in 0..12 {
            managed.insert(
                ManagerKey::update(&format!("m{i:02}"), "v1", ""),
                ManagedEntry {
                    set: FieldSet::from_paths([FieldPath::fields(["data", &format!("k{i}")])]),
                    api_version: "v1".into(),
                    time: Some(format!("2024-01-01T00:00:{i:02}Z")),
                },
            );
        }
        cap_update_managers(&mut managed);
        assert_eq!(managed.len(), 10);
        let bucket = &managed[&ManagerKey::update(ANCIENT_CHANGES_MANAGER, "v1", "")];
        assert_eq!(bucket.set.paths().len(), 3);
        assert_eq!(bucket.time.as_deref(), Some("2024-01-01T00:00:02Z"));
    }

    #[test]
    fn identifiers_and_descriptions() {
        let key = ManagerKey::update("kubectl-client-side-apply", "v1", "");
        assert_eq!(
            key.identifier(),
            r#"{"manager":"kubectl-client-side-apply","operation":"Update","apiVersion":"v1"}"#
        );
        assert_eq!(key.describe(), r#""kubectl-client-side-apply" using v1"#);
        let key = ManagerKey::apply("ctl", "status");
        assert_eq!(key.describe(), r#""ctl" with subresource "status""#);
        assert_eq!(manager_from_user_agent("kubectl/v1.32.0 (linux/amd64)"), "kubectl");
        assert_eq!(unix_seconds("1970-01-02T00:00:00Z"), Some(86_400));
        assert_eq!(
            unix_seconds("2024-01-01T01:00:00+01:00"),
            unix_seconds("2024-01-01T00:00:00Z")
        );
    }
}
