//! The sharded install (`deploy/sharding`, three Pods) on the node: every Pod Ready, 300 ConfigMapSets spread
//! over the three and converged; a Pod deleted (its share moves, its replacement joins and takes one) loses
//! nothing, and no set is written by two Pods taking turns.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject, ListParams};
use serde_json::json;

use super::install::{Install, Mode};
use super::pods::{host_pods, wait_pods};
use super::{Image, NAMESPACE, node_cluster, rollout_status};
use crate::audit_log::{self as audit, turn_taking, writers_per_set};
use crate::harness::wait_for;
use crate::kinds::{configmapset, configmapset_resource, create_namespace, namespaced, set_ready_with};
use crate::plugin_configmaps::wait_plugin_loaded;

const SETS: usize = 300;
const SHARDED: &str = "sharded";
const SHARD_LABEL: &str = "shard.wasm-reconciler.io/wasm-reconciler";
const SETTLE: Duration = Duration::from_secs(180);

/// The shard label of every set once all are Ready with 1 child and labelled for one of `pods` (each holding some).
async fn wait_spread(sets: &Api<DynamicObject>, pods: &BTreeSet<String>, count: usize) -> BTreeMap<String, usize> {
    wait_for(SETTLE, &format!("{count} sets Ready, spread over {pods:?}"), || async {
        let listed = sets.list(&ListParams::default()).await.ok()?;
        if listed.items.len() != count {
            return None;
        }
        let mut shares: BTreeMap<String, usize> = BTreeMap::new();
        for set in &listed.items {
            let shard = set.metadata.labels.as_ref()?.get(SHARD_LABEL)?;
            let value = serde_json::to_value(set).ok()?;
            if !pods.contains(shard) || !set_ready_with(&value, 1) {
                return None;
            }
            *shares.entry(shard.clone()).or_default() += 1;
        }
        (shares.len() == pods.len()).then_some(shares)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sharded_install_converges_and_survives_a_pod_deletion() -> anyhow::Result<()> {
    let image = Image::pushed()?;
    let cluster = node_cluster().await?;
    let install = Install::kustomize(&cluster, &image, Mode::Sharded)?;
    let client = cluster.client().await?;
    rollout_status(&cluster, 180);
    // Every member is Ready.
    let pods = wait_pods(&client, install.replicas, install.replicas, SETTLE).await;
    wait_plugin_loaded(&client, "configmapset", SETTLE).await;
    create_namespace(&client, SHARDED).await?;
    let sets = namespaced(&client, SHARDED, &configmapset_resource());
    let started = Instant::now();
    for index in 0..SETS {
        let mut set = configmapset(&format!("set-{index:03}"), 1, 1, "sharded");
        set["metadata"]["namespace"] = json!(SHARDED);
        let object: DynamicObject = serde_json::from_value(set)?;
        wait_for(
            Duration::from_secs(60),
            "the ConfigMapSet kind to be served",
            || async { sets.create(&Default::default(), &object).await.ok().map(drop) },
        )
        .await;
    }
    let members: BTreeSet<String> = pods.iter().map(|p| p.name.clone()).collect();
    let shares = wait_spread(&sets, &members, SETS).await;
    println!(
        "in_pod[sharded]: {SETS} sets converged over 3 Pods in {:.1} s: {shares:?}",
        started.elapsed().as_secs_f64()
    );

    // A Pod deleted: its share moves to the others, its replacement joins and takes a share.
    let deleted = pods[0].name.clone();
    let started = Instant::now();
    cluster.kubectl_ok(&["-n", NAMESPACE, "delete", "pod", &deleted]);
    let pods = wait_pods(&client, install.replicas, install.replicas, SETTLE).await;
    let members: BTreeSet<String> = pods.iter().map(|p| p.name.clone()).collect();
    assert!(!members.contains(&deleted));
    let shares = wait_spread(&sets, &members, SETS).await;
    println!(
        "in_pod[sharded]: after deleting {deleted}, spread again over {members:?} in {:.1} s: {shares:?}",
        started.elapsed().as_secs_f64()
    );
    assert!(
        host_pods(&client).await.iter().all(|p| p.restarts == 0),
        "no container restarted"
    );

    let writes = audit::writes(&cluster.real().logs.join("audit.log"))?;
    let writers = writers_per_set(&writes, SHARDED);
    assert_eq!(writers.len(), SETS, "every set was written by a host Pod");
    let taking_turns = turn_taking(&writers);
    assert!(
        taking_turns.is_empty(),
        "sets written by Pods taking turns: {:?}",
        taking_turns.iter().take(5).collect::<Vec<_>>()
    );
    Ok(())
}
