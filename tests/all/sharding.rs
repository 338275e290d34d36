//! Sharded mode: replicas each reconcile their own share of 3,000 ConfigMapSets. The shares are even, each
//! replica caches only its own, a crashed replica's share moves to the others (sets deleted at the moment of the
//! crash are still finalized), a joining replica takes a share
//! through the drain handshake, and no set is ever reconciled by two replicas at once.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use wasm_reconciler::cli::serve::HostOptions;
use wasm_reconciler::shard::Sharding;

use crate::harness::{Cluster, example_crd, wait_for};
use crate::kinds::{configmapset, configmapset_resource, create_namespace, namespaced, set_ready_with};
use crate::leader::{Replica, holder};
use crate::plugin_configmaps::{HOST_NAMESPACE, apply_config_map, install_crd, packed};
use crate::reconcile_audit::{overlaps, reconciles};
use crate::telemetry_probe::{SHARDED_ONLY, documented_metrics, exported, sample, sum_samples};

/// The ring: the default of `wasm-reconciler run --sharding`.
const RING: &str = "wasm-reconciler";
const SHARD_LABEL: &str = "shard.wasm-reconciler.io/wasm-reconciler";
const DRAIN_LABEL: &str = "drain.wasm-reconciler.io/wasm-reconciler";
const SETS: usize = 3000;
/// Sets deleted just before the crash: their finalizers must still be released.
const DELETED: usize = 300;
/// Sets created before any replica runs: no sharder has labelled them.
const SETS_BEFORE_REPLICAS: usize = 300;
const SET_KIND: &str = "examples.wasm-reconciler.io/v1alpha1/ConfigMapSet";
/// Short leases, so that a crash is noticed within seconds.
const LEASE: Duration = Duration::from_secs(10);

/// A sharded replica.
async fn start_replica(cluster: &Cluster, identity: &'static str) -> anyhow::Result<Replica> {
    Replica::start_with(cluster, identity, |options| HostOptions {
        leader_election: None,
        sharding: Some(Sharding {
            namespace: HOST_NAMESPACE.into(),
            ring: RING.into(),
            lease_duration: LEASE,
            renew_every: Duration::from_secs(2),
        }),
        ..options
    })
    .await
}

/// The ConfigMapSets a replica's cache holds, by its metric.
async fn cached_sets(replica: &Replica) -> Option<f64> {
    sample(
        &replica.metrics().await,
        &format!(r#"wasm_reconciler_cache_objects{{kind="{SET_KIND}"}}"#),
    )
}

/// Every set, with its shard label (if any), whether it is Ready with one replica, and whether it is draining.
async fn sets(api: &Api<DynamicObject>) -> Vec<(String, Option<String>, bool, bool)> {
    let list = api.list(&ListParams::default()).await.expect("listing the sets");
    list.items
        .into_iter()
        .map(|set| {
            let labels = set.metadata.labels.clone().unwrap_or_default();
            let value = serde_json::to_value(&set).expect("a set serialises");
            (
                set.metadata.name.clone().unwrap_or_default(),
                labels.get(SHARD_LABEL).cloned(),
                set_ready_with(&value, 1),
                labels.contains_key(DRAIN_LABEL),
            )
        })
        .collect()
}

/// Like [`wait_for`], checking once a second: each check lists thousands of objects.
async fn wait_slowly<T, Fut: std::future::Future<Output = Option<T>>>(
    timeout: Duration,
    what: &str,
    mut check: impl FnMut() -> Fut,
) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Sets per shard label, once all `SETS` are Ready, labelled for one of `replicas` (each holding some), and none
/// draining.
async fn wait_converged(
    api: &Api<DynamicObject>,
    replicas: &[&str],
    timeout: Duration,
    what: &str,
) -> BTreeMap<String, usize> {
    wait_slowly(timeout, what, || async {
        let sets = sets(api).await;
        let settled = sets.len() == SETS - DELETED
            && sets.iter().all(|(_, shard, ready, draining)| {
                *ready && !draining && shard.as_deref().is_some_and(|s| replicas.contains(&s))
            });
        if !settled {
            return None;
        }
        let mut shares = BTreeMap::new();
        for (_, shard, _, _) in sets {
            *shares.entry(shard.unwrap_or_default()).or_default() += 1;
        }
        (shares.len() == replicas.len()).then_some(shares)
    })
    .await
}

fn assert_even(shares: &BTreeMap<String, usize>, replicas: usize) {
    let even = (SETS - DELETED) / replicas;
    assert_eq!(shares.len(), replicas, "shares: {shares:?}");
    for (replica, share) in shares {
        let off = share.abs_diff(even) as f64 / even as f64;
        assert!(
            off <= 0.15,
            "{replica} holds {share} sets, {:.0}% off the even {even}: {shares:?}",
            off * 100.0
        );
    }
}

/// Each replica's cache holds exactly its share of the sets.
async fn assert_caches_hold_shares(replicas: &[&Replica], shares: &BTreeMap<String, usize>) {
    for replica in replicas {
        let share = shares[replica.identity] as f64;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let cached = cached_sets(replica).await;
            if cached == Some(share) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{}'s cache holds {cached:?} sets, not its share of {share}",
                replica.identity
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Every child ConfigMap carries its owner's shard label, and each set has exactly one child.
async fn assert_children_follow_owners(client: &kube::Client, api: &Api<DynamicObject>) -> anyhow::Result<()> {
    let owners: BTreeMap<String, String> = api
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .map(|set| {
            let shard = set
                .metadata
                .labels
                .unwrap_or_default()
                .remove(SHARD_LABEL)
                .unwrap_or_default();
            (set.metadata.name.unwrap_or_default(), shard)
        })
        .collect();
    wait_for(
        Duration::from_secs(30),
        "every child to carry its owner's shard",
        || async {
            let children = Api::<ConfigMap>::namespaced(client.clone(), "default")
                .list(&ListParams::default().labels("examples.wasm-reconciler.io/configmapset"))
                .await
                .ok()?
                .items;
            let mut per_set: BTreeMap<String, usize> = BTreeMap::new();
            for child in &children {
                let labels = child.metadata.labels.clone().unwrap_or_default();
                let set = labels.get("examples.wasm-reconciler.io/configmapset")?;
                *per_set.entry(set.clone()).or_default() += 1;
                if labels.get(SHARD_LABEL) != owners.get(set) {
                    return None;
                }
            }
            (per_set.len() == SETS - DELETED && per_set.values().all(|&n| n == 1)).then_some(())
        },
    )
    .await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_the_primaries_survive_a_crash_and_rebalance_on_join() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let client = cluster.client().await?;
    create_namespace(&client, HOST_NAMESPACE).await?;
    install_crd(&client, &example_crd("configmapset")).await?;
    install_crd(&client, crate::plugin_state::WASMPLUGIN_CRD).await?;
    apply_config_map(
        &client,
        &packed(wasm_reconciler_artifacts::CONFIGMAPSET, "configmapset", None, false)?,
    )
    .await?;
    let api = namespaced(&client, "default", &configmapset_resource());
    let create = |range: std::ops::Range<usize>| {
        let api = api.clone();
        async move {
            futures::stream::iter(range)
                .map(|i| {
                    let api = api.clone();
                    async move {
                        let set: DynamicObject = serde_json::from_value(configmapset(&format!("set-{i}"), 1, 1, "hi"))?;
                        api.create(&PostParams::default(), &set).await?;
                        anyhow::Ok(())
                    }
                })
                .buffer_unordered(32)
                .try_collect::<Vec<()>>()
                .await
        }
    };

    let began = Instant::now();
    // Objects created while no sharder runs are assigned once one does.
    create(0..SETS_BEFORE_REPLICAS).await?;
    let a = start_replica(&cluster, "host-a").await?;
    let b = start_replica(&cluster, "host-b").await?;
    let c = start_replica(&cluster, "host-c").await?;
    for replica in [&a, &b, &c] {
        replica.wait_until_ready(Duration::from_secs(60)).await;
    }
    create(SETS_BEFORE_REPLICAS..SETS).await?;
    println!("{SETS} sets created {:?} into the test", began.elapsed());

    // Mid-converge, one replica crashes.
    wait_slowly(Duration::from_secs(120), "a fifth of the sets to be Ready", || async {
        (sets(&api).await.iter().filter(|(_, _, ready, _)| *ready).count() >= SETS / 5).then_some(())
    })
    .await;
    // Some sets are deleted, and the replica holding a third of them crashes at once.
    futures::stream::iter(0..DELETED)
        .map(|i| {
            let api = api.clone();
            async move {
                api.delete(&format!("set-{i}"), &DeleteParams::default())
                    .await
                    .map(drop)
            }
        })
        .buffer_unordered(32)
        .try_collect::<Vec<()>>()
        .await?;
    let crashed = c.identity;
    c.host.kill();
    let killed_at = Instant::now();

    let shares = wait_converged(
        &api,
        &[a.identity, b.identity],
        Duration::from_secs(180),
        "every set Ready on the two survivors",
    )
    .await;
    println!(
        "after the crash of {crashed}: {shares:?}, converged {:?} after it",
        killed_at.elapsed()
    );
    assert_even(&shares, 2);
    assert_caches_hold_shares(&[&a, &b], &shares).await;
    // The deleted sets are gone: no finalizer was left behind by the crash.
    for i in 0..DELETED {
        assert!(
            api.get_opt(&format!("set-{i}")).await?.is_none(),
            "set-{i} was deleted but is still there"
        );
    }

    // A new replica joins: sets move to it through the drain handshake.
    let d = start_replica(&cluster, "host-d").await?;
    d.wait_until_ready(Duration::from_secs(60)).await;
    let joined_at = Instant::now();
    let shares = wait_converged(
        &api,
        &[a.identity, b.identity, d.identity],
        Duration::from_secs(180),
        "the sets to rebalance onto three replicas",
    )
    .await;
    println!(
        "after host-d joined: {shares:?}, rebalanced in {:?}",
        joined_at.elapsed()
    );
    assert_even(&shares, 3);
    let live = [&a, &b, &d];
    assert_caches_hold_shares(&live, &shares).await;
    assert_children_follow_owners(&client, &api).await?;
    // `kubectl get wasmplugin -o yaml` shows each replica's share, written by the replica itself.
    let plugins = namespaced(
        &client,
        HOST_NAMESPACE,
        &wasm_reconciler::telemetry::plugin_status::resource(),
    );
    wait_for(
        Duration::from_secs(30),
        "each live replica's share in the WasmPlugin",
        || async {
            let plugin = plugins.get("configmapset").await.ok()?;
            let entries: BTreeMap<String, u64> = plugin.data["status"]["replicas"]
                .as_array()?
                .iter()
                .filter_map(|entry| Some((entry["name"].as_str()?.to_owned(), entry["objects"].as_u64()?)))
                .collect();
            let wanted = live.iter().all(|replica| {
                entries.get(replica.identity).copied() == shares.get(replica.identity).map(|share| *share as u64)
            });
            (wanted && plugin.data["status"]["conditions"][0]["status"] == "True").then_some(())
        },
    )
    .await;

    // One sharder, which counted the moves.
    let mut sharders = 0;
    let (mut gone, mut drained, mut assigned) = (0.0, 0.0, 0.0);
    for replica in live {
        let metrics = replica.metrics().await;
        if sample(&metrics, r#"wasm_reconciler_shard_role{role="sharder"}"#) == Some(1.0) {
            sharders += 1;
            for name in documented_metrics()
                .iter()
                .filter(|name| name.starts_with(SHARDED_ONLY))
            {
                // A crashed sharder's successor may have counted only some reasons; every other metric shows.
                assert!(
                    exported(&metrics, name),
                    "{name} is documented but the sharder does not export it"
                );
            }
            assert_eq!(
                sum_samples(&metrics, "wasm_reconciler_shard_objects", &[]),
                (SETS - DELETED) as f64
            );
        }
        assert_eq!(
            sample(&metrics, r#"wasm_reconciler_shard_role{role="member"}"#),
            Some(1.0)
        );
        gone += sum_samples(
            &metrics,
            "wasm_reconciler_shard_moves_total",
            &[r#"reason="replica_gone""#],
        );
        drained += sum_samples(&metrics, "wasm_reconciler_shard_moves_total", &[r#"reason="drained""#]);
        assigned += sum_samples(
            &metrics,
            "wasm_reconciler_shard_moves_total",
            &[r#"reason="unassigned""#],
        );
    }
    assert_eq!(sharders, 1, "exactly one live replica is the sharder");
    assert!(drained > 0.0, "the join moved sets by draining them");
    // A crashed sharder takes its counters along; the moves away from the crashed replica are counted by its
    // successor, which also assigned whatever the crash left unassigned.
    assert!(gone + assigned > 0.0, "the crash moved sets");

    // Nothing was reconciled by two replicas at once.
    let runs = reconciles("configmapset");
    assert!(
        runs.len() >= SETS - DELETED,
        "every set was reconciled: {} reconciles",
        runs.len()
    );
    let now = Instant::now();
    let concurrent = overlaps(&runs, |shard| if shard == crashed { killed_at } else { now });
    assert!(
        concurrent.is_empty(),
        "{} sets reconciled by two replicas at once, e.g. {:?}",
        concurrent.len(),
        concurrent.first()
    );

    println!("checks done {:?} into the test", began.elapsed());
    for replica in [a, b, d] {
        replica.host.stop().await?;
    }
    let leases: Api<Lease> = Api::namespaced(client.clone(), HOST_NAMESPACE);
    for identity in ["host-a", "host-b", "host-d"] {
        let lease = leases.get(&format!("{RING}-shard-{identity}")).await?;
        assert_eq!(
            holder(&lease),
            None,
            "{identity} released its membership Lease on the way out"
        );
    }
    Ok(())
}
