//! The probes as the kubelet evaluates them: a leader whose caches cannot sync (a plugin whose kinds the host may
//! not watch) is taken out of Ready (the standby stays Ready) and back once RBAC grants them, without a restart; a wedged host process (frozen
//! with SIGSTOP, as a stalled process looks) fails its liveness probe and is restarted, while the standby takes the
//! Lease.

use std::time::{Duration, Instant};

use super::install::{Install, Mode, kubectl_apply_stdin};
use super::pods::{self, container_pid, host_pods, lease_holder, wait_leader};
use super::{Image, NAMESPACE, node_cluster};
use crate::harness::wait_for;
use crate::kinds::ECHO_CRD;
use crate::plugin_configmaps::pack_manifest;

/// Readiness: every 5 s, two failures; liveness: every 10 s, three failures (deploy/deployment.yaml).
const PROBED: Duration = Duration::from_secs(120);

/// RBAC for the echo test plugin's kinds, as docs/deploy.md says to grant a plugin.
const ECHO_RBAC: &str = "
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: wasm-reconciler-plugin-echo
rules:
  - apiGroups: [test.wasm-reconciler.io]
    resources: [echoes]
    verbs: [get, list, watch, patch, update]
  - apiGroups: [test.wasm-reconciler.io]
    resources: [echoes/status]
    verbs: [get, patch, update]
  - apiGroups: [test.wasm-reconciler.io]
    resources: [echoes/finalizers]
    verbs: [update]
  - apiGroups: ['']
    resources: [secrets]
    verbs: [get, list, watch, create, patch, update, delete]
  - apiGroups: ['']
    resources: [services]
    verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: wasm-reconciler-plugin-echo
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: wasm-reconciler-plugin-echo
subjects:
  - kind: ServiceAccount
    name: wasm-reconciler
    namespace: wasm-reconciler
";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn probes_are_evaluated_by_the_kubelet() -> anyhow::Result<()> {
    let image = Image::pushed()?;
    let cluster = node_cluster().await?;
    let install = Install::kustomize(&cluster, &image, Mode::Leader)?;
    let client = cluster.client().await?;
    let leader = wait_leader(&client, install.replicas, Duration::from_secs(180)).await;

    // A plugin whose kinds the host may not list: its controller waits for its primary cache, so the leader is
    // not Ready; it stays live (no restart) and keeps the Lease.
    cluster.kubectl_ok(&["apply", "--server-side", "-f", ECHO_CRD]);
    let plugin = pack_manifest(wasm_reconciler_artifacts::ECHO, "echo", None, false)?;
    kubectl_apply_stdin(&cluster.kubeconfig, &plugin)?;
    let unready = Instant::now();
    wait_for(PROBED, "the leader to be taken out of Ready", || async {
        let pods = host_pods(&client).await;
        pods.iter().any(|p| p.name == leader && !p.ready).then_some(())
    })
    .await;
    assert!(
        host_pods(&client).await.iter().any(|p| p.name != leader && p.ready),
        "the standby stays Ready"
    );
    println!(
        "in_pod[probes]: the leader left Ready {:.1} s after a plugin it cannot watch arrived",
        unready.elapsed().as_secs_f64()
    );
    assert_eq!(lease_holder(&client).await.as_deref(), Some(leader.as_str()));
    let granted = Instant::now();
    kubectl_apply_stdin(&cluster.kubeconfig, ECHO_RBAC)?;
    wait_for(
        PROBED,
        "the leader to be Ready again once RBAC grants the kinds",
        || async {
            host_pods(&client)
                .await
                .iter()
                .any(|p| p.name == leader && p.ready)
                .then_some(())
        },
    )
    .await;
    println!(
        "in_pod[probes]: Ready again {:.1} s after the grant",
        granted.elapsed().as_secs_f64()
    );
    assert!(
        host_pods(&client).await.iter().all(|p| p.restarts == 0),
        "readiness failures restart nothing"
    );

    // A wedged process: frozen, it answers no probe; the kubelet restarts it, and the standby leads meanwhile.
    let frozen = host_pods(&client)
        .await
        .into_iter()
        .find(|p| p.name == leader)
        .expect("the leader Pod");
    let pid = container_pid(&frozen.uid).expect("the leader's host process");
    let stopped = Instant::now();
    let status = std::process::Command::new("kill")
        .args(["-STOP", &pid.to_string()])
        .status()?;
    assert!(status.success());
    let successor = wait_for(PROBED, "the standby to take the Lease", || async {
        lease_holder(&client).await.filter(|holder| *holder != leader)
    })
    .await;
    let taken_over = stopped.elapsed().as_secs_f64();
    wait_for(PROBED, "the kubelet to restart the wedged container", || async {
        host_pods(&client)
            .await
            .iter()
            .any(|p| p.name == leader && p.restarts >= 1 && p.running)
            .then_some(())
    })
    .await;
    let restarted = stopped.elapsed().as_secs_f64();
    assert_ne!(
        container_pid(&frozen.uid),
        Some(pid),
        "a new process runs in the restarted container"
    );
    let new_leader = wait_leader(&client, install.replicas, PROBED).await;
    assert_eq!(new_leader, successor);
    let previous = pods::logs(&client, &leader, true).await;
    assert!(!previous.is_empty(), "the wedged container's log is kept");
    let events = cluster.kubectl_ok(&[
        "-n",
        NAMESPACE,
        "get",
        "events",
        "--field-selector",
        &format!("involvedObject.name={leader}"),
        "-o",
        "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}",
    ]);
    assert!(
        events.contains("Liveness probe failed") || events.contains("failed liveness probe"),
        "the kubelet says why it restarted the container:\n{events}"
    );
    println!(
        "in_pod[probes]: wedged leader: the standby took the Lease after {taken_over:.1} s, the kubelet restarted the \
         container after {restarted:.1} s"
    );
    Ok(())
}
