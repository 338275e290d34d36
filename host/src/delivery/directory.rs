//! Plugins from a directory, watched for changes: `<dir>/<name>/plugin.wasm` (or `plugin.wasm.gz`) with optional
//! `config.yaml` and `settings.yaml` — the same layout as a plugin ConfigMap; under a signature policy, a
//! `plugin.wasm.sig` beside it. With CRD installation on (`dev`), a `crd.yaml` beside the component is applied to
//! the cluster first.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};

use super::package::{CONFIG_KEY, PluginPackage, SETTINGS_KEY, WASM_GZ_KEY, WASM_KEY};
use super::signature::{DETACHED_SIGNATURE_KEY, SignaturePolicy};
use super::{Installed, Installer};

/// File holding the CRDs a plugin's kinds need (installed by `dev`).
pub const CRD_FILE: &str = "crd.yaml";

/// How often the directory is scanned.
pub const SCAN_INTERVAL: Duration = Duration::from_secs(1);

/// Size and modification time of every file of one plugin directory: a cheap change detector.
type Fingerprint = Vec<(String, u64, Option<SystemTime>)>;

/// Watches a plugin directory and keeps the installer in step with it.
pub struct DirectorySource {
    dir: PathBuf,
    crds: Option<kube::Client>,
    policy: SignaturePolicy,
    seen: HashMap<String, Fingerprint>,
}

impl std::fmt::Debug for DirectorySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectorySource")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl DirectorySource {
    /// Watches `dir`. With `crds`, each plugin's `crd.yaml` is applied through that client before loading.
    pub fn new(dir: PathBuf, crds: Option<kube::Client>) -> Self {
        Self {
            dir,
            crds,
            policy: SignaturePolicy::none(),
            seen: HashMap::new(),
        }
    }

    /// Requires every plugin to carry a `plugin.wasm.sig` by one of the policy's keys.
    pub fn with_policy(mut self, policy: SignaturePolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Scans until `shutdown` resolves.
    pub async fn run(mut self, installer: impl Installer, shutdown: impl std::future::Future<Output = ()>) {
        tokio::pin!(shutdown);
        let mut ticker = tokio::time::interval(SCAN_INTERVAL);
        loop {
            tokio::select! {
                () = &mut shutdown => return,
                _ = ticker.tick() => self.scan(&installer).await,
            }
        }
    }

    /// One scan: loads new or changed plugins, removes vanished ones.
    pub async fn scan(&mut self, installer: &impl Installer) {
        let mut present = HashMap::new();
        match std::fs::read_dir(&self.dir) {
            Ok(entries) => {
                for entry in entries.flatten() {
                    let path = entry.path();
                    let Some(name) = path.file_name().and_then(|n| n.to_str()).map(str::to_owned) else {
                        continue;
                    };
                    if path.is_dir() && (path.join(WASM_KEY).exists() || path.join(WASM_GZ_KEY).exists()) {
                        present.insert(name, path);
                    }
                }
            }
            Err(error) => {
                tracing::warn!(dir = %self.dir.display(), error = %error, "cannot read the plugin directory");
                return;
            }
        }
        let vanished: Vec<String> = self
            .seen
            .keys()
            .filter(|name| !present.contains_key(*name))
            .cloned()
            .collect();
        for name in vanished {
            self.seen.remove(&name);
            if installer.uninstall(&name).await {
                tracing::info!(plugin = %name, "plugin removed from the directory; controller stopped");
            }
        }
        let mut names: Vec<_> = present.into_iter().collect();
        names.sort();
        for (name, path) in names {
            let fingerprint = fingerprint(&path);
            if self.seen.get(&name) == Some(&fingerprint) {
                continue;
            }
            self.seen.insert(name.clone(), fingerprint);
            self.load(installer, &name, &path).await;
        }
    }

    async fn load(&self, installer: &impl Installer, name: &str, path: &Path) {
        if let Some(client) = &self.crds
            && let Err(error) = install_crds(client, &path.join(CRD_FILE)).await
        {
            tracing::error!(plugin = name, error = %error, "could not install the plugin's CRDs");
        }
        installer.record_source(name, &format!("directory {}", path.display()));
        let read = |file: &str| std::fs::read(path.join(file)).ok();
        let text = |file: &str| read(file).map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
        let package = PluginPackage::decode(
            read(WASM_KEY).as_deref(),
            read(WASM_GZ_KEY).as_deref(),
            text(CONFIG_KEY).as_deref(),
            text(SETTINGS_KEY).as_deref(),
            None,
        );
        let signature = text(DETACHED_SIGNATURE_KEY);
        let package = match package.map_err(|e| crate::error_chain(&e)).and_then(|package| {
            self.policy
                .check_detached(&package.wasm, signature.as_deref().map(str::trim))
                .map_err(|e| e.to_string())?;
            Ok(package)
        }) {
            Ok(package) => package,
            Err(error) => {
                installer.record_refused(name, &error);
                tracing::error!(plugin = name, dir = %path.display(), error = %error, "plugin refused; the previous version keeps serving");
                return;
            }
        };
        let package = PluginPackage {
            origin: Some(format!("directory {}", path.display())),
            detached_signature: signature.map(|s| s.trim().to_owned()),
            ..package
        };
        match installer.install(name, package).await {
            // Held: the manager said why (the plugin is pinned to a revision).
            Ok(Installed::Unchanged | Installed::Held) => {}
            Ok(result) => tracing::info!(plugin = name, ?result, "plugin loaded from the directory"),
            Err(error) => {
                tracing::error!(plugin = name, dir = %path.display(), error = %crate::error_chain(&error), "plugin refused; the previous version keeps serving");
            }
        }
    }
}

fn fingerprint(dir: &Path) -> Fingerprint {
    let mut files: Fingerprint = [
        WASM_KEY,
        WASM_GZ_KEY,
        CONFIG_KEY,
        SETTINGS_KEY,
        DETACHED_SIGNATURE_KEY,
        CRD_FILE,
    ]
    .iter()
    .filter_map(|file| {
        let metadata = std::fs::metadata(dir.join(file)).ok()?;
        Some(((*file).to_owned(), metadata.len(), metadata.modified().ok()))
    })
    .collect();
    files.sort();
    files
}

/// Applies every CustomResourceDefinition in a (multi-document) YAML file and waits until each is established.
pub async fn install_crds(client: &kube::Client, file: &Path) -> Result<usize, String> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return Ok(0);
    };
    install_crd_documents(client, &text, &file.display().to_string()).await
}

/// Applies every CustomResourceDefinition of the YAML documents `text` (read from `origin`, for messages) and waits
/// until each is established. Returns how many there were.
pub async fn install_crd_documents(client: &kube::Client, text: &str, origin: &str) -> Result<usize, String> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut crds = Vec::new();
    let documents: Vec<serde_json::Value> = serde_saphyr::from_multiple(text).map_err(|e| format!("{origin}: {e}"))?;
    for value in documents.into_iter().filter(|value| !value.is_null()) {
        let crd: CustomResourceDefinition =
            serde_json::from_value(value).map_err(|e| format!("{origin}: not a CustomResourceDefinition: {e}"))?;
        crds.push(crd);
    }
    let mut installed = 0;
    for crd in crds {
        let name = crd.metadata.name.clone().unwrap_or_default();
        api.patch(
            &name,
            &PatchParams::apply("wasm-reconciler-dev").force(),
            &Patch::Apply(&crd),
        )
        .await
        .map_err(|e| format!("applying CRD {name}: {}", crate::error_chain(&e)))?;
        let established = kube::runtime::wait::await_condition(
            api.clone(),
            &name,
            kube::runtime::wait::conditions::is_crd_established(),
        );
        tokio::time::timeout(Duration::from_secs(30), established)
            .await
            .map_err(|_| format!("CRD {name} was not established within 30s"))?
            .map_err(|e| format!("waiting for CRD {name}: {e}"))?;
        tracing::info!(crd = %name, "CRD installed");
        installed += 1;
    }
    Ok(installed)
}
