//! `deploy/` as a user applies it: `kubectl apply --server-side --dry-run=server -k deploy/` against the embedded
//! API server, with the generated files (CRD copies, packed example plugins) produced the way `make deploy-files`
//! does when they are absent.

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::json;

use crate::harness::{Cluster, condition, example_crd, wait_for};
use crate::kinds::{
    configmapset, configmapset_resource, create_namespace, create_when_served, namespaced, set_ready_with, wait_gone,
    wait_object, webapp_resource,
};
use crate::plugin_configmaps::{HOST_NAMESPACE, apply_config_map, pack_manifest, plugin_events, wait_plugin_loaded};

/// The example plugins `deploy/` installs, with their components.
pub const DEPLOYED_PLUGINS: [(&str, &str); 2] = [
    ("configmapset", wasm_reconciler_artifacts::CONFIGMAPSET),
    ("webapp", wasm_reconciler_artifacts::WEBAPP),
];

/// The repository's `deploy/` folder.
pub fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

/// A copy of `deploy/` in `into`, with every generated file present: taken from `deploy/` when it was generated
/// there, else generated now (`plugins/<name>/crd.yaml` copied, the component packed with `plugin pack --gzip`).
pub fn complete_deploy_copy(into: &Path) -> anyhow::Result<PathBuf> {
    let source = deploy_dir();
    let copy = into.join("deploy");
    for folder in ["", "crds", "plugins", "sharding", "plugin-identity"] {
        std::fs::create_dir_all(copy.join(folder))?;
        let Ok(entries) = std::fs::read_dir(source.join(folder)) else {
            continue;
        };
        for entry in entries {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "yaml") {
                std::fs::copy(&path, copy.join(folder).join(path.file_name().expect("a file name")))?;
            }
        }
    }
    for (name, wasm) in DEPLOYED_PLUGINS {
        let crd = copy.join("crds").join(format!("{name}.yaml"));
        if !crd.exists() {
            std::fs::copy(example_crd(name), &crd)?;
        }
        let plugin = copy.join("plugins").join(format!("{name}.yaml"));
        if !plugin.exists() {
            std::fs::write(&plugin, pack_manifest(wasm, name, None, true)?)?;
        }
    }
    Ok(copy)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deploy_applies_server_side_as_a_dry_run() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let deploy = complete_deploy_copy(cluster.dir.path())?;
    // As on a real cluster, a dry run cannot create the namespace its other objects go into: create it first.
    let namespace = deploy.join("namespace.yaml").display().to_string();
    cluster.kubectl_ok(&["apply", "--server-side", "-f", &namespace]);
    let deploy = deploy.display().to_string();
    let output = cluster.kubectl_ok(&["apply", "--server-side", "--dry-run=server", "-k", &deploy]);
    let mut applied: Vec<&str> = output
        .lines()
        .map(|line| {
            line.strip_suffix(" serverside-applied (server dry run)")
                .unwrap_or_else(|| panic!("unexpected kubectl output line: {line}"))
        })
        .collect();
    applied.sort_unstable();
    assert_eq!(
        applied,
        [
            "clusterrole.rbac.authorization.k8s.io/wasm-reconciler",
            "clusterrole.rbac.authorization.k8s.io/wasm-reconciler-plugin-configmapset",
            "clusterrole.rbac.authorization.k8s.io/wasm-reconciler-plugin-webapp",
            "clusterrolebinding.rbac.authorization.k8s.io/wasm-reconciler",
            "clusterrolebinding.rbac.authorization.k8s.io/wasm-reconciler-plugin-configmapset",
            "clusterrolebinding.rbac.authorization.k8s.io/wasm-reconciler-plugin-webapp",
            "configmap/configmapset",
            "configmap/webapp",
            "customresourcedefinition.apiextensions.k8s.io/configmapsets.examples.wasm-reconciler.io",
            "customresourcedefinition.apiextensions.k8s.io/wasmplugins.wasm-reconciler.io",
            "customresourcedefinition.apiextensions.k8s.io/webapps.examples.wasm-reconciler.io",
            "deployment.apps/wasm-reconciler",
            "namespace/wasm-reconciler",
            "poddisruptionbudget.policy/wasm-reconciler",
            "role.rbac.authorization.k8s.io/wasm-reconciler",
            "rolebinding.rbac.authorization.k8s.io/wasm-reconciler",
            "service/wasm-reconciler-metrics",
            "serviceaccount/wasm-reconciler",
        ],
        "kubectl output:\n{output}"
    );

    // A dry run changes nothing.
    let client = cluster.client().await?;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "wasm-reconciler");
    let deployments: Api<Deployment> = Api::namespaced(client, "wasm-reconciler");
    assert!(
        crds.get_opt("configmapsets.examples.wasm-reconciler.io")
            .await?
            .is_none()
    );
    assert!(config_maps.get_opt("configmapset").await?.is_none());
    assert!(deployments.get_opt("wasm-reconciler").await?.is_none());
    Ok(())
}

/// Where [`run_life_cycle`]'s primaries live.
const DEMO: &str = "demo";

/// A typical life cycle: both plugins load; a ConfigMapSet is created, scaled up and down, and deleted (drain
/// finalizer); a WebApp is created, changed and deleted; a plugin ConfigMap gets a new version, then a bad one.
pub async fn run_life_cycle(admin: &kube::Client) -> anyhow::Result<()> {
    for plugin in ["configmapset", "webapp"] {
        wait_plugin_loaded(admin, plugin, Duration::from_secs(30)).await;
    }
    create_namespace(admin, DEMO).await?;

    let sets = namespaced(admin, DEMO, &configmapset_resource());
    let mut set = configmapset("greetings", 3, 3, "hello");
    set["metadata"]["namespace"] = json!(DEMO);
    create_when_served(&sets, set).await?;
    wait_object(&sets, "greetings", "3 ready ConfigMaps", |set| set_ready_with(set, 3)).await;
    let scale = |replicas: u32| Patch::Merge(json!({"spec": {"replicas": replicas}}));
    sets.patch("greetings", &PatchParams::default(), &scale(1)).await?;
    wait_object(&sets, "greetings", "scaled down to 1", |set| set_ready_with(set, 1)).await;
    sets.patch("greetings", &PatchParams::default(), &scale(2)).await?;
    wait_object(&sets, "greetings", "scaled up to 2", |set| set_ready_with(set, 2)).await;
    sets.delete("greetings", &DeleteParams::default()).await?;
    wait_gone(&sets, "greetings", "the ConfigMapSet to drain and go").await;

    let apps = namespaced(admin, DEMO, &webapp_resource());
    create_when_served(
        &apps,
        json!({
            "apiVersion": "examples.wasm-reconciler.io/v1alpha1", "kind": "WebApp",
            "metadata": {"name": "shop", "namespace": DEMO},
            "spec": {"image": "nginx:1.27", "replicas": 2, "port": 8080, "config": {"LOG_LEVEL": "info"}},
        }),
    )
    .await?;
    wait_object(&apps, "shop", "the WebApp to be reconciled", |app| {
        condition(app, "Reconciled") == Some("True")
    })
    .await;
    let change = Patch::Merge(json!({"spec": {"config": {"LOG_LEVEL": "debug"}}}));
    apps.patch("shop", &PatchParams::default(), &change).await?;
    wait_object(&apps, "shop", "the change to be reconciled", |app| {
        app["status"]["observedGeneration"] == app["metadata"]["generation"]
    })
    .await;
    apps.delete("shop", &DeleteParams::default()).await?;
    wait_gone(&apps, "shop", "the WebApp to go").await;

    // A new version of a plugin (new settings), then a refused one.
    let plugins: Api<ConfigMap> = Api::namespaced(admin.clone(), HOST_NAMESPACE);
    let mut plugin = plugins.get("configmapset").await?;
    plugin
        .data
        .get_or_insert_default()
        .insert("settings.yaml".into(), "concurrency: 2\n".into());
    apply_config_map(admin, &plugin).await?;
    wait_for(Duration::from_secs(30), "the new version to load", || async {
        (plugin_events(admin, "configmapset", "PluginLoaded").await.ok()?.len() >= 2).then_some(())
    })
    .await;
    plugin.binary_data = Some([("plugin.wasm.gz".to_owned(), ByteString(b"not gzip".to_vec()))].into());
    apply_config_map(admin, &plugin).await?;
    wait_for(Duration::from_secs(30), "the bad version to be refused", || async {
        (!plugin_events(admin, "configmapset", "PluginRefused")
            .await
            .ok()?
            .is_empty())
        .then_some(())
    })
    .await;
    Ok(())
}
