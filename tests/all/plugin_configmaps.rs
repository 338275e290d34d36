//! Plugins delivered the way an operator delivers them: packed into a ConfigMap with `plugin pack` and applied
//! server-side into the host's namespace; CRDs installed ahead of the host; the Events on plugin ConfigMaps.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser as _;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use wasm_reconciler::cli::Cli;

use crate::harness::wait_for;
use crate::kinds::events_about;

/// The namespace the host runs in: plugin ConfigMaps and the leader Lease live here (as in `deploy/`).
pub const HOST_NAMESPACE: &str = "wasm-reconciler";
/// The field manager the tests apply plugin ConfigMaps with, as `kubectl apply --server-side` would.
const OPERATOR: &str = "test-operator";

/// Creates the CRD in `path` and waits until its kind is served; returns the kind's resource.
pub async fn install_crd(client: &kube::Client, path: &str) -> anyhow::Result<ApiResource> {
    let text = std::fs::read_to_string(path)?;
    let crd: CustomResourceDefinition = serde_saphyr::from_str(&text)?;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &crd).await?;
    let version = crd.spec.versions.iter().find(|v| v.storage).expect("a storage version");
    let resource = ApiResource {
        group: crd.spec.group.clone(),
        version: version.name.clone(),
        api_version: format!("{}/{}", crd.spec.group, version.name),
        kind: crd.spec.names.kind.clone(),
        plural: crd.spec.names.plural.clone(),
    };
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    wait_for(Duration::from_secs(10), "the CRD's kind to be served", || {
        let api = api.clone();
        async move { api.list(&ListParams::default().limit(1)).await.ok() }
    })
    .await;
    Ok(resource)
}

/// What `wasm-reconciler plugin pack` makes of the component at `wasm_path`: a ConfigMap in the host's namespace.
pub fn packed(wasm_path: &str, name: &str, config: Option<&str>, gzip: bool) -> anyhow::Result<ConfigMap> {
    Ok(serde_saphyr::from_str(&pack_manifest(wasm_path, name, config, gzip)?)?)
}

/// The manifest `wasm-reconciler plugin pack` writes for the component at `wasm_path`.
pub fn pack_manifest(wasm_path: &str, name: &str, config: Option<&str>, gzip: bool) -> anyhow::Result<String> {
    let dir = tempfile::tempdir()?;
    let output = dir.path().join("plugin.yaml");
    let mut args = vec![
        "wasm-reconciler".to_owned(),
        "plugin".into(),
        "pack".into(),
        wasm_path.into(),
        "--name".into(),
        name.into(),
        "--namespace".into(),
        HOST_NAMESPACE.into(),
        "-o".into(),
        output.display().to_string(),
    ];
    if let Some(config) = config {
        let file = dir.path().join("config.yaml");
        std::fs::write(&file, config)?;
        args.extend(["--config".into(), file.display().to_string()]);
    }
    if gzip {
        args.push("--gzip".into());
    }
    let exit = wasm_reconciler::cli::run(Cli::try_parse_from(&args)?);
    anyhow::ensure!(exit == ExitCode::SUCCESS, "`{}` failed", args.join(" "));
    Ok(std::fs::read_to_string(&output)?)
}

/// Applies a plugin ConfigMap server-side (creating or replacing every field the operator set before).
pub async fn apply_config_map(client: &kube::Client, config_map: &ConfigMap) -> anyhow::Result<ConfigMap> {
    let name = config_map.metadata.name.as_deref().expect("a named ConfigMap");
    let namespace = config_map.metadata.namespace.as_deref().unwrap_or(HOST_NAMESPACE);
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let mut applied = config_map.clone();
    applied.metadata.managed_fields = None;
    applied.metadata.resource_version = None;
    let params = PatchParams::apply(OPERATOR).force();
    Ok(api.patch(name, &params, &Patch::Apply(&applied)).await?)
}

/// Deletes a plugin ConfigMap.
pub async fn delete_config_map(client: &kube::Client, name: &str) -> anyhow::Result<()> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), HOST_NAMESPACE);
    api.delete(name, &Default::default()).await?;
    Ok(())
}

/// Waits until the plugin of ConfigMap `name` has loaded once (its `PluginLoaded` Event).
pub async fn wait_plugin_loaded(client: &kube::Client, name: &str, timeout: std::time::Duration) {
    crate::harness::wait_for(timeout, &format!("plugin {name} to load"), || async {
        (!plugin_events(client, name, "PluginLoaded").await.ok()?.is_empty()).then_some(())
    })
    .await;
}

/// The Events with `reason` regarding the plugin ConfigMap `name`.
pub async fn plugin_events(client: &kube::Client, name: &str, reason: &str) -> anyhow::Result<Vec<Event>> {
    Ok(events_about(client, HOST_NAMESPACE, name)
        .await?
        .into_iter()
        .filter(|event| event.reason.as_deref() == Some(reason))
        .collect())
}
