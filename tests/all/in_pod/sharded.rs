//! The sharded install (`deploy/sharding`, three Pods) on the node: every Pod Ready, 300 ConfigMapSets spread
//! over the three and converged; a Pod deleted (its share moves, its replacement joins and takes one) loses
//! nothing, no set leaves Ready on the way, and no set is written by two Pods taking turns.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject, ListParams};
use serde_json::json;

use super::install::{Install, Mode};
use super::pods::{host_pods, logs, wait_pods};
use super::{Image, NAMESPACE, node_cluster, rollout_status};
use crate::audit_log::{self as audit, turn_taking, writers_per_set};
use crate::harness::{condition_object, wait_for};
use crate::kinds::{configmapset, configmapset_resource, create_namespace, namespaced, set_ready_with};
use crate::plugin_configmaps::wait_plugin_loaded;

const SETS: usize = 300;
const SHARDED: &str = "sharded";
const SHARD_LABEL: &str = "shard.wasm-reconciler.io/wasm-reconciler";
const DRAIN_LABEL: &str = "drain.wasm-reconciler.io/wasm-reconciler";
const SETTLE: Duration = Duration::from_secs(180);

/// Where the sets stand: the share of each member once all are Ready with 1 child and labelled for one of `pods`
/// (each holding some), or else a summary of what is not.
fn spread(listed: &[DynamicObject], pods: &BTreeSet<String>, count: usize) -> Result<BTreeMap<String, usize>, String> {
    if listed.len() != count {
        return Err(format!("{} sets listed", listed.len()));
    }
    let mut shares: BTreeMap<String, usize> = BTreeMap::new();
    let mut labels: BTreeMap<String, usize> = BTreeMap::new();
    let mut not_ready = Vec::new();
    for set in listed {
        let shard = set.metadata.labels.as_ref().and_then(|l| l.get(SHARD_LABEL));
        let draining = set
            .metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key(DRAIN_LABEL));
        let label = match shard {
            Some(shard) if draining => format!("{shard} (draining)"),
            Some(shard) => shard.clone(),
            None => "(none)".to_owned(),
        };
        *labels.entry(label).or_default() += 1;
        let value = serde_json::to_value(set).map_err(|e| e.to_string())?;
        if !set_ready_with(&value, 1) {
            not_ready.push(format!(
                "{}: {}",
                set.metadata.name.as_deref().unwrap_or_default(),
                value["status"]
            ));
        }
        if let Some(shard) = shard.filter(|s| pods.contains(*s)) {
            *shares.entry(shard.clone()).or_default() += 1;
        }
    }
    if shares.values().sum::<usize>() == count && shares.len() == pods.len() && not_ready.is_empty() {
        return Ok(shares);
    }
    not_ready.truncate(3);
    Err(format!("shard labels {labels:?}; not Ready: {not_ready:?}"))
}

/// The share of every member once all sets are Ready and spread over `pods`; on a timeout, fails with what it last
/// saw, the sets, their children and the Pods' logs written to `$CARGO_TARGET_DIR/in_pod-sharded`.
async fn wait_spread(
    client: &kube::Client,
    sets: &Api<DynamicObject>,
    pods: &BTreeSet<String>,
    count: usize,
) -> BTreeMap<String, usize> {
    let deadline = Instant::now() + SETTLE;
    let mut last = String::new();
    while Instant::now() < deadline {
        if let Ok(listed) = sets.list(&ListParams::default()).await {
            match spread(&listed.items, pods, count) {
                Ok(shares) => return shares,
                Err(state) => last = state,
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let dir = keep_for_reading(client, sets).await;
    panic!(
        "timed out after {SETTLE:?} waiting for {count} sets Ready, spread over {pods:?}: {last} (sets, children and \
         logs in {})",
        dir.display()
    );
}

/// Writes the sets, their children and every host Pod's log to a directory of the target directory; returns it.
async fn keep_for_reading(client: &kube::Client, sets: &Api<DynamicObject>) -> std::path::PathBuf {
    let dir = std::path::PathBuf::from(std::env::var_os("CARGO_TARGET_DIR").unwrap_or_else(|| "target".into()))
        .join("in_pod-sharded");
    let _ = std::fs::create_dir_all(&dir);
    let children = Api::<DynamicObject>::namespaced_with(
        client.clone(),
        SHARDED,
        &kube::discovery::ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&()),
    );
    for (api, file) in [(sets, "sets.json"), (&children, "children.json")] {
        if let Ok(listed) = api.list(&ListParams::default()).await {
            let _ = std::fs::write(
                dir.join(file),
                serde_json::to_string_pretty(&listed.items).unwrap_or_default(),
            );
        }
    }
    for pod in host_pods(client).await {
        let _ = std::fs::write(
            dir.join(format!("{}.log", pod.name)),
            logs(client, &pod.name, false).await,
        );
    }
    dir
}

/// When each set's Ready condition last changed.
async fn ready_transitions(sets: &Api<DynamicObject>) -> anyhow::Result<BTreeMap<String, String>> {
    let mut transitions = BTreeMap::new();
    for set in sets.list(&ListParams::default()).await?.items {
        let value = serde_json::to_value(&set)?;
        let ready = condition_object(&value, "Ready")
            .map(|ready| ready["lastTransitionTime"].to_string())
            .unwrap_or_default();
        transitions.insert(set.metadata.name.unwrap_or_default(), ready);
    }
    Ok(transitions)
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
    let shares = wait_spread(&client, &sets, &members, SETS).await;
    println!(
        "in_pod[sharded]: {SETS} sets converged over 3 Pods in {:.1} s: {shares:?}",
        started.elapsed().as_secs_f64()
    );
    let converged = ready_transitions(&sets).await?;

    // A Pod deleted: its share moves to the others, its replacement joins and takes a share.
    let deleted = pods[0].name.clone();
    let started = Instant::now();
    cluster.kubectl_ok(&["-n", NAMESPACE, "delete", "pod", &deleted]);
    let pods = wait_pods(&client, install.replicas, install.replicas, SETTLE).await;
    let members: BTreeSet<String> = pods.iter().map(|p| p.name.clone()).collect();
    assert!(!members.contains(&deleted));
    let shares = wait_spread(&client, &sets, &members, SETS).await;
    println!(
        "in_pod[sharded]: after deleting {deleted}, spread again over {members:?} in {:.1} s: {shares:?}",
        started.elapsed().as_secs_f64()
    );
    // Handed over, a set stays Ready: its new replica reports from the whole view, children included, even when the
    // set reaches it before they do.
    let flipped: Vec<String> = ready_transitions(&sets)
        .await?
        .into_iter()
        .filter(|(name, at)| converged.get(name) != Some(at))
        .map(|(name, _)| name)
        .collect();
    if !flipped.is_empty() {
        let dir = keep_for_reading(&client, &sets).await;
        panic!(
            "{} sets left Ready during the handoff, e.g. {:?} (sets, children and logs in {})",
            flipped.len(),
            &flipped[..flipped.len().min(5)],
            dir.display()
        );
    }
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
