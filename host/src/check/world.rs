//! An offline world around one primary: the embedded API server's object rules in memory (defaults, schema
//! validation and pruning, server-side apply with managed fields, generation, finalizers, garbage collection) and
//! the host's rules for applying an outcome (the applier's planning from [`crate::apply`]: children with namespace
//! and controller reference, unchanged applies skipped, pruning, status merged with conditions and
//! `observedGeneration`, the finalizer's steps).
//!
//! What differs from a cluster on purpose: no other controller runs (a Deployment never gets pods or a status
//! unless a fixture gives it one), time is a logical clock that moves one second per reconcile, and a reconcile
//! never races another writer.

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use kube::api::ApiResource;
use serde_json::{Value, json};
use wasm_reconciler_apiserver::cluster::{Cluster, Settings};
use wasm_reconciler_apiserver::lifecycle::deletion::{DeleteOptions, Propagation};
use wasm_reconciler_apiserver::lifecycle::{FieldValidation, PatchKind, WriteRequest};
use wasm_reconciler_apiserver::registry::{ResourceInfo, conversion};
use wasm_reconciler_apiserver::storage::{Change, ObjectKey, Store};

use super::compare::{child_label, short, subset_differences, value_differences};
use crate::apply::FinalizerState;
use crate::apply::children::{PrimaryRef, is_subset, prepare_children};
use crate::apply::status::{ReconciledState, desired_status};
use crate::plugin::{ControllerSpec, Gvk, ObjectReader, Outcome, ReconcileError, WorldView};
use crate::runtime::CachedObject;

/// Watch events the in-memory store keeps; nothing watches it.
const WATCH_HISTORY: usize = 16;
/// The logical clock's start: condition times are `2026-01-01T00:00:00Z` plus one second per reconcile.
const CLOCK_START: i64 = 1_767_225_600;
/// The manager the world's own set-up writes (fixture objects' status, spec edits) are recorded under.
const SETUP_MANAGER: &str = "plugin-check";

/// Why a world could not be set up from a fixture.
#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    /// The API server refused an object of the fixture or a CRD.
    #[error("the API server refuses {what}: {message}")]
    Refused {
        /// What was written.
        what: String,
        /// The API server's message.
        message: String,
    },
    /// A kind is not served: neither built in nor defined by a given CRD.
    #[error("{what} is of kind {kind}, which is neither built in nor defined by a CRD given with --crd")]
    UnknownKind {
        /// What has the kind.
        what: String,
        /// The kind.
        kind: String,
    },
    /// The fixture does not fit the plugin.
    #[error("{0}")]
    Mismatch(String),
}

/// Result alias for this module.
pub type Result<T, E = WorldError> = std::result::Result<T, E>;

/// What every world of one check shares: the CRDs, the plugin's spec and name.
#[derive(Debug, Clone)]
pub struct Setup {
    /// CustomResourceDefinitions to install.
    pub crds: Vec<Value>,
    /// The plugin's controller spec.
    pub spec: ControllerSpec,
    /// The plugin's name (its field manager is `wasm-reconciler/<name>`).
    pub plugin: String,
    /// The plugin configuration as JSON text.
    pub config: String,
}

/// The objects a world starts with.
#[derive(Debug, Clone, Default)]
pub struct Start {
    /// The primary (server-assigned metadata is replaced).
    pub primary: Value,
    /// Children of the primary as observed before, with the status others gave them.
    pub children: Vec<Value>,
    /// Further objects for `get` and `list`.
    pub objects: Vec<Value>,
    /// The primary is being deleted (it carries the plugin's finalizer).
    pub deleting: bool,
    /// Consecutive failures so far.
    pub attempt: u32,
}

/// One kind the world serves, and where.
#[derive(Debug, Clone)]
struct Served {
    gvk: Gvk,
    info: Arc<ResourceInfo>,
}

/// What one call of the host's applier did to the world.
#[derive(Debug, Clone, Default)]
pub struct Applied {
    /// What changed in the stored objects, one line each (empty when nothing did).
    pub changes: Vec<String>,
    /// Writes the host sends although they change nothing stored: the API server drops or rewrites what was sent,
    /// so the host will send them again on every reconcile.
    pub idle_writes: Vec<String>,
    /// Why the host refused the outcome or the API server refused a write (recorded as `Reconciled=False`).
    pub refused: Option<String>,
}

/// The cluster and the host around one primary.
pub struct World {
    cluster: Cluster,
    setup: Arc<Setup>,
    field_manager: String,
    primary: Served,
    owned: Vec<Served>,
    read: Vec<Served>,
    namespace: Option<String>,
    name: String,
    attempt: u32,
    clock: i64,
    /// Per child (kind, namespace/name): the hash of what the host last applied, to skip unchanged applies.
    last_applied: HashMap<(Gvk, String), u64>,
    /// The primary's spec was stored past validation ([`World::force_spec`]) and not replaced since.
    spec_past_validation: bool,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("primary", &self.primary.gvk)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl World {
    /// A world holding `start`: CRDs installed, namespaces created, the objects written through the API server
    /// (children applied as the plugin would have applied them, their status written apart), the primary deleted
    /// if `start.deleting`.
    pub fn new(setup: Arc<Setup>, start: &Start) -> Result<Self> {
        let cluster = Cluster::new(
            Store::in_memory(WATCH_HISTORY),
            Settings {
                bearer_token: None,
                bookmark_interval: Duration::from_secs(3600),
            },
        );
        cluster.bootstrap();
        let crd_info = builtin(&cluster, "apiextensions.k8s.io/v1", "CustomResourceDefinition");
        for crd in &setup.crds {
            let name = crd
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            create(&cluster, &crd_info, "", crd.clone(), SETUP_MANAGER)
                .map_err(|message| refused(format!("CRD {name}"), message))?;
        }

        let kind_of = |object: &Value| Gvk::of_object(object).unwrap_or_else(|| Gvk::new("", "", ""));
        let serve = |gvk: &Gvk, what: &str| -> Result<Served> {
            let info = cluster
                .registry()
                .by_kind(&gvk.api_version(), &gvk.kind)
                .ok_or_else(|| WorldError::UnknownKind {
                    what: what.to_owned(),
                    kind: gvk.to_string(),
                })?;
            Ok(Served { gvk: gvk.clone(), info })
        };
        let primary_gvk = kind_of(&start.primary);
        if primary_gvk != setup.spec.primary {
            return Err(WorldError::Mismatch(format!(
                "the fixture's primary is a {primary_gvk}, but the plugin reconciles {}",
                setup.spec.primary
            )));
        }
        let primary = serve(&primary_gvk, "the primary")?;
        let owned = setup
            .spec
            .owns
            .iter()
            .map(|gvk| serve(gvk, "a kind the plugin owns"))
            .collect::<Result<Vec<_>>>()?;
        let read = setup
            .spec
            .reads
            .iter()
            .map(|gvk| serve(gvk, "a kind the plugin reads"))
            .collect::<Result<Vec<_>>>()?;

        let name = start
            .primary
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .filter(|name| !name.is_empty())
            .ok_or_else(|| WorldError::Mismatch("the primary has no metadata.name".into()))?
            .to_owned();
        let namespace = primary.info.namespaced.then(|| {
            start
                .primary
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or("default")
                .to_owned()
        });
        let mut world = World {
            field_manager: format!("wasm-reconciler/{}", setup.plugin),
            cluster,
            setup,
            primary,
            owned,
            read,
            namespace,
            name,
            attempt: start.attempt,
            clock: 0,
            last_applied: HashMap::new(),
            spec_past_validation: false,
        };
        world.populate(start)?;
        Ok(world)
    }

    fn populate(&mut self, start: &Start) -> Result<()> {
        let mut namespaces: Vec<String> = self.namespace.iter().cloned().collect();
        for object in start.children.iter().chain(&start.objects) {
            if let Some(namespace) = object.pointer("/metadata/namespace").and_then(Value::as_str) {
                namespaces.push(namespace.to_owned());
            }
        }
        namespaces.sort();
        namespaces.dedup();
        let namespace_info = builtin(&self.cluster, "v1", "Namespace");
        for namespace in namespaces {
            if self.cluster.namespace_state(&namespace).is_none() {
                let object = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
                create(&self.cluster, &namespace_info, "", object, SETUP_MANAGER)
                    .map_err(|message| refused(format!("namespace {namespace}"), message))?;
            }
        }

        for object in &start.objects {
            let gvk = Gvk::of_object(object).ok_or_else(|| {
                WorldError::Mismatch(format!(
                    "an object of `objects` has no apiVersion or kind: {}",
                    short(object)
                ))
            })?;
            let info = self.info_of(&gvk).ok_or_else(|| WorldError::UnknownKind {
                what: format!("object {}", child_label(object)),
                kind: gvk.to_string(),
            })?;
            let namespace = self.namespace_of(&info, object);
            let written = create(
                &self.cluster,
                &info,
                &namespace,
                without_server_fields(object),
                SETUP_MANAGER,
            )
            .map_err(|message| refused(format!("object {}", child_label(object)), message))?;
            self.write_status_of(&info, &namespace, &written, object)?;
        }

        let primary_info = self.primary.info.clone();
        let namespace = self.namespace.clone().unwrap_or_default();
        let mut primary = without_server_fields(&start.primary);
        if start.deleting
            && let Some(finalizer) = &self.setup.spec.finalizer
            && !string_list(&primary["metadata"]["finalizers"]).contains(finalizer)
        {
            let mut finalizers = string_list(&primary["metadata"]["finalizers"]);
            finalizers.push(finalizer.clone());
            primary["metadata"]["finalizers"] = json!(finalizers);
        }
        // The fixture's uid is kept: every world of a fixture has the same primary, as a plugin that marks what it
        // creates outside the cluster with its primary's uid must see.
        let uid = start.primary.pointer("/metadata/uid").and_then(Value::as_str);
        let written = create_with_uid(&self.cluster, &primary_info, &namespace, primary, uid)
            .map_err(|message| refused(format!("the primary {}", self.name), message))?;
        self.write_status_of(&primary_info, &namespace, &written, &start.primary)?;
        let uid = written.pointer("/metadata/uid").cloned().unwrap_or(Value::Null);

        for child in &start.children {
            let gvk = Gvk::of_object(child).unwrap_or_else(|| Gvk::new("", "", ""));
            let Some(served) = self.owned.iter().find(|served| served.gvk == gvk).cloned() else {
                return Err(WorldError::Mismatch(format!(
                    "child {} is of a kind the plugin does not own ({})",
                    child_label(child),
                    gvk
                )));
            };
            let mut applied = without_server_fields(child);
            if let Some(fields) = applied.as_object_mut() {
                fields.remove("status");
            }
            applied["metadata"]["ownerReferences"] = json!([{
                "apiVersion": self.primary.gvk.api_version(),
                "kind": self.primary.gvk.kind,
                "name": self.name,
                "uid": uid,
                "controller": true,
                "blockOwnerDeletion": true,
            }]);
            let namespace = self.namespace_of(&served.info, child);
            if served.info.namespaced {
                applied["metadata"]["namespace"] = json!(namespace);
            }
            // Written as someone else's update rather than the plugin's apply: the plugin's first apply then takes
            // the fields it sends, and fields it does not send (an allocated clusterIP, defaults) stay as they are.
            let name = child_label(child);
            let written = create(&self.cluster, &served.info, &namespace, applied, SETUP_MANAGER)
                .map_err(|message| refused(format!("child {name}"), message))?;
            self.write_status_of(&served.info, &namespace, &written, child)?;
        }

        if start.deleting {
            if self.setup.spec.finalizer.is_none() {
                return Err(WorldError::Mismatch(
                    "the fixture says `deleting: true`, but the plugin declares no finalizer: the host calls a \
                     plugin on a deleting object only to run its finalizer"
                        .into(),
                ));
            }
            self.delete_primary();
        }
        Ok(())
    }

    /// The primary as the API server serves it, without `managedFields`; `None` once it is gone.
    pub fn primary(&self) -> Option<Value> {
        let namespace = self.namespace.clone().unwrap_or_default();
        self.get(&self.primary.info, &namespace, &self.name)
    }

    /// The primary's children as the host's caches hold them: objects of the owned kinds whose controller
    /// reference has the primary's uid, kind by kind in `owns` order, each sorted by namespace and name.
    pub fn children(&self) -> Vec<Value> {
        let Some(primary) = self.primary() else {
            return Vec::new();
        };
        let uid = primary.pointer("/metadata/uid").cloned().unwrap_or(Value::Null);
        let mut children = Vec::new();
        for served in &self.owned {
            let mut of_kind: Vec<Value> = self
                .list(&served.info)
                .into_iter()
                .filter(|object| {
                    object
                        .pointer("/metadata/ownerReferences")
                        .and_then(Value::as_array)
                        .is_some_and(|references| {
                            references
                                .iter()
                                .any(|reference| reference["controller"] == true && reference["uid"] == uid)
                        })
                })
                .collect();
            of_kind.sort_by_key(|object| {
                (
                    object
                        .pointer("/metadata/namespace")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    object
                        .pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                )
            });
            children.extend(of_kind);
        }
        children
    }

    /// What the finalizer's state machine makes of the primary now: adds the plugin's finalizer first when it is
    /// missing (state `Add`, as the host does before the plugin runs). `None` when the plugin is not called: the
    /// primary is gone, or being deleted without the plugin's finalizer.
    pub fn prepare(&mut self) -> Option<FinalizerState> {
        let primary = self.primary()?;
        let state = FinalizerState::of(&self.cached(&primary)?.meta, self.setup.spec.finalizer.as_deref());
        match state {
            FinalizerState::Add => {
                let finalizer = self.setup.spec.finalizer.clone().unwrap_or_default();
                let operation = if primary.pointer("/metadata/finalizers").is_some() {
                    json!([{"op": "add", "path": "/metadata/finalizers/-", "value": finalizer}])
                } else {
                    json!([{"op": "add", "path": "/metadata/finalizers", "value": [finalizer]}])
                };
                let namespace = self.namespace.clone().unwrap_or_default();
                let request = self.request(&self.primary.info, &namespace, None, &self.field_manager);
                if let Err(error) =
                    self.cluster
                        .patch(&request, &self.name, PatchKind::Json, operation.to_string().as_bytes())
                {
                    tracing::warn!(error = %error.message, "adding the finalizer failed");
                }
                Some(FinalizerState::Apply)
            }
            FinalizerState::Released => None,
            other => Some(other),
        }
    }

    /// The world view the host would hand the plugin now, and what its `get` and `list` calls would see.
    pub fn view(&self) -> Option<(WorldView, Arc<ObjectReader>)> {
        let primary = self.cached(&self.primary()?)?;
        let children = self.children();
        let child_texts = children
            .iter()
            .filter_map(|child| Gvk::of_object(child).and_then(|gvk| CachedObject::from_json(child.clone(), &gvk)))
            .map(|child| child.json.to_string())
            .collect();
        let mut kinds: Vec<&Served> = Vec::new();
        for served in std::iter::once(&self.primary).chain(&self.owned).chain(&self.read) {
            if !kinds.iter().any(|kind| kind.gvk == served.gvk) {
                kinds.push(served);
            }
        }
        let visible = kinds.iter().flat_map(|served| self.list(&served.info));
        let reader = ObjectReader::new(visible).expect("served objects carry apiVersion and kind");
        let view = WorldView {
            primary: primary.json.to_string(),
            children: child_texts,
            config: self.setup.config.clone(),
            deleting: primary.meta.deleting,
            attempt: self.attempt,
        };
        Some((view, Arc::new(reader)))
    }

    /// Applies the plugin's answer as the host's applier would: on an outcome, children (all refused when one is
    /// out of scope), pruning, status, and the finalizer's removal once a deleting primary is `finalized`; on an
    /// error, `Reconciled=False` with its reason. Moves the logical clock one second.
    pub fn apply(&mut self, result: &std::result::Result<Outcome, ReconcileError>) -> Applied {
        self.clock += 1;
        let before = self.snapshot();
        let mut applied = Applied::default();
        let Some(primary) = self.primary() else {
            return applied;
        };
        match result {
            Err(error) => {
                self.attempt += 1;
                let state = ReconciledState::failed(error.reason(), error.to_string());
                self.write_status(&primary, None, &[], &state, &mut applied);
            }
            Ok(outcome) => match self.write_children(&primary, outcome, &mut applied) {
                Err(refusal) => {
                    self.attempt += 1;
                    let (reason, message) = refusal;
                    applied.refused = Some(message.clone());
                    self.write_status(
                        &primary,
                        None,
                        &[],
                        &ReconciledState::failed(reason, message),
                        &mut applied,
                    );
                }
                Ok(()) => {
                    self.attempt = 0;
                    let state = ReconciledState::succeeded();
                    self.write_status(
                        &primary,
                        outcome.status.as_ref(),
                        &outcome.conditions,
                        &state,
                        &mut applied,
                    );
                    let deleting = primary.pointer("/metadata/deletionTimestamp").is_some();
                    if deleting && outcome.finalized {
                        self.remove_finalizer();
                    }
                }
            },
        }
        applied.changes = describe_changes(&before, &self.snapshot());
        applied
    }

    /// Replaces the primary's spec through the API server (validated, defaulted, generation bumped); `Err` carries
    /// the API server's refusal.
    pub fn update_spec(&mut self, spec: &Value) -> std::result::Result<(), String> {
        let Some(mut primary) = self.primary() else {
            return Err("the primary is gone".into());
        };
        primary["spec"] = spec.clone();
        let namespace = self.namespace.clone().unwrap_or_default();
        let request = self.request(&self.primary.info, &namespace, None, SETUP_MANAGER);
        self.cluster
            .update(&request, &self.name, primary)
            .map_err(|error| error.message)?;
        self.spec_past_validation = false;
        Ok(())
    }

    /// Replaces the primary's spec in storage, past the API server's validation, as an object stored before its
    /// CRD's schema was tightened would be; bumps the generation.
    pub fn force_spec(&mut self, spec: &Value) {
        let namespace = self.namespace.clone().unwrap_or_default();
        let key = ObjectKey::new(&self.primary.info.storage, &namespace, &self.name);
        let result = self.cluster.store.write(&key, false, |current, _| {
            let Some(current) = current else {
                return Ok(Change::Unchanged(Arc::new(Value::Null)));
            };
            let mut object = (**current).clone();
            object["spec"] = spec.clone();
            let generation = object
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            object["metadata"]["generation"] = json!(generation + 1);
            Ok(Change::Update(object))
        });
        match result {
            Ok(_) => self.spec_past_validation = true,
            Err(error) => tracing::warn!(error = %error.message, "writing the spec past validation failed"),
        }
    }

    /// Deletes the primary (with the plugin's finalizer on it, it is only marked for deletion).
    pub fn delete_primary(&mut self) {
        let namespace = self.namespace.clone().unwrap_or_default();
        let options = DeleteOptions {
            propagation: Some(Propagation::Background),
            ..DeleteOptions::default()
        };
        if let Err(error) = self
            .cluster
            .delete(&self.primary.info, &namespace, &self.name, &options)
        {
            tracing::warn!(error = %error.message, "deleting the primary failed");
        }
        wasm_reconciler_apiserver::gc::collect(&self.cluster);
    }

    fn write_children(
        &mut self,
        primary: &Value,
        outcome: &Outcome,
        applied: &mut Applied,
    ) -> std::result::Result<(), (&'static str, String)> {
        let Some(desired) = &outcome.children else {
            return Ok(());
        };
        let dynamic: kube::api::DynamicObject =
            serde_json::from_value(primary.clone()).map_err(|error| ("InvalidPrimary", error.to_string()))?;
        let resource = ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk(
                &self.primary.gvk.group,
                &self.primary.gvk.version,
                &self.primary.gvk.kind,
            ),
            &self.primary.info.plural,
        );
        let Some(primary_ref) = PrimaryRef::of(&dynamic, &resource) else {
            return Ok(());
        };
        let owned = self.owned.clone();
        let prepared = prepare_children(&primary_ref, &self.setup.spec, desired, |gvk| {
            owned.iter().any(|served| &served.gvk == gvk && served.info.namespaced)
        })
        .map_err(|error| ("ScopeDenied", format!("outcome refused, nothing was written: {error}")))?;

        for child in &prepared {
            let served = owned
                .iter()
                .find(|served| served.gvk == child.gvk)
                .expect("prepare_children admits owned kinds only");
            let namespace = self.namespace_of(&served.info, &child.object);
            let key = (child.gvk.clone(), format!("{namespace}/{}", child.name));
            let hash = hash_of(&child.object);
            let observed = self.get(&served.info, &namespace, &child.name);
            let unchanged = self.last_applied.get(&key) == Some(&hash)
                && observed
                    .as_ref()
                    .is_some_and(|observed| is_subset(&child.object, observed));
            if unchanged {
                continue;
            }
            let label = child_label(&child.object);
            let written = self
                .server_side_apply(&served.info, &namespace, &child.object)
                .map_err(|message| ("ApplyFailed", format!("API server refused writing {label}: {message}")))?;
            self.last_applied.insert(key, hash);
            let lost = subset_differences(&child.object, &written);
            if !lost.is_empty() {
                let lost: Vec<String> = lost.into_iter().take(3).collect();
                applied.idle_writes.push(format!(
                    "apply of {label}: the API server stores other values than the plugin sends ({}), so the host \
                     applies it again on every reconcile",
                    lost.join("; ")
                ));
            }
        }

        let uid = primary.pointer("/metadata/uid").cloned().unwrap_or(Value::Null);
        for served in &owned {
            for observed in self.list(&served.info) {
                let controlled = observed
                    .pointer("/metadata/ownerReferences")
                    .and_then(Value::as_array)
                    .is_some_and(|references| {
                        references
                            .iter()
                            .any(|reference| reference["controller"] == true && reference["uid"] == uid)
                    });
                let name = observed
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let namespace = observed
                    .pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let elsewhere = self.primary.info.namespaced && Some(namespace) != self.namespace.as_deref();
                let wanted = prepared
                    .iter()
                    .any(|child| child.gvk == served.gvk && child.name == name);
                if controlled && !elsewhere && !wanted {
                    let options = DeleteOptions {
                        propagation: Some(Propagation::Background),
                        uid: observed
                            .pointer("/metadata/uid")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                        ..DeleteOptions::default()
                    };
                    match self.cluster.delete(&served.info, namespace, name, &options) {
                        Ok(_) => {
                            self.last_applied
                                .remove(&(served.gvk.clone(), format!("{namespace}/{name}")));
                        }
                        Err(error) if error.code == 404 => {}
                        Err(error) => {
                            return Err((
                                "ApplyFailed",
                                format!(
                                    "API server refused deleting {}: {}",
                                    child_label(&observed),
                                    error.message
                                ),
                            ));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn write_status(
        &mut self,
        primary: &Value,
        plugin_status: Option<&Value>,
        conditions: &[crate::plugin::Condition],
        state: &ReconciledState,
        applied: &mut Applied,
    ) {
        let generation = primary.pointer("/metadata/generation").and_then(Value::as_i64);
        let status = desired_status(
            primary.get("status"),
            plugin_status,
            conditions,
            state,
            generation,
            &self.now(),
        );
        if primary.get("status") == Some(&status) {
            return;
        }
        let namespace = self.namespace.clone().unwrap_or_default();
        let request = self.request(&self.primary.info, &namespace, Some("status"), &self.field_manager);
        let patch = json!({"status": status});
        match self
            .cluster
            .patch(&request, &self.name, PatchKind::Merge, patch.to_string().as_bytes())
        {
            Ok(written) => {
                let stored = written.object.get("status").cloned().unwrap_or(Value::Null);
                if stored != status {
                    let dropped: Vec<String> = value_differences(&status, &stored).into_iter().take(3).collect();
                    applied.idle_writes.push(format!(
                        "status write: the API server stores another status than the host sends ({}), so the host \
                         writes it again on every reconcile; is every status field in the CRD's schema?",
                        dropped.join("; ")
                    ));
                }
            }
            // The embedded API server validates the whole object on a status write, where Kubernetes 1.30 and later
            // ratchet (KEP-4008): fields a write leaves unchanged are not validated again, so an object stored
            // before its schema tightened still takes its status. That is the case here; the status is stored as
            // such a cluster would.
            Err(_) if self.spec_past_validation => self.store_status(&status),
            Err(error) => {
                applied.refused = Some(format!("API server refused writing the status: {}", error.message));
            }
        }
    }

    fn store_status(&mut self, status: &Value) {
        let namespace = self.namespace.clone().unwrap_or_default();
        let key = ObjectKey::new(&self.primary.info.storage, &namespace, &self.name);
        let result = self.cluster.store.write(&key, false, |current, _| {
            let Some(current) = current else {
                return Ok(Change::Unchanged(Arc::new(Value::Null)));
            };
            let mut object = (**current).clone();
            object["status"] = status.clone();
            Ok(Change::Update(object))
        });
        if let Err(error) = result {
            tracing::warn!(error = %error.message, "storing the status past validation failed");
        }
    }

    fn remove_finalizer(&mut self) {
        let Some(primary) = self.primary() else { return };
        let Some(finalizer) = &self.setup.spec.finalizer else {
            return;
        };
        let Some(index) = string_list(&primary["metadata"]["finalizers"])
            .iter()
            .position(|f| f == finalizer)
        else {
            return;
        };
        let operations = json!([
            {"op": "test", "path": format!("/metadata/finalizers/{index}"), "value": finalizer},
            {"op": "remove", "path": format!("/metadata/finalizers/{index}")},
        ]);
        let namespace = self.namespace.clone().unwrap_or_default();
        let request = self.request(&self.primary.info, &namespace, None, &self.field_manager);
        if let Err(error) = self
            .cluster
            .patch(&request, &self.name, PatchKind::Json, operations.to_string().as_bytes())
        {
            tracing::warn!(error = %error.message, "removing the finalizer failed");
        }
        // Background deletion: the garbage collector takes what the primary owned once it is gone.
        wasm_reconciler_apiserver::gc::collect(&self.cluster);
    }

    fn server_side_apply(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        object: &Value,
    ) -> std::result::Result<Value, String> {
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let request = self.request(info, namespace, None, &self.field_manager);
        self.cluster
            .patch(
                &request,
                name,
                PatchKind::Apply { force: true },
                object.to_string().as_bytes(),
            )
            .map(|written| written.object)
            .map_err(|error| error.message)
    }

    /// Writes the `status` of `source` (a fixture object) onto `written` through the status subresource, as the
    /// controllers that own it would have.
    fn write_status_of(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        written: &Value,
        source: &Value,
    ) -> Result<()> {
        let Some(status) = source.get("status").filter(|status| !status.is_null()) else {
            return Ok(());
        };
        if !info.status_subresource {
            return Ok(());
        }
        let name = written
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let request = self.request(info, namespace, Some("status"), SETUP_MANAGER);
        let patch = json!({"status": status});
        self.cluster
            .patch(&request, name, PatchKind::Merge, patch.to_string().as_bytes())
            .map(drop)
            .map_err(|error| refused(format!("the status of {}", child_label(source)), error.message))
    }

    fn request(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        subresource: Option<&str>,
        manager: &str,
    ) -> WriteRequest {
        WriteRequest {
            info: info.clone(),
            namespace: if info.namespaced {
                namespace.to_owned()
            } else {
                String::new()
            },
            subresource: subresource.map(str::to_owned),
            dry_run: false,
            manager: manager.to_owned(),
            validation: FieldValidation::Warn,
        }
    }

    fn get(&self, info: &Arc<ResourceInfo>, namespace: &str, name: &str) -> Option<Value> {
        let namespace = if info.namespaced { namespace } else { "" };
        let stored = self
            .cluster
            .store
            .get(&ObjectKey::new(&info.storage, namespace, name))?;
        Some(without_managed_fields(&conversion::to_served(info, (*stored).clone())))
    }

    fn list(&self, info: &Arc<ResourceInfo>) -> Vec<Value> {
        let page = self.cluster.store.list(&info.storage, None, None, None, &|_| true);
        page.items
            .iter()
            .map(|stored| without_managed_fields(&conversion::to_served(info, (**stored).clone())))
            .collect()
    }

    fn info_of(&self, gvk: &Gvk) -> Option<Arc<ResourceInfo>> {
        self.cluster.registry().by_kind(&gvk.api_version(), &gvk.kind)
    }

    fn namespace_of(&self, info: &ResourceInfo, object: &Value) -> String {
        if !info.namespaced {
            return String::new();
        }
        object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| self.namespace.clone())
            .unwrap_or_else(|| "default".into())
    }

    fn cached(&self, object: &Value) -> Option<CachedObject> {
        CachedObject::from_json(object.clone(), &Gvk::of_object(object)?)
    }

    fn now(&self) -> String {
        k8s_openapi::jiff::Timestamp::from_second(CLOCK_START + self.clock)
            .map(|time| time.to_string())
            .unwrap_or_default()
    }

    /// Every stored object of the primary's, the owned and the read kinds, by label, without what changes on every
    /// write (resourceVersion, managedFields).
    fn snapshot(&self) -> BTreeMap<String, Value> {
        let mut objects = BTreeMap::new();
        for served in std::iter::once(&self.primary).chain(&self.owned) {
            for mut object in self.list(&served.info) {
                if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                    metadata.remove("resourceVersion");
                }
                let namespace = object
                    .pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                objects.insert(format!("{} in {namespace}", child_label(&object)), object);
            }
        }
        objects
    }
}

/// A built-in kind's resource, which every cluster serves.
fn builtin(cluster: &Cluster, api_version: &str, kind: &str) -> Arc<ResourceInfo> {
    cluster
        .registry()
        .by_kind(api_version, kind)
        .unwrap_or_else(|| panic!("the embedded API server serves {api_version} {kind}"))
}

fn create(
    cluster: &Cluster,
    info: &Arc<ResourceInfo>,
    namespace: &str,
    object: Value,
    manager: &str,
) -> std::result::Result<Value, String> {
    let request = WriteRequest {
        info: info.clone(),
        namespace: namespace.to_owned(),
        subresource: None,
        dry_run: false,
        manager: manager.to_owned(),
        validation: FieldValidation::Warn,
    };
    cluster
        .create(&request, object)
        .map(|written| written.object)
        .map_err(|error| error.message)
}

/// Creates `object` through the API server's admission (defaults, schema, metadata rules), stored with `uid` when
/// one is given instead of a fresh one.
fn create_with_uid(
    cluster: &Cluster,
    info: &Arc<ResourceInfo>,
    namespace: &str,
    object: Value,
    uid: Option<&str>,
) -> std::result::Result<Value, String> {
    let Some(uid) = uid.filter(|uid| !uid.is_empty()) else {
        return create(cluster, info, namespace, object, SETUP_MANAGER);
    };
    let request = WriteRequest {
        info: info.clone(),
        namespace: namespace.to_owned(),
        subresource: None,
        dry_run: true,
        manager: SETUP_MANAGER.to_owned(),
        validation: FieldValidation::Warn,
    };
    let mut admitted = cluster.create(&request, object).map_err(|error| error.message)?.object;
    admitted["metadata"]["uid"] = json!(uid);
    let name = admitted
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let key = ObjectKey::new(&info.storage, if info.namespaced { namespace } else { "" }, &name);
    let stored = conversion::to_storage(info, admitted);
    cluster
        .store
        .write(&key, false, move |current, _| match current {
            Some(_) => Err(wasm_reconciler_apiserver::error::ApiError::bad_request(format!(
                "{name} exists already"
            ))),
            None => Ok(Change::Create(stored)),
        })
        .map(|written| conversion::to_served(info, (*written.object).clone()))
        .map_err(|error| error.message)
}

fn refused(what: String, message: String) -> WorldError {
    WorldError::Refused { what, message }
}

/// An object without what the API server assigns when it stores it, ready to be written again.
fn without_server_fields(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "generation",
            "managedFields",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "ownerReferences",
        ] {
            metadata.remove(field);
        }
    }
    object
}

fn without_managed_fields(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("managedFields");
    }
    object
}

fn string_list(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| items.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

fn hash_of(value: &Value) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    value.to_string().hash(&mut hasher);
    hasher.finish()
}

/// One line per object that appeared, went or changed between two snapshots, naming the first fields that did.
fn describe_changes(before: &BTreeMap<String, Value>, after: &BTreeMap<String, Value>) -> Vec<String> {
    let mut changes = Vec::new();
    for (label, object) in after {
        match before.get(label) {
            None => changes.push(format!("{label} created")),
            Some(old) if old != object => {
                let fields: Vec<String> = value_differences(old, object).into_iter().take(3).collect();
                changes.push(format!("{label} changed: {}", fields.join("; ")));
            }
            Some(_) => {}
        }
    }
    for label in before.keys() {
        if !after.contains_key(label) {
            changes.push(format!("{label} deleted"));
        }
    }
    changes
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::plugin::Condition;

    const SET: &str = "ex.io/v1";

    fn crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "sets.ex.io"},
            "spec": {"group": "ex.io", "scope": "Namespaced",
                "names": {"kind": "Set", "plural": "sets", "singular": "set", "listKind": "SetList"},
                "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {"replicas": {"type": "integer", "minimum": 0}}},
                        "status": {"type": "object", "properties": {
                            "replicas": {"type": "integer"},
                            "observedGeneration": {"type": "integer"},
                            "conditions": {"type": "array", "items": {"type": "object",
                                "x-kubernetes-preserve-unknown-fields": true}}}}}}}}]}
        })
    }

    fn world(finalizer: Option<&str>, children: Vec<Value>) -> World {
        let mut spec = ControllerSpec::new(Gvk::new("ex.io", "v1", "Set")).owns(Gvk::new("", "v1", "ConfigMap"));
        spec.finalizer = finalizer.map(str::to_owned);
        let setup = Arc::new(Setup {
            crds: vec![crd()],
            spec,
            plugin: "sets".into(),
            config: "{}".into(),
        });
        let start = Start {
            primary: json!({"apiVersion": SET, "kind": "Set",
                "metadata": {"name": "s", "namespace": "apps", "uid": "u-fixture"}, "spec": {"replicas": 1}}),
            children,
            ..Start::default()
        };
        World::new(setup, &start).unwrap()
    }

    fn config_map(name: &str, data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
    }

    fn outcome(children: Option<Vec<Value>>, status: Value) -> Outcome {
        Outcome {
            children,
            status: Some(status),
            conditions: vec![Condition::status_true("Ready", "Done", "all there")],
            ..Outcome::default()
        }
    }

    #[test]
    fn an_outcome_is_applied_as_the_host_applies_it() {
        let mut world = world(None, Vec::new());
        assert_eq!(
            world.primary().unwrap()["metadata"]["uid"],
            "u-fixture",
            "the fixture's uid is kept"
        );
        let applied = world.apply(&Ok(outcome(
            Some(vec![config_map("a", json!({"k": "v"}))]),
            json!({"replicas": 1}),
        )));
        assert!(
            applied
                .changes
                .iter()
                .any(|change| change.contains("v1/ConfigMap a in apps created")),
            "{applied:?}"
        );
        let children = world.children();
        assert_eq!(children.len(), 1);
        assert_eq!(children[0]["metadata"]["namespace"], "apps");
        assert_eq!(
            children[0]["metadata"]["ownerReferences"][0],
            json!({"apiVersion": SET, "kind": "Set", "name": "s", "uid": "u-fixture", "controller": true,
                "blockOwnerDeletion": true})
        );
        let status = &world.primary().unwrap()["status"];
        assert_eq!(status["replicas"], 1);
        assert_eq!(status["observedGeneration"], 1);
        let types: Vec<&Value> = status["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| &c["type"])
            .collect();
        assert_eq!(types, [&json!("Ready"), &json!("Reconciled")]);

        // The same outcome again changes nothing and writes nothing.
        let again = world.apply(&Ok(outcome(
            Some(vec![config_map("a", json!({"k": "v"}))]),
            json!({"replicas": 1}),
        )));
        assert!(again.changes.is_empty() && again.idle_writes.is_empty(), "{again:?}");
        // An empty set prunes; "leave children alone" keeps.
        world.apply(&Ok(outcome(None, json!({"replicas": 1}))));
        assert_eq!(world.children().len(), 1);
        world.apply(&Ok(outcome(Some(Vec::new()), json!({"replicas": 0}))));
        assert!(world.children().is_empty());
    }

    #[test]
    fn a_field_the_plugin_stops_sending_is_removed_by_server_side_apply() {
        let mut world = world(None, Vec::new());
        world.apply(&Ok(outcome(
            Some(vec![config_map("a", json!({"k": "v", "old": "x"}))]),
            json!({}),
        )));
        world.apply(&Ok(outcome(Some(vec![config_map("a", json!({"k": "v"}))]), json!({}))));
        assert_eq!(world.children()[0]["data"], json!({"k": "v"}));
    }

    #[test]
    fn fixture_children_are_adopted_and_their_foreign_fields_kept() {
        let observed = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "apps",
            "uid": "u-old", "ownerReferences": [{"apiVersion": SET, "kind": "Set", "name": "s", "uid": "u-fixture",
            "controller": true}], "labels": {"team": "x"}}, "data": {"k": "stale"}});
        let mut world = world(None, vec![observed]);
        assert_eq!(world.children().len(), 1, "the fixture's child is the primary's");
        world.apply(&Ok(outcome(Some(vec![config_map("a", json!({"k": "v"}))]), json!({}))));
        let child = &world.children()[0];
        assert_eq!(child["data"]["k"], "v");
        assert_eq!(
            child["metadata"]["labels"]["team"], "x",
            "a field someone else set stays"
        );
    }

    #[test]
    fn a_status_field_outside_the_schema_is_an_idle_write_and_an_error_is_recorded() {
        let mut world = world(None, Vec::new());
        let applied = world.apply(&Ok(outcome(Some(Vec::new()), json!({"replicas": 1, "extra": true}))));
        assert!(applied.idle_writes[0].contains(".extra: true vs absent"), "{applied:?}");
        let failed = world.apply(&Err(ReconcileError::Plugin("no".into())));
        assert!(!failed.changes.is_empty());
        let status = world.primary().unwrap()["status"].clone();
        let reconciled = status["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Reconciled")
            .unwrap();
        assert_eq!(
            (reconciled["status"].as_str(), reconciled["reason"].as_str()),
            (Some("False"), Some("PluginError"))
        );
    }

    #[test]
    fn the_finalizer_is_added_first_and_removed_once_finalized() {
        let mut world = world(Some("ex.io/cleanup"), Vec::new());
        assert_eq!(world.prepare(), Some(FinalizerState::Apply));
        assert_eq!(
            world.primary().unwrap()["metadata"]["finalizers"],
            json!(["ex.io/cleanup"])
        );
        world.apply(&Ok(outcome(Some(vec![config_map("a", json!({}))]), json!({}))));
        world.delete_primary();
        assert_eq!(world.prepare(), Some(FinalizerState::Cleanup));
        assert!(world.view().unwrap().0.deleting);
        world.apply(&Ok(Outcome {
            finalized: true,
            ..outcome(Some(Vec::new()), json!({}))
        }));
        assert!(world.primary().is_none(), "finalized and gone");
        assert!(world.children().is_empty());
        assert_eq!(world.prepare(), None);
    }

    #[test]
    fn a_spec_is_validated_unless_forced_past_validation() {
        let mut world = world(None, Vec::new());
        assert!(
            world
                .update_spec(&json!({"replicas": -1}))
                .unwrap_err()
                .contains("spec.replicas")
        );
        world.update_spec(&json!({"replicas": 2})).unwrap();
        assert_eq!(world.primary().unwrap()["metadata"]["generation"], 2);
        world.force_spec(&json!({"replicas": -1}));
        assert_eq!(world.primary().unwrap()["spec"]["replicas"], -1);
        // As with validation ratcheting, the status of such an object is still written.
        let applied = world.apply(&Ok(outcome(Some(Vec::new()), json!({"replicas": 0}))));
        assert!(applied.refused.is_none(), "{applied:?}");
        assert_eq!(world.primary().unwrap()["status"]["replicas"], 0);
    }

    #[test]
    fn a_fixture_that_does_not_fit_is_refused() {
        let setup = Arc::new(Setup {
            crds: vec![crd()],
            spec: ControllerSpec::new(Gvk::new("ex.io", "v1", "Set")),
            plugin: "sets".into(),
            config: "{}".into(),
        });
        let other = Start {
            primary: json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
            ..Start::default()
        };
        assert!(
            World::new(setup.clone(), &other)
                .unwrap_err()
                .to_string()
                .contains("the plugin reconciles")
        );
        let deleting = Start {
            primary: json!({"apiVersion": SET, "kind": "Set", "metadata": {"name": "s"}, "spec": {}}),
            deleting: true,
            ..Start::default()
        };
        assert!(
            World::new(setup, &deleting)
                .unwrap_err()
                .to_string()
                .contains("declares no finalizer")
        );
    }
}
