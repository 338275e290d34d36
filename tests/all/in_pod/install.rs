//! Installing the host the two documented ways, with only the image reference overridden: `kubectl apply -k` of
//! an overlay on `deploy/` (kustomize `images:`), and `helm install` of the chart (`image.repository`/`digest`).

use std::path::Path;
use std::process::Stdio;

use anyhow::Context as _;

use super::{DEPLOYMENT, Image, NAMESPACE, PUBLISHED_IMAGE};
use crate::deploy::{complete_deploy_copy, deploy_dir};
use crate::harness::{Cluster, example_crd, real_cluster_bin_dir};
use crate::plugin_configmaps::pack_manifest;

/// How the replicas share the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `--leader-elect`, two replicas (the default of both installs).
    Leader,
    /// `--sharding`, three replicas (`deploy/sharding`, or the chart's `sharding.enabled`).
    Sharded,
}

/// Which of the two documented installs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `kubectl apply --server-side -k` of an overlay on `deploy/`.
    Kustomize,
    /// `helm install` of `deploy/helm/wasm-reconciler`.
    Helm,
}

/// An installed host.
#[derive(Debug)]
pub struct Install {
    pub method: Method,
    pub mode: Mode,
    /// Replicas the Deployment asks for.
    pub replicas: usize,
}

impl Install {
    /// `deploy/` as a user applies it, through an overlay that only sets the image: the namespace, RBAC, the
    /// Deployment, the metrics Service, the example CRDs and the example plugins packed as ConfigMaps.
    pub fn kustomize(cluster: &Cluster, image: &Image, mode: Mode) -> anyhow::Result<Self> {
        let work = cluster.dir.path();
        complete_deploy_copy(work)?;
        let overlay = work.join("overlay");
        std::fs::create_dir_all(&overlay)?;
        let components = match mode {
            Mode::Leader => "",
            Mode::Sharded => "components:\n  - ../deploy/sharding\n",
        };
        std::fs::write(
            overlay.join("kustomization.yaml"),
            format!(
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../deploy\n\
                 {components}images:\n  - name: {PUBLISHED_IMAGE}\n    newName: {}\n    digest: {}\n",
                image.repository, image.digest
            ),
        )?;
        let overlay = overlay.display().to_string();
        cluster.kubectl_ok(&["apply", "--server-side", "-k", &overlay]);
        Ok(Self {
            method: Method::Kustomize,
            mode,
            replicas: if mode == Mode::Sharded { 3 } else { 2 },
        })
    }

    /// The chart as docs/deploy.md installs it (the namespace from `deploy/namespace.yaml`, then `helm install`),
    /// granting the configmapset plugin's kinds through `rbac.extraRules`; then the plugin is delivered as a user
    /// delivers their own: its CRD applied, its component packed by `wasm-reconciler plugin pack` and applied
    /// with `kubectl apply -f -`.
    pub fn helm(cluster: &Cluster, image: &Image, mode: Mode) -> anyhow::Result<Self> {
        let work = cluster.dir.path();
        let namespace = deploy_dir().join("namespace.yaml").display().to_string();
        cluster.kubectl_ok(&["apply", "--server-side", "-f", &namespace]);
        let values = work.join("values.yaml");
        let replicas = if mode == Mode::Sharded { 3 } else { 2 };
        std::fs::write(
            &values,
            format!(
                "image:\n  repository: {}\n  digest: {}\nreplicaCount: {replicas}\nsharding:\n  enabled: {}\n\
                 rbac:\n  extraRules:\n    - apiGroups: [examples.wasm-reconciler.io]\n      resources: [configmapsets]\n\
                 \x20     verbs: [get, list, watch, patch, update]\n    - apiGroups: [examples.wasm-reconciler.io]\n\
                 \x20     resources: [configmapsets/status]\n      verbs: [get, patch, update]\n\
                 \x20   - apiGroups: [examples.wasm-reconciler.io]\n      resources: [configmapsets/finalizers]\n\
                 \x20     verbs: [update]\n    - apiGroups: [\"\"]\n      resources: [configmaps]\n\
                 \x20     verbs: [get, list, watch, create, patch, update, delete]\n",
                image.repository,
                image.digest,
                mode == Mode::Sharded
            ),
        )?;
        let chart = deploy_dir().join("helm/wasm-reconciler");
        let output = std::process::Command::new(real_cluster_bin_dir()?.join("helm"))
            .args(["install", DEPLOYMENT])
            .arg(&chart)
            .args(["--namespace", NAMESPACE, "--values"])
            .arg(&values)
            .env("KUBECONFIG", &cluster.kubeconfig)
            .env("HELM_CACHE_HOME", work.join("helm/cache"))
            .env("HELM_CONFIG_HOME", work.join("helm/config"))
            .env("HELM_DATA_HOME", work.join("helm/data"))
            .output()
            .context("running helm")?;
        anyhow::ensure!(
            output.status.success(),
            "helm install failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let crd = example_crd("configmapset");
        cluster.kubectl_ok(&["apply", "--server-side", "-f", &crd]);
        let manifest = pack_manifest(wasm_reconciler_artifacts::CONFIGMAPSET, "configmapset", None, true)?;
        kubectl_apply_stdin(&cluster.kubeconfig, &manifest)?;
        Ok(Self {
            method: Method::Helm,
            mode,
            replicas,
        })
    }
}

/// `kubectl apply --server-side -f -` with `manifest` on its standard input.
pub fn kubectl_apply_stdin(kubeconfig: &Path, manifest: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut child = std::process::Command::new(crate::harness::kubectl_binary())
        .args(["apply", "--server-side", "-f", "-"])
        .env("KUBECONFIG", kubeconfig)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("running kubectl")?;
    child
        .stdin
        .take()
        .context("kubectl's stdin")?
        .write_all(manifest.as_bytes())?;
    let output = child.wait_with_output()?;
    anyhow::ensure!(
        output.status.success(),
        "kubectl apply -f - failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(())
}
