//! Sharding changes no plugin's meaning. The mirror plugin declares ConfigMap in `owns` only (for its copies) and
//! reads the unowned source ConfigMap with `host::get` — correct with one replica. Three `wasm-reconciler run
//! --sharding` processes each cache only their share of ConfigMaps, yet every Mirror sees its source: 150 Mirrors
//! converge, one replica is killed with SIGKILL, the sources change, and every Mirror converges again.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::harness::Cluster;
use crate::host_process::HostProcess;
use crate::kinds::{MIRROR_CRD, create_namespace};
use crate::mirror::{create_mirrors, wait_mirrored};
use crate::plugin_configmaps::{HOST_NAMESPACE, apply_config_map, install_crd, packed};

const NAMESPACES: [&str; 3] = ["reads-a", "reads-b", "reads-c"];
const PER_NAMESPACE: usize = 50;
const SHARDING_ARGS: [&str; 5] = [
    "--sharding",
    "--lease-duration-seconds",
    "6",
    "--lease-renew-seconds",
    "2",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_plugin_reading_its_owned_kind_sees_every_object_when_sharded() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let admin = cluster.client().await?;
    create_namespace(&admin, HOST_NAMESPACE).await?;
    install_crd(&admin, MIRROR_CRD).await?;
    apply_config_map(
        &admin,
        &packed(wasm_reconciler_artifacts::MIRROR, "mirror", None, false)?,
    )
    .await?;
    for namespace in NAMESPACES {
        create_namespace(&admin, namespace).await?;
        let source: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": "source"}, "data": {"version": "v1"}}))?;
        Api::<ConfigMap>::namespaced(admin.clone(), namespace)
            .create(&PostParams::default(), &source)
            .await?;
    }
    let dir = cluster.dir.path();
    let mut replicas: Vec<HostProcess> = ["r0", "r1", "r2"]
        .into_iter()
        .map(|identity| HostProcess::start(dir, &cluster.kubeconfig, identity, &SHARDING_ARGS))
        .collect::<anyhow::Result<_>>()?;
    for replica in &replicas {
        replica.wait_ready(Duration::from_secs(60)).await;
    }
    let before: Vec<u64> = replicas.iter().filter_map(HostProcess::resident_bytes).collect();
    let started = Instant::now();
    for namespace in NAMESPACES {
        create_mirrors(&admin, namespace, PER_NAMESPACE, 2).await?;
    }
    for namespace in NAMESPACES {
        wait_mirrored(&admin, namespace, PER_NAMESPACE, 2, "v1", Duration::from_secs(90)).await;
    }
    let after: Vec<u64> = replicas.iter().filter_map(HostProcess::resident_bytes).collect();
    println!(
        "sharding_reads: {} Mirrors converged in {:.1} s; replica RSS before/after (MiB): {:?} / {:?}",
        NAMESPACES.len() * PER_NAMESPACE,
        started.elapsed().as_secs_f64(),
        before.iter().map(|b| b / 1024 / 1024).collect::<Vec<_>>(),
        after.iter().map(|b| b / 1024 / 1024).collect::<Vec<_>>(),
    );
    let loaded = replicas
        .iter()
        .filter(|r| {
            r.log_text()
                .contains("the plugin reads a kind this replica caches only its share of; loading all of it")
        })
        .count();
    assert!(loaded > 0, "a replica loaded all ConfigMaps for the plugin's reads");

    // One replica dies; the sources change; every Mirror follows.
    replicas.remove(0).kill();
    let killed = Instant::now();
    for namespace in NAMESPACES {
        Api::<ConfigMap>::namespaced(admin.clone(), namespace)
            .patch(
                "source",
                &PatchParams::default(),
                &Patch::Merge(json!({"data": {"version": "v2"}})),
            )
            .await?;
    }
    for namespace in NAMESPACES {
        wait_mirrored(&admin, namespace, PER_NAMESPACE, 2, "v2", Duration::from_secs(90)).await;
    }
    println!(
        "sharding_reads: every Mirror followed its source {:.1} s after a replica was killed",
        killed.elapsed().as_secs_f64()
    );
    Ok(())
}
