//! Server-side apply: merging an applied configuration into the live object, pruning fields the
//! applier dropped, detecting conflicts and updating `metadata.managedFields`.

use super::fieldpath::FieldSet;
use super::managed_fields::{self, BEFORE_FIRST_APPLY_MANAGER, Managed, ManagedEntry, ManagerKey};
use super::typed::{self, ValidationErrors};
use super::typeinfo::{self, FieldType};
use super::{Conflict, PatchError};
use serde_json::{Map, Value};

/// Annotation kept by client-side `kubectl apply`.
const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// Field manager whose applies upgrade and keep the client-side apply annotation in sync.
const KUBECTL_MANAGER: &str = "kubectl";
/// Total size limit of an object's annotations.
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// Options of a server-side apply request.
#[derive(Clone, Debug)]
pub struct ApplyOptions<'a> {
    /// Field manager (`?fieldManager=`, required for apply).
    pub manager: String,
    /// `?force=true`: take ownership of conflicting fields instead of failing.
    pub force: bool,
    /// Type information of the kind.
    pub ty: &'a FieldType,
    /// `apiVersion` served by the endpoint; the configuration must use it.
    pub api_version: String,
    /// Kind served by the endpoint; the configuration must use it.
    pub kind: String,
    /// `Some("status")` for the status subresource.
    pub subresource: Option<String>,
    /// RFC 3339 time of the request, recorded in the manager's entry when the object changes.
    pub time: String,
    /// Fields the endpoint resets (e.g. `status` on the main resource); never owned.
    pub ignored_fields: FieldSet,
}

/// Applies `config` for `opts.manager` to `live` (`None` creates the object) and returns the new
/// object with `metadata.managedFields` updated. When nothing changes the live object is returned
/// with the same content (and managed fields possibly updated to record shared ownership).
pub fn apply(live: Option<&Value>, config: &Value, opts: &ApplyOptions<'_>) -> Result<Value, PatchError> {
    let live_object = live.cloned().unwrap_or_else(|| Value::Object(Map::new()));
    let managed = managed_fields::decode(live_object.pointer("/metadata/managedFields"))
        .map_err(|e| PatchError::Internal(format!("failed to decode managed fields: {e}")))?;
    check_config(config, opts)?;
    let errors = typed::validate(config, opts.ty, false);
    if !errors.is_empty() {
        return Err(PatchError::Internal(format!(
            "failed to create typed patch object ({}): {}",
            object_gvknn(config),
            ValidationErrors(&errors)
        )));
    }
    let live_clean = managed_fields::without_managed_fields(&live_object);
    let errors = typed::validate(&live_clean, opts.ty, true);
    if !errors.is_empty() {
        return Err(PatchError::Internal(format!(
            "failed to create typed live object ({}): {}",
            object_gvknn(&live_clean),
            ValidationErrors(&errors)
        )));
    }
    let tracked = live.is_some();
    let attempt = |force: bool| apply_tracked(&live_clean, tracked, config, managed.clone(), opts, force);
    let (mut object, managed) = match attempt(opts.force) {
        Err(conflicts) if opts.manager == KUBECTL_MANAGER => {
            match allowed_conflicts_from_last_applied(&live_clean, opts) {
                Some(allowed) => {
                    let remaining: Vec<Conflict> =
                        conflicts.into_iter().filter(|c| !allowed.contains(&c.path.0)).collect();
                    if remaining.is_empty() {
                        attempt(true)
                    } else {
                        Err(remaining)
                    }
                }
                None => Err(conflicts),
            }
        }
        other => other,
    }
    .map_err(PatchError::Conflict)?;
    if opts.manager == KUBECTL_MANAGER && has_last_applied(&object) {
        set_last_applied(&mut object, build_last_applied(config));
    }
    managed_fields::set_managed_fields(&mut object, managed_fields::encode(&managed));
    Ok(object)
}

/// The apiserver's `versionCheckManager` and `structuredMergeManager` checks on the configuration.
fn check_config(config: &Value, opts: &ApplyOptions<'_>) -> Result<(), PatchError> {
    let api_version = config.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = config.get("kind").and_then(Value::as_str).unwrap_or("");
    if api_version != opts.api_version || kind != opts.kind {
        return Err(PatchError::BadRequest(format!(
            "invalid object type: {}",
            gvk_string(api_version, kind)
        )));
    }
    if config.pointer("/metadata/managedFields").is_some_and(|v| !v.is_null()) {
        return Err(PatchError::BadRequest("metadata.managedFields must be nil".into()));
    }
    Ok(())
}

/// `GroupVersionKind.String()`, e.g. `apps/v1, Kind=Deployment` or `/v1, Kind=Pod`.
fn gvk_string(api_version: &str, kind: &str) -> String {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={kind}")
}

fn object_gvknn(object: &Value) -> String {
    let meta = |name: &str| {
        object
            .pointer(&format!("/metadata/{name}"))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    format!(
        "{}/{}; {}",
        meta("namespace"),
        meta("name"),
        gvk_string(api_version, kind)
    )
}

/// Apply with the managers of the live object; an existing object without managed fields first has
/// its fields attributed to `before-first-apply`.
fn apply_tracked(
    live: &Value,
    live_exists: bool,
    config: &Value,
    mut managed: Managed,
    opts: &ApplyOptions<'_>,
    force: bool,
) -> Result<(Value, Managed), Vec<Conflict>> {
    let subresource = opts.subresource.clone().unwrap_or_default();
    if managed.is_empty() && live_exists {
        let before = typeinfo::zero_value(&opts.api_version, &opts.kind);
        let comparison = typed::compare(&before, live, opts.ty).exclude(&opts.ignored_fields);
        let key = ManagerKey::update(BEFORE_FIRST_APPLY_MANAGER, &opts.api_version, &subresource);
        managed_fields::record_change(&mut managed, &comparison, key, &opts.api_version, &opts.time);
        managed_fields::cap_update_managers(&mut managed);
    }
    let key = ManagerKey::apply(&opts.manager, &subresource);
    let merged = typed::merge(live, config, opts.ty);
    let previous = managed.get(&key).cloned();
    let applied_set = typed::to_field_set(config, opts.ty).recursive_difference(&opts.ignored_fields);
    managed.insert(
        key.clone(),
        ManagedEntry {
            set: applied_set,
            api_version: opts.api_version.clone(),
            time: previous.as_ref().and_then(|p| p.time.clone()),
        },
    );
    let merged = match previous.filter(|p| !p.set.is_empty()) {
        Some(previous) => prune(&merged, &managed, &previous.set, opts.ty),
        None => merged,
    };
    let comparison = typed::compare(live, &merged, opts.ty).exclude(&opts.ignored_fields);
    let changed = comparison.modified.union(&comparison.added);
    let mut conflicts = Vec::new();
    for (other, entry) in managed.iter().filter(|(k, _)| **k != key) {
        for path in entry.set.intersection(&changed).paths() {
            conflicts.push(Conflict::new(other, path));
        }
    }
    if !force && !conflicts.is_empty() {
        conflicts.sort_by_key(Conflict::identifier);
        return Err(conflicts);
    }
    for (other, entry) in managed.iter_mut() {
        if *other != key {
            entry.set = entry.set.difference(&changed).difference(&comparison.removed);
        }
    }
    if let Some(entry) = managed.get_mut(&key) {
        entry.set = entry.set.difference(&managed_fields::strip_set());
    }
    managed.retain(|_, entry| !entry.set.is_empty());
    if merged == *live {
        return Ok((live.clone(), managed));
    }
    if let Some(entry) = managed.get_mut(&key) {
        entry.time = Some(opts.time.clone());
    }
    Ok((merged, managed))
}

/// Removes what the applier applied last time but not this time, unless another manager (or the
/// new configuration) still owns it (structured-merge-diff `prune` with its add-back passes).
fn prune(merged: &Value, managed: &Managed, last_applied: &FieldSet, ty: &FieldType) -> Value {
    let merged_set = typed::ensure_named_fields_are_members(&typed::to_field_set(merged, ty), ty);
    let last = typed::ensure_named_fields_are_members(last_applied, ty);
    let owned = managed
        .values()
        .fold(FieldSet::new(), |acc, entry| acc.union(&entry.set));
    let owned = typed::ensure_named_fields_are_members(&owned, ty);
    // The object's identity and server-managed metadata are never pruned.
    let to_remove = merged_set
        .intersection(&last)
        .difference(&owned)
        .difference(&managed_fields::strip_set());
    if to_remove.is_empty() {
        return merged.clone();
    }
    typed::remove_items(merged, &to_remove, ty)
}

fn last_applied_annotation(object: &Value) -> Option<&str> {
    object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(LAST_APPLIED_ANNOTATION))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn has_last_applied(object: &Value) -> bool {
    last_applied_annotation(object).is_some()
}

/// Fields a client-side `kubectl apply` set to their current values: `kubectl apply --server-side`
/// may take them over without conflict (apiserver `lastAppliedManager`).
fn allowed_conflicts_from_last_applied(live: &Value, opts: &ApplyOptions<'_>) -> Option<FieldSet> {
    let last_applied: Value = serde_json::from_str(last_applied_annotation(live)?).ok()?;
    if last_applied.get("apiVersion").and_then(Value::as_str) != Some(opts.api_version.as_str()) {
        return None;
    }
    if !typed::validate(&last_applied, opts.ty, true).is_empty() {
        return None;
    }
    let set = typed::to_field_set(&last_applied, opts.ty);
    let comparison = typed::compare(&last_applied, live, opts.ty);
    Some(
        set.difference(&comparison.modified)
            .difference(&comparison.added)
            .difference(&comparison.removed),
    )
}

/// The annotation value `kubectl` would write for `config`: Go JSON with a trailing newline.
fn build_last_applied(config: &Value) -> String {
    let mut config = config.clone();
    if let Some(annotations) = config
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        annotations.remove(LAST_APPLIED_ANNOTATION);
    }
    let mut text = crate::go_format::json_text(&config);
    text.push('\n');
    text
}

fn set_last_applied(object: &mut Value, value: String) {
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let annotations = metadata
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(annotations) = annotations.as_object_mut() else {
        return;
    };
    annotations.insert(LAST_APPLIED_ANNOTATION.into(), Value::String(value));
    let total: usize = annotations
        .iter()
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .sum();
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        annotations.remove(LAST_APPLIED_ANNOTATION);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::managed_fields::{UpdateOptions, record_update};
    use crate::patch::typeinfo::builtin;
    use serde_json::json;

    const T1: &str = "2024-01-01T00:00:00Z";
    const T2: &str = "2024-01-02T00:00:00Z";

    fn apply_opts<'a>(ty: &'a FieldType, manager: &str, force: bool, time: &str) -> ApplyOptions<'a> {
        ApplyOptions {
            manager: manager.into(),
            force,
            ty,
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            subresource: None,
            time: time.into(),
            ignored_fields: FieldSet::new(),
        }
    }

    fn cm(data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}, "data": data})
    }

    fn entries(object: &Value) -> Vec<Value> {
        object["metadata"]["managedFields"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    #[test]
    fn apply_creates_the_object() {
        let ty = builtin("v1", "ConfigMap");
        let out = apply(None, &cm(json!({"a": "1"})), &apply_opts(&ty, "m", false, T1)).unwrap();
        assert_eq!(out["data"], json!({"a": "1"}));
        assert_eq!(
            entries(&out),
            vec![
                json!({"manager": "m", "operation": "Apply", "apiVersion": "v1", "time": T1,
                "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}})
            ]
        );
    }

    #[test]
    fn reapplying_the_same_configuration_changes_nothing() {
        let ty = builtin("v1", "ConfigMap");
        let first = apply(None, &cm(json!({"a": "1"})), &apply_opts(&ty, "m", false, T1)).unwrap();
        let second = apply(Some(&first), &cm(json!({"a": "1"})), &apply_opts(&ty, "m", false, T2)).unwrap();
        assert_eq!(first, second);
    }

    #[test]
    fn dropped_fields_are_removed() {
        let ty = builtin("v1", "ConfigMap");
        let first = apply(None, &cm(json!({"a": "1", "b": "2"})), &apply_opts(&ty, "m", false, T1)).unwrap();
        let second = apply(Some(&first), &cm(json!({"a": "1"})), &apply_opts(&ty, "m", false, T2)).unwrap();
        assert_eq!(second["data"], json!({"a": "1"}));
        assert_eq!(entries(&second)[0]["fieldsV1"], json!({"f:data": {"f:a": {}}}));
        assert_eq!(entries(&second)[0]["time"], T2);
    }

    #[test]
    fn shared_fields_survive_when_one_applier_drops_them() {
        let ty = builtin("v1", "ConfigMap");
        let first = apply(
            None,
            &cm(json!({"a": "1", "b": "2"})),
            &apply_opts(&ty, "one", false, T1),
        )
        .unwrap();
        let shared = apply(Some(&first), &cm(json!({"b": "2"})), &apply_opts(&ty, "two", false, T1)).unwrap();
        assert_eq!(entries(&shared).len(), 2);
        let dropped = apply(
            Some(&shared),
            &cm(json!({"a": "1"})),
            &apply_opts(&ty, "one", false, T2),
        )
        .unwrap();
        assert_eq!(dropped["data"], json!({"a": "1", "b": "2"}));
    }

    #[test]
    fn conflicting_apply_fails_with_the_apiserver_message() {
        let ty = builtin("v1", "ConfigMap");
        let first = apply(None, &cm(json!({"key": "1"})), &apply_opts(&ty, "one", false, T1)).unwrap();
        let err = apply(
            Some(&first),
            &cm(json!({"key": "2"})),
            &apply_opts(&ty, "two", false, T2),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"Apply failed with 1 conflict: conflict with "one": .data.key"#
        );
        assert_eq!(err.code(), 409);
        assert_eq!(
            err.status_causes(),
            vec![json!({"reason": "FieldManagerConflict", "message": "conflict with \"one\"", "field": ".data.key"})]
        );
    }

    #[test]
    fn force_moves_ownership() {
        let ty = builtin("v1", "ConfigMap");
        let first = apply(
            None,
            &cm(json!({"key": "1", "other": "x"})),
            &apply_opts(&ty, "one", false, T1),
        )
        .unwrap();
        let forced = apply(
            Some(&first),
            &cm(json!({"key": "2"})),
            &apply_opts(&ty, "two", true, T2),
        )
        .unwrap();
        assert_eq!(forced["data"], json!({"key": "2", "other": "x"}));
        let list = entries(&forced);
        assert_eq!(list[0]["manager"], "one");
        assert_eq!(list[0]["fieldsV1"], json!({"f:data": {"f:other": {}}}));
        assert_eq!(list[1]["manager"], "two");
        assert_eq!(list[1]["fieldsV1"], json!({"f:data": {"f:key": {}}}));
    }

    #[test]
    fn update_manager_then_apply_conflicts() {
        let ty = builtin("v1", "ConfigMap");
        let update = UpdateOptions {
            manager: "kubectl-client-side-apply".into(),
            ty: &ty,
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            subresource: None,
            time: T1.into(),
            ignored_fields: FieldSet::new(),
        };
        let mut created = record_update(None, &cm(json!({"key": "1"})), &update);
        created["metadata"]["uid"] = json!("u");
        let err = apply(
            Some(&created),
            &cm(json!({"key": "2"})),
            &apply_opts(&ty, "ssa", false, T2),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .data.key"#
        );
    }

    #[test]
    fn several_conflicts_are_grouped_by_manager() {
        let ty = builtin("v1", "ConfigMap");
        let first = apply(None, &cm(json!({"a": "1"})), &apply_opts(&ty, "one", false, T1)).unwrap();
        let second = apply(Some(&first), &cm(json!({"b": "1"})), &apply_opts(&ty, "two", false, T1)).unwrap();
        let err = apply(
            Some(&second),
            &cm(json!({"a": "2", "b": "2"})),
            &apply_opts(&ty, "three", false, T2),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Apply failed with 2 conflicts: conflicts with \"one\":\n- .data.a\nconflicts with \"two\":\n- .data.b"
        );
    }

    #[test]
    fn kubectl_server_side_upgrade_takes_over_client_side_fields() {
        let ty = builtin("v1", "ConfigMap");
        let last = r#"{"apiVersion":"v1","data":{"key":"1"},"kind":"ConfigMap","metadata":{"annotations":{},"name":"c","namespace":"default"}}"#;
        let mut object = cm(json!({"key": "1"}));
        object["metadata"]["annotations"] = json!({LAST_APPLIED_ANNOTATION: format!("{last}\n")});
        let update = UpdateOptions {
            manager: "kubectl-client-side-apply".into(),
            ty: &ty,
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            subresource: None,
            time: T1.into(),
            ignored_fields: FieldSet::new(),
        };
        let mut created = record_update(None, &object, &update);
        created["metadata"]["uid"] = json!("u");
        let out = apply(
            Some(&created),
            &cm(json!({"key": "1", "more": "2"})),
            &apply_opts(&ty, "kubectl", false, T2),
        )
        .unwrap();
        let annotation = out["metadata"]["annotations"][LAST_APPLIED_ANNOTATION]
            .as_str()
            .unwrap();
        assert_eq!(
            annotation,
            "{\"apiVersion\":\"v1\",\"data\":{\"key\":\"1\",\"more\":\"2\"},\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\",\"namespace\":\"default\"}}\n"
        );
        // Fields whose live value still matches the annotation may change hands without conflict.
        let changed = apply(
            Some(&created),
            &cm(json!({"key": "9"})),
            &apply_opts(&ty, "kubectl", false, T2),
        )
        .unwrap();
        assert_eq!(changed["data"]["key"], "9");
        // A field changed since the client-side apply is a conflict, and other managers are not upgraded.
        let mut drifted = created.clone();
        drifted["data"]["key"] = json!("5");
        let err = apply(
            Some(&drifted),
            &cm(json!({"key": "9"})),
            &apply_opts(&ty, "kubectl", false, T2),
        )
        .unwrap_err();
        assert_eq!(err.code(), 409);
        let err = apply(
            Some(&created),
            &cm(json!({"key": "9"})),
            &apply_opts(&ty, "other", false, T2),
        )
        .unwrap_err();
        assert_eq!(err.code(), 409);
    }

    fn pod_opts<'a>(ty: &'a FieldType, manager: &str, time: &str) -> ApplyOptions<'a> {
        ApplyOptions {
            kind: "Pod".into(),
            ..apply_opts(ty, manager, false, time)
        }
    }

    fn pod(containers: Value, finalizers: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": finalizers},
            "spec": {"containers": containers}})
    }

    #[test]
    fn dropped_list_items_and_set_values_are_removed() {
        let ty = builtin("v1", "Pod");
        let first = apply(
            None,
            &pod(
                json!([{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]),
                json!(["x/one", "x/two"]),
            ),
            &pod_opts(&ty, "m", T1),
        )
        .unwrap();
        let second = apply(
            Some(&first),
            &pod(json!([{"name": "a", "image": "1"}]), json!(["x/two"])),
            &pod_opts(&ty, "m", T2),
        )
        .unwrap();
        assert_eq!(second["spec"]["containers"], json!([{"name": "a", "image": "1"}]));
        assert_eq!(second["metadata"]["finalizers"], json!(["x/two"]));
    }

    #[test]
    fn untracked_objects_attribute_existing_fields_to_before_first_apply() {
        let ty = builtin("v1", "ConfigMap");
        let live = cm(json!({"a": "1", "b": "2"}));
        let out = apply(Some(&live), &cm(json!({"a": "1"})), &apply_opts(&ty, "m", false, T1)).unwrap();
        let list = entries(&out);
        assert_eq!(list.len(), 2);
        assert_eq!(list[0]["manager"], "m");
        assert_eq!(list[1]["manager"], "before-first-apply");
        assert_eq!(list[1]["operation"], "Update");
        assert_eq!(list[1]["fieldsV1"], json!({"f:data": {".": {}, "f:a": {}, "f:b": {}}}));
        let err = apply(Some(&out), &cm(json!({"b": "9"})), &apply_opts(&ty, "m", false, T2)).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"Apply failed with 1 conflict: conflict with "before-first-apply" using v1: .data.b"#
        );
    }

    #[test]
    fn duplicate_keys_in_the_configuration_are_rejected() {
        let ty = builtin("v1", "Pod");
        let err = apply(
            None,
            &pod(json!([{"name": "a"}, {"name": "a"}]), json!([])),
            &pod_opts(&ty, "m", T1),
        )
        .unwrap_err();
        assert_eq!(err.code(), 500);
        assert_eq!(
            err.to_string(),
            r#"failed to create typed patch object (/p; /v1, Kind=Pod): .spec.containers: duplicate entries for key [name="a"]"#
        );
    }

    #[test]
    fn invalid_configurations_are_rejected() {
        let ty = builtin("v1", "ConfigMap");
        let mut wrong_kind = cm(json!({}));
        wrong_kind["kind"] = json!("Secret");
        let err = apply(None, &wrong_kind, &apply_opts(&ty, "m", false, T1)).unwrap_err();
        assert_eq!(err.to_string(), "invalid object type: /v1, Kind=Secret");
        assert_eq!(err.code(), 400);
        let mut with_managed = cm(json!({}));
        with_managed["metadata"]["managedFields"] = json!([]);
        let err = apply(None, &with_managed, &apply_opts(&ty, "m", false, T1)).unwrap_err();
        assert_eq!(err.to_string(), "metadata.managedFields must be nil");
    }

    #[test]
    fn map_lists_and_sets_round_trip_in_fields_v1() {
        let ty = builtin("v1", "Service");
        let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "finalizers": ["a/b"]},
            "spec": {"ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080}]}});
        let opts = ApplyOptions {
            kind: "Service".into(),
            ..apply_opts(&ty, "m", false, T1)
        };
        let out = apply(None, &svc, &opts).unwrap();
        let fields = &entries(&out)[0]["fieldsV1"];
        assert_eq!(
            serde_json::to_string(fields).unwrap(),
            r#"{"f:metadata":{"f:finalizers":{"v:\"a/b\"":{}}},"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:port":{},"f:protocol":{},"f:targetPort":{}}}}}"#
        );
        let set = FieldSet::from_fields_v1(fields).unwrap();
        assert_eq!(&set.to_fields_v1(), fields);
    }

    #[test]
    fn status_is_ignored_when_reset_by_the_endpoint() {
        let ty = builtin("apps/v1", "Deployment");
        let dep = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"replicas": 1}, "status": {"replicas": 5}});
        let opts = ApplyOptions {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            ignored_fields: FieldSet::from_paths([crate::patch::FieldPath::fields(["status"])]),
            ..apply_opts(&ty, "m", false, T1)
        };
        let out = apply(None, &dep, &opts).unwrap();
        assert_eq!(entries(&out)[0]["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
    }
}
