//! A frozen leader writes nothing when it thaws. Two `wasm-reconciler run --leader-elect` processes (lease 6 s,
//! renewal every 2 s), 30 Mirrors copying a source ConfigMap into 3 owned ConfigMaps each. The source changes and
//! the leader is frozen at once (`SIGSTOP`: a long GC pause, a VM migration, a stalled node). The standby takes over
//! and converges, then the source changes again and every Mirror is scaled from 3 copies to 1. When the old leader
//! thaws (`SIGCONT`) its caches still hold the old world, but its fence is closed: a watch on the copies sees no stale
//! value and no pruned copy come back, not even briefly, and the write history shows no write of it after the thaw.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::json;

use crate::audit_log;
use crate::harness::{Cluster, RealOptions, ServerKind, wait_for};
use crate::host_process::HostProcess;
use crate::kinds::{MIRROR_CRD, create_namespace, mirror_resource, namespaced};
use crate::leader::holder;
use crate::mirror::{create_mirrors, wait_mirrored};
use crate::plugin_configmaps::{HOST_NAMESPACE, apply_config_map, install_crd, packed};
use crate::request_recorder::{RecordedRequest, RecordingFront};

const MIRRORS: usize = 30;
const NAMESPACE: &str = "mirrored";
const LEASE_ARGS: [&str; 5] = [
    "--leader-elect",
    "--lease-duration-seconds",
    "6",
    "--lease-renew-seconds",
    "2",
];

/// A host's own credentials, so the write history tells its writes from the other host's.
pub struct Identity {
    pub name: String,
    pub kubeconfig: PathBuf,
    /// On the embedded server: the recording front the host talks to.
    front: Option<RecordingFront>,
}

impl Identity {
    /// Credentials of their own for a host named `name`: a recording front on the embedded server; a ServiceAccount
    /// bound to `cluster-admin` with a token on a real one (whose audit log then names it).
    pub async fn new(cluster: &Cluster, admin: &kube::Client, name: &str) -> anyhow::Result<Self> {
        let dir = cluster.dir.path().join(name);
        std::fs::create_dir_all(&dir)?;
        if ServerKind::from_environment() == ServerKind::Embedded {
            let front = RecordingFront::start(cluster.embedded(), &dir).await?;
            return Ok(Self {
                name: name.to_owned(),
                kubeconfig: front.kubeconfig.clone(),
                front: Some(front),
            });
        }
        let token = cluster
            .cluster_admin_token(admin, HOST_NAMESPACE, name, &format!("fencing-{name}"))
            .await?;
        let kubeconfig = dir.join("kubeconfig");
        cluster.token_kubeconfig(&kubeconfig, name, &token)?;
        Ok(Self {
            name: name.to_owned(),
            kubeconfig,
            front: None,
        })
    }

    /// The writes made with these credentials that reached the API server at or after `since` (Leases excluded:
    /// renewing and taking them is the election itself), as
    /// `(carried out, refused)`: a request that left the process before it froze (past the fence's check, inside the
    /// HTTP client) reaches the server when it thaws, and must then be refused by its preconditions (the uid and
    /// resourceVersion of the view).
    pub fn writes_since(&self, cluster: &Cluster, since: Timestamp) -> anyhow::Result<(Vec<String>, Vec<String>)> {
        if let Some(front) = &self.front {
            let since = std::time::SystemTime::from(since);
            let (accepted, refused): (Vec<_>, Vec<_>) = front
                .recording
                .requests()
                .into_iter()
                .filter(|r| matches!(r.method.as_str(), "POST" | "PUT" | "PATCH" | "DELETE"))
                .filter(|r| !r.path.contains("/leases"))
                .filter(|r| r.received >= since)
                .partition(|r| (200..300).contains(&r.status));
            let describe = |r: RecordedRequest| format!("{} {} ({})", r.method, r.path, r.status);
            return Ok((
                accepted.into_iter().map(describe).collect(),
                refused.into_iter().map(describe).collect(),
            ));
        }
        let user = format!("system:serviceaccount:{HOST_NAMESPACE}:{}", self.name);
        let (accepted, refused): (Vec<_>, Vec<_>) = audit_log::writes(&cluster.real().logs.join("audit.log"))?
            .into_iter()
            .filter(|w| w.user == user && w.resource != "leases")
            .filter(|w| w.received.parse::<Timestamp>().is_ok_and(|at| at >= since))
            .partition(audit_log::Write::accepted);
        let describe = |w: audit_log::Write| format!("{} {}/{} ({})", w.resource, w.namespace, w.name, w.code);
        Ok((
            accepted.into_iter().map(describe).collect(),
            refused.into_iter().map(describe).collect(),
        ))
    }
}

/// A copy as the watch saw it.
#[derive(Debug, Clone)]
struct Seen {
    at: Instant,
    name: String,
    version: String,
    deleted: bool,
}

/// Records every change to the ConfigMaps of `namespace` until dropped.
fn watch_copies(client: &kube::Client) -> (Arc<Mutex<Vec<Seen>>>, tokio::task::JoinHandle<()>) {
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
    let task = tokio::spawn({
        let seen = seen.clone();
        async move {
            let mut events = std::pin::pin!(watcher::watcher(api, watcher::Config::default()));
            while let Some(event) = events.next().await {
                let (object, deleted) = match event {
                    Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object)) => (object, false),
                    Ok(watcher::Event::Delete(object)) => (object, true),
                    _ => continue,
                };
                let version = object
                    .data
                    .as_ref()
                    .and_then(|data| data.get("version"))
                    .cloned()
                    .unwrap_or_default();
                seen.lock().unwrap_or_else(PoisonError::into_inner).push(Seen {
                    at: Instant::now(),
                    name: object.metadata.name.unwrap_or_default(),
                    version,
                    deleted,
                });
            }
        }
    });
    (seen, task)
}

async fn lease_holder(client: &kube::Client) -> Option<String> {
    let lease = Api::<k8s_openapi::api::coordination::v1::Lease>::namespaced(client.clone(), HOST_NAMESPACE)
        .get_opt("wasm-reconciler")
        .await
        .ok()
        .flatten()?;
    holder(&lease).map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_frozen_leader_writes_nothing_when_it_thaws() -> anyhow::Result<()> {
    let cluster = match ServerKind::from_environment() {
        ServerKind::Embedded => Cluster::start_embedded(None).await?,
        ServerKind::Real => {
            Cluster::start_real_with(&RealOptions {
                audit: true,
                ..RealOptions::default()
            })
            .await?
        }
    };
    let admin = cluster.client().await?;
    create_namespace(&admin, HOST_NAMESPACE).await?;
    create_namespace(&admin, NAMESPACE).await?;
    install_crd(&admin, MIRROR_CRD).await?;
    apply_config_map(
        &admin,
        &packed(wasm_reconciler_artifacts::MIRROR, "mirror", None, false)?,
    )
    .await?;

    let a = Identity::new(&cluster, &admin, "host-a").await?;
    let b = Identity::new(&cluster, &admin, "host-b").await?;
    let dir = cluster.dir.path();
    let host_a = HostProcess::start(dir, &a.kubeconfig, "host-a", &LEASE_ARGS)?;
    host_a.wait_ready(Duration::from_secs(60)).await;
    let host_b = HostProcess::start(dir, &b.kubeconfig, "host-b", &LEASE_ARGS)?;

    let sources: Api<ConfigMap> = Api::namespaced(admin.clone(), NAMESPACE);
    let source = |version: &str| -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": "source"}, "data": {"version": version}})).unwrap()
    };
    sources.create(&PostParams::default(), &source("v1")).await?;
    let mirrors = namespaced(&admin, NAMESPACE, &mirror_resource());
    create_mirrors(&admin, NAMESPACE, MIRRORS, 3).await?;
    wait_mirrored(&admin, NAMESPACE, MIRRORS, 3, "v1", Duration::from_secs(60)).await;
    assert_eq!(lease_holder(&admin).await.as_deref(), Some("host-a"));

    // The source changes and the leader freezes at once.
    let params = PatchParams::default();
    sources
        .patch("source", &params, &Patch::Merge(json!({"data": {"version": "v2"}})))
        .await?;
    host_a.signal("STOP");
    let frozen = Instant::now();
    wait_for(Duration::from_secs(30), "host-b to take the Lease", || async {
        (lease_holder(&admin).await.as_deref() == Some("host-b")).then_some(())
    })
    .await;
    println!(
        "fencing: host-b took over {:.1} s after host-a froze",
        frozen.elapsed().as_secs_f64()
    );
    wait_mirrored(&admin, NAMESPACE, MIRRORS, 3, "v2", Duration::from_secs(60)).await;
    sources
        .patch("source", &params, &Patch::Merge(json!({"data": {"version": "v3"}})))
        .await?;
    for index in 0..MIRRORS {
        mirrors
            .patch(
                &format!("m{index}"),
                &params,
                &Patch::Merge(json!({"spec": {"copies": 1}})),
            )
            .await?;
    }
    wait_mirrored(&admin, NAMESPACE, MIRRORS, 1, "v3", Duration::from_secs(60)).await;

    // The old leader thaws with its caches at v2 and 3 copies.
    let (seen, watch) = watch_copies(&admin);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let thawed_at = Timestamp::now();
    let thawed = Instant::now();
    host_a.signal("CONT");
    host_a
        .wait_logged(
            &[
                "the Lease was taken over; stopping",
                "the Lease was not renewed in time; stopped writing",
            ],
            Duration::from_secs(30),
        )
        .await;
    // Time for anything it would still write to show.
    tokio::time::sleep(Duration::from_secs(5)).await;
    watch.abort();
    let stale: Vec<Seen> = seen
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .filter(|s| s.at >= thawed && (s.deleted || s.version != "v3" || !s.name.ends_with("-copy-0")))
        .filter(|s| s.name.contains("-copy-"))
        .cloned()
        .collect();
    assert!(stale.is_empty(), "after the thaw the copies went back: {stale:?}");
    let (written, refused) = a.writes_since(&cluster, thawed_at)?;
    assert!(written.is_empty(), "host-a wrote after it thawed: {written:?}");
    println!(
        "fencing: {} requests of host-a reached the server after the thaw, all refused: {refused:?}",
        refused.len()
    );
    wait_mirrored(&admin, NAMESPACE, MIRRORS, 1, "v3", Duration::from_secs(10)).await;
    let log = host_a.log_text();
    println!(
        "fencing: host-a thawed and stopped; {} fenced writes or reconciles in its log",
        log.lines()
            .filter(|l| l.contains("fenced") || l.contains("Fenced"))
            .count()
    );
    drop(host_b);
    Ok(())
}
