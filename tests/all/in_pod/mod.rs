//! The host as Pods on a real node: the image `make image` built (pulled by containerd from the loopback registry,
//! as a cluster pulls from a private one), `deploy/` and the Helm chart as written with only the image reference
//! overridden, and what a Pod adds — in-cluster configuration, the downward API, the hardened security context,
//! probes evaluated by the kubelet, graceful termination and rollouts.
//!
//! These tests need `kube-harness up --node` (tests/kube/) and the image in the registry storage that
//! `deploy/image/build.sh` pushes to; `make test` builds both first and runs them on their own (`in_pod::`), one at
//! a time.

mod install;
mod journey;
mod pods;
mod probes;
mod sharded;

use std::path::PathBuf;

use anyhow::Context as _;

use crate::harness::{Cluster, RealOptions};

/// The host's namespace in `deploy/` and in the chart's documented install.
pub const NAMESPACE: &str = "wasm-reconciler";
/// The host's Deployment (and Lease, and ServiceAccount) in both installs.
pub const DEPLOYMENT: &str = "wasm-reconciler";
/// The image `deploy/` and the chart name, which the installs override.
pub const PUBLISHED_IMAGE: &str = "ghcr.io/wasm-reconciler/wasm-reconciler";
/// Where the node's container runtime finds the loopback registry (its registry host configuration).
pub const NODE_REGISTRY: &str = "localhost:5000";
/// A busybox image the node's build pushes to its registry, for client Pods.
pub const BUSYBOX: &str = "localhost:5000/busybox:kube-harness";

/// The cache `deploy/image/build.sh` and `tests/kube/build.sh` write to.
fn cache_dir() -> PathBuf {
    std::env::var_os("WASM_RECONCILER_CACHE").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache/wasm-reconciler"),
        PathBuf::from,
    )
}

/// The host image as `make image` pushed it: its repository as the node pulls it, and its digest.
#[derive(Debug, Clone)]
pub struct Image {
    /// `localhost:5000/wasm-reconciler/wasm-reconciler`.
    pub repository: String,
    /// `sha256:…`.
    pub digest: String,
}

impl Image {
    /// The image of the last `make image`; an error naming the command when there is none.
    pub fn pushed() -> anyhow::Result<Self> {
        let dir = cache_dir().join("image");
        let read = |file: &str| {
            std::fs::read_to_string(dir.join(file))
                .map(|text| text.trim().to_owned())
                .with_context(|| {
                    format!(
                        "{} is missing: build and push the host image with `make image` first",
                        dir.join(file).display()
                    )
                })
        };
        let reference = read("wasm-reconciler.ref")?;
        let digest = read("wasm-reconciler.digest")?;
        let repository = reference
            .rsplit_once(':')
            .map_or(reference.as_str(), |(repository, _tag)| repository);
        anyhow::ensure!(digest.starts_with("sha256:"), "{digest:?} is not a digest");
        Ok(Self {
            repository: format!("{NODE_REGISTRY}/{repository}"),
            digest,
        })
    }
}

/// Waits, as a user does with `kubectl rollout status`, until the host's Deployment has rolled out (panics after
/// `timeout_seconds`).
pub fn rollout_status(cluster: &Cluster, timeout_seconds: u32) {
    cluster.kubectl_ok(&[
        "-n",
        NAMESPACE,
        "rollout",
        "status",
        &format!("deployment/{DEPLOYMENT}"),
        &format!("--timeout={timeout_seconds}s"),
    ]);
}

/// A real control plane with a node whose container runtime pulls from the registry `make image` pushed to.
pub async fn node_cluster() -> anyhow::Result<Cluster> {
    Cluster::start_real_with(&RealOptions {
        node: true,
        registry_dir: Some(cache_dir().join("registry")),
        audit: true,
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn deploy_dir_runs_as_written() -> anyhow::Result<()> {
    let image = Image::pushed()?;
    let cluster = node_cluster().await?;
    let installed = install::Install::kustomize(&cluster, &image, install::Mode::Leader)?;
    journey::run(&cluster, &installed).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn helm_chart_runs_as_written() -> anyhow::Result<()> {
    let image = Image::pushed()?;
    let cluster = node_cluster().await?;
    let installed = install::Install::helm(&cluster, &image, install::Mode::Leader)?;
    journey::run(&cluster, &installed).await
}
