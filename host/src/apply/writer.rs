//! The API writes of a reconcile: server-side apply of children, deletes, status, finalizers. Each is sent only if
//! the reconcile's [`Ticket`] still allows it (the replica holds its role in the term the reconcile began in).

use kube::ResourceExt;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, Preconditions, PropagationPolicy};
use serde_json::{Value, json};

use crate::lease::{Fenced, Ticket};

/// Why a write failed.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// Optimistic concurrency: the object changed meanwhile. Not an error: the key is re-queued.
    #[error("conflict writing {what}")]
    Conflict {
        /// What was being written.
        what: String,
        /// The API server's answer.
        #[source]
        source: kube::Error,
    },
    /// The API server refused or failed the write.
    #[error("API server refused writing {what}")]
    Api {
        /// What was being written.
        what: String,
        /// The API server's answer.
        #[source]
        source: kube::Error,
    },
    /// Not sent: the primary changed or went since the view (a read before the write showed it). Not an error: the
    /// key is re-queued and reconciled from the newer state.
    #[error("not writing for {what}: it changed since the view")]
    Moved {
        /// The primary.
        what: String,
    },
    /// Not sent: this replica may have lost the role it writes in. Not a failure of the object: the key is
    /// re-queued, and whoever holds the role now reconciles it.
    #[error("not writing {what}")]
    Fenced {
        /// What would have been written.
        what: String,
        /// Why the fence is closed.
        #[source]
        source: Fenced,
    },
}

impl WriteError {
    /// The CamelCase reason a failed write is reported with: `Forbidden` when RBAC refused it, `ApplyFailed` for
    /// anything else; `None` for a conflict, which is no failure.
    pub fn reason(&self) -> Option<&'static str> {
        match self {
            Self::Conflict { .. } | Self::Moved { .. } | Self::Fenced { .. } => None,
            Self::Api { source, .. } if api_code(source) == Some(403) => Some("Forbidden"),
            Self::Api { .. } => Some("ApplyFailed"),
        }
    }

    /// What kind of error it is, for traces: the [`reason`](Self::reason) of a failure, else `Conflict`, `Moved` or
    /// `Fenced`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Conflict { .. } => "Conflict",
            Self::Moved { .. } => "Moved",
            Self::Fenced { .. } => "Fenced",
            Self::Api { .. } => self.reason().unwrap_or("ApplyFailed"),
        }
    }

    fn from_kube(what: String, source: kube::Error) -> Self {
        if api_code(&source) == Some(409) {
            Self::Conflict { what, source }
        } else {
            Self::Api { what, source }
        }
    }
}

/// Checks `ticket` before writing `what`.
fn allowed(ticket: &Ticket, what: impl FnOnce() -> String) -> Result<()> {
    ticket
        .check()
        .map_err(|source| WriteError::Fenced { what: what(), source })
}

/// Result alias for this module.
pub type Result<T, E = WriteError> = std::result::Result<T, E>;

/// The HTTP status of an API error, if it is one.
pub fn api_code(error: &kube::Error) -> Option<u16> {
    match error {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// Server-side applies `object` with `field_manager`, forcing ownership of the fields it sets.
pub async fn apply(
    ticket: &Ticket,
    api: &Api<DynamicObject>,
    field_manager: &str,
    name: &str,
    object: &Value,
) -> Result<DynamicObject> {
    allowed(ticket, || format!("{} {name}", kind_of(object)))?;
    let params = PatchParams::apply(field_manager).force();
    api.patch(name, &params, &Patch::Apply(object)).await.map_err(|e| {
        let what = format!("{} {name}", kind_of(object));
        // A uid precondition that no longer holds (the child was deleted and recreated): a conflict, not a failure.
        if api_code(&e) == Some(422) && object["metadata"]["uid"].is_string() && mentions_uid(&e) {
            WriteError::Conflict { what, source: e }
        } else {
            WriteError::from_kube(what, e)
        }
    })
}

/// Deletes `name` if it is still the object the view saw (`uid` and `resource_version`): one recreated or changed
/// since is refused (409), so a delete that left this replica late cannot remove a child that has been applied
/// again since. A missing object is not an error. Returns the object when the API server kept it for its
/// finalizers (it is being deleted, not gone); `None` when it is gone.
pub async fn delete(
    ticket: &Ticket,
    api: &Api<DynamicObject>,
    kind: &str,
    name: &str,
    seen: (&str, &str),
) -> Result<Option<DynamicObject>> {
    allowed(ticket, || format!("delete of {kind} {name}"))?;
    let (uid, resource_version) = seen;
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(uid.to_owned()),
            resource_version: Some(resource_version.to_owned()),
        }),
        propagation_policy: Some(PropagationPolicy::Background),
        ..DeleteParams::default()
    };
    match api.delete(name, &params).await {
        Ok(answer) => Ok(answer
            .left()
            .filter(|object| object.metadata.deletion_timestamp.is_some() && !object.finalizers().is_empty())),
        Err(error) if api_code(&error) == Some(404) => Ok(None),
        Err(error) => Err(WriteError::from_kube(format!("delete of {kind} {name}"), error)),
    }
}

/// Replaces `.status` through the status subresource (merge patch of the whole status), guarded by the `(uid,
/// resourceVersion)` the reconcile saw: a primary recreated or changed since keeps its own status (the write is a
/// conflict and the key is reconciled again on the fresh object).
pub async fn write_status(
    ticket: &Ticket,
    api: &Api<DynamicObject>,
    field_manager: &str,
    name: &str,
    seen: Option<(&str, &str)>,
    status: &Value,
) -> Result<DynamicObject> {
    allowed(ticket, || format!("status of {name}"))?;
    let params = PatchParams {
        field_manager: Some(field_manager.to_owned()),
        ..PatchParams::default()
    };
    let patch = match seen {
        Some((uid, resource_version)) => {
            json!({ "metadata": {"uid": uid, "resourceVersion": resource_version}, "status": status })
        }
        None => json!({ "status": status }),
    };
    api.patch_status(name, &params, &Patch::Merge(&patch))
        .await
        .map_err(|e| {
            // A uid that no longer matches is refused as invalid (the field is immutable): the object moved on.
            if api_code(&e) == Some(422) && seen.is_some() {
                WriteError::Conflict {
                    what: format!("status of {name}"),
                    source: e,
                }
            } else {
                WriteError::from_kube(format!("status of {name}"), e)
            }
        })
}

/// Adds `finalizer` to the primary, guarded by its resourceVersion.
pub async fn add_finalizer(
    ticket: &Ticket,
    api: &Api<DynamicObject>,
    field_manager: &str,
    primary: &DynamicObject,
    finalizer: &str,
) -> Result<DynamicObject> {
    allowed(ticket, || format!("the finalizer of {}", primary.name_any()))?;
    let guard = json!({"op": "test", "path": "/metadata/resourceVersion", "value": primary.resource_version()});
    let operations = if primary.metadata.finalizers.is_some() {
        json!([guard, {"op": "add", "path": "/metadata/finalizers/-", "value": finalizer}])
    } else {
        json!([guard, {"op": "add", "path": "/metadata/finalizers", "value": [finalizer]}])
    };
    json_patch(
        api,
        field_manager,
        &primary.name_any(),
        operations,
        "adding the finalizer",
    )
    .await
}

/// Removes `finalizer` from the primary, guarded by its uid and the position the finalizer is at. `None` when it was not there or the
/// object is gone.
pub async fn remove_finalizer(
    ticket: &Ticket,
    api: &Api<DynamicObject>,
    field_manager: &str,
    primary: &DynamicObject,
    finalizer: &str,
) -> Result<Option<DynamicObject>> {
    allowed(ticket, || format!("the finalizer of {}", primary.name_any()))?;
    let Some(index) = primary.finalizers().iter().position(|f| f == finalizer) else {
        return Ok(None);
    };
    // The uid guard: a primary deleted and created again under its name since the view keeps its finalizer.
    let operations = json!([
        {"op": "test", "path": "/metadata/uid", "value": primary.uid().unwrap_or_default()},
        {"op": "test", "path": format!("/metadata/finalizers/{index}"), "value": finalizer},
        {"op": "remove", "path": format!("/metadata/finalizers/{index}")},
    ]);
    match json_patch(
        api,
        field_manager,
        &primary.name_any(),
        operations,
        "removing the finalizer",
    )
    .await
    {
        Ok(object) => Ok(Some(object)),
        Err(WriteError::Api { source, .. }) if api_code(&source) == Some(404) => Ok(None),
        Err(error) => Err(error),
    }
}

async fn json_patch(
    api: &Api<DynamicObject>,
    field_manager: &str,
    name: &str,
    operations: Value,
    what: &str,
) -> Result<DynamicObject> {
    let patch: json_patch::Patch = serde_json::from_value(operations).expect("well-formed JSON patch");
    let params = PatchParams {
        field_manager: Some(field_manager.to_owned()),
        ..PatchParams::default()
    };
    match api.patch(name, &params, &Patch::<()>::Json(patch)).await {
        Ok(object) => Ok(object),
        // A failed `test` is answered 422 by the API server: the object moved on; retry like a conflict.
        Err(error) if api_code(&error) == Some(422) => Err(WriteError::Conflict {
            what: format!("{what} on {name}"),
            source: error,
        }),
        Err(error) => Err(WriteError::from_kube(format!("{what} on {name}"), error)),
    }
}

/// Whether an API error is about `metadata.uid` (the immutable-field refusal of a uid precondition).
fn mentions_uid(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.message.contains("metadata.uid"))
}

fn kind_of(object: &Value) -> &str {
    object["kind"].as_str().unwrap_or("object")
}
