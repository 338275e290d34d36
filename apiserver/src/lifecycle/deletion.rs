//! Deletion: preconditions, propagation finalizers (`orphan`, `foregroundDeletion`), graceful
//! deletion with `deletionTimestamp`, namespace termination and CRD cleanup.

use std::sync::Arc;

use serde_json::{Value, json};

use super::WriteRequest;
use crate::cluster::{Cluster, UNDELETABLE_NAMESPACES};
use crate::error::{ApiError, ApiResult};
use crate::object;
use crate::registry::{ResourceInfo, conversion, crd};
use crate::storage::{Change, ObjectKey};

/// Finalizer the garbage collector handles for `Orphan` propagation.
pub const ORPHAN_FINALIZER: &str = "orphan";
/// Finalizer the garbage collector handles for `Foreground` propagation.
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// `propagationPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// Delete now; the collector removes dependents afterwards (the default).
    Background,
    /// Keep the owner until its blocking dependents are gone.
    Foreground,
    /// Keep dependents, removing their owner references.
    Orphan,
}

impl Propagation {
    /// Parse the option value.
    pub fn parse(value: &str) -> ApiResult<Self> {
        match value {
            "Background" => Ok(Propagation::Background),
            "Foreground" => Ok(Propagation::Foreground),
            "Orphan" => Ok(Propagation::Orphan),
            other => Err(ApiError::invalid_fields(
                "meta.k8s.io",
                "DeleteOptions",
                "",
                &[crate::error::FieldViolation::not_supported(
                    "propagationPolicy",
                    other,
                    &["Foreground", "Background", "Orphan", "nil"],
                )],
            )),
        }
    }
}

/// DeleteOptions that matter here.
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    /// Propagation policy (None = the kind's default, Background).
    pub propagation: Option<Propagation>,
    /// `preconditions.uid`.
    pub uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub resource_version: Option<String>,
    /// `dryRun=All`.
    pub dry_run: bool,
}

/// What a delete did.
#[derive(Debug)]
pub enum Deleted {
    /// The object is gone; its last state (served form).
    Gone(Value),
    /// The object waits for finalizers; its current state (served form).
    Pending(Value),
}

impl Cluster {
    /// Delete one object.
    pub fn delete(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        name: &str,
        options: &DeleteOptions,
    ) -> ApiResult<Deleted> {
        let fault_name = if info.group.is_empty() {
            info.plural.clone()
        } else {
            format!("{}.{}", info.plural, info.group)
        };
        if let Some(fault) = self.faults.take_write_fault(&fault_name) {
            return Err(fault.to_error(info.subject(name)));
        }
        self.delete_unfaulted(info, namespace, name, options)
    }

    /// Delete one object without consulting fault injection (the collector's deletes).
    pub fn delete_unfaulted(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        name: &str,
        options: &DeleteOptions,
    ) -> ApiResult<Deleted> {
        let key = ObjectKey::new(&info.storage, namespace, name);
        let is_namespace = info.is_builtin() && info.group.is_empty() && info.kind == "Namespace";
        let is_crd = info.group == "apiextensions.k8s.io" && info.kind == "CustomResourceDefinition";
        let is_pod = info.is_builtin() && info.group.is_empty() && info.kind == "Pod";
        let written = self.store.write(&key, options.dry_run, |current, _| {
            let Some(current) = current else {
                return Err(ApiError::not_found(info.subject(name)));
            };
            // Preconditions are checked before deletion starts, naming the kind rather than the resource.
            let kind_subject = crate::error::Subject {
                group: &info.group,
                resource: &info.kind,
                name,
            };
            if let Some(uid) = &options.uid
                && uid != object::uid(current)
            {
                return Err(ApiError::conflict(
                    kind_subject,
                    &format!(
                        "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                        object::uid(current)
                    ),
                ));
            }
            if let Some(version) = &options.resource_version
                && version != object::resource_version(current)
            {
                return Err(ApiError::conflict(
                    kind_subject,
                    &format!(
                        "the ResourceVersion in the precondition ({version}) does not match the ResourceVersion in record ({}). The object might have been modified",
                        object::resource_version(current)
                    ),
                ));
            }
            if is_namespace && UNDELETABLE_NAMESPACES.contains(&name) {
                return Err(ApiError::forbidden(
                    info.subject(name),
                    "this namespace may not be deleted",
                ));
            }
            let mut object = (**current).clone();
            let already_deleting = object::is_deleting(&object);
            if is_namespace {
                if already_deleting {
                    return Ok(Change::Unchanged(current.clone()));
                }
                mark_deleting(&mut object);
                object::metadata_mut(&mut object).remove("deletionGracePeriodSeconds");
                object["status"] = json!({"phase": "Terminating"});
                return Ok(Change::Update(object));
            }
            let mut finalizers = object::finalizers(&object);
            let before = finalizers.clone();
            match options.propagation {
                Some(Propagation::Orphan) => {
                    finalizers.retain(|f| f != FOREGROUND_FINALIZER);
                    if !finalizers.iter().any(|f| f == ORPHAN_FINALIZER) {
                        finalizers.push(ORPHAN_FINALIZER.to_string());
                    }
                }
                Some(Propagation::Foreground) => {
                    finalizers.retain(|f| f != ORPHAN_FINALIZER);
                    if !finalizers.iter().any(|f| f == FOREGROUND_FINALIZER) {
                        finalizers.push(FOREGROUND_FINALIZER.to_string());
                    }
                }
                Some(Propagation::Background) if already_deleting => {
                    finalizers.retain(|f| f != ORPHAN_FINALIZER && f != FOREGROUND_FINALIZER);
                }
                _ => {}
            }
            if is_crd && !finalizers.iter().any(|f| f == crd::CLEANUP_FINALIZER) && !already_deleting {
                finalizers.push(crd::CLEANUP_FINALIZER.to_string());
            }
            if finalizers.is_empty() {
                object::set_finalizers(&mut object, &finalizers);
                if is_pod && !already_deleting {
                    // A pod no node runs is deleted at once, after its deletion is marked (which the answer shows).
                    mark_deleting(&mut object);
                }
                return Ok(Change::Delete(object));
            }
            if already_deleting && finalizers == before {
                return Ok(Change::Unchanged(current.clone()));
            }
            object::set_finalizers(&mut object, &finalizers);
            if !already_deleting {
                mark_deleting(&mut object);
                if is_crd {
                    object["status"] = crd::accepted_status(&object, Some(current), None);
                }
            }
            Ok(Change::Update(object))
        })?;
        if !options.dry_run {
            if is_crd {
                self.refresh_registry();
            }
            self.wake_collector();
        }
        let served = conversion::to_served(info, (*written.object).clone());
        let gone = written.event == Some(crate::storage::EventType::Deleted)
            || (options.dry_run && object::finalizers(&written.object).is_empty() && !is_namespace);
        Ok(if gone {
            Deleted::Gone(served)
        } else {
            Deleted::Pending(served)
        })
    }

    /// Delete every object of a list request's selection; returns their served states.
    pub fn delete_collection(
        &self,
        request: &WriteRequest,
        filter: &dyn Fn(&Value) -> bool,
        options: &DeleteOptions,
    ) -> ApiResult<Vec<Value>> {
        let namespace = if request.info.namespaced && !request.namespace.is_empty() {
            Some(request.namespace.as_str())
        } else {
            None
        };
        let page = self.store.list(&request.info.storage, namespace, None, None, filter);
        let mut deleted = Vec::new();
        for item in page.items {
            match self.delete(&request.info, object::namespace(&item), object::name(&item), options) {
                Ok(Deleted::Gone(object)) | Ok(Deleted::Pending(object)) => deleted.push(object),
                Err(error) if error.code == 404 => {}
                Err(error) => return Err(error),
            }
        }
        Ok(deleted)
    }
}

fn mark_deleting(object: &mut Value) {
    let generation = object::metadata(object)
        .and_then(|m| m.get("generation"))
        .and_then(Value::as_i64);
    let meta = object::metadata_mut(object);
    meta.insert("deletionTimestamp".into(), json!(object::now_rfc3339()));
    meta.insert("deletionGracePeriodSeconds".into(), json!(0));
    if let Some(generation) = generation {
        meta.insert("generation".into(), json!(generation + 1));
    }
}
