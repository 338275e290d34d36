//! No call for an unchanged world, the way a user runs the host: `wasm-reconciler run` with the mirror plugin
//! delivered as a ConfigMap whose settings resync every second. The mirror reads a ConfigMap it does not own, so
//! what its calls are given includes a read. Once the Mirrors have converged, resyncs skip every call (counted in
//! `reconcile_skipped_total`; `reconcile_total` stands still), and a change to the read object, or a copy deleted
//! by someone, is still followed. With `alwaysCall: true` in its settings, every resync calls it again.
//!
//! A plugin that reads the clock is never skipped: one that expires Echoes at a time finds them expired on a resync of
//! its unchanged world, and the seed of its `HashMap`s is the same on every call.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::echo_kind::echoes;
use crate::harness::{Cluster, wait_for};
use crate::host_process::HostProcess;
use crate::kinds::{ECHO_CRD, MIRROR_CRD, create_namespace};
use crate::mirror::{create_mirrors, wait_mirrored};
use crate::plugin_configmaps::{HOST_NAMESPACE, apply_config_map, install_crd, packed};
use crate::telemetry_probe::{http_get, sum_samples};

const NAMESPACE: &str = "unchanged";
const MIRRORS: usize = 5;

/// `reconcile_total` and `reconcile_skipped_total` of the mirror plugin.
async fn counts(host: &HostProcess) -> Option<(f64, f64)> {
    plugin_counts(host, "mirror").await
}

/// `reconcile_total` and `reconcile_skipped_total` of `plugin`.
async fn plugin_counts(host: &HostProcess, plugin: &str) -> Option<(f64, f64)> {
    let (_, metrics) = http_get(host.telemetry, "/metrics").await?;
    let plugin = format!("plugin=\"{plugin}\"");
    let labels = [plugin.as_str()];
    Some((
        sum_samples(&metrics, "wasm_reconciler_reconcile_total", &labels),
        sum_samples(&metrics, "wasm_reconciler_reconcile_skipped_total", &labels),
    ))
}

/// Waits until the mirror plugin's reconciles reach `calls`; returns both counts then.
async fn wait_calls(host: &HostProcess, calls: f64) -> (f64, f64) {
    wait_for(Duration::from_secs(60), &format!("{calls} reconciles"), || async {
        counts(host).await.filter(|(now, _)| *now >= calls)
    })
    .await
}

/// Waits until the mirror plugin's skipped reconciles reach `skipped`; returns both counts then.
async fn wait_skipped(host: &HostProcess, skipped: f64) -> (f64, f64) {
    wait_for(
        Duration::from_secs(60),
        &format!("{skipped} skipped reconciles"),
        || async { counts(host).await.filter(|(_, now)| *now >= skipped) },
    )
    .await
}

/// The host's and the workload's namespaces, the CRD at `crd`, and plugin `name` (the component at `wasm`) delivered
/// as a ConfigMap whose settings resync every second; the ConfigMap, to change its settings later.
async fn install_resyncing_plugin(
    admin: &kube::Client,
    crd: &str,
    wasm: &str,
    name: &str,
) -> anyhow::Result<ConfigMap> {
    create_namespace(admin, HOST_NAMESPACE).await?;
    create_namespace(admin, NAMESPACE).await?;
    install_crd(admin, crd).await?;
    let mut plugin = packed(wasm, name, None, false)?;
    plugin
        .data
        .get_or_insert_default()
        .insert("settings.yaml".into(), "resync: 1s\n".into());
    apply_config_map(admin, &plugin).await?;
    Ok(plugin)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resyncs_of_an_unchanged_world_call_nothing_and_changes_are_still_followed() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let admin = cluster.client().await?;
    let mut plugin = install_resyncing_plugin(&admin, MIRROR_CRD, wasm_reconciler_artifacts::MIRROR, "mirror").await?;
    let sources: Api<ConfigMap> = Api::namespaced(admin.clone(), NAMESPACE);
    let source: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "source"}, "data": {"version": "v1"}}))?;
    sources.create(&PostParams::default(), &source).await?;

    let host = HostProcess::start(cluster.dir.path(), &cluster.kubeconfig, "h0", &[])?;
    host.wait_ready(Duration::from_secs(60)).await;
    create_mirrors(&admin, NAMESPACE, MIRRORS, 2).await?;
    wait_mirrored(&admin, NAMESPACE, MIRRORS, 2, "v1", Duration::from_secs(60)).await;

    // Converged: from the first resync that finds every Mirror as its last call left it, every call is skipped.
    let (_, skipped) = wait_skipped(&host, (2 * MIRRORS) as f64).await;
    let (calls, skipped) = wait_skipped(&host, skipped + (2 * MIRRORS) as f64).await;
    let (calls_after, skipped_after) = wait_skipped(&host, skipped + (3 * MIRRORS) as f64).await;
    assert_eq!(
        calls_after,
        calls,
        "the plugin was called during resyncs of an unchanged world ({} more skipped meanwhile)",
        skipped_after - skipped
    );

    // What a call reads changes: every Mirror follows, though nothing it owns changed.
    sources
        .patch(
            "source",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"version": "v2"}})),
        )
        .await?;
    wait_mirrored(&admin, NAMESPACE, MIRRORS, 2, "v2", Duration::from_secs(60)).await;
    // A child is deleted by someone: it comes back.
    sources.delete("m0-copy-1", &DeleteParams::default()).await?;
    wait_mirrored(&admin, NAMESPACE, MIRRORS, 2, "v2", Duration::from_secs(60)).await;
    let (calls_now, _) = counts(&host).await.expect("metrics");
    assert!(calls_now > calls_after, "the changes were reconciled by calls");
    println!(
        "unchanged_world: {calls_after} calls to converge, {skipped_after} resync reconciles skipped; {} calls to follow the changes",
        calls_now - calls_after
    );

    // `alwaysCall: true`: the plugin is restarted with it, and then every resync calls it, nothing skipped.
    plugin
        .data
        .get_or_insert_default()
        .insert("settings.yaml".into(), "resync: 1s\nalwaysCall: true\n".into());
    apply_config_map(&admin, &plugin).await?;
    let (calls, skipped) = wait_calls(&host, calls_now + (2 * MIRRORS) as f64).await;
    let (_, skipped_after) = wait_calls(&host, calls + (3 * MIRRORS) as f64).await;
    assert_eq!(skipped_after, skipped, "a reconcile was skipped under alwaysCall");
    Ok(())
}

/// The status of Echo `name`, once it has a `phase`.
async fn echo_status(echoes: &Api<DynamicObject>, name: &str) -> Option<Value> {
    let echo = echoes.get(name).await.ok()?;
    let status = echo.data.get("status")?.clone();
    status.get("phase").is_some().then_some(status)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_that_reads_the_clock_is_called_on_every_resync() -> anyhow::Result<()> {
    // Long enough that the first call comes before, on a loaded machine too.
    const EXPIRES_IN: Duration = Duration::from_secs(15);
    let cluster = Cluster::start().await?;
    let admin = cluster.client().await?;
    install_resyncing_plugin(&admin, ECHO_CRD, wasm_reconciler_artifacts::CLOCK, "clock").await?;
    let host = HostProcess::start(cluster.dir.path(), &cluster.kubeconfig, "h0", &[])?;
    host.wait_ready(Duration::from_secs(60)).await;

    let expires_at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)? + EXPIRES_IN;
    let echoes = echoes(&admin, NAMESPACE);
    let echo: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "test.wasm-reconciler.io/v1", "kind": "Echo",
        "metadata": {"name": "expiring"},
        "spec": {"expiresAtMs": u64::try_from(expires_at.as_millis())?},
    }))?;
    echoes.create(&PostParams::default(), &echo).await?;
    let pending = wait_for(Duration::from_secs(60), "the Echo to be Pending", || {
        echo_status(&echoes, "expiring")
    })
    .await;
    assert_eq!(pending["phase"], "Pending", "called before it expires: {pending}");

    // Nothing changes in the cluster; the time passes, and a resync finds the Echo expired.
    let expired = wait_for(
        EXPIRES_IN + Duration::from_secs(60),
        "the Echo to be Expired",
        || async {
            echo_status(&echoes, "expiring")
                .await
                .filter(|status| status["phase"] == "Expired")
        },
    )
    .await;
    let (calls, skipped) = plugin_counts(&host, "clock").await.expect("metrics");
    assert_eq!(
        skipped, 0.0,
        "a call of a plugin that reads the clock was skipped ({calls} made)"
    );
    // The create, the status write coming back, then resyncs of the unchanged world.
    assert!(
        calls >= 4.0,
        "the resyncs called the plugin: {calls} calls in {EXPIRES_IN:?}"
    );

    // Three more resyncs, each given the same view: with the same HashMap seed each answers the same status (a seed
    // drawn per call would write a new `seededHash` every time).
    wait_for(Duration::from_secs(60), "three more calls", || async {
        plugin_counts(&host, "clock")
            .await
            .filter(|(now, _)| *now >= calls + 3.0)
    })
    .await;
    let later = echo_status(&echoes, "expiring").await.expect("the Echo's status");
    assert_eq!(
        later["seededHash"], expired["seededHash"],
        "the HashMap seed differed between calls given the same view: {expired} then {later}"
    );
    Ok(())
}
