//! The host's Pods as the kubelet runs them: which are Running and Ready, who holds the Lease, their logs, and the
//! host process of a container (for freezing it from outside, as a stalled node would).

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, LogParams};

use super::{DEPLOYMENT, NAMESPACE};
use crate::harness::wait_for;
use crate::leader::holder;

/// The label every host Pod carries in both installs.
pub const SELECTOR: &str = "app.kubernetes.io/name=wasm-reconciler";

/// One host Pod as the API server reports it.
#[derive(Debug, Clone)]
pub struct HostPod {
    pub name: String,
    pub uid: String,
    pub running: bool,
    pub ready: bool,
    pub restarts: i32,
    pub terminating: bool,
}

impl HostPod {
    fn of(pod: &Pod) -> Self {
        let status = pod.status.as_ref();
        let container = status
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|statuses| statuses.first());
        Self {
            name: pod.metadata.name.clone().unwrap_or_default(),
            uid: pod.metadata.uid.clone().unwrap_or_default(),
            running: status.and_then(|s| s.phase.as_deref()) == Some("Running"),
            ready: container.is_some_and(|c| c.ready),
            restarts: container.map_or(0, |c| c.restart_count),
            terminating: pod.metadata.deletion_timestamp.is_some(),
        }
    }
}

/// The host's Pods, in name order.
pub async fn host_pods(client: &kube::Client) -> Vec<HostPod> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let mut found: Vec<HostPod> = pods
        .list(&ListParams::default().labels(SELECTOR))
        .await
        .expect("listing the host's Pods")
        .items
        .iter()
        .map(HostPod::of)
        .collect();
    found.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

/// The Pod object itself.
pub async fn pod(client: &kube::Client, name: &str) -> Option<Pod> {
    Api::<Pod>::namespaced(client.clone(), NAMESPACE)
        .get_opt(name)
        .await
        .expect("reading a Pod")
}

/// Who holds the leader Lease (a Pod name: the identity comes from `POD_NAME`).
pub async fn lease_holder(client: &kube::Client) -> Option<String> {
    let lease = Api::<Lease>::namespaced(client.clone(), NAMESPACE)
        .get_opt(DEPLOYMENT)
        .await
        .ok()
        .flatten()?;
    holder(&lease).map(str::to_owned)
}

/// Waits until `replicas` host Pods run (none terminating) and exactly `ready` of them are Ready; returns them.
pub async fn wait_pods(client: &kube::Client, replicas: usize, ready: usize, timeout: Duration) -> Vec<HostPod> {
    wait_for(
        timeout,
        &format!("{replicas} running host Pods, {ready} of them Ready"),
        || async {
            let pods: Vec<HostPod> = host_pods(client).await.into_iter().filter(|p| !p.terminating).collect();
            (pods.len() == replicas
                && pods.iter().all(|p| p.running)
                && pods.iter().filter(|p| p.ready).count() == ready)
                .then_some(pods)
        },
    )
    .await
}

/// With leader election: waits until all `replicas` Pods run and are Ready (the standby too: it is ready to take
/// over) and one of them holds the Lease; returns its name.
pub async fn wait_leader(client: &kube::Client, replicas: usize, timeout: Duration) -> String {
    wait_for(timeout, "Ready host Pods, one holding the Lease", || async {
        let pods: Vec<HostPod> = host_pods(client).await.into_iter().filter(|p| !p.terminating).collect();
        let holder = lease_holder(client).await?;
        (pods.len() == replicas && pods.iter().all(|p| p.running && p.ready) && pods.iter().any(|p| p.name == holder))
            .then_some(holder)
    })
    .await
}

/// The container log of a host Pod (the previous container's with `previous`).
pub async fn logs(client: &kube::Client, name: &str, previous: bool) -> String {
    Api::<Pod>::namespaced(client.clone(), NAMESPACE)
        .logs(
            name,
            &LogParams {
                previous,
                ..LogParams::default()
            },
        )
        .await
        .unwrap_or_else(|error| panic!("reading the log of {name}: {error}"))
}

/// The host process (in this machine's PID namespace) of the running `wasm-reconciler` container of the Pod with
/// `uid`: the process whose cgroup path names the Pod and whose command is the host binary.
pub fn container_pid(uid: &str) -> Option<u32> {
    let underscored = uid.replace('-', "_");
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cgroup) = std::fs::read_to_string(entry.path().join("cgroup")) else {
            continue;
        };
        if !cgroup.contains(&format!("pod{uid}")) && !cgroup.contains(&format!("pod{underscored}")) {
            continue;
        }
        let Ok(command) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if command.starts_with(b"/usr/local/bin/wasm-reconciler\0") {
            return Some(pid);
        }
    }
    None
}

/// The resident memory of a process, from `/proc/<pid>/status`, in bytes.
pub fn resident_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
