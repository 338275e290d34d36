//! Pins: a WasmPlugin's `spec.revision` makes its plugin serve that revision from the cluster's history (a
//! rollback), whatever its source delivers since; removing it makes the source's newest version serve again. Users
//! set it with `wasm-reconciler plugin rollback` or `kubectl patch` (docs/deploy.md, "Changing a plugin safely").

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt as _;
use kube::api::{Api, DynamicObject};
use kube::runtime::watcher::{self, Event};
use tokio::sync::watch;

use super::Manager;
use crate::telemetry::plugin_status;

/// The revision a WasmPlugin pins, if any: `spec.revision`, a positive integer.
pub fn pinned_revision(object: &DynamicObject) -> Option<i64> {
    object.data["spec"]["revision"]
        .as_i64()
        .filter(|revision| *revision > 0)
}

/// How a WasmPlugin's `spec.rollout` steers a rollout in progress.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RolloutControl {
    /// `paused`: the share does not grow.
    pub paused: bool,
    /// `promote`: the revision to serve to every object now, if it is the canary.
    pub promote: Option<i64>,
    /// `abort`: the revision to roll back now, if it is the canary.
    pub abort: Option<i64>,
}

impl RolloutControl {
    /// What `object`'s `spec.rollout` says.
    pub fn of(object: &DynamicObject) -> Self {
        let rollout = &object.data["spec"]["rollout"];
        Self {
            paused: rollout["paused"].as_bool().unwrap_or(false),
            promote: rollout["promote"].as_i64(),
            abort: rollout["abort"].as_i64(),
        }
    }
}

/// Watches the WasmPlugins of `namespace` and hands their pins to `manager` until `stop` turns true. Until the
/// first list, the manager installs nothing; without the CRD or the right to list WasmPlugins, no plugin is pinned
/// (said once) and the watch keeps trying.
pub async fn watch_pins(client: kube::Client, namespace: &str, manager: Manager, mut stop: watch::Receiver<bool>) {
    let api: Api<DynamicObject> = Api::namespaced_with(client, namespace, &plugin_status::resource());
    let config = watcher::Config::default();
    let mut events = std::pin::pin!(watcher::watcher(api, config));
    let mut pins: BTreeMap<String, i64> = BTreeMap::new();
    let mut listing: BTreeMap<String, i64> = BTreeMap::new();
    // The revision each WasmPlugin said was serving when first listed: where a rollout the host before this one
    // started resumes from.
    let mut serving: Option<BTreeMap<String, i64>> = Some(BTreeMap::new());
    let mut known = false;
    let mut said = false;
    loop {
        let event = tokio::select! {
            event = events.next() => event,
            _ = stop.wait_for(|stop| *stop) => return,
        };
        match event {
            None => return,
            Some(Ok(Event::Init)) => listing.clear(),
            Some(Ok(Event::InitApply(object))) => {
                if let Some(name) = &object.metadata.name {
                    manager.set_rollout_control(name, RolloutControl::of(&object));
                }
                if let (Some(name), Some(revision)) = (object.metadata.name.clone(), pinned_revision(&object)) {
                    listing.insert(name, revision);
                }
                if let (Some(serving), Some(name), Some(revision)) = (
                    serving.as_mut(),
                    object.metadata.name.clone(),
                    object.data["status"]["revision"].as_i64(),
                ) {
                    serving.insert(name, revision);
                }
            }
            Some(Ok(Event::InitDone)) => {
                if let Some(serving) = serving.take() {
                    manager.set_serving_before(serving);
                }
                pins = std::mem::take(&mut listing);
                known = true;
                said = false;
                manager.set_pins(pins.clone()).await;
            }
            Some(Ok(Event::Apply(object))) => {
                let Some(name) = object.metadata.name.clone() else {
                    continue;
                };
                manager.set_rollout_control(&name, RolloutControl::of(&object));
                let changed = match pinned_revision(&object) {
                    Some(revision) => pins.insert(name, revision) != Some(revision),
                    None => pins.remove(&name).is_some(),
                };
                if changed {
                    manager.set_pins(pins.clone()).await;
                }
            }
            Some(Ok(Event::Delete(object))) => {
                if let Some(name) = &object.metadata.name {
                    manager.set_rollout_control(name, RolloutControl::default());
                }
                if let Some(name) = &object.metadata.name
                    && pins.remove(name).is_some()
                {
                    manager.set_pins(pins.clone()).await;
                }
            }
            Some(Err(error)) => {
                if !known {
                    // Plugins must not wait forever on a kind that is not installed: none is pinned until it is.
                    known = true;
                    manager.set_pins(pins.clone()).await;
                }
                if !said {
                    said = true;
                    tracing::warn!(namespace, error = %crate::error_chain(&error), "cannot watch WasmPlugins, so no plugin can be pinned to a revision; install deploy/wasmplugins-crd.yaml and grant the host list and watch on wasmplugins");
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}
