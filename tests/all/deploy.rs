//! `deploy/` as a user applies it: `kubectl apply --server-side --dry-run=server -k deploy/` against the embedded
//! API server, with the generated files (CRD copies, packed example plugins) produced the way `make deploy-files`
//! does when they are absent.

use std::path::{Path, PathBuf};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::Api;

use crate::harness::{Cluster, example_crd};
use crate::plugin_configmaps::pack_manifest;

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
    for folder in ["", "crds", "plugins"] {
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
            "customresourcedefinition.apiextensions.k8s.io/webapps.examples.wasm-reconciler.io",
            "deployment.apps/wasm-reconciler",
            "namespace/wasm-reconciler",
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
