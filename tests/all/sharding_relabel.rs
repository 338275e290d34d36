//! A sharded replica follows a child out of its share and back. Both API servers report an object that leaves a
//! label selection as deleted (as the watcher last saw it, so still matching); a child labelled away from the
//! replica and then back by the sharder must be seen again, not taken for deleted and ignored. The set's next
//! reconciles count it, and the set never leaves Ready: the reconcile that meets the child missing from its view
//! (it reads it before applying it) reports nothing from that view.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::harness::{Cluster, condition_object, example_crd, wait_for};
use crate::host_process::HostProcess;
use crate::kinds::{configmapset, configmapset_resource, create_namespace, namespaced, set_ready_with, wait_set_ready};
use crate::plugin_configmaps::{HOST_NAMESPACE, apply_config_map, install_crd, packed};

const SHARD_LABEL: &str = "shard.wasm-reconciler.io/wasm-reconciler";
const SET: &str = "relabelled";
const CHILD: &str = "relabelled-0";

/// When the set's Ready condition last changed.
fn ready_since(set: &serde_json::Value) -> serde_json::Value {
    condition_object(set, "Ready").map_or(serde_json::Value::Null, |ready| ready["lastTransitionTime"].clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_child_labelled_out_of_the_share_and_back_is_seen_again() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let admin = cluster.client().await?;
    create_namespace(&admin, HOST_NAMESPACE).await?;
    install_crd(&admin, &example_crd("configmapset")).await?;
    apply_config_map(
        &admin,
        &packed(wasm_reconciler_artifacts::CONFIGMAPSET, "configmapset", None, false)?,
    )
    .await?;
    let replica = HostProcess::start(
        cluster.dir.path(),
        &cluster.kubeconfig,
        "r0",
        &[
            "--sharding",
            "--lease-duration-seconds",
            "6",
            "--lease-renew-seconds",
            "2",
        ],
    )?;
    replica.wait_ready(Duration::from_secs(60)).await;
    let sets = namespaced(&admin, "default", &configmapset_resource());
    let set: DynamicObject = serde_json::from_value(configmapset(SET, 1, 1, "hi"))?;
    wait_for(
        Duration::from_secs(60),
        "the ConfigMapSet kind to be served",
        || async { sets.create(&PostParams::default(), &set).await.ok().map(drop) },
    )
    .await;
    let ready = wait_set_ready(&sets, SET, 1).await;
    let since = ready_since(&ready);
    // Condition times are whole seconds: a flip from here on must show as another time.
    let since_time: k8s_openapi::jiff::Timestamp = since.as_str().unwrap_or_default().parse()?;
    wait_for(Duration::from_secs(2), "the next second", || async {
        (k8s_openapi::jiff::Timestamp::now().as_second() > since_time.as_second()).then_some(())
    })
    .await;

    // Someone labels the child away from the replica's share; the sharder labels it back for its owner's replica.
    let config_maps = Api::<ConfigMap>::namespaced(admin.clone(), "default");
    config_maps
        .patch(
            CHILD,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {SHARD_LABEL: "elsewhere"}}})),
        )
        .await?;
    wait_for(
        Duration::from_secs(30),
        "the sharder to label the child back",
        || async {
            let child = config_maps.get(CHILD).await.ok()?;
            (child.metadata.labels?.get(SHARD_LABEL)? == "r0").then_some(())
        },
    )
    .await;

    // The next reconcile must count the child it has back: the spec changes (not the children it asks for), and
    // the set reports Ready at the new generation, never having left it.
    sets.patch(
        SET,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"burst": 2}})),
    )
    .await?;
    let converged = wait_for(
        Duration::from_secs(60),
        "the set Ready at its new generation",
        || async {
            let set = serde_json::to_value(sets.get(SET).await.ok()?).ok()?;
            (set["metadata"]["generation"] == 2 && set_ready_with(&set, 1)).then_some(set)
        },
    )
    .await;
    assert_eq!(
        ready_since(&converged),
        since,
        "the set left Ready while its child was out of the share: {}",
        converged["status"]
    );
    let log = replica.log_text();
    assert!(!log.contains("panicked"), "the replica panicked:\n{log}");
    Ok(())
}
