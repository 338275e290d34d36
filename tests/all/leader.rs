//! Two host replicas against one API server: exactly one holds the Lease, is Ready and reconciles; when it stops
//! gracefully or crashes, the other takes over and converges new objects.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::Api;
use wasm_reconciler::cli::serve::HostOptions;

use crate::echo_kind::{create_echo, echoes, wait_for_echo};
use crate::harness::{Cluster, Host, wait_for};
use crate::kinds::{ECHO_CRD, create_namespace, events_about};
use crate::plugin_configmaps::{HOST_NAMESPACE, apply_config_map, install_crd, packed, plugin_events};
use crate::telemetry_probe::{free_local_addr, http_get, sample, sum_samples};

/// Where the primaries live.
const WORKLOAD_NAMESPACE: &str = "default";

/// One host replica and its telemetry address.
pub struct Replica {
    pub identity: &'static str,
    pub telemetry: SocketAddr,
    pub host: Host,
}

impl Replica {
    /// A cluster-style replica with leader election.
    async fn start(cluster: &Cluster, identity: &'static str) -> anyhow::Result<Self> {
        Self::start_with(cluster, identity, |options| options).await
    }

    /// A cluster-style replica whose options `adjust` changes.
    pub async fn start_with(
        cluster: &Cluster,
        identity: &'static str,
        adjust: impl FnOnce(HostOptions) -> HostOptions,
    ) -> anyhow::Result<Self> {
        let telemetry = free_local_addr();
        let options = adjust(Host::cluster_options(HOST_NAMESPACE, identity, Some(telemetry)));
        Ok(Self {
            identity,
            telemetry,
            host: Host::start(cluster, options).await?,
        })
    }

    async fn readyz(&self) -> Option<(u16, String)> {
        http_get(self.telemetry, "/readyz").await
    }

    pub async fn metrics(&self) -> String {
        let (status, body) = http_get(self.telemetry, "/metrics").await.expect("/metrics answers");
        assert_eq!(status, 200);
        body
    }

    /// Waits until `/readyz` says it reconciles (`200 ok`: the leader or a shard member with synced caches, not a
    /// standby).
    pub async fn wait_until_ready(&self, timeout: Duration) {
        wait_for(
            timeout,
            &format!("{} to be Ready and reconciling", self.identity),
            || async { matches!(self.readyz().await, Some((200, body)) if body.trim() == "ok").then_some(()) },
        )
        .await;
    }
}

/// A cluster with the host namespace, the Echo CRD and the echo plugin as a ConfigMap.
async fn cluster_with_echo_plugin() -> anyhow::Result<(Cluster, kube::Client)> {
    let cluster = Cluster::start().await?;
    let client = cluster.client().await?;
    create_namespace(&client, HOST_NAMESPACE).await?;
    install_crd(&client, ECHO_CRD).await?;
    let plugin = packed(
        wasm_reconciler_artifacts::ECHO,
        "echo",
        Some("greeting: hello\n"),
        false,
    )?;
    apply_config_map(&client, &plugin).await?;
    Ok((cluster, client))
}

async fn lease(client: &kube::Client) -> Option<Lease> {
    Api::<Lease>::namespaced(client.clone(), HOST_NAMESPACE)
        .get_opt("wasm-reconciler")
        .await
        .ok()
        .flatten()
}

/// Who holds `lease`, if anyone.
pub fn holder(lease: &Lease) -> Option<&str> {
    lease
        .spec
        .as_ref()?
        .holder_identity
        .as_deref()
        .filter(|h| !h.is_empty())
}

/// When the holder's term ends unless renewed: its last renewal plus the lease duration.
fn term_end(lease: &Lease) -> Timestamp {
    let spec = lease.spec.as_ref().expect("a held Lease has a spec");
    let renewed = spec.renew_time.as_ref().expect("a held Lease was renewed").0;
    renewed
        + SignedDuration::from_secs(i64::from(
            spec.lease_duration_seconds.expect("a held Lease has a duration"),
        ))
}

/// When the current holder acquired the Lease.
fn acquired_at(lease: &Lease) -> Timestamp {
    lease
        .spec
        .as_ref()
        .and_then(|s| s.acquire_time.as_ref())
        .expect("a held Lease was acquired")
        .0
}

/// Waits until one of the replicas holds the Lease; returns (leader, standby).
async fn elect(client: &kube::Client, a: Replica, b: Replica) -> (Replica, Replica) {
    let holder = wait_for(Duration::from_secs(20), "a replica to hold the Lease", || async {
        holder(&lease(client).await?).map(str::to_owned)
    })
    .await;
    if holder == a.identity {
        (a, b)
    } else {
        assert_eq!(holder, b.identity, "the Lease is held by one of the two replicas");
        (b, a)
    }
}

/// Every Event regarding the Echo `name` was reported by `instance`; returns how many there are.
async fn echo_events_from(client: &kube::Client, name: &str, instance: &str) -> anyhow::Result<usize> {
    let events = wait_for(Duration::from_secs(10), "an Event on the Echo", || async {
        let events = events_about(client, WORKLOAD_NAMESPACE, name).await.ok()?;
        (!events.is_empty()).then_some(events)
    })
    .await;
    for event in &events {
        assert_eq!(
            event.reporting_instance.as_deref(),
            Some(instance),
            "Event {:?} on Echo {name} was reported by another replica",
            event.reason
        );
    }
    Ok(events.len())
}

/// Whether `metrics` shows any reconcile of the echo plugin.
fn reconciled_echo(metrics: &str) -> bool {
    sum_samples(metrics, "wasm_reconciler_reconcile_total", &[r#"plugin="echo""#]) > 0.0
}

/// Asserts that `leader` alone leads: Lease, readiness, leader metric, and that it alone reconciled `echo`.
async fn assert_sole_leader(
    client: &kube::Client,
    leader: &Replica,
    standby: &Replica,
    echo: &str,
) -> anyhow::Result<()> {
    assert_eq!(lease(client).await.as_ref().and_then(holder), Some(leader.identity));
    leader.wait_until_ready(Duration::from_secs(20)).await;
    let (status, body) = standby.readyz().await.expect("the standby answers /readyz");
    assert_eq!(
        (status, body.trim()),
        (200, "ok: standby, another replica holds the Lease"),
        "the standby is Ready as a standby"
    );

    echo_events_from(client, echo, leader.identity).await?;
    let leader_metrics = leader.metrics().await;
    let standby_metrics = standby.metrics().await;
    assert_eq!(sample(&leader_metrics, "wasm_reconciler_leader"), Some(1.0));
    assert_eq!(sample(&standby_metrics, "wasm_reconciler_leader"), Some(0.0));
    assert!(
        reconciled_echo(&leader_metrics),
        "the leader reconciled:\n{leader_metrics}"
    );
    assert!(
        !reconciled_echo(&standby_metrics),
        "the standby must not reconcile:\n{standby_metrics}"
    );
    // Only the leader loaded the plugin from its ConfigMap.
    for event in plugin_events(client, "echo", "PluginLoaded").await? {
        assert_eq!(event.reporting_instance.as_deref(), Some(leader.identity));
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_replica_leads_and_a_graceful_stop_hands_over() -> anyhow::Result<()> {
    let (cluster, client) = cluster_with_echo_plugin().await?;
    let a = Replica::start(&cluster, "host-a").await?;
    let b = Replica::start(&cluster, "host-b").await?;
    let (leader, standby) = elect(&client, a, b).await;
    let echoes = echoes(&client, WORKLOAD_NAMESPACE);
    create_echo(&echoes, "before-handover").await?;
    wait_for_echo(
        &echoes,
        "before-handover",
        Duration::from_secs(20),
        "the leader to reconcile",
        |config| config["greeting"] == "hello",
    )
    .await;
    assert_sole_leader(&client, &leader, &standby, "before-handover").await?;

    let held = lease(&client).await.expect("the Lease exists");
    let stopped = Instant::now();
    leader.host.stop().await?;
    assert!(
        http_get(leader.telemetry, "/readyz").await.is_none(),
        "a stopped host serves no telemetry"
    );
    create_echo(&echoes, "after-handover").await?;
    wait_for_echo(
        &echoes,
        "after-handover",
        Duration::from_secs(20),
        "the successor to reconcile",
        |config| config["greeting"] == "hello",
    )
    .await;
    let handover = stopped.elapsed();
    println!("graceful handover converged a new object in {handover:?}");
    assert!(handover < Duration::from_secs(20), "handover took {handover:?}");
    let successor = lease(&client).await.expect("the Lease exists");
    assert_eq!(holder(&successor), Some(standby.identity));
    // The released Lease was taken over at once, not when the stopped leader's term would have ended.
    let acquired = acquired_at(&successor);
    let term_end = term_end(&held);
    assert!(
        acquired < term_end,
        "the successor acquired the Lease at {acquired}, only when the released term would have ended ({term_end})"
    );
    standby.wait_until_ready(Duration::from_secs(5)).await;
    echo_events_from(&client, "after-handover", standby.identity).await?;
    assert!(reconciled_echo(&standby.metrics().await));
    assert_eq!(sample(&standby.metrics().await, "wasm_reconciler_leader"), Some(1.0));

    standby.host.stop().await?;
    // The last replica released the Lease on its way out.
    let released = lease(&client).await.expect("the Lease stays");
    assert_eq!(holder(&released), None, "a graceful stop releases the Lease");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_leader_is_replaced_once_its_lease_expires() -> anyhow::Result<()> {
    let (cluster, client) = cluster_with_echo_plugin().await?;
    let a = Replica::start(&cluster, "host-a").await?;
    let b = Replica::start(&cluster, "host-b").await?;
    let (leader, standby) = elect(&client, a, b).await;
    let echoes = echoes(&client, WORKLOAD_NAMESPACE);
    create_echo(&echoes, "before-crash").await?;
    wait_for_echo(
        &echoes,
        "before-crash",
        Duration::from_secs(20),
        "the leader to reconcile",
        |config| config["greeting"] == "hello",
    )
    .await;
    assert_sole_leader(&client, &leader, &standby, "before-crash").await?;

    let crashed = leader.identity;
    let crashed_telemetry = leader.telemetry;
    let held = lease(&client).await.expect("the Lease exists");
    leader.host.kill();
    let crashed_at = Instant::now();
    wait_for(
        Duration::from_secs(5),
        "the crashed host's telemetry to go away",
        || async { http_get(crashed_telemetry, "/readyz").await.is_none().then_some(()) },
    )
    .await;
    // Nothing released the Lease: it still names the crashed replica until it expires.
    assert_eq!(lease(&client).await.as_ref().and_then(holder), Some(crashed));

    // Takeover is the rest of the crashed leader's term (up to the 15 s lease duration), up to 1 s of the lease
    // manager's jitter, then the successor's start: plugin compiled, caches listed and watched, one reconcile.
    // Measured 14-15 s on an idle machine; the bound leaves room for a 2-core machine running other tests and a
    // real control plane beside this one.
    const TAKEOVER: Duration = Duration::from_secs(40);
    create_echo(&echoes, "after-crash").await?;
    wait_for_echo(
        &echoes,
        "after-crash",
        TAKEOVER.saturating_sub(crashed_at.elapsed()),
        "the successor to reconcile",
        |config| config["greeting"] == "hello",
    )
    .await;
    let takeover = crashed_at.elapsed();
    println!("after a crash, the successor converged a new object in {takeover:?}");
    assert!(takeover < TAKEOVER, "takeover took {takeover:?}");

    let successor = lease(&client).await.expect("the Lease exists");
    assert_eq!(holder(&successor), Some(standby.identity));
    // No split brain: the successor acquired the Lease only after the crashed leader's term had expired.
    let acquired = acquired_at(&successor);
    let term_end = term_end(&held);
    assert!(
        acquired >= term_end,
        "the successor acquired the Lease at {acquired}, before the crashed leader's term ended at {term_end}"
    );
    assert_eq!(
        successor.spec.as_ref().and_then(|s| s.lease_transitions),
        held.spec.as_ref().and_then(|s| s.lease_transitions).map(|t| t + 1),
        "one leadership transition"
    );
    standby.wait_until_ready(Duration::from_secs(5)).await;
    echo_events_from(&client, "after-crash", standby.identity).await?;
    standby.host.stop().await
}
