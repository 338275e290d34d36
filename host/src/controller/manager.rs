//! The set of running plugins: validate-then-swap on every new version, clean stop on removal.
//!
//! A new version is compiled and its `describe()` called off the async runtime before it replaces anything; a
//! version that fails is reported and the previous one keeps serving. When the new version declares the same
//! kinds, it is swapped into the running controller (reconciles in flight finish on the old one); when the
//! kinds changed, the controller restarts with new watches.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Mutex;

use super::pins::RolloutControl;
use super::preview::Preview;
use super::{Controller, ControllerOptions, Impersonation, Logic, StartError, Version};
use crate::delivery::revisions::RevisionStore;
use crate::delivery::signature::SignaturePolicy;
use crate::delivery::{
    InstallError, Installed, Installer, PluginPackage, PluginSettings, PreviewSettings, RolloutSettings,
};
use crate::lease::Fence;
use crate::plugin::{ControllerSpec, Grants, OutboundCounters, PluginEngine, SecretVariables};
use crate::runtime::Caches;
use crate::runtime::cache::CacheError;
use crate::shard::ShardLabels;
use crate::shard::sharder::ShardedKinds;
use crate::telemetry::Metrics;
pub use crate::telemetry::plugin_status::{CanaryVersion, PluginState, PluginStates, Refusal, ServingVersion};

struct Slot {
    sha256: String,
    /// The WIT contract version the serving component targets.
    contract: String,
    /// When this version started serving (RFC 3339).
    since: String,
    config: Value,
    settings: PluginSettings,
    spec: ControllerSpec,
    running: Arc<Mutex<Option<Controller>>>,
    starter: tokio::task::JoinHandle<()>,
    /// A new version rolling out to a share of the primaries, and the task that moves it through its steps.
    canary: Option<SlotCanary>,
}

/// The version a slot's rollout brings.
struct SlotCanary {
    sha256: String,
    contract: String,
    config: Value,
    settings: PluginSettings,
    /// The step it is at, from 1.
    step: usize,
    share: u8,
    task: tokio::task::JoinHandle<()>,
}

/// Runs one controller per plugin. Cheap to clone.
#[derive(Clone)]
pub struct Manager {
    engine: PluginEngine,
    caches: Caches,
    metrics: Option<Metrics>,
    instance: Option<String>,
    shard: Option<ShardLabels>,
    fence: Fence,
    /// The host's namespace: where a variable's Secret named without a namespace is read.
    namespace: Option<String>,
    /// Clients for plugins whose settings name a ServiceAccount; without it such plugins are refused.
    impersonation: Option<Impersonation>,
    slots: Arc<Mutex<HashMap<String, Slot>>>,
    /// What is known of each plugin besides its controller: its source, last refusal and revisions.
    records: Arc<std::sync::Mutex<BTreeMap<String, Record>>>,
    /// Where each accepted version is kept as a revision, and where pinned revisions are read from.
    revisions: Option<RevisionStore>,
    /// The signature policy a revision served from the cluster is checked against again.
    signatures: Option<Arc<SignaturePolicy>>,
    /// The revision each plugin is pinned to (its WasmPlugin's `spec.revision`); `None` until first learnt.
    pins: Arc<std::sync::Mutex<Option<BTreeMap<String, i64>>>>,
    pins_known: Arc<tokio::sync::Notify>,
    /// The revision each plugin's WasmPlugin said was serving when this host first listed them.
    serving_before: Arc<std::sync::Mutex<BTreeMap<String, i64>>>,
    /// Each WasmPlugin's `spec.rollout`.
    controls: Arc<std::sync::Mutex<BTreeMap<String, RolloutControl>>>,
    /// One change of a plugin's version at a time (a source's new version, a pin, an unpin).
    changing: Arc<std::sync::Mutex<HashMap<String, Arc<Mutex<()>>>>>,
    /// Notified whenever a plugin is loaded, refused or removed.
    changed: Arc<tokio::sync::Notify>,
}

/// Where a plugin comes from, its last refused version and its revisions.
#[derive(Debug, Clone, Default)]
struct Record {
    source: Option<String>,
    last_refusal: Option<Refusal>,
    /// The revision serving.
    revision: Option<i64>,
    /// The newest revision its source delivered.
    latest: Option<i64>,
    /// The revision it is pinned to.
    pinned: Option<i64>,
    /// The source's version that came while pinned, kept to serve once unpinned.
    held: Option<PluginPackage>,
    /// The revision rolling out as a canary.
    canary: Option<i64>,
}

impl std::fmt::Debug for Manager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Manager").finish_non_exhaustive()
    }
}

impl Manager {
    /// A manager with no plugins. `instance` names this host in events.
    pub fn new(engine: PluginEngine, caches: Caches, metrics: Option<Metrics>, instance: Option<String>) -> Self {
        Self {
            engine,
            caches,
            metrics,
            instance,
            shard: None,
            fence: Fence::always_open(),
            namespace: None,
            impersonation: None,
            slots: Arc::default(),
            records: Arc::default(),
            revisions: None,
            signatures: None,
            pins: Arc::default(),
            pins_known: Arc::default(),
            serving_before: Arc::default(),
            controls: Arc::default(),
            changing: Arc::default(),
            changed: Arc::default(),
        }
    }

    /// Every accepted version becomes a revision in `store`, and a plugin pinned to a revision (see
    /// [`Manager::set_pins`]) serves it from there. Nothing is installed until the pins are first known.
    pub fn with_revisions(mut self, store: RevisionStore) -> Self {
        self.revisions = Some(store);
        self
    }

    /// A revision served from the cluster must pass `policy` again (its detached signature is kept with it).
    pub fn with_signature_policy(mut self, policy: Arc<SignaturePolicy>) -> Self {
        self.signatures = Some(policy);
        self
    }

    /// Every write of every controller is checked against `fence` (the leader's or the shard member's).
    pub fn with_fence(mut self, fence: Fence) -> Self {
        self.fence = fence;
        self
    }

    /// The host's namespace (`run --namespace`): a variable `secret/key` reads that Secret there. Without it, the
    /// client's default namespace.
    pub fn with_namespace(mut self, namespace: Option<String>) -> Self {
        self.namespace = namespace;
        self
    }

    /// A plugin whose settings name a `serviceAccount` reads, watches and writes as that account through
    /// `impersonation`'s clients.
    pub fn with_impersonation(mut self, impersonation: Impersonation) -> Self {
        self.impersonation = Some(impersonation);
        self
    }

    /// The caches a plugin with `settings` reads and writes through: the host's own, or those of the ServiceAccount
    /// it acts as.
    async fn caches_for(&self, settings: &PluginSettings) -> Result<Caches, InstallError> {
        let Some(account) = &settings.service_account else {
            return Ok(self.caches.clone());
        };
        let identity_error = |message: String| InstallError::Identity {
            account: account.to_string(),
            message,
        };
        let impersonation = self
            .impersonation
            .as_ref()
            .ok_or_else(|| identity_error("this host has no client configuration to impersonate with".into()))?;
        impersonation.caches(account).await.map_err(identity_error)
    }

    /// Sharded mode: every controller reconciles only this replica's share (see [`crate::shard`]).
    pub fn with_shard(mut self, shard: ShardLabels) -> Self {
        self.shard = Some(shard);
        self
    }

    /// What the installed plugins ask the sharder to place: each one's primary and owned kinds and namespaces,
    /// sorted.
    pub async fn sharded_kinds(&self) -> Vec<ShardedKinds> {
        let mut kinds: Vec<ShardedKinds> = self
            .slots
            .lock()
            .await
            .values()
            .map(|slot| ShardedKinds {
                primary: slot.spec.primary.clone(),
                owns: slot.spec.owns.clone(),
                namespaces: slot.settings.namespaces.clone(),
            })
            .collect();
        kinds.sort();
        kinds.dedup();
        kinds
    }

    /// Names of the plugins currently installed.
    pub async fn plugins(&self) -> Vec<String> {
        let mut names: Vec<String> = self.slots.lock().await.keys().cloned().collect();
        names.sort();
        names
    }

    /// True when every installed plugin's controller is running (its caches synced).
    pub async fn all_running(&self) -> bool {
        for slot in self.slots.lock().await.values() {
            if slot.running.lock().await.is_none() {
                return false;
            }
        }
        true
    }

    /// Every plugin the host knows of, installed or refused, by name: what serves, how many objects it has, its
    /// last refusal.
    pub async fn states(&self) -> Vec<PluginState> {
        let mut states: BTreeMap<String, PluginState> = self
            .records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(name, record)| {
                let state = PluginState {
                    name: name.clone(),
                    source: record.source.clone(),
                    serving: None,
                    last_refusal: record.last_refusal.clone(),
                    revision: record.revision,
                    latest_revision: record.latest,
                    pinned: record.pinned,
                    canary: None,
                };
                (name.clone(), state)
            })
            .collect();
        let canaries: BTreeMap<String, Option<i64>> = self
            .records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(name, record)| (name.clone(), record.canary))
            .collect();
        for (name, slot) in self.slots.lock().await.iter() {
            let (objects, report) = match slot.running.lock().await.as_ref() {
                Some(controller) => (Some(controller.objects()), controller.canary_report()),
                None => (None, None),
            };
            let state = states.entry(name.clone()).or_insert_with(|| PluginState {
                name: name.clone(),
                source: None,
                serving: None,
                last_refusal: None,
                revision: None,
                latest_revision: None,
                pinned: None,
                canary: None,
            });
            if let (Some(canary), Some(report)) = (&slot.canary, report) {
                state.canary = Some(CanaryVersion {
                    sha256: canary.sha256.clone(),
                    revision: canaries.get(name).copied().flatten(),
                    share: canary.share,
                    step: (
                        canary.step,
                        canary.settings.rollout.as_ref().map_or(0, |r| r.steps.len()),
                    ),
                    objects: report.objects,
                    failures: report.failures,
                });
            }
            state.serving = Some(ServingVersion {
                sha256: slot.sha256.clone(),
                contract: slot.contract.clone(),
                primary: slot.spec.primary.clone(),
                since: slot.since.clone(),
                objects,
            });
        }
        states.into_values().collect()
    }

    /// Resolves the next time a plugin is loaded, refused or removed.
    pub async fn changed(&self) {
        self.changed.notified().await;
    }

    fn record(&self, name: &str, change: impl FnOnce(&mut Record)) {
        change(
            self.records
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(name.to_owned())
                .or_default(),
        );
        self.changed.notify_waiters();
    }

    fn record_refusal(&self, name: &str, message: &str) {
        self.record(name, |record| {
            record.last_refusal = Some(Refusal {
                time: crate::apply::now(),
                message: message.to_owned(),
            });
        });
    }

    /// Validates `package` and makes it the serving version of plugin `name`, and its newest revision. While the
    /// plugin is pinned to a revision, the package is held and that revision serves.
    pub async fn update(&self, name: &str, package: PluginPackage) -> Result<Installed, InstallError> {
        let changing = self.changing(name);
        let _changing = changing.lock().await;
        let pinned = self.pinned(name).await;
        let result = match pinned {
            Some(revision) => {
                self.record(name, |record| {
                    record.held = Some(package);
                    record.pinned = Some(revision);
                });
                tracing::info!(
                    plugin = name,
                    revision,
                    "plugin pinned to a revision; its new version is held"
                );
                self.serve_revision(name, revision).await.map(|_| Installed::Held)
            }
            None => {
                self.resume_from(name, &package).await;
                self.install_and_record(name, package).await
            }
        };
        match &result {
            Err(error) => self.record_refusal(name, &crate::error_chain(error)),
            Ok(Installed::Unchanged) => {}
            Ok(_) => self.changed.notify_waiters(),
        }
        result
    }

    /// The revision each plugin's WasmPlugin named as serving (`status.revision`) when the WasmPlugins were first
    /// listed; set once, before the pins.
    pub fn set_serving_before(&self, serving: BTreeMap<String, i64>) {
        *self.serving_before.lock().unwrap_or_else(PoisonError::into_inner) = serving;
    }

    /// What plugin `name`'s WasmPlugin says of a rollout in progress (`spec.rollout`).
    pub fn set_rollout_control(&self, name: &str, control: RolloutControl) {
        self.controls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_owned(), control);
    }

    fn rollout_control(&self, name: &str) -> RolloutControl {
        self.controls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .copied()
            .unwrap_or_default()
    }

    /// The revision of plugin `name`'s canary, once recorded.
    fn canary_revision(&self, name: &str) -> Option<i64> {
        self.records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .and_then(|record| record.canary)
    }

    /// A version with a rollout that comes to a host serving nothing of its plugin yet — a restart, a new leader —
    /// resumes the rollout the host before this one started: the revision the WasmPlugin names as serving serves
    /// first, and once its controller runs, `package` rolls out from its first step. Without such a revision, or
    /// when it cannot serve, `package` is installed as a first version is.
    async fn resume_from(&self, name: &str, package: &PluginPackage) {
        if package.settings.rollout.is_none() || self.revisions.is_none() || self.slots.lock().await.contains_key(name)
        {
            return;
        }
        let Some(before) = self
            .serving_before
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(name)
        else {
            return;
        };
        if let Err(error) = self.serve_revision(name, before).await {
            tracing::warn!(plugin = name, revision = before, error = %crate::error_chain(&error), "the revision serving before cannot serve; the new version serves without its rollout");
            return;
        }
        let running = self.slots.lock().await.get(name).map(|slot| slot.running.clone());
        let Some(running) = running else { return };
        let deadline = tokio::time::Instant::now() + RESUME_WITHIN;
        while running.lock().await.is_none() {
            if tokio::time::Instant::now() >= deadline {
                tracing::warn!(
                    plugin = name,
                    revision = before,
                    "the revision serving before did not start in time; the new version serves without its rollout"
                );
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        tracing::info!(
            plugin = name,
            revision = before,
            "resuming a rollout: the revision serving before serves the rest"
        );
    }

    /// Installs `package` as the source's newest version and records it as a revision.
    async fn install_and_record(&self, name: &str, package: PluginPackage) -> Result<Installed, InstallError> {
        let Some(store) = &self.revisions else {
            return self.install_version(name, package, Gate::Preview).await;
        };
        let kept = package.clone();
        let installed = self.install_version(name, package, Gate::Preview).await?;
        let recorded = self
            .records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .and_then(|r| r.latest);
        if installed == Installed::Unchanged && recorded.is_some() {
            return Ok(installed);
        }
        // The digest install_version computed is the serving slot's.
        let Some(sha256) = self.slots.lock().await.get(name).map(|slot| slot.sha256.clone()) else {
            return Ok(installed);
        };
        let source = kept
            .origin
            .clone()
            .or_else(|| {
                self.records
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get(name)
                    .and_then(|r| r.source.clone())
            })
            .unwrap_or_default();
        // A canary's digest is not the serving slot's.
        let sha256 = if installed == Installed::Canary {
            use sha2::Digest;
            hex::encode(sha2::Sha256::digest(&kept.wasm))
        } else {
            sha256
        };
        match store.record(name, &kept, &sha256, &source).await {
            // A canary becomes the serving revision once promoted.
            Ok(number) if installed == Installed::Canary => self.record(name, |record| {
                record.canary = Some(number);
                record.latest = Some(number);
                record.held = None;
            }),
            Ok(number) => self.record(name, |record| {
                record.revision = Some(number);
                record.latest = Some(number);
                record.held = None;
                record.canary = None;
            }),
            Err(error) => {
                // The version serves; only its history is missing (a later accept records it).
                tracing::warn!(plugin = name, error = %crate::error_chain(&error), "the serving version could not be recorded as a revision");
                self.record(name, |record| {
                    record.revision = None;
                    record.latest = None;
                    record.held = None;
                });
            }
        }
        self.changed.notify_waiters();
        Ok(installed)
    }

    /// Makes revision `number` of plugin `name`, read from the cluster, the serving version.
    async fn serve_revision(&self, name: &str, number: i64) -> Result<Installed, InstallError> {
        let serving = self
            .records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .and_then(|r| r.revision);
        if serving == Some(number) && self.slots.lock().await.contains_key(name) {
            return Ok(Installed::Unchanged);
        }
        let store = self
            .revisions
            .as_ref()
            .expect("pins are kept only with a revision store");
        let pinned_error = |source: Box<dyn std::error::Error + Send + Sync>| InstallError::Pinned {
            revision: number,
            source,
        };
        let (package, revision) = store.load(name, number).await.map_err(|e| pinned_error(Box::new(e)))?;
        // Whoever may write ControllerRevisions must not get around the signature policy: the revision's component
        // is checked again, against the detached signature it was delivered with.
        if let Some(policy) = &self.signatures {
            policy
                .check_detached(&package.wasm, package.detached_signature.as_deref())
                .map_err(|e| pinned_error(Box::new(e)))?;
        }
        // A revision from the history was accepted before, and a pin is the operator's own choice: no gate.
        let installed = self
            .install_version(name, package, Gate::None)
            .await
            .map_err(|e| pinned_error(Box::new(e)))?;
        tracing::info!(plugin = name, revision = number, sha256 = %revision.sha256, "serving a revision from the cluster's history");
        self.record(name, |record| record.revision = Some(number));
        self.changed.notify_waiters();
        Ok(installed)
    }

    /// The revision plugin `name` is pinned to, once the pins are known (at once without a revision store).
    async fn pinned(&self, name: &str) -> Option<i64> {
        self.revisions.as_ref()?;
        loop {
            let notified = self.pins_known.notified();
            if let Some(pins) = self.pins.lock().unwrap_or_else(PoisonError::into_inner).as_ref() {
                return pins.get(name).copied();
            }
            notified.await;
        }
    }

    fn changing(&self, name: &str) -> Arc<Mutex<()>> {
        self.changing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(name.to_owned())
            .or_default()
            .clone()
    }

    /// The revision each plugin is pinned to (the WasmPlugins' `spec.revision`). A plugin newly pinned serves that
    /// revision from the cluster; a plugin unpinned serves its source's newest version again.
    pub async fn set_pins(&self, pins: BTreeMap<String, i64>) {
        let previous = self
            .pins
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(pins.clone())
            .unwrap_or_default();
        self.pins_known.notify_waiters();
        let names: std::collections::BTreeSet<&String> = previous.keys().chain(pins.keys()).collect();
        for name in names {
            let (before, after) = (previous.get(name).copied(), pins.get(name).copied());
            if before == after {
                continue;
            }
            let known = self
                .records
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .contains_key(name.as_str())
                || self.slots.lock().await.contains_key(name.as_str());
            if !known {
                continue;
            }
            let changing = self.changing(name);
            let _changing = changing.lock().await;
            // A version of the source may have come between the pins and this lock: what is pinned now decides.
            let now = self
                .pins
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .as_ref()
                .and_then(|p| p.get(name).copied());
            self.record(name, |record| record.pinned = now);
            let result = match now {
                Some(number) => {
                    tracing::info!(plugin = %name, revision = number, "plugin pinned to a revision");
                    self.serve_revision(name, number).await
                }
                None => {
                    tracing::info!(plugin = %name, "plugin unpinned; its source's newest version serves again");
                    let (held, latest) = {
                        let records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
                        let record = records.get(name.as_str());
                        (record.and_then(|r| r.held.clone()), record.and_then(|r| r.latest))
                    };
                    match (held, latest) {
                        (Some(package), _) => self.install_and_record(name, package).await,
                        (None, Some(latest)) => self.serve_revision(name, latest).await,
                        (None, None) => Ok(Installed::Unchanged),
                    }
                }
            };
            if let Err(error) = result {
                tracing::error!(plugin = %name, error = %crate::error_chain(&error), "the pinned revision cannot serve; the previous version keeps serving");
                self.record_refusal(name, &crate::error_chain(&error));
            }
            self.changed.notify_waiters();
        }
    }

    /// Loads `package` and makes it plugin `name`'s serving version, after its preview (`gate`) passed.
    async fn install_version(&self, name: &str, package: PluginPackage, gate: Gate) -> Result<Installed, InstallError> {
        use sha2::Digest;
        let sha256 = hex::encode(sha2::Sha256::digest(&package.wasm));
        {
            let slots = self.slots.lock().await;
            if let Some(slot) = slots.get(name)
                && slot.sha256 == sha256
                && slot.config == package.config
                && slot.settings == package.settings
                && slot.canary.is_none()
            {
                return Ok(Installed::Unchanged);
            }
            // The version rolling out, delivered again.
            if let Some(canary) = slots.get(name).and_then(|slot| slot.canary.as_ref())
                && canary.sha256 == sha256
                && canary.config == package.config
                && canary.settings == package.settings
            {
                return Ok(Installed::Unchanged);
            }
        }
        let engine = self.engine.clone();
        let plugin_name = name.to_owned();
        let limits = package.settings.limits;
        let caches = match self.caches_for(&package.settings).await {
            Ok(caches) => caches,
            Err(error) => {
                if let Some(metrics) = &self.metrics {
                    metrics.record_plugin_load(name, false);
                }
                return Err(error);
            }
        };
        let grants = self.grants(name, &package.settings, &caches);
        let wasm = package.wasm;
        let loaded = tokio::task::spawn_blocking(move || {
            engine
                .load(&plugin_name, &wasm, limits)
                .map(|plugin| plugin.with_grants(grants))
        })
        .await
        .map_err(|e| InstallError::Interrupted(e.to_string()));
        let plugin = match loaded.and_then(|r| r.map_err(InstallError::from)) {
            Ok(plugin) => plugin,
            Err(error) => {
                if let Some(metrics) = &self.metrics {
                    metrics.record_plugin_load(name, false);
                }
                return Err(error);
            }
        };
        let spec = plugin.spec().clone();
        let contract = plugin.wit_version().to_owned();
        let (digest, wit_version) = (plugin.sha256().to_owned(), contract.clone());
        let version = Version::new(Logic::Wasm(plugin), &package.config);
        if gate == Gate::Preview
            && let Some(preview) = self.preview(name, &spec, &version, &package.settings.preview).await
            && !preview.passes(package.settings.preview.max_new_failures)
        {
            if let Some(metrics) = &self.metrics {
                metrics.record_plugin_load(name, false);
            }
            let reason = preview.held_because(package.settings.preview.max_new_failures);
            tracing::warn!(plugin = name, sha256 = %sha256, new_failures = preview.new_failures.len(), previewed = preview.previewed, "new version held by the preview gate");
            return Err(InstallError::Held(reason));
        }
        if let Some(metrics) = &self.metrics {
            metrics.record_plugin_load(name, true);
            metrics.set_plugin_info(name, &digest, &wit_version);
        }

        let mut slots = self.slots.lock().await;
        let same_shape = slots.get(name).is_some_and(|slot| {
            slot.spec == spec
                && slot.settings.concurrency == package.settings.concurrency
                && slot.settings.namespaces == package.settings.namespaces
                && slot.settings.resync == package.settings.resync
                && slot.settings.always_call == package.settings.always_call
                && slot.settings.service_account == package.settings.service_account
        });
        if same_shape {
            let slot = slots.get_mut(name).expect("checked above");
            let running = slot.running.lock().await;
            if let Some(controller) = running.as_ref() {
                // A rollout in progress ends here: what comes now serves instead (its own canary, or everywhere).
                if let Some(canary) = slot.canary.take() {
                    canary.task.abort();
                    self.record(name, |record| record.canary = None);
                }
                if gate == Gate::Preview
                    && let Some(rollout) = package.settings.rollout.clone()
                {
                    let first = rollout.steps[0];
                    controller.start_canary(version, first.share);
                    drop(running);
                    tracing::info!(plugin = name, sha256 = %sha256, share = first.share, steps = rollout.steps.len(), "new version rolling out: step 1");
                    slot.canary = Some(SlotCanary {
                        sha256,
                        contract,
                        config: package.config,
                        settings: package.settings,
                        step: 1,
                        share: first.share,
                        task: tokio::spawn(self.clone().roll_out(name.to_owned(), rollout)),
                    });
                    return Ok(Installed::Canary);
                }
                controller.swap(version);
                drop(running);
                if slot.sha256 != sha256 {
                    slot.since = crate::apply::now();
                }
                slot.sha256 = sha256;
                slot.contract = contract;
                slot.config = package.config;
                slot.settings = package.settings;
                tracing::info!(plugin = name, sha256 = %slot.sha256, "new version serving");
                return Ok(Installed::Swapped);
            }
        }
        let previous = slots.remove(name);
        if previous.as_ref().is_some_and(|previous| previous.canary.is_some()) {
            self.record(name, |record| record.canary = None);
        }
        let result = if previous.is_some() {
            Installed::Restarted
        } else {
            Installed::Started
        };
        if let Some(previous) = previous {
            stop_slot(previous).await;
        }
        let mut slot = self.start_slot(name, version, (sha256, package.config, package.settings), spec, caches);
        slot.contract = contract;
        slots.insert(name.to_owned(), slot);
        Ok(result)
    }

    /// The preview of `candidate` (with `spec`) against plugin `name`'s serving version, on the primaries its running
    /// controller reconciles; `None` when there is nothing to compare with: no version serves yet, its controller is
    /// not running (its kinds not served, its caches not synced), the candidate reconciles another kind, or the
    /// settings turn the gate off.
    async fn preview(
        &self,
        name: &str,
        spec: &crate::plugin::ControllerSpec,
        candidate: &Version,
        settings: &PreviewSettings,
    ) -> Option<Preview> {
        if settings.objects == 0 {
            return None;
        }
        let running = {
            let slots = self.slots.lock().await;
            let slot = slots.get(name)?;
            if slot.spec.primary != spec.primary {
                return None;
            }
            slot.running.clone()
        };
        let previewing = running.lock().await.as_ref()?.preview(candidate, settings.objects);
        let started = std::time::Instant::now();
        let preview = previewing.await;
        tracing::info!(
            plugin = name,
            primaries = preview.primaries,
            previewed = preview.previewed,
            new_failures = preview.new_failures.len(),
            both_fail = preview.both_fail,
            seconds = started.elapsed().as_secs_f64(),
            "previewed the new version against the serving one"
        );
        Some(preview)
    }

    /// Moves plugin `name`'s canary through the steps of `rollout`: each step's share is held for its pause, while
    /// the canary's failed reconciles are checked twice a second; more than `max_failures` roll it back, and after the
    /// last step it serves every primary. Aborted when another version comes (see [`Manager::install_version`]).
    async fn roll_out(self, name: String, rollout: RolloutSettings) {
        let steps = rollout.steps.len();
        'steps: for (index, step) in rollout.steps.iter().enumerate() {
            if index > 0 {
                let grown = self
                    .with_canary(&name, |slot, controller| {
                        controller.grow_canary(step.share);
                        if let Some(canary) = &mut slot.canary {
                            canary.step = index + 1;
                            canary.share = step.share;
                        }
                    })
                    .await;
                if grown.is_none() {
                    return;
                }
                tracing::info!(plugin = %name, step = index + 1, steps, share = step.share, "rollout: next step");
                self.changed.notify_waiters();
            }
            let mut until = tokio::time::Instant::now() + step.pause;
            loop {
                let Some(Some(report)) = self
                    .with_canary(&name, |_, controller| controller.canary_report())
                    .await
                else {
                    return;
                };
                let control = self.rollout_control(&name);
                let canary = self.canary_revision(&name);
                if canary.is_some() && control.abort == canary {
                    self.roll_back(&name, Breach::Operator, step.share, &report).await;
                    return;
                }
                if report.failures > rollout.max_failures {
                    let breach = Breach::Failures(rollout.max_failures);
                    self.roll_back(&name, breach, step.share, &report).await;
                    return;
                }
                if canary.is_some() && control.promote == canary {
                    tracing::info!(plugin = %name, "rollout promoted by spec.rollout.promote");
                    break 'steps;
                }
                let now = tokio::time::Instant::now();
                if control.paused {
                    // Held where it is: the step's pause starts again once the rollout is resumed.
                    until = now + step.pause;
                } else if now >= until {
                    break;
                }
                tokio::time::sleep((until - now).min(Duration::from_millis(500))).await;
            }
        }
        let changing = self.changing(&name);
        let _changing = changing.lock().await;
        let mut slots = self.slots.lock().await;
        let Some(slot) = slots.get_mut(&name) else { return };
        let Some(canary) = slot.canary.take() else { return };
        if let Some(controller) = slot.running.lock().await.as_ref() {
            controller.promote_canary();
        }
        if let Some(metrics) = &self.metrics {
            metrics.set_plugin_info(&name, &canary.sha256, &canary.contract);
        }
        slot.since = crate::apply::now();
        slot.sha256 = canary.sha256;
        slot.contract = canary.contract;
        slot.config = canary.config;
        slot.settings = canary.settings;
        drop(slots);
        tracing::info!(plugin = %name, steps, "rollout done: the new version serves every object");
        self.record(&name, |record| {
            if let Some(number) = record.canary.take() {
                record.revision = Some(number);
            }
        });
    }

    /// Runs `act` on plugin `name`'s slot and running controller while a canary rolls out there, under the lock
    /// that orders its changes; `None` when none does any more.
    async fn with_canary<T>(&self, name: &str, act: impl FnOnce(&mut Slot, &Controller) -> T) -> Option<T> {
        let changing = self.changing(name);
        let _changing = changing.lock().await;
        let mut slots = self.slots.lock().await;
        let slot = slots.get_mut(name)?;
        slot.canary.as_ref()?;
        let running = slot.running.clone();
        let running = running.lock().await;
        Some(act(slot, running.as_ref()?))
    }

    /// Rolls plugin `name`'s canary back after `report` broke the limit of `rollout`: the serving version
    /// reconciles the canary's primaries again; the WasmPlugin's last refusal names the limit and the primaries.
    async fn roll_back(
        &self,
        name: &str,
        breach: Breach,
        share: u8,
        report: &crate::controller::rollout::CanaryReport,
    ) {
        let rolled_back = self
            .with_canary(name, |slot, controller| {
                controller.abort_canary();
                slot.canary.take().map(|canary| canary.sha256)
            })
            .await
            .flatten();
        let Some(sha256) = rolled_back else { return };
        let failed: Vec<String> = report
            .failed
            .iter()
            .map(|(key, reason)| format!("{key} ({reason})"))
            .collect();
        let short = &sha256[..12.min(sha256.len())];
        let message = match breach {
            Breach::Failures(max) => format!(
                "rolled back: the new version sha256:{short} failed {} reconciles at {share}% of the objects \
                 (rollout.maxFailures is {max}): {}; the serving version reconciles its objects again",
                report.failures,
                failed.join(", ")
            ),
            Breach::Operator => format!(
                "rolled back by spec.rollout.abort: the new version sha256:{short} at {share}% of the objects; the \
                 serving version reconciles its objects again"
            ),
        };
        tracing::warn!(plugin = name, sha256 = %sha256, failures = report.failures, share, "rollout rolled back");
        if let Some(metrics) = &self.metrics {
            metrics.record_plugin_load(name, false);
        }
        self.record(name, |record| record.canary = None);
        self.record_refusal(name, &message);
    }

    /// What `settings` grant plugin `name` (used by contract 0.2 plugins only): outbound HTTP, variables read from
    /// Secrets with the client of the plugin's `caches` (the host's, or its ServiceAccount's), and the counters its
    /// requests are recorded in.
    fn grants(&self, name: &str, settings: &PluginSettings, caches: &Caches) -> Grants {
        Grants {
            outbound: Arc::new(settings.outbound.clone()),
            counters: self
                .metrics
                .as_ref()
                .map_or_else(OutboundCounters::default, |metrics| metrics.outbound_counters(name)),
            variables: Arc::new(SecretVariables::new(
                caches.client().clone(),
                self.namespace.clone(),
                settings.variables.clone(),
            )),
        }
    }

    /// Counts a version of plugin `name` that was refused before it reached [`Manager::update`] (its package
    /// did not decode: digest, gzip, size, configuration or settings), like a version that failed to load, and
    /// keeps why as its last refusal.
    pub fn record_refused(&self, name: &str, message: &str) {
        if let Some(metrics) = &self.metrics {
            metrics.record_plugin_load(name, false);
        }
        self.record_refusal(name, message);
    }

    /// Stops and forgets plugin `name`. Returns whether it was installed.
    pub async fn remove(&self, name: &str) -> bool {
        let slot = self.slots.lock().await.remove(name);
        self.records.lock().unwrap_or_else(PoisonError::into_inner).remove(name);
        self.changed.notify_waiters();
        if let Some(metrics) = &self.metrics {
            metrics.forget_plugin(name);
        }
        match slot {
            Some(slot) => {
                stop_slot(slot).await;
                true
            }
            None => false,
        }
    }

    /// Stops every controller.
    pub async fn shut_down(&self) {
        let slots: Vec<Slot> = self.slots.lock().await.drain().map(|(_, slot)| slot).collect();
        for slot in slots {
            stop_slot(slot).await;
        }
    }

    /// Starts plugin `name`'s controller on `caches` once its kinds are served.
    fn start_slot(
        &self,
        name: &str,
        version: Version,
        (sha256, config, settings): (String, Value, PluginSettings),
        spec: ControllerSpec,
        caches: Caches,
    ) -> Slot {
        let running: Arc<Mutex<Option<Controller>>> = Arc::default();
        let options = ControllerOptions {
            concurrency: settings.concurrency,
            namespaces: settings.namespaces.clone(),
            resync: settings.resync,
            always_call: settings.always_call,
            instance: self.instance.clone(),
            shard: self.shard.clone(),
            fence: self.fence.clone(),
            drain_client: Some(self.caches.client().clone()),
            ..ControllerOptions::default()
        };
        let starter = tokio::spawn(start_when_served(
            name.to_owned(),
            version,
            caches,
            options,
            self.metrics.clone(),
            running.clone(),
        ));
        Slot {
            sha256,
            contract: String::new(),
            since: crate::apply::now(),
            config,
            settings,
            spec,
            running,
            starter,
            canary: None,
        }
    }
}

/// Why a rollout is rolled back.
#[derive(Debug, Clone, Copy)]
enum Breach {
    /// More failed reconciles than `rollout.maxFailures`, the number.
    Failures(usize),
    /// The WasmPlugin's `spec.rollout.abort` named the canary's revision.
    Operator,
}

/// How long a resumed rollout waits for the revision serving before to run (its caches to sync).
const RESUME_WITHIN: Duration = Duration::from_secs(120);

/// Whether a version must pass the preview gate before it serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gate {
    /// A source's new version: previewed against the serving one.
    Preview,
    /// A revision from the cluster's history, served by a pin or an unpin: accepted before.
    None,
}

impl PluginStates for Manager {
    async fn states(&self) -> Vec<PluginState> {
        Manager::states(self).await
    }

    async fn changed(&self) {
        Manager::changed(self).await;
    }
}

/// Starts the controller, retrying while a kind it needs is not served yet (its CRD may come later).
async fn start_when_served(
    name: String,
    version: Version,
    caches: Caches,
    options: ControllerOptions,
    metrics: Option<Metrics>,
    running: Arc<Mutex<Option<Controller>>>,
) {
    let mut waited = 0u32;
    loop {
        match Controller::start(&name, version.clone(), &caches, options.clone(), metrics.clone()).await {
            Ok(controller) => {
                *running.lock().await = Some(controller);
                return;
            }
            Err(error) => {
                let StartError::Cache(CacheError::NotServed { gvk, .. }) = &error;
                if waited.is_multiple_of(15) {
                    tracing::warn!(plugin = %name, kind = %gvk, "waiting for the API server to serve a kind the plugin declares (is its CRD installed?)");
                }
                waited += 1;
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        }
    }
}

impl Installer for Manager {
    async fn install(&self, name: &str, package: PluginPackage) -> Result<Installed, InstallError> {
        self.update(name, package).await
    }

    async fn uninstall(&self, name: &str) -> bool {
        self.remove(name).await
    }

    fn record_refused(&self, name: &str, message: &str) {
        Manager::record_refused(self, name, message);
    }

    fn record_source(&self, name: &str, source: &str) {
        self.record(name, |record| record.source = Some(source.to_owned()));
    }
}

async fn stop_slot(slot: Slot) {
    if let Some(canary) = &slot.canary {
        canary.task.abort();
    }
    slot.starter.abort();
    let _ = slot.starter.await;
    if let Some(controller) = slot.running.lock().await.take() {
        controller.stop().await;
    }
}
