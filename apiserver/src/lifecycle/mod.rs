//! Object lifecycle: what create, update, patch and delete do to an object before it is stored
//! (defaults, schema, metadata rules, generation, managedFields, finalizers, deletion).

pub mod deletion;
pub mod patching;
pub mod scale;

use std::sync::Arc;

use serde_json::{Value, json};

use crate::cluster::{Cluster, namespaces_storage};
use crate::error::{ApiError, ApiResult, FieldViolation};
use crate::object;
use crate::registry::{ResourceInfo, StorageId, conversion, crd, defaults, validation};
use crate::storage::{Change, ObjectKey};

/// `fieldValidation` of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldValidation {
    /// Reject unknown and duplicate fields.
    Strict,
    /// Accept them with a warning (the server default).
    #[default]
    Warn,
    /// Drop them silently.
    Ignore,
}

impl FieldValidation {
    /// Parse the query value; `options` is the kind of options refused values are reported against
    /// (`CreateOptions`, `PatchOptions`, …).
    pub fn parse(value: Option<&str>, options: &str) -> ApiResult<Self> {
        match value {
            None | Some("") | Some("Warn") => Ok(FieldValidation::Warn),
            Some("Strict") => Ok(FieldValidation::Strict),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some(other) => Err(ApiError::invalid_fields(
                "meta.k8s.io",
                options,
                "",
                &[FieldViolation::not_supported(
                    "fieldValidation",
                    other,
                    &["", "Ignore", "Strict", "Warn"],
                )],
            )),
        }
    }
}

/// Everything a write needs to know besides the body.
#[derive(Debug, Clone)]
pub struct WriteRequest {
    /// The resource written to.
    pub info: Arc<ResourceInfo>,
    /// Namespace of the request ("" for cluster-scoped).
    pub namespace: String,
    /// `status` for `/status` writes.
    pub subresource: Option<String>,
    /// `dryRun=All`.
    pub dry_run: bool,
    /// Field manager.
    pub manager: String,
    /// `fieldValidation`.
    pub validation: FieldValidation,
}

impl WriteRequest {
    fn key(&self, name: &str) -> ObjectKey {
        ObjectKey::new(&self.info.storage, &self.namespace, name)
    }

    fn is_status(&self) -> bool {
        self.subresource.as_deref() == Some("status")
    }

    fn fault_name(&self) -> String {
        if self.info.group.is_empty() {
            self.info.plural.clone()
        } else {
            format!("{}.{}", self.info.plural, self.info.group)
        }
    }

    fn check_fault(&self, cluster: &Cluster, name: &str) -> ApiResult<()> {
        match cluster.faults.take_write_fault(&self.fault_name()) {
            Some(fault) => Err(fault.to_error(self.info.subject(name))),
            None => Ok(()),
        }
    }
}

/// Result of a create, update or patch.
#[derive(Debug)]
pub struct WriteOutcome {
    /// The object as served at the request's version.
    pub object: Value,
    /// Whether the write created the object (201).
    pub created: bool,
    /// Warnings for `Warning` headers.
    pub warnings: Vec<String>,
}

/// The kind of a PATCH body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    /// `application/json-patch+json`.
    Json,
    /// `application/merge-patch+json`.
    Merge,
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply).
    Apply {
        /// `force=true`.
        force: bool,
    },
}

fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    uuid::Uuid::new_v4()
        .as_bytes()
        .iter()
        .take(5)
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect()
}

/// The Go package of a group's internal types, which the real server's conversion errors name.
fn internal_package(group: &str) -> &str {
    match group {
        "" | "events.k8s.io" => "core",
        other => other.split('.').next().unwrap_or(other),
    }
}

/// A body of another built-in type (or of no known type) sent to a built-in endpoint: the real server's decoder
/// fails to convert it into the endpoint's type.
fn foreign_type(info: &ResourceInfo, api_version: &str, kind: &str) -> ApiError {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let known = crate::registry::builtin::BUILTIN_KINDS
        .iter()
        .any(|builtin| builtin.group == group && builtin.version == version && builtin.kind == kind);
    let cause = if known {
        format!(
            "converting ({version}.{kind}) to ({}.{}): unknown conversion",
            internal_package(&info.group),
            info.kind
        )
    } else {
        format!(
            "no kind {} is registered for version {} in scheme \"pkg/runtime/scheme.go:111\"",
            crate::go_format::quote(kind),
            crate::go_format::quote(api_version)
        )
    };
    ApiError::bad_request(format!(
        "{kind} in version {} cannot be handled as a {}: {cause}",
        crate::go_format::quote(version),
        info.kind
    ))
}

/// A create or update body of a built-in kind must be of the endpoint's type, or the decoder refuses it.
fn check_body_type(info: &ResourceInfo, body: &Value) -> ApiResult<()> {
    if !info.is_builtin() {
        return Ok(());
    }
    let expected_version = info.api_version();
    let given_version = body.get("apiVersion").and_then(Value::as_str).filter(|v| !v.is_empty());
    let given_kind = body.get("kind").and_then(Value::as_str).filter(|k| !k.is_empty());
    if given_version.is_some_and(|v| v != expected_version) || given_kind.is_some_and(|k| k != info.kind) {
        return Err(foreign_type(
            info,
            given_version.unwrap_or(&expected_version),
            given_kind.unwrap_or(&info.kind),
        ));
    }
    Ok(())
}

/// Check `apiVersion`/`kind` of a body against the endpoint and fill them when missing.
fn check_type_meta(info: &ResourceInfo, object: &mut Value) -> ApiResult<()> {
    let Some(map) = object.as_object_mut() else {
        return Err(ApiError::bad_request("the body of the request was not a JSON object"));
    };
    let expected_version = info.api_version();
    match map.get("apiVersion").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("apiVersion".into(), json!(expected_version));
        }
        Some(version) if version != expected_version => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({version}) does not match the expected API version ({expected_version})"
            )));
        }
        Some(_) => {}
    }
    match map.get("kind").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("kind".into(), json!(info.kind));
        }
        Some(kind) if kind != info.kind => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({kind}) does not match the expected kind ({})",
                info.kind
            )));
        }
        Some(_) => {}
    }
    Ok(())
}

/// A body the real server could not decode into the kind's Go type is a 400 naming the kind and version.
fn check_decodable(info: &ResourceInfo, body: &Value) -> ApiResult<()> {
    match validation::decode_problem(info, body) {
        Some(problem) => Err(ApiError::bad_request(format!(
            "{kind} in version {version} cannot be handled as a {kind}: {problem}",
            kind = info.kind,
            version = crate::go_format::quote(&info.version),
        ))),
        None => Ok(()),
    }
}

/// A patch whose result the real server cannot decode into the kind's Go type is refused as an invalid `patch`,
/// quoting the patched object.
fn check_patched_decodable(info: &ResourceInfo, patched: &Value) -> ApiResult<()> {
    let Some(problem) = validation::decode_problem(info, patched) else {
        return Ok(());
    };
    let violation = FieldViolation {
        field: "patch".into(),
        reason: "FieldValueInvalid".into(),
        message: format!(
            "Invalid value: {}: {problem}",
            crate::go_format::quote(&crate::go_format::json_text(patched))
        ),
    };
    Err(
        ApiError::new(422, "Invalid", format!(" \"\" is invalid: {}", violation.line())).with_details(
            json!({"causes": [{"reason": violation.reason, "message": violation.message, "field": violation.field}]}),
        ),
    )
}

fn check_namespace(request: &WriteRequest, object: &mut Value) -> ApiResult<()> {
    let given = object::namespace(object).to_string();
    if request.info.namespaced {
        if !given.is_empty() && given != request.namespace {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        object::metadata_mut(object).insert("namespace".into(), json!(request.namespace));
    } else {
        object::metadata_mut(object).remove("namespace");
    }
    Ok(())
}

/// Compare objects ignoring resourceVersion and the timestamps in managedFields (without copying).
fn same_content(a: &Value, b: &Value) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return a == b;
    };
    a.len() == b.len()
        && a.iter().all(|(key, left)| match b.get(key) {
            Some(right) if key == "metadata" => same_metadata(left, right),
            Some(right) => left == right,
            None => false,
        })
}

fn same_metadata(a: &Value, b: &Value) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return a == b;
    };
    let relevant = |map: &serde_json::Map<String, Value>| map.keys().filter(|k| *k != "resourceVersion").count();
    if relevant(a) != relevant(b) {
        return false;
    }
    a.iter().filter(|(k, _)| *k != "resourceVersion").all(|(key, left)| {
        let Some(right) = b.get(key) else {
            return false;
        };
        if key != "managedFields" {
            return left == right;
        }
        match (left.as_array(), right.as_array()) {
            (Some(l), Some(r)) => {
                l.len() == r.len()
                    && l.iter().zip(r).all(|(x, y)| match (x.as_object(), y.as_object()) {
                        (Some(x), Some(y)) => {
                            x.iter().filter(|(k, _)| *k != "time").count()
                                == y.iter().filter(|(k, _)| *k != "time").count()
                                && x.iter().filter(|(k, _)| *k != "time").all(|(k, v)| y.get(k) == Some(v))
                        }
                        _ => x == y,
                    })
            }
            _ => left == right,
        }
    })
}

fn without_metadata_and(object: &Value, drop_status: bool) -> Value {
    let mut copy = object.clone();
    if let Some(map) = copy.as_object_mut() {
        map.remove("metadata");
        if drop_status {
            map.remove("status");
        }
    }
    copy
}

impl Cluster {
    /// Apply defaults, CRD rules and the custom resource schema to an object in storage form.
    fn admit(&self, request: &WriteRequest, object: &mut Value, warnings: &mut Vec<String>) -> ApiResult<()> {
        let info = &request.info;
        object::drop_empty_metadata(object);
        if info.group == "apiextensions.k8s.io" && info.kind == "CustomResourceDefinition" {
            crd::apply_defaults(object);
        }
        defaults::apply_defaults(info, object);
        patching::apply_schema(request, object, warnings)?;
        Ok(())
    }

    fn reject_invalid(&self, request: &WriteRequest, name: &str, violations: &[FieldViolation]) -> ApiResult<()> {
        if violations.is_empty() {
            return Ok(());
        }
        let info = &request.info;
        // Events are validated as the core kind whichever group they come through.
        let group = if info.kind == "Event" && info.is_builtin() {
            ""
        } else {
            info.group.as_str()
        };
        Err(ApiError::invalid_fields(group, &info.kind, name, violations))
    }

    fn validate_object(
        &self,
        request: &WriteRequest,
        object: &Value,
        old: Option<&Value>,
        warnings: &mut Vec<String>,
    ) -> ApiResult<()> {
        let mut violations = patching::validate(request, object, old, warnings);
        violations.extend(validation::validate(&request.info, object, old, &request.info.group));
        if request.info.kind == "CustomResourceDefinition" && request.info.group == "apiextensions.k8s.io" {
            violations.extend(crd::validate(object));
        }
        if let Some(old) = old
            && object::is_deleting(old)
        {
            let before = object::finalizers(old);
            let mut added: Vec<String> = object::finalizers(object)
                .into_iter()
                .filter(|f| !before.contains(f))
                .collect();
            if !added.is_empty() {
                added.sort();
                added.dedup();
                let listed: Vec<String> = added.iter().map(|f| crate::go_format::quote(f)).collect();
                violations.push(FieldViolation::forbidden(
                    "metadata.finalizers",
                    &format!(
                        "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                        listed.join(", ")
                    ),
                ));
            }
        }
        self.reject_invalid(request, object::name(object), &violations)
    }

    /// Create an object (POST).
    pub fn create(&self, request: &WriteRequest, mut body: Value) -> ApiResult<WriteOutcome> {
        check_body_type(&request.info, &body)?;
        check_type_meta(&request.info, &mut body)?;
        check_decodable(&request.info, &body)?;
        check_namespace(request, &mut body)?;
        let mut warnings = Vec::new();
        let mut object = conversion::to_storage(&request.info, body);
        self.admit(request, &mut object, &mut warnings)?;
        let created = self.create_prepared(request, object, None, &mut warnings)?;
        Ok(WriteOutcome {
            object: created,
            created: true,
            warnings,
        })
    }

    /// Store a new object that went through admission; `applied` carries a server-side apply config.
    fn create_prepared(
        &self,
        request: &WriteRequest,
        mut object: Value,
        applied: Option<(&Value, bool)>,
        warnings: &mut Vec<String>,
    ) -> ApiResult<Value> {
        let info = request.info.clone();
        {
            let meta = object::metadata_mut(&mut object);
            let has_name = meta.get("name").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
            if !has_name
                && let Some(prefix) = meta.get("generateName").and_then(Value::as_str)
                && !prefix.is_empty()
            {
                let name = format!("{prefix}{}", random_suffix());
                meta.insert("name".into(), json!(name));
            }
        }
        let name = object::name(&object).to_string();
        request.check_fault(self, &name)?;
        if info.namespaced {
            match self.namespace_state(&request.namespace) {
                None => {
                    return Err(ApiError::not_found(crate::error::Subject {
                        group: "",
                        resource: "namespaces",
                        name: &request.namespace,
                    }));
                }
                Some(true) => {
                    // The NamespaceLifecycle admission plugin's refusal, with its cause.
                    let mut details = info.subject(&name).details();
                    details["causes"] = json!([{
                        "reason": "NamespaceTerminating",
                        "message": format!("namespace {} is being terminated", request.namespace),
                        "field": "metadata.namespace",
                    }]);
                    return Err(ApiError::forbidden(
                        info.subject(&name),
                        &format!(
                            "unable to create new content in namespace {} because it is being terminated",
                            request.namespace
                        ),
                    )
                    .with_details(details));
                }
                Some(false) => {}
            }
        }
        let uid = uuid::Uuid::new_v4().to_string();
        {
            let meta = object::metadata_mut(&mut object);
            meta.insert("uid".into(), json!(uid));
            meta.insert("creationTimestamp".into(), json!(object::now_rfc3339()));
            meta.remove("resourceVersion");
            meta.remove("deletionTimestamp");
            meta.remove("deletionGracePeriodSeconds");
            meta.remove("selfLink");
            if info.generation {
                meta.insert("generation".into(), json!(1));
            } else {
                meta.remove("generation");
            }
        }
        // Ownership is recorded before the server fills in what is its own (initial status, generated selectors,
        // allocated addresses), as the real server's field manager runs before its create strategy.
        let mut object = match applied {
            Some((config, force)) => {
                // Apply computes ownership of the configuration; the stored object is the admitted one.
                let applied = patching::apply(request, None, config, force)?;
                let managed = object::metadata(&applied).and_then(|m| m.get("managedFields")).cloned();
                let mut object = object;
                if let Some(managed) = managed {
                    object::metadata_mut(&mut object).insert("managedFields".into(), managed);
                }
                object
            }
            None => patching::record(request, None, object),
        };
        defaults::initial_status(&info, &mut object);
        if info.is_builtin() && info.kind == "Pod" && info.group.is_empty() {
            defaults::admit_pod(&mut object, &random_suffix());
        }
        if info.is_builtin() && info.kind == "Job" && info.group == "batch" {
            defaults::job_selector(&mut object, &uid);
        }
        if info.is_builtin() && info.kind == "Service" && info.group.is_empty() {
            self.allocate_service_addresses(&mut object);
        }
        self.validate_object(request, &object, None, warnings)?;
        let key = request.key(&name);
        let written = self.store.write(&key, request.dry_run, move |current, _| {
            if current.is_some() {
                return Err(ApiError::already_exists(info.subject(&name)));
            }
            Ok(Change::Create(object))
        })?;
        self.after_write(request, &written.object);
        Ok(conversion::to_served(&request.info, (*written.object).clone()))
    }

    fn after_write(&self, request: &WriteRequest, object: &Value) {
        if request.dry_run {
            return;
        }
        let info = &request.info;
        if info.group == "apiextensions.k8s.io" && info.kind == "CustomResourceDefinition" {
            let name = object::name(object).to_string();
            if object::is_deleting(object) {
                self.refresh_registry();
                self.wake_collector();
            } else {
                self.reconcile_crd(&name);
            }
        }
        if info.is_builtin() && info.group.is_empty() && info.kind == "Namespace" {
            // A new namespace gets its kube-root-ca.crt and default ServiceAccount from the collector.
            self.wake_collector();
        }
        if object::is_deleting(object) || self.has_absent_or_deleting_owner(object) {
            self.wake_collector();
        }
    }

    /// Whether an owner `object` refers to is gone or being deleted: only then can the collector act on the
    /// object itself. Writes of dependents whose owners are alive do not wake it (a full pass over every
    /// object after each child write would keep it running back to back under load); an owner's own deletion
    /// wakes it, and the periodic sweep covers the rest.
    fn has_absent_or_deleting_owner(&self, object: &Value) -> bool {
        object::owner_references(object).iter().any(|reference| {
            let uid = reference.get("uid").and_then(Value::as_str).unwrap_or_default();
            self.store
                .key_of_uid(uid)
                .and_then(|key| self.store.get(&key))
                .is_none_or(|owner| object::is_deleting(&owner))
        })
    }

    /// Replace an object (PUT), on the main resource or `/status`.
    pub fn update(&self, request: &WriteRequest, name: &str, mut body: Value) -> ApiResult<WriteOutcome> {
        check_body_type(&request.info, &body)?;
        check_type_meta(&request.info, &mut body)?;
        check_decodable(&request.info, &body)?;
        let body_name = object::name(&body).to_string();
        if body_name.is_empty() {
            object::metadata_mut(&mut body).insert("name".into(), json!(name));
        } else if body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        check_namespace(request, &mut body)?;
        request.check_fault(self, name)?;
        let mut warnings = Vec::new();
        let mut object = conversion::to_storage(&request.info, body);
        self.admit(request, &mut object, &mut warnings)?;
        let key = request.key(name);
        let info = request.info.clone();
        let written = loop {
            let current = self
                .store
                .get(&key)
                .ok_or_else(|| ApiError::not_found(info.subject(name)))?;
            let change = self.prepare_update(request, &current, object.clone(), None, &mut warnings)?;
            if let Some(written) = self.store.swap(&key, request.dry_run, Some(&current), change)? {
                break written;
            }
        };
        self.after_write(request, &written.object);
        Ok(WriteOutcome {
            object: conversion::to_served(&request.info, (*written.object).clone()),
            created: false,
            warnings,
        })
    }

    /// Patch an object; server-side apply creates it when missing.
    pub fn patch(&self, request: &WriteRequest, name: &str, kind: PatchKind, body: &[u8]) -> ApiResult<WriteOutcome> {
        let document = patching::parse_patch(kind, body, request.validation)?;
        request.check_fault(self, name)?;
        let key = request.key(name);
        let info = request.info.clone();
        let mut warnings = Vec::new();
        if let PatchKind::Apply { force } = kind {
            patching::check_apply_config(request, name, &document)?;
            if self.store.get(&key).is_none() && !request.is_status() {
                // A uid in the applied object is a precondition: an object that does not exist does not have it (it
                // was deleted since the caller saw it), so nothing is created. A resourceVersion is ignored here.
                let uid = object::uid(&document);
                if !uid.is_empty() {
                    return Err(ApiError::conflict(
                        info.subject(name),
                        &format!(
                            "uid mismatch: the provided object specified uid {uid}, and no existing object was found"
                        ),
                    ));
                }
                let mut config = document.clone();
                check_type_meta(&info, &mut config)?;
                check_namespace(request, &mut config)?;
                let mut object = conversion::to_storage(&info, config.clone());
                self.admit(request, &mut object, &mut warnings)?;
                match self.create_prepared(request, object, Some((&config, force)), &mut warnings) {
                    Ok(created) => {
                        return Ok(WriteOutcome {
                            object: created,
                            created: true,
                            warnings,
                        });
                    }
                    Err(error) if error.reason == "AlreadyExists" => {}
                    Err(error) => return Err(error),
                }
            }
        }
        let written = loop {
            let current = self
                .store
                .get(&key)
                .ok_or_else(|| ApiError::not_found(info.subject(name)))?;
            let current = &current;
            let served = conversion::to_served(&info, (**current).clone());
            let (patched, applied) = match kind {
                PatchKind::Json => (patching::json_patch(&served, &document)?, false),
                PatchKind::Merge => (patching::merge_patch(&served, &document), false),
                PatchKind::Strategic => (patching::strategic_patch(&info, &served, &document)?, false),
                PatchKind::Apply { force } => (patching::apply(request, Some(&served), &document, force)?, true),
            };
            let mut patched = patched;
            if object::name(&patched) != name {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({}) does not match the name on the URL ({name})",
                    object::name(&patched)
                )));
            }
            check_type_meta(&info, &mut patched)?;
            check_patched_decodable(&info, &patched)?;
            check_namespace(request, &mut patched)?;
            let mut object = conversion::to_storage(&info, patched);
            warnings.clear();
            self.admit(request, &mut object, &mut warnings)?;
            let change = self.prepare_update(request, current, object, Some(applied), &mut warnings)?;
            if let Some(written) = self.store.swap(&key, request.dry_run, Some(current), change)? {
                break written;
            }
        };
        self.after_write(request, &written.object);
        Ok(WriteOutcome {
            object: conversion::to_served(&request.info, (*written.object).clone()),
            created: false,
            warnings,
        })
    }

    /// The update rules: preconditions, status subresource, system metadata, generation,
    /// finalizers, managedFields and completion of a pending deletion.
    /// `patched` is None for PUT, Some(applied) for patches.
    fn prepare_update(
        &self,
        request: &WriteRequest,
        current: &Arc<Value>,
        mut object: Value,
        patched: Option<bool>,
        warnings: &mut Vec<String>,
    ) -> ApiResult<Change> {
        let info = &request.info;
        let name = object::name(current).to_string();
        let requested_version = object::resource_version(&object).to_string();
        if requested_version.is_empty() && patched.is_none() && info.custom.is_some() {
            // Custom resources allow no unconditional update; the storage layer names the resource.
            let resource = info.subject(&name).qualified();
            let violation =
                FieldViolation::invalid("metadata.resourceVersion", &json!(0), "must be specified for an update");
            return Err(ApiError::invalid(
                &info.group,
                &info.plural,
                &name,
                format!(
                    "{resource} {} is invalid: {}",
                    crate::go_format::quote(&name),
                    violation.line()
                ),
                vec![json!({"reason": violation.reason, "message": violation.message, "field": violation.field})],
            ));
        }
        if !requested_version.is_empty() && requested_version != object::resource_version(current) {
            return Err(ApiError::stale(info.subject(&name)));
        }
        let requested_uid = object::uid(&object).to_string();
        if !requested_uid.is_empty() && requested_uid != object::uid(current) {
            return Err(ApiError::conflict(
                info.subject(&name),
                &format!(
                    "Precondition failed: UID in precondition: {}, UID in object meta: {}",
                    requested_uid,
                    object::uid(current)
                ),
            ));
        }
        if request.is_status() {
            let status = object.get("status").cloned();
            let managed = object::metadata(&object).and_then(|m| m.get("managedFields")).cloned();
            let mut replaced = (**current).clone();
            match status {
                Some(status) => replaced["status"] = status,
                None => {
                    if let Some(map) = replaced.as_object_mut() {
                        map.remove("status");
                    }
                }
            }
            match managed {
                Some(managed) => {
                    object::metadata_mut(&mut replaced).insert("managedFields".into(), managed);
                }
                None => {
                    object::metadata_mut(&mut replaced).remove("managedFields");
                }
            }
            object = replaced;
        } else if info.status_subresource {
            match current.get("status") {
                Some(status) => object["status"] = status.clone(),
                None => {
                    if let Some(map) = object.as_object_mut() {
                        map.remove("status");
                    }
                }
            }
        }
        let current_meta = object::metadata(current).cloned().unwrap_or_default();
        {
            let meta = object::metadata_mut(&mut object);
            for field in [
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
            ] {
                match current_meta.get(field) {
                    Some(value) => {
                        meta.insert(field.into(), value.clone());
                    }
                    None => {
                        meta.remove(field);
                    }
                }
            }
            meta.insert("resourceVersion".into(), json!(object::resource_version(current)));
            meta.remove("selfLink");
            if !meta.contains_key("managedFields")
                && let Some(managed) = current_meta.get("managedFields")
                && patched != Some(true)
            {
                meta.insert("managedFields".into(), managed.clone());
            }
        }
        if info.is_builtin() && info.kind == "Namespace" && info.group.is_empty() {
            // spec.finalizers changes only through /finalize; phase is owned by the server.
            if let Some(spec) = current.get("spec") {
                object["spec"] = spec.clone();
            }
        }
        self.validate_object(request, &object, Some(current), warnings)?;
        if info.generation {
            let drop_status = info.status_subresource;
            if without_metadata_and(&object, drop_status) != without_metadata_and(current, drop_status) {
                let generation = object::metadata(current)
                    .and_then(|m| m.get("generation"))
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                object::metadata_mut(&mut object).insert("generation".into(), json!(generation + 1));
            }
        }
        if patched != Some(true) {
            if same_content(&object, current) {
                return Ok(Change::Unchanged(current.clone()));
            }
            object = patching::record(request, Some(current), object);
        }
        if same_content(&object, current) {
            return Ok(Change::Unchanged(current.clone()));
        }
        if object::is_deleting(&object)
            && object::finalizers(&object).is_empty()
            && !self.has_spec_finalizers(info, &object)
        {
            return Ok(Change::Delete(object));
        }
        Ok(Change::Update(object))
    }

    fn has_spec_finalizers(&self, info: &ResourceInfo, object: &Value) -> bool {
        info.is_builtin()
            && info.kind == "Namespace"
            && !object::string_list(object::path(object, &["spec", "finalizers"])).is_empty()
    }

    fn allocate_service_addresses(&self, service: &mut Value) {
        let service_type = object::path_str(service, &["spec", "type"]).to_string();
        if service_type == "ExternalName" {
            return;
        }
        let spec = object::ensure_object(service, &["spec"]);
        for (field, value) in [
            ("ipFamilyPolicy", json!("SingleStack")),
            ("ipFamilies", json!(["IPv4"])),
        ] {
            if spec.get(field).is_none_or(Value::is_null) {
                spec.insert(field.into(), value);
            }
        }
        let page = self
            .store
            .list(&StorageId::from("/services"), None, None, None, &|_| true);
        let used_ips: std::collections::HashSet<String> = page
            .items
            .iter()
            .map(|s| object::path_str(s, &["spec", "clusterIP"]).to_string())
            .collect();
        let used_ports: std::collections::HashSet<i64> = page
            .items
            .iter()
            .flat_map(|s| {
                object::path(s, &["spec", "ports"])
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default()
            })
            .filter_map(|p| p.get("nodePort").and_then(Value::as_i64))
            .collect();
        let seed = u64::from_le_bytes(uuid::Uuid::new_v4().as_bytes()[..8].try_into().expect("8 bytes"));
        let ip = object::path_str(service, &["spec", "clusterIP"]).to_string();
        if ip.is_empty() {
            // 10.96.0.0/12 without the network address and 10.96.0.1 (the kubernetes service).
            let size: u64 = 1 << 20;
            let allocated = (0..size)
                .map(|i| 2 + (seed + i) % (size - 3))
                .map(|offset| {
                    let base: u32 = (10 << 24) | (96 << 16);
                    let address = base + offset as u32;
                    std::net::Ipv4Addr::from(address).to_string()
                })
                .find(|candidate| !used_ips.contains(candidate));
            if let Some(ip) = allocated {
                let spec = object::ensure_object(service, &["spec"]);
                spec.insert("clusterIP".into(), json!(ip));
                spec.insert("clusterIPs".into(), json!([ip]));
            }
        } else if object::path(service, &["spec", "clusterIPs"]).is_none() {
            object::ensure_object(service, &["spec"]).insert("clusterIPs".into(), json!([ip]));
        }
        if service_type == "NodePort" || service_type == "LoadBalancer" {
            let mut taken = used_ports;
            if let Some(ports) = service.pointer_mut("/spec/ports").and_then(Value::as_array_mut) {
                for (index, port) in ports.iter_mut().enumerate() {
                    if port.get("nodePort").and_then(Value::as_i64).is_some_and(|p| p != 0) {
                        continue;
                    }
                    let chosen = (0..2768)
                        .map(|i| 30000 + ((seed as i64 + index as i64 * 7919 + i) % 2768))
                        .find(|p| !taken.contains(p));
                    if let Some(chosen) = chosen {
                        taken.insert(chosen);
                        port["nodePort"] = json!(chosen);
                    }
                }
            }
        }
    }

    /// Namespaces key helper for other modules.
    pub fn namespace_key(name: &str) -> ObjectKey {
        ObjectKey::new(&namespaces_storage(), "", name)
    }
}
