//! Plugins from ConfigMaps labelled `wasm-reconciler.io/plugin=true` in the host's namespace, watched for
//! changes. A refused version is logged, counted, and reported as a Warning Event on its ConfigMap; the
//! previous version keeps serving. Deleting the ConfigMap stops that controller.

use std::collections::{BTreeMap, HashMap};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use kube::Client;
use kube::api::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::watcher::{self, Event as WatchEvent, watcher};

use super::package::{CONFIG_KEY, PluginPackage, SETTINGS_KEY, WASM_GZ_KEY, WASM_KEY};
use super::{Installed, Installer};

/// Label that marks plugin ConfigMaps.
pub const PLUGIN_LABEL: &str = "wasm-reconciler.io/plugin";
/// Annotation pinning the component's sha256.
pub const SHA256_ANNOTATION: &str = "wasm-reconciler.io/sha256";

/// Watches plugin ConfigMaps in one namespace.
pub struct ConfigMapSource {
    client: Client,
    namespace: String,
    recorder: Recorder,
    /// ConfigMap name → resourceVersion last handled.
    handled: HashMap<String, String>,
}

impl std::fmt::Debug for ConfigMapSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigMapSource")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl ConfigMapSource {
    /// Watches `namespace`; `instance` names this host in events.
    pub fn new(client: Client, namespace: &str, instance: Option<String>) -> Self {
        let reporter = Reporter {
            controller: "wasm-reconciler".into(),
            instance,
        };
        Self {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            namespace: namespace.to_owned(),
            handled: HashMap::new(),
        }
    }

    /// Keeps the installer in step with the ConfigMaps until `shutdown` resolves.
    pub async fn run(mut self, installer: impl Installer, shutdown: impl std::future::Future<Output = ()>) {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        let config = watcher::Config::default().labels(&format!("{PLUGIN_LABEL}=true"));
        let mut stream = watcher(api, config).default_backoff().boxed();
        let mut listed: Vec<ConfigMap> = Vec::new();
        tokio::pin!(shutdown);
        tracing::info!(namespace = %self.namespace, label = %format!("{PLUGIN_LABEL}=true"), "watching plugin ConfigMaps");
        loop {
            let event = tokio::select! {
                () = &mut shutdown => return,
                event = stream.next() => event,
            };
            let Some(event) = event else { return };
            match event {
                Ok(WatchEvent::Init) => listed.clear(),
                Ok(WatchEvent::InitApply(config_map)) => listed.push(config_map),
                Ok(WatchEvent::InitDone) => {
                    let names: Vec<String> = listed.iter().filter_map(|c| c.metadata.name.clone()).collect();
                    let gone: Vec<String> = self.handled.keys().filter(|n| !names.contains(n)).cloned().collect();
                    for name in gone {
                        self.removed(&installer, &name).await;
                    }
                    for config_map in std::mem::take(&mut listed) {
                        self.applied(&installer, config_map).await;
                    }
                }
                Ok(WatchEvent::Apply(config_map)) => self.applied(&installer, config_map).await,
                Ok(WatchEvent::Delete(config_map)) => {
                    if let Some(name) = config_map.metadata.name {
                        self.removed(&installer, &name).await;
                    }
                }
                Err(error) => {
                    tracing::warn!(namespace = %self.namespace, error = %crate::error_chain(&error), "ConfigMap watch failed; retrying");
                }
            }
        }
    }

    async fn removed(&mut self, installer: &impl Installer, name: &str) {
        self.handled.remove(name);
        if installer.uninstall(name).await {
            tracing::info!(plugin = name, "plugin ConfigMap deleted; controller stopped");
        }
    }

    async fn applied(&mut self, installer: &impl Installer, config_map: ConfigMap) {
        let Some(name) = config_map.metadata.name.clone() else {
            return;
        };
        let version = config_map.metadata.resource_version.clone().unwrap_or_default();
        if self.handled.get(&name) == Some(&version) {
            return;
        }
        self.handled.insert(name.clone(), version);
        let result = match decode(&config_map) {
            Ok(package) => installer
                .install(&name, package)
                .await
                .map_err(|e| crate::error_chain(&e)),
            Err(error) => {
                installer.record_refused(&name);
                Err(crate::error_chain(&error))
            }
        };
        match result {
            Ok(Installed::Unchanged) => {}
            Ok(result) => {
                tracing::info!(plugin = %name, ?result, "plugin loaded from ConfigMap");
                let event = Event {
                    type_: EventType::Normal,
                    reason: "PluginLoaded".into(),
                    note: Some(format!("plugin {name} is serving this version ({result:?})")),
                    action: "Load".into(),
                    secondary: None,
                };
                self.publish(&config_map, &event).await;
            }
            Err(message) => {
                tracing::error!(plugin = %name, error = %message, "plugin ConfigMap refused; the previous version keeps serving");
                let event = Event {
                    type_: EventType::Warning,
                    reason: "PluginRefused".into(),
                    note: Some(truncate(
                        &format!("refused, the previous version keeps serving: {message}"),
                        1000,
                    )),
                    action: "Load".into(),
                    secondary: None,
                };
                self.publish(&config_map, &event).await;
            }
        }
    }

    async fn publish(&self, config_map: &ConfigMap, event: &Event) {
        let reference = ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("ConfigMap".into()),
            name: config_map.metadata.name.clone(),
            namespace: config_map.metadata.namespace.clone(),
            uid: config_map.metadata.uid.clone(),
            // The recorder folds Events with the same reason and object into one series and keeps the first
            // note; naming the version keeps each version's verdict (and its reason) visible.
            resource_version: config_map.metadata.resource_version.clone(),
            ..ObjectReference::default()
        };
        if let Err(error) = self.recorder.publish(event, &reference).await {
            tracing::warn!(error = %crate::error_chain(&error), "could not record an event on the plugin ConfigMap");
        }
    }
}

/// Decodes a plugin ConfigMap into a package.
pub fn decode(config_map: &ConfigMap) -> Result<PluginPackage, super::PackageError> {
    let binary: BTreeMap<String, Vec<u8>> = config_map
        .binary_data
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|(key, value)| (key, value.0))
        .collect();
    let data = config_map.data.clone().unwrap_or_default();
    let pinned = config_map
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(SHA256_ANNOTATION))
        .map(String::as_str);
    PluginPackage::decode(
        binary.get(WASM_KEY).map(Vec::as_slice),
        binary.get(WASM_GZ_KEY).map(Vec::as_slice),
        data.get(CONFIG_KEY).map(String::as_str),
        data.get(SETTINGS_KEY).map(String::as_str),
        pinned,
    )
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut cut = max - 3;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}...", &text[..cut])
}
