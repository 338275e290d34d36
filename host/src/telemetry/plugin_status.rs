//! Each plugin's state where `kubectl get wasmplugins` shows it: one `WasmPlugin` object per plugin
//! (`wasm-reconciler.io/v1alpha1`, the CRD of `deploy/wasmplugins-crd.yaml`), named after the plugin, in the host's
//! namespace. The host writes only their status (server-side apply): the serving digest and contract, the source,
//! `Ready` (serving, refused, waiting for its kinds), the objects reconciled, the reconciles that failed in the last
//! five minutes and the last refused version. The plugin's ConfigMap, which GitOps tools own, is never written.
//!
//! One writer per term: the leader, or the single host. In sharded mode every replica writes the shared fields
//! (the same plugins load everywhere) and its own entry of `status.replicas` (objects and errors of its share), each
//! under a field manager of its own. A plugin gone for [`FORGET_AFTER`] has its object deleted. Without the CRD the
//! host says once how to install it and carries on.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::time::Duration;

use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::discovery::ApiResource;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::time::Instant;

use super::Metrics;
use crate::lease::Fence;

/// The CRD, as `deploy/wasmplugins-crd.yaml` has it (`dev` installs it).
pub const CRD: &str = include_str!("../../../deploy/wasmplugins-crd.yaml");
/// Field manager of the status (a sharded replica's own entry: `wasm-reconciler-status/<identity>`).
pub const FIELD_MANAGER: &str = "wasm-reconciler-status";
/// How far back `recentErrors` counts.
pub const ERROR_WINDOW: Duration = Duration::from_secs(300);
/// How often objects and errors are looked at again when no plugin changed.
const REFRESH: Duration = Duration::from_secs(5);
/// How often writing is tried again while the CRD is not installed or the host may not write WasmPlugins.
const RETRY_UNAVAILABLE: Duration = Duration::from_secs(60);
/// How long a plugin may be gone before its object is deleted (a ConfigMap replaced by delete and create keeps it).
pub const FORGET_AFTER: Duration = Duration::from_secs(30);
/// The label on every WasmPlugin the host writes.
const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "wasm-reconciler");

/// A refused version of a plugin: when, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// RFC 3339, to the second.
    pub time: String,
    /// Why, as in the Event on its ConfigMap.
    pub message: String,
}

/// One plugin as the host sees it now (see [`PluginStates::states`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginState {
    /// The plugin's name.
    pub name: String,
    /// Where it comes from, when its source said.
    pub source: Option<String>,
    /// The version serving, if any.
    pub serving: Option<ServingVersion>,
    /// The last version refused, if any.
    pub last_refusal: Option<Refusal>,
    /// The revision serving, when the host keeps revisions.
    pub revision: Option<i64>,
    /// The newest revision its source delivered.
    pub latest_revision: Option<i64>,
    /// The revision it is pinned to (its WasmPlugin's `spec.revision`).
    pub pinned: Option<i64>,
    /// A new version rolling out to a share of the primaries, if any.
    pub canary: Option<CanaryVersion>,
}

/// A new version rolling out (see [`crate::delivery::RolloutSettings`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanaryVersion {
    /// sha256 of its component, hex.
    pub sha256: String,
    /// Its revision, when the host keeps revisions.
    pub revision: Option<i64>,
    /// The share of the primaries it serves now, in percent.
    pub share: u8,
    /// The step of the rollout, from 1, and how many there are.
    pub step: (usize, usize),
    /// The primaries it serves now.
    pub objects: usize,
    /// Its failed reconciles so far.
    pub failures: usize,
}

/// The serving version of a plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServingVersion {
    /// sha256 of the component, hex.
    pub sha256: String,
    /// Its WIT contract version.
    pub contract: String,
    /// The primary kind it reconciles.
    pub primary: crate::plugin::Gvk,
    /// When it started serving (RFC 3339).
    pub since: String,
    /// The primaries in its controller's cache; `None` while the controller waits for its kinds or caches.
    pub objects: Option<usize>,
}

/// Where the status writer reads the plugins from (the controller layer's manager): what each serves, and a
/// signal when any of them changed.
pub trait PluginStates: Send + Sync + 'static {
    /// Every plugin the host knows of, installed or refused, by name.
    fn states(&self) -> impl Future<Output = Vec<PluginState>> + Send;
    /// Resolves at the next change of a plugin: loaded, refused or removed.
    fn changed(&self) -> impl Future<Output = ()> + Send;
}

/// The WasmPlugin kind.
pub fn resource() -> ApiResource {
    ApiResource {
        group: "wasm-reconciler.io".into(),
        version: "v1alpha1".into(),
        api_version: "wasm-reconciler.io/v1alpha1".into(),
        kind: "WasmPlugin".into(),
        plural: "wasmplugins".into(),
    }
}

/// Writes WasmPlugin statuses for a term of serving.
pub struct StatusWriter<S> {
    api: Api<DynamicObject>,
    namespace: String,
    identity: String,
    sharded: bool,
    manager: S,
    metrics: Option<Metrics>,
    fence: Fence,
    /// The status last written per plugin.
    written: HashMap<String, Value>,
    /// WasmPlugin objects that exist (listed at the start, then written).
    existing: HashSet<String>,
    /// `Ready`'s (status, reason) and when it last changed, per plugin.
    transitions: HashMap<String, (String, String, String)>,
    /// Samples of each plugin's failed reconciles counter, oldest first, spanning [`ERROR_WINDOW`].
    errors: HashMap<String, VecDeque<(Instant, u64)>>,
    /// Since when a plugin with an object is no longer known.
    gone_since: HashMap<String, Instant>,
    /// Why the last write failed for lack of the CRD or of RBAC (said once), and when it was tried.
    unavailable: Option<(String, Instant)>,
}

impl<S> std::fmt::Debug for StatusWriter<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatusWriter")
            .field("namespace", &self.namespace)
            .field("sharded", &self.sharded)
            .finish_non_exhaustive()
    }
}

impl<S: PluginStates> StatusWriter<S> {
    /// A writer of the plugins of `manager` into `namespace`, as host `identity`; every write is checked against
    /// `fence`.
    pub fn new(
        client: kube::Client,
        namespace: &str,
        identity: &str,
        manager: S,
        metrics: Option<Metrics>,
        fence: Fence,
    ) -> Self {
        Self {
            api: Api::namespaced_with(client, namespace, &resource()),
            namespace: namespace.to_owned(),
            identity: identity.to_owned(),
            sharded: false,
            manager,
            metrics,
            fence,
            written: HashMap::new(),
            existing: HashSet::new(),
            transitions: HashMap::new(),
            errors: HashMap::new(),
            gone_since: HashMap::new(),
            unavailable: None,
        }
    }

    /// Sharded mode: this replica writes its own `status.replicas` entry and leaves `objects` and `recentErrors`
    /// alone.
    pub fn sharded(mut self) -> Self {
        self.sharded = true;
        self
    }

    /// Writes until `stop` turns true: at once when a plugin is loaded, refused or removed, else every few
    /// seconds when its objects or errors changed.
    pub async fn run(mut self, mut stop: watch::Receiver<bool>) {
        self.list_existing().await;
        loop {
            self.pass().await;
            let changed = tokio::select! {
                () = self.manager.changed() => true,
                () = tokio::time::sleep(REFRESH) => false,
                _ = stop.wait_for(|stop| *stop) => return,
            };
            if changed {
                // Several plugins often change together (a relist of plugin ConfigMaps): one pass for them all.
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }

    /// Learns the WasmPlugin objects already there and their `Ready` transitions, so a new term keeps them.
    async fn list_existing(&mut self) {
        let params = ListParams::default().labels(&format!("{}={}", MANAGED_BY.0, MANAGED_BY.1));
        let Ok(list) = self.api.list(&params).await else {
            return;
        };
        for object in list.items {
            let Some(name) = object.metadata.name.clone() else {
                continue;
            };
            let ready = object.data["status"]["conditions"]
                .as_array()
                .and_then(|conditions| conditions.iter().find(|c| c["type"] == "Ready"));
            if let Some(ready) = ready {
                let text = |key: &str| ready[key].as_str().unwrap_or_default().to_owned();
                self.transitions.insert(
                    name.clone(),
                    (text("status"), text("reason"), text("lastTransitionTime")),
                );
            }
            self.existing.insert(name);
        }
    }

    async fn pass(&mut self) {
        let now = Instant::now();
        // Without the CRD or the grant, look again only now and then rather than at every pass.
        if let Some((_, tried)) = &self.unavailable
            && now.duration_since(*tried) < RETRY_UNAVAILABLE
        {
            return;
        }
        let states = self.manager.states().await;
        let known: HashSet<&str> = states.iter().map(|state| state.name.as_str()).collect();
        for state in &states {
            self.gone_since.remove(&state.name);
            let status = self.status(state, now);
            if self.written.get(&state.name) == Some(&status) {
                continue;
            }
            match self.write(&state.name, &status).await {
                Ok(()) => {
                    self.written.insert(state.name.clone(), status);
                    if self.unavailable.take().is_some() {
                        tracing::info!(namespace = %self.namespace, "writing WasmPlugin statuses again");
                    }
                }
                Err(error) => {
                    self.failed(&state.name, &error);
                    if self.unavailable.is_some() {
                        return;
                    }
                }
            }
        }
        let gone: Vec<String> = self
            .existing
            .iter()
            .filter(|name| !known.contains(name.as_str()))
            .cloned()
            .collect();
        for name in gone {
            let since = *self.gone_since.entry(name.clone()).or_insert(now);
            if now.duration_since(since) < FORGET_AFTER || self.fence.check().is_err() {
                continue;
            }
            match self.api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => {
                    tracing::info!(plugin = %name, "plugin gone; its WasmPlugin deleted");
                    self.forget(&name);
                }
                Err(kube::Error::Api(status)) if status.code == 404 => self.forget(&name),
                Err(error) => self.failed(&name, &error),
            }
        }
    }

    fn forget(&mut self, name: &str) {
        self.existing.remove(name);
        self.written.remove(name);
        self.gone_since.remove(name);
        self.transitions.remove(name);
        self.errors.remove(name);
    }

    /// Says once why statuses cannot be written (no CRD, no RBAC); other failures at debug level (the next pass
    /// retries).
    fn failed(&mut self, plugin: &str, error: &kube::Error) {
        let reason = match error {
            kube::Error::Api(status) if status.code == 404 => Some(
                "the WasmPlugin CRD is not installed, so plugin state is not shown in kubectl; install it with \
                 `kubectl apply --server-side -f deploy/wasmplugins-crd.yaml` (docs/deploy.md, \"Plugin state in \
                 kubectl\")",
            ),
            kube::Error::Api(status) if status.code == 403 => Some(
                "the host may not write WasmPlugins in its namespace, so plugin state is not shown in kubectl; grant \
                 its Role wasmplugins and wasmplugins/status (deploy/rbac.yaml)",
            ),
            _ => None,
        };
        match reason {
            Some(reason) => {
                if self.unavailable.as_ref().is_none_or(|(said, _)| said != reason) {
                    tracing::warn!(namespace = %self.namespace, error = %crate::error_chain(error), "{reason}");
                }
                self.unavailable = Some((reason.to_owned(), Instant::now()));
            }
            None => {
                tracing::debug!(plugin, error = %crate::error_chain(error), "writing the WasmPlugin status failed; retrying")
            }
        }
    }

    async fn write(&mut self, name: &str, status: &Value) -> Result<(), kube::Error> {
        let manager = if self.sharded {
            format!("{FIELD_MANAGER}/{}", self.identity)
        } else {
            FIELD_MANAGER.to_owned()
        };
        let params = PatchParams::apply(&manager).force();
        let object = json!({
            "apiVersion": "wasm-reconciler.io/v1alpha1",
            "kind": "WasmPlugin",
            "metadata": {"name": name, "namespace": self.namespace, "labels": {MANAGED_BY.0: MANAGED_BY.1}},
        });
        if !self.existing.contains(name) {
            self.fence.check().map_err(fenced)?;
            self.api.patch(name, &params, &Patch::Apply(&object)).await?;
            self.existing.insert(name.to_owned());
        }
        let mut with_status = object;
        with_status["status"] = status.clone();
        self.fence.check().map_err(fenced)?;
        self.api
            .patch_status(name, &params, &Patch::Apply(&with_status))
            .await
            .inspect_err(|error| {
                if matches!(error, kube::Error::Api(status) if status.code == 404) {
                    self.existing.remove(name);
                }
            })?;
        Ok(())
    }

    /// The status of `state` now.
    fn status(&mut self, state: &PluginState, now: Instant) -> Value {
        let (ready, reason, message) = match (&state.serving, &state.last_refusal) {
            (Some(serving), _) => match serving.objects {
                Some(_) => (
                    "True",
                    "Serving",
                    format!(
                        "serving sha256:{} (contract {}){}",
                        short(&serving.sha256),
                        serving.contract,
                        match (state.pinned, state.latest_revision) {
                            (Some(pinned), Some(latest)) if Some(pinned) == state.revision =>
                                format!(", pinned to revision {pinned}; the source's newest is revision {latest}"),
                            (Some(pinned), _) if Some(pinned) == state.revision =>
                                format!(", pinned to revision {pinned}"),
                            (Some(pinned), _) => format!(", pinned to revision {pinned}, which cannot serve"),
                            _ => String::new(),
                        }
                    ) + &state.canary.as_ref().map_or_else(String::new, |canary| {
                        format!(
                            "; rolling out sha256:{} to {}% of the objects (step {} of {})",
                            short(&canary.sha256),
                            canary.share,
                            canary.step.0,
                            canary.step.1
                        )
                    }),
                ),
                None => (
                    "False",
                    "WaitingForKinds",
                    format!(
                        "waiting for the API server to serve {} (is its CRD installed?) and for the caches to sync",
                        serving.primary
                    ),
                ),
            },
            (None, Some(refusal)) => ("False", "Refused", refusal.message.clone()),
            (None, None) => ("False", "Loading", "no version loaded yet".to_owned()),
        };
        let transition = match self.transitions.get(&state.name) {
            Some((status, previous, time)) if status == ready && previous == reason => time.clone(),
            _ => {
                let time = crate::apply::now();
                self.transitions
                    .insert(state.name.clone(), (ready.to_owned(), reason.to_owned(), time.clone()));
                time
            }
        };
        let mut status = BTreeMap::<&str, Value>::new();
        if !self.sharded {
            status.insert("host", json!(self.identity));
        }
        status.insert(
            "conditions",
            json!([{"type": "Ready", "status": ready, "reason": reason, "message": message,
                    "lastTransitionTime": transition}]),
        );
        if let Some(source) = &state.source {
            status.insert("source", json!(source));
        }
        if let Some(revision) = state.revision {
            status.insert("revision", json!(revision));
        }
        if let Some(latest) = state.latest_revision {
            status.insert("latestRevision", json!(latest));
        }
        if let Some(refusal) = &state.last_refusal {
            status.insert("lastRefusal", json!({"time": refusal.time, "message": refusal.message}));
        }
        if let Some(canary) = &state.canary {
            let mut entry = json!({
                "digest": format!("sha256:{}", canary.sha256),
                "share": canary.share,
                "step": canary.step.0,
                "steps": canary.step.1,
                "objects": canary.objects,
                "failures": canary.failures,
            });
            if let Some(revision) = canary.revision {
                entry["revision"] = json!(revision);
            }
            status.insert("canary", entry);
        }
        let errors = self.recent_errors(&state.name, now);
        if let Some(serving) = &state.serving {
            status.insert("digest", json!(format!("sha256:{}", serving.sha256)));
            status.insert("shortDigest", json!(short(&serving.sha256)));
            status.insert("contract", json!(serving.contract));
            status.insert("primary", json!(kind_name(&serving.primary)));
            status.insert("servingSince", json!(serving.since));
            if self.sharded {
                let mut replica = json!({"name": self.identity});
                if let Some(objects) = serving.objects {
                    replica["objects"] = json!(objects);
                }
                if let Some(errors) = errors {
                    replica["recentErrors"] = json!(errors);
                }
                status.insert("replicas", json!([replica]));
            } else {
                if let Some(objects) = serving.objects {
                    status.insert("objects", json!(objects));
                }
                if let Some(errors) = errors {
                    status.insert("recentErrors", json!(errors));
                }
            }
        }
        json!(status)
    }

    /// Failed reconciles of `plugin` within [`ERROR_WINDOW`] (or since the term started, when shorter).
    fn recent_errors(&mut self, plugin: &str, now: Instant) -> Option<u64> {
        let total = self.metrics.as_ref()?.reconcile_errors(plugin);
        let samples = self.errors.entry(plugin.to_owned()).or_default();
        samples.push_back((now, total));
        // Keep the newest sample at least ERROR_WINDOW old as the base.
        while samples.len() > 1 && now.duration_since(samples[1].0) >= ERROR_WINDOW {
            samples.pop_front();
        }
        let base = samples.front().map_or(total, |(_, value)| *value);
        Some(total.saturating_sub(base))
    }
}

/// The first 12 hex digits of a sha256.
fn short(sha256: &str) -> &str {
    &sha256[..sha256.len().min(12)]
}

/// `Kind.group`, or `Kind` for the core group.
fn kind_name(gvk: &crate::plugin::Gvk) -> String {
    if gvk.group.is_empty() {
        gvk.kind.clone()
    } else {
        format!("{}.{}", gvk.kind, gvk.group)
    }
}

/// A fenced write, as an error of the client (the pass retries in the next term, if any).
fn fenced(fenced: crate::lease::Fenced) -> kube::Error {
    kube::Error::Service(Box::new(fenced))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crd_is_the_deployed_one_and_names_the_kind() {
        let crd: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition =
            serde_saphyr::from_str(CRD).expect("the CRD parses");
        let kind = resource();
        assert_eq!(crd.spec.group, kind.group);
        assert_eq!(crd.spec.names.plural, kind.plural);
        assert_eq!(crd.spec.names.kind, kind.kind);
        assert_eq!(crd.spec.versions[0].name, kind.version);
    }

    #[test]
    fn names_and_digests_are_short() {
        assert_eq!(short("2c3a6fedd8bc67ada8f8325234e31cfe"), "2c3a6fedd8bc");
        assert_eq!(kind_name(&crate::plugin::Gvk::new("", "v1", "ConfigMap")), "ConfigMap");
        assert_eq!(
            kind_name(&crate::plugin::Gvk::new(
                "examples.wasm-reconciler.io",
                "v1alpha1",
                "ConfigMapSet"
            )),
            "ConfigMapSet.examples.wasm-reconciler.io"
        );
    }
}
