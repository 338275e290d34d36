//! Plugins from ConfigMaps labelled `wasm-reconciler.io/plugin=true` in the host's namespace, watched for
//! changes. A ConfigMap carries the component (`plugin.wasm[.gz]`) or a reference to it (`plugin.ref`, kept in step
//! by a task of its own). A refused version is logged, counted, and reported as a Warning Event on its ConfigMap;
//! the previous version keeps serving. Deleting the ConfigMap stops that controller.

use std::collections::{BTreeMap, HashMap};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use kube::Client;
use kube::api::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::watcher::{self, Event as WatchEvent, watcher};
use tokio_util::sync::CancellationToken;

use super::package::{CONFIG_KEY, PackageError, PluginPackage, SETTINGS_KEY, WASM_GZ_KEY, WASM_KEY};
use super::reference::{PluginReference, REF_KEY, ReferenceError};
use super::referenced::{self, ReferenceContext, ReferencedPlugin, Verdict, VerdictSink};
use super::settings::PluginSettings;
use super::signature::{DETACHED_SIGNATURE_KEY, PolicyError, SignaturePolicy};
use super::{Installed, Installer};

/// Label that marks plugin ConfigMaps.
pub const PLUGIN_LABEL: &str = "wasm-reconciler.io/plugin";
/// Annotation pinning the component's sha256.
pub const SHA256_ANNOTATION: &str = "wasm-reconciler.io/sha256";

/// What a plugin ConfigMap delivers.
#[derive(Debug, Clone, PartialEq)]
pub enum Delivered {
    /// The component itself, decoded and checked.
    Inline(PluginPackage),
    /// A reference to the component, to be pulled.
    Referenced(ReferencedPlugin),
}

/// Why a plugin ConfigMap is refused before anything is pulled or loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigMapError {
    /// The package does not decode.
    #[error(transparent)]
    Package(#[from] PackageError),
    /// The reference does not parse.
    #[error("`{REF_KEY}` is invalid")]
    Reference(#[source] ReferenceError),
    /// Both a component and a reference.
    #[error("both `{REF_KEY}` and a component (`{WASM_KEY}` or `{WASM_GZ_KEY}`) are present; keep one")]
    ReferenceAndComponent,
    /// A URL reference without the digest pin.
    #[error("an https:// reference needs the component's digest in the `{SHA256_ANNOTATION}` annotation")]
    UnpinnedUrl,
    /// The signature policy refuses the inline component.
    #[error(transparent)]
    Policy(#[from] PolicyError),
}

/// Watches plugin ConfigMaps in one namespace.
pub struct ConfigMapSource {
    client: Client,
    namespace: String,
    recorder: Recorder,
    context: ReferenceContext,
    /// ConfigMap name → resourceVersion last handled.
    handled: HashMap<String, String>,
    /// ConfigMap name → the task keeping its reference installed.
    tasks: HashMap<String, ReferenceTask>,
}

struct ReferenceTask {
    cancel: CancellationToken,
    handle: tokio::task::JoinHandle<()>,
}

impl ReferenceTask {
    /// Stops the task and waits for it (an install in progress finishes first).
    async fn stop(self) {
        self.cancel.cancel();
        let _ = self.handle.await;
    }
}

impl std::fmt::Debug for ConfigMapSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigMapSource")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl ConfigMapSource {
    /// Watches `namespace`; `instance` names this host in events; `context` pulls references and holds the
    /// signature policy.
    pub fn new(client: Client, namespace: &str, instance: Option<String>, context: ReferenceContext) -> Self {
        let reporter = Reporter {
            controller: "wasm-reconciler".into(),
            instance,
        };
        Self {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            namespace: namespace.to_owned(),
            context,
            handled: HashMap::new(),
            tasks: HashMap::new(),
        }
    }

    /// Keeps the installer in step with the ConfigMaps until `shutdown` resolves.
    pub async fn run(
        mut self,
        installer: impl Installer + Clone + 'static,
        shutdown: impl std::future::Future<Output = ()>,
    ) {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        let config = watcher::Config::default().labels(&format!("{PLUGIN_LABEL}=true"));
        let mut stream = watcher(api, config).default_backoff().boxed();
        let mut listed: Vec<ConfigMap> = Vec::new();
        tokio::pin!(shutdown);
        tracing::info!(namespace = %self.namespace, label = %format!("{PLUGIN_LABEL}=true"), "watching plugin ConfigMaps");
        loop {
            let event = tokio::select! {
                () = &mut shutdown => break,
                event = stream.next() => event,
            };
            let Some(event) = event else { break };
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
        for (_, task) in self.tasks.drain() {
            task.stop().await;
        }
    }

    async fn removed(&mut self, installer: &impl Installer, name: &str) {
        self.handled.remove(name);
        if let Some(task) = self.tasks.remove(name) {
            task.stop().await;
        }
        if installer.uninstall(name).await {
            tracing::info!(plugin = name, "plugin ConfigMap deleted; controller stopped");
        }
    }

    async fn applied(&mut self, installer: &(impl Installer + Clone + 'static), config_map: ConfigMap) {
        let Some(name) = config_map.metadata.name.clone() else {
            return;
        };
        let version = config_map.metadata.resource_version.clone().unwrap_or_default();
        if self.handled.get(&name) == Some(&version) {
            return;
        }
        self.handled.insert(name.clone(), version.clone());
        if let Some(task) = self.tasks.remove(&name) {
            task.stop().await;
        }
        let sink = EventSink {
            recorder: self.recorder.clone(),
            reference: object_reference(&config_map),
            name: name.clone(),
        };
        let delivered = read(&config_map, &self.context.policy);
        let source = match &delivered {
            Ok(Delivered::Referenced(plugin)) => format!("{} (ConfigMap {}/{name})", plugin.reference, self.namespace),
            _ => format!("ConfigMap {}/{name}", self.namespace),
        };
        installer.record_source(&name, &source);
        let result = match delivered {
            Ok(Delivered::Inline(package)) => installer
                .install(
                    &name,
                    PluginPackage {
                        origin: Some(format!("{source} at resourceVersion {version}")),
                        ..package
                    },
                )
                .await
                .map_err(|e| crate::error_chain(&e)),
            Ok(Delivered::Referenced(plugin)) => {
                let cancel = CancellationToken::new();
                let handle = tokio::spawn(referenced::run(
                    plugin,
                    installer.clone(),
                    self.context.clone(),
                    sink,
                    cancel.clone(),
                ));
                self.tasks.insert(name, ReferenceTask { cancel, handle });
                return;
            }
            Err(error) => {
                let message = crate::error_chain(&error);
                installer.record_refused(&name, &message);
                Err(message)
            }
        };
        match result {
            Ok(Installed::Unchanged) => {}
            Ok(installed) => {
                // Held: the manager said why (the plugin is pinned to a revision); the Event says it too.
                if installed != Installed::Held {
                    tracing::info!(plugin = %name, ?installed, "plugin loaded from ConfigMap");
                }
                sink.report(Verdict::Loaded {
                    installed,
                    source: "this version".into(),
                })
                .await;
            }
            Err(message) => {
                tracing::error!(plugin = %name, error = %message, "plugin ConfigMap refused; the previous version keeps serving");
                sink.report(Verdict::Refused {
                    message,
                    retrying: false,
                })
                .await;
            }
        }
    }
}

/// Publishes verdicts as Events on one plugin ConfigMap.
struct EventSink {
    recorder: Recorder,
    reference: ObjectReference,
    name: String,
}

impl VerdictSink for EventSink {
    async fn report(&self, verdict: Verdict) {
        let event = match verdict {
            Verdict::Loaded {
                installed: Installed::Held,
                source,
            } => Event {
                type_: EventType::Normal,
                reason: "PluginHeld".into(),
                note: Some(truncate(
                    &format!(
                        "plugin {} is pinned to a revision; {source} is kept and serves once the pin is removed \
                         (`wasm-reconciler plugin unpin {}`)",
                        self.name, self.name
                    ),
                    1000,
                )),
                action: "Load".into(),
                secondary: None,
            },
            Verdict::Loaded { installed, source } => Event {
                type_: EventType::Normal,
                reason: "PluginLoaded".into(),
                note: Some(truncate(
                    &format!("plugin {} is serving {source} ({installed:?})", self.name),
                    1000,
                )),
                action: "Load".into(),
                secondary: None,
            },
            Verdict::Refused { message, retrying } => Event {
                type_: EventType::Warning,
                reason: "PluginRefused".into(),
                note: Some(truncate(
                    &format!(
                        "refused, the previous version keeps serving{}: {message}",
                        if retrying { " (retrying with backoff)" } else { "" }
                    ),
                    1000,
                )),
                action: "Load".into(),
                secondary: None,
            },
        };
        if let Err(error) = self.recorder.publish(&event, &self.reference).await {
            tracing::warn!(plugin = %self.name, error = %crate::error_chain(&error), "could not record an event on the plugin ConfigMap");
        }
    }
}

fn object_reference(config_map: &ConfigMap) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("ConfigMap".into()),
        name: config_map.metadata.name.clone(),
        namespace: config_map.metadata.namespace.clone(),
        uid: config_map.metadata.uid.clone(),
        // The recorder folds Events with the same reason and object into one series and keeps the first
        // note; naming the version keeps each version's verdict (and its reason) visible.
        resource_version: config_map.metadata.resource_version.clone(),
        ..ObjectReference::default()
    }
}

/// Reads a plugin ConfigMap: the component inline (checked against the signature policy) or a reference.
pub fn read(config_map: &ConfigMap, policy: &SignaturePolicy) -> Result<Delivered, ConfigMapError> {
    let data = config_map.data.clone().unwrap_or_default();
    let binary = config_map.binary_data.as_ref();
    let has_component = binary.is_some_and(|b| b.contains_key(WASM_KEY) || b.contains_key(WASM_GZ_KEY));
    let pinned = pinned_sha256(config_map);
    let signature = data.get(DETACHED_SIGNATURE_KEY).map(|s| s.trim().to_owned());
    let Some(reference) = data.get(REF_KEY) else {
        let package = decode(config_map)?;
        policy.check_detached(&package.wasm, signature.as_deref())?;
        return Ok(Delivered::Inline(PluginPackage {
            detached_signature: signature,
            ..package
        }));
    };
    if has_component {
        return Err(ConfigMapError::ReferenceAndComponent);
    }
    let reference = PluginReference::parse(reference).map_err(ConfigMapError::Reference)?;
    if matches!(reference, PluginReference::Url(_)) && pinned.is_none() {
        return Err(ConfigMapError::UnpinnedUrl);
    }
    let config = data.get(CONFIG_KEY).cloned();
    let settings_text = data.get(SETTINGS_KEY).cloned();
    // Configuration and settings are checked now, before anything is pulled (the component is checked later).
    PluginPackage::decode(Some(&[]), None, config.as_deref(), settings_text.as_deref(), None)?;
    let settings =
        PluginSettings::parse(settings_text.as_deref().unwrap_or_default()).map_err(PackageError::Settings)?;
    Ok(Delivered::Referenced(ReferencedPlugin {
        name: config_map.metadata.name.clone().unwrap_or_default(),
        reference,
        pinned_sha256: pinned.map(str::to_owned),
        detached_signature: signature,
        config,
        settings_text,
        settings,
    }))
}

fn pinned_sha256(config_map: &ConfigMap) -> Option<&str> {
    config_map
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(SHA256_ANNOTATION))
        .map(String::as_str)
}

/// Decodes a plugin ConfigMap that carries its component into a package.
pub fn decode(config_map: &ConfigMap) -> Result<PluginPackage, PackageError> {
    let binary: BTreeMap<String, Vec<u8>> = config_map
        .binary_data
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|(key, value)| (key, value.0))
        .collect();
    let data = config_map.data.clone().unwrap_or_default();
    PluginPackage::decode(
        binary.get(WASM_KEY).map(Vec::as_slice),
        binary.get(WASM_GZ_KEY).map(Vec::as_slice),
        data.get(CONFIG_KEY).map(String::as_str),
        data.get(SETTINGS_KEY).map(String::as_str),
        pinned_sha256(config_map),
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

#[cfg(test)]
mod tests {
    use k8s_openapi::ByteString;

    use super::*;
    use crate::delivery::signature::PluginSigner;

    fn config_map(data: &[(&str, &str)], wasm: Option<&[u8]>) -> ConfigMap {
        let mut config_map = ConfigMap::default();
        config_map.metadata.name = Some("echo".into());
        config_map.data = Some(data.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect());
        config_map.binary_data = wasm.map(|w| BTreeMap::from([(WASM_KEY.to_owned(), ByteString(w.to_vec()))]));
        config_map
    }

    #[test]
    fn references_and_components() {
        let none = SignaturePolicy::none();
        let inline = read(&config_map(&[], Some(b"\0asm")), &none).unwrap();
        assert!(matches!(inline, Delivered::Inline(_)));
        let referenced = read(
            &config_map(
                &[
                    (REF_KEY, "oci://127.0.0.1:5000/echo:v1"),
                    (SETTINGS_KEY, "pullSecret: regcred"),
                ],
                None,
            ),
            &none,
        )
        .unwrap();
        let Delivered::Referenced(plugin) = referenced else {
            panic!()
        };
        assert_eq!(plugin.name, "echo");
        assert_eq!(plugin.settings.pull_secret.as_deref(), Some("regcred"));

        let error = |cm: ConfigMap| crate::error_chain(&read(&cm, &none).unwrap_err());
        assert!(error(config_map(&[(REF_KEY, "oci://r/e:v1")], Some(b"x"))).contains("keep one"));
        assert!(error(config_map(&[(REF_KEY, "r/e:v1")], None)).contains("`plugin.ref` is invalid"));
        assert!(error(config_map(&[(REF_KEY, "https://r/e.wasm")], None)).contains("needs the component's digest"));
        assert!(error(config_map(&[(REF_KEY, "oci://r/e:v1"), (CONFIG_KEY, "[1]")], None)).contains("config.yaml"));
        assert!(
            error(config_map(
                &[(REF_KEY, "oci://r/e:v1"), (SETTINGS_KEY, "bogus: 1")],
                None
            ))
            .contains("bogus")
        );
    }

    #[test]
    fn inline_components_need_a_detached_signature_under_a_policy() {
        let signer = PluginSigner::generate();
        let policy = SignaturePolicy::require(vec![signer.trusted_key("k.pub")]);
        let unsigned = read(&config_map(&[], Some(b"\0asm")), &policy).unwrap_err();
        assert!(
            matches!(unsigned, ConfigMapError::Policy(PolicyError::MissingDetached)),
            "{unsigned}"
        );
        let signature = signer.sign(b"\0asm");
        let signed = read(
            &config_map(&[(DETACHED_SIGNATURE_KEY, &signature)], Some(b"\0asm")),
            &policy,
        );
        assert!(matches!(signed, Ok(Delivered::Inline(_))));
        let forged = read(
            &config_map(&[(DETACHED_SIGNATURE_KEY, &signature)], Some(b"\0asn")),
            &policy,
        );
        assert!(matches!(
            forged,
            Err(ConfigMapError::Policy(PolicyError::UntrustedDetached { .. }))
        ));
    }
}
