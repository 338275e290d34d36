//! Resilience: injected conflicts, server errors and dropped or expired watches do not stop convergence, and a host
//! killed mid-convergence is succeeded by a new one (against a restarted durable API server) that finishes the job
//! without creating any child twice or leaking a finalizer.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;
use wasm_reconciler_apiserver::WriteFault;

use crate::harness::{Cluster, Host, condition, wait_for};
use crate::journal::{Action, Journal, count_per_name};
use crate::kinds::{
    CONVERGE, ECHO_CRD, config_map_resource, configmapset, configmapset_resource, create_when_served, echo_resource,
    events_about, install_example, install_test_plugin, namespaced, set_children, test_object, wait_gone, wait_object,
    wait_served, wait_set_ready,
};

async fn scale(sets: &Api<DynamicObject>, name: &str, replicas: u32) -> anyhow::Result<()> {
    sets.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": replicas}})),
    )
    .await?;
    Ok(())
}

/// Waits until `name` exists again with another uid than `old_uid`.
async fn wait_recreated(config_maps: &Api<ConfigMap>, name: &str, old_uid: &str) {
    wait_for(CONVERGE, &format!("{name} to come back"), || {
        let config_maps = config_maps.clone();
        async move {
            let child = config_maps.get_opt(name).await.ok()??;
            (child.metadata.uid.as_deref() != Some(old_uid)).then_some(())
        }
    })
    .await;
}

/// A write of a ConfigMap outside the set goes through: no injected fault is left pending.
async fn assert_no_fault_pending(config_maps: &Api<ConfigMap>, probe: &str) -> anyhow::Result<()> {
    let config_map: ConfigMap = serde_json::from_value(json!({"metadata": {"name": probe}}))?;
    config_maps
        .create(&PostParams::default(), &config_map)
        .await
        .map_err(|error| anyhow::anyhow!("an injected fault was still pending (the host never hit it): {error}"))?;
    config_maps.delete(probe, &DeleteParams::default()).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conflicts_server_errors_and_dropped_watches_still_converge() -> anyhow::Result<()> {
    let cluster = Cluster::start_embedded(None).await?;
    let plugins = cluster.dir.path().join("plugins");
    install_example(&plugins, "configmapset", wasm_reconciler_artifacts::CONFIGMAPSET)?;
    let host = Host::start(&cluster, Host::dev_options(&plugins)).await?;
    let client = cluster.client().await?;
    let sets = namespaced(&client, "default", &configmapset_resource());
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    wait_served(&sets).await;
    let faults = cluster.embedded().faults();

    // 409s on child writes: re-queued quietly, no failure reported.
    faults.fail_writes("configmaps", 4, WriteFault::Conflict);
    create_when_served(&sets, configmapset("sturdy", 6, 2, "hello")).await?;
    wait_set_ready(&sets, "sturdy", 6).await;
    assert_no_fault_pending(&config_maps, "probe-conflicts").await?;
    let warnings: Vec<_> = events_about(&client, "default", "sturdy")
        .await?
        .into_iter()
        .filter(|event| event.type_.as_deref() == Some("Warning"))
        .collect();
    assert!(warnings.is_empty(), "conflicts are not failures: {warnings:?}");

    // 5xx on child writes (and on the set's own writes): failures with backoff, then convergence.
    // (500 rather than 503: the kube client retries 503, 504 and 429 on its own.)
    faults.fail_writes("configmaps", 3, WriteFault::Status(500));
    scale(&sets, "sturdy", 10).await?;
    faults.fail_writes("configmapsets.examples.wasm-reconciler.io", 2, WriteFault::Status(500));
    let ready = wait_set_ready(&sets, "sturdy", 10).await;
    assert_eq!(condition(&ready, "Reconciled"), Some("True"));
    assert_eq!(ready["status"]["observedGeneration"], 2);
    assert_no_fault_pending(&config_maps, "probe-errors").await?;
    crate::kinds::wait_event(&client, "default", "sturdy", "Warning", "ApplyFailed", |_| true).await;
    faults.clear();
    let before_drops = set_children(&config_maps, "sturdy").await?;

    // Watches dropped over and over (and expired once, forcing a relist) while scaling up.
    let dropping = Arc::new(AtomicBool::new(true));
    let dropper = tokio::spawn({
        let faults = faults.clone();
        let dropping = dropping.clone();
        async move {
            let mut round = 0;
            while dropping.load(Ordering::Relaxed) {
                if round == 5 {
                    faults.expire_watches();
                } else {
                    faults.drop_watches();
                }
                round += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    });
    scale(&sets, "sturdy", 16).await?;
    wait_set_ready(&sets, "sturdy", 16).await;
    dropping.store(false, Ordering::Relaxed);
    dropper.await?;
    let after_drops = set_children(&config_maps, "sturdy").await?;
    assert_eq!(after_drops.len(), 16);
    for (name, uid) in &before_drops {
        assert_eq!(after_drops.get(name), Some(uid), "{name} was never recreated");
    }

    // The watches are back: a deleted child is noticed and restored, also after one more expiry.
    config_maps.delete("sturdy-3", &DeleteParams::default()).await?;
    wait_recreated(&config_maps, "sturdy-3", &after_drops["sturdy-3"]).await;
    faults.expire_watches();
    config_maps.delete("sturdy-4", &DeleteParams::default()).await?;
    wait_recreated(&config_maps, "sturdy-4", &after_drops["sturdy-4"]).await;
    wait_set_ready(&sets, "sturdy", 16).await;
    host.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_killed_mid_convergence_is_succeeded_after_a_durable_restart() -> anyhow::Result<()> {
    let state = tempfile::tempdir()?;
    let data_dir = state.path().join("data");
    let mut cluster = Cluster::start_embedded(Some(data_dir.clone())).await?;
    let plugins = cluster.dir.path().join("plugins");
    install_example(&plugins, "configmapset", wasm_reconciler_artifacts::CONFIGMAPSET)?;
    let host = Host::start(&cluster, Host::dev_options(&plugins)).await?;
    let client = cluster.client().await?;
    let sets = namespaced(&client, "default", &configmapset_resource());
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    wait_served(&sets).await;

    // Slow every request down so that convergence takes many visible rounds, then crash the host halfway.
    cluster.embedded().faults().set_latency(Duration::from_millis(20));
    create_when_served(&sets, configmapset("durable", 30, 2, "hello")).await?;
    wait_for(CONVERGE, "a few children to exist", || {
        let config_maps = config_maps.clone();
        async move { (set_children(&config_maps, "durable").await.ok()?.len() >= 4).then_some(()) }
    })
    .await;
    host.kill();
    cluster.embedded().faults().clear();
    drop((sets, config_maps, client));

    cluster.restart_embedded(&data_dir).await?;
    let client = cluster.client().await?;
    let sets = namespaced(&client, "default", &configmapset_resource());
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let survived = set_children(&config_maps, "durable").await?;
    assert!(
        (4..30).contains(&survived.len()),
        "the host was killed mid-convergence: {} children",
        survived.len()
    );
    let set = serde_json::to_value(sets.get("durable").await?)?;
    assert_eq!(condition(&set, "Ready"), Some("False"));

    let journal = Journal::start(&client, "default", &[config_map_resource()]).await?;
    let host = Host::start(&cluster, Host::dev_options(&plugins)).await?;
    wait_set_ready(&sets, "durable", 30).await;
    let all = set_children(&config_maps, "durable").await?;
    assert_eq!(all.len(), 30);
    for (name, uid) in &survived {
        assert_eq!(all.get(name), Some(uid), "{name} survived the crash untouched");
    }
    let entries = journal
        .wait_until("every missing child added", |entries| {
            count_per_name(entries, "ConfigMap", Action::Added).len() == 30 - survived.len()
        })
        .await;
    let added = count_per_name(&entries, "ConfigMap", Action::Added);
    for (name, count) in &added {
        assert_eq!(*count, 1, "{name} added once");
        assert!(
            !survived.contains_key(name),
            "{name} existed already and was created again"
        );
    }
    assert!(
        count_per_name(&entries, "ConfigMap", Action::Deleted).is_empty(),
        "nothing was deleted on the way"
    );

    // No finalizer is leaked: deletion still drains and completes.
    sets.delete("durable", &DeleteParams::default()).await?;
    wait_gone(&sets, "durable", "the set to be gone").await;
    assert!(set_children(&config_maps, "durable").await?.is_empty());
    host.stop().await
}

/// A spec change the lagging watch has not delivered: a reconcile of the stale cached object must not write a status
/// computed from it (the write names the view's resourceVersion and is refused), and the change must not wait for the
/// watch: the object read after the conflict is folded into the cache and re-queues the key; the watch events that
/// follow are older than the cached object and are dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spec_change_the_watch_has_not_delivered_is_reconciled_after_the_conflict() -> anyhow::Result<()> {
    let cluster = Cluster::start_embedded(None).await?;
    let plugins = cluster.dir.path().join("plugins");
    install_test_plugin(
        &plugins,
        "echo",
        wasm_reconciler_artifacts::ECHO,
        ECHO_CRD,
        "round: 1\n",
        None,
    )?;
    let host = Host::start(&cluster, Host::dev_options(&plugins)).await?;
    let client = cluster.client().await?;
    let echoes = namespaced(&client, "default", &echo_resource());
    create_when_served(&echoes, test_object("Echo", "default", "lagging")).await?;
    wait_object(&echoes, "lagging", "the first reconcile", |echo| {
        echo["status"]["echo"]["generation"] == 1 && echo["status"]["echo"]["config"]["round"] == 1
    })
    .await;

    // The host's watches fall behind; meanwhile a user edits the spec (generation 2) and a reconcile of the stale
    // cached object (generation 1), started by a configuration reload, writes a new status. That write names the
    // resourceVersion it was computed from, so it is refused; the host reads the object after the conflict and
    // reconciles the edit while its watch still lags.
    let faults = cluster.embedded().faults();
    faults.pause_watches();
    echoes
        .patch(
            "lagging",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"note": "edited while the watch lags"}})),
        )
        .await?;
    install_test_plugin(
        &plugins,
        "echo",
        wasm_reconciler_artifacts::ECHO,
        ECHO_CRD,
        "round: 2\n",
        None,
    )?;
    let reconciled = wait_object(
        &echoes,
        "lagging",
        "the edit reconciled with the watch paused",
        |echo| echo["status"]["echo"]["config"]["round"] == 2,
    )
    .await;
    assert_eq!(
        reconciled["status"]["echo"]["generation"], 2,
        "a status computed from the stale view (generation 1) was written"
    );
    assert_eq!(reconciled["status"]["observedGeneration"], 2);

    // Once the watch catches up its events are older than what the host holds; nothing goes back.
    faults.resume_watches();
    let settled = wait_object(&echoes, "lagging", "generation 2 still reconciled", |echo| {
        echo["status"]["echo"]["generation"] == 2
    })
    .await;
    assert_eq!(settled["status"]["echo"]["config"]["round"], 2);
    host.stop().await
}
