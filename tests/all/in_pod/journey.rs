//! What a platform team does after installing the host, checked on Pods the kubelet runs: the rollout completes
//! with both replicas Ready, one holding the Lease; the host configures itself in-cluster; the plugin delivered as a
//! ConfigMap goes live and converges its objects; the logs are JSON lines naming plugin and object; the metrics
//! Service answers inside the cluster network; deleting the leader Pod (gracefully, then by force) hands over; and a
//! rollout restart while 1,000 ConfigMapSets churn loses nothing and never has two Pods take turns on one set.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::install::{Install, Method, Mode};
use super::pods::{self, container_pid, resident_bytes, wait_leader, wait_pods};
use super::{DEPLOYMENT, NAMESPACE, rollout_status};
use crate::audit_log::{self as audit, turn_taking, writers_per_set};
use crate::harness::{Cluster, wait_for};
use crate::kinds::{configmapset, configmapset_resource, create_namespace, namespaced, set_ready_with};
use crate::plugin_configmaps::wait_plugin_loaded;
use crate::telemetry_probe::sum_samples;

/// How long the kubelet may take to pull, start and make Ready the host Pods.
const ROLLOUT: Duration = Duration::from_secs(180);
/// How long objects may take to converge on the real server with two busy cores.
const CONVERGE: Duration = Duration::from_secs(120);
/// The ConfigMapSets of the rollout-under-churn step.
const CHURN_SETS: usize = 1000;
/// Where the journey's own objects live.
const DEMO: &str = "demo";
const CHURN: &str = "churn";
const BULK: &str = "bulk";
/// The host's ServiceAccount as the API server names it.
const HOST_USER: &str = "system:serviceaccount:wasm-reconciler:wasm-reconciler";

/// The whole journey on an installed host in leader-election mode.
pub async fn run(cluster: &Cluster, install: &Install) -> anyhow::Result<()> {
    assert_eq!(install.mode, Mode::Leader);
    let client = cluster.client().await?;
    let report = |line: String| println!("in_pod[{:?}]: {line}", install.method);

    // The rollout completes: the leader and the standby are both Ready.
    let started = Instant::now();
    rollout_status(cluster, 180);
    let leader = wait_leader(&client, install.replicas, ROLLOUT).await;
    report(format!(
        "rollout complete, {leader} leads, {:.1} s after the install",
        started.elapsed().as_secs_f64()
    ));
    check_pod_spec(&client, &leader, cluster.real().node.as_deref()).await;
    let standby: Vec<String> = pods::host_pods(&client)
        .await
        .into_iter()
        .filter(|p| p.name != leader)
        .map(|p| p.name)
        .collect();
    assert_eq!(standby.len(), install.replicas - 1);
    for name in &standby {
        let log = pods::logs(&client, name, false).await;
        assert!(
            log.contains("waiting for the Lease") && !log.contains("holding the Lease; started"),
            "the standby {name} waits for the Lease; its log:\n{log}"
        );
    }

    // In-cluster configuration: the ServiceAccount token and CA the kubelet mounted, KUBERNETES_SERVICE_HOST.
    let log = pods::logs(&client, &leader, false).await;
    let connected = json_lines(&log)
        .into_iter()
        .find(|line| line["message"] == "connecting to the API server")
        .unwrap_or_else(|| panic!("the leader logs how it connects; its log:\n{log}"));
    assert_eq!(connected["credentials"], "in-cluster service account", "{connected}");
    assert!(
        connected["server"]
            .as_str()
            .is_some_and(|s| s.starts_with("https://10.96.0.1")),
        "the host reaches the API server through the kubernetes Service: {connected}"
    );

    // The plugin delivered as a ConfigMap goes live, and its objects converge.
    wait_plugin_loaded(&client, "configmapset", CONVERGE).await;
    create_namespace(&client, DEMO).await?;
    let sets = namespaced(&client, DEMO, &configmapset_resource());
    for index in 0..5 {
        let mut set = configmapset(&format!("demo-{index}"), 3, 3, "hello");
        set["metadata"]["namespace"] = json!(DEMO);
        create_set(&sets, set).await?;
    }
    wait_sets(&client, DEMO, &BTreeMap::new(), CONVERGE).await;

    // `kubectl get wasmplugins` shows the plugin serving, as written by the leader.
    wait_for(
        CONVERGE,
        "kubectl get wasmplugins to show configmapset serving",
        || async {
            let columns =
                "-o=jsonpath={.status.conditions[0].status} {.status.shortDigest} {.status.objects} {.status.host}";
            let shown = tokio::task::block_in_place(|| {
                cluster.kubectl(&["-n", NAMESPACE, "get", "wasmplugin", "configmapset", columns])
            });
            let shown = String::from_utf8_lossy(&shown.stdout).into_owned();
            let fields: Vec<&str> = shown.split_whitespace().collect();
            (fields.len() == 4
                && fields[0] == "True"
                && fields[1].len() == 12
                && fields[2] == "5"
                && fields[3] == leader)
                .then_some(())
        },
    )
    .await;

    // JSON log lines, each reconcile's naming its plugin and object.
    let log = pods::logs(&client, &leader, false).await;
    let lines = json_lines(&log);
    assert!(!lines.is_empty());
    assert!(
        lines.iter().any(|line| {
            let fields = &line["span"];
            fields["plugin"] == "configmapset" && fields["object"] == format!("{DEMO}/demo-0")
        }),
        "a log line of the leader names plugin configmapset and object {DEMO}/demo-0; its log:\n{log}"
    );

    // The metrics Service answers from inside the cluster network.
    let metrics = fetch_in_cluster(cluster, &client, DEMO, "metrics").await?;
    assert!(
        metrics.contains("wasm_reconciler_leader"),
        "the metrics Service answers with the host's metrics:\n{metrics}"
    );

    // Deleting the leader Pod hands over: gracefully (SIGTERM, the Lease released), then by force.
    let graceful = hand_over(cluster, &client, install, &sets, &leader, false).await?;
    report(format!(
        "graceful deletion of the leader: handed over in {graceful:.1} s"
    ));
    let leader = wait_leader(&client, install.replicas, ROLLOUT).await;
    let forced = hand_over(cluster, &client, install, &sets, &leader, true).await?;
    report(format!("forced deletion of the leader: handed over in {forced:.1} s"));

    rollout_under_churn(cluster, &client, install, &report).await?;
    if install.method == Method::Kustomize {
        memory_with_cached_objects(&client, install, &report).await?;
    }
    Ok(())
}

/// Objects in the leader's caches for the memory measurement.
const CACHED_OBJECTS: f64 = 10_000.0;

/// The leader's resident memory with 10,000 objects in its caches (plain ConfigMaps are added until its
/// `wasm_reconciler_cache_objects` says so, read through the API server's proxy to the Pod): it must stay within
/// the container's memory request, which deploy/deployment.yaml sizes from this measurement.
async fn memory_with_cached_objects(
    client: &kube::Client,
    install: &Install,
    report: &impl Fn(String),
) -> anyhow::Result<()> {
    let leader = wait_leader(client, install.replicas, ROLLOUT).await;
    let metrics = || async {
        let request = http::Request::get(format!(
            "/api/v1/namespaces/{NAMESPACE}/pods/{leader}:9090/proxy/metrics"
        ))
        .body(Vec::new())
        .expect("a valid request");
        client.request_text(request).await.ok()
    };
    let cached = |text: &str| sum_samples(text, "wasm_reconciler_cache_objects", &[]);
    let before = cached(&metrics().await.expect("the leader's metrics through the API server"));
    create_namespace(client, BULK).await?;
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), BULK);
    let missing = (CACHED_OBJECTS - before).max(0.0) as usize;
    futures::stream::iter((0..missing).map(|index| {
        let config_maps = config_maps.clone();
        async move {
            let object: ConfigMap = serde_json::from_value(json!({
                "metadata": {"name": format!("bulk-{index:05}"), "labels": {"app": "bulk"}},
                "data": {"index": index.to_string(), "note": "an object the host caches and nothing reconciles"},
            }))?;
            config_maps.create(&PostParams::default(), &object).await?;
            anyhow::Ok(())
        }
    }))
    .buffer_unordered(16)
    .try_collect::<Vec<()>>()
    .await?;
    let total = wait_for(CONVERGE, "10,000 objects in the leader's caches", || async {
        let total = cached(&metrics().await?);
        (total >= CACHED_OBJECTS).then_some(total)
    })
    .await;
    let pod = pods::pod(client, &leader).await.expect("the leader Pod");
    let uid = pod.metadata.uid.clone().expect("a uid");
    let resident = container_pid(&uid)
        .and_then(resident_bytes)
        .expect("the leader's resident memory");
    let request = pod
        .spec
        .as_ref()
        .and_then(|spec| spec.containers[0].resources.as_ref())
        .and_then(|resources| resources.requests.as_ref())
        .and_then(|requests| requests.get("memory"))
        .map(|quantity| quantity.0.clone())
        .expect("a memory request");
    let request_bytes = parse_mebibytes(&request) * 1024 * 1024;
    report(format!(
        "leader RSS with {total} cached objects: {:.1} MiB (memory request {request})",
        resident as f64 / 1024.0 / 1024.0
    ));
    assert!(
        resident < request_bytes,
        "the leader's {resident} bytes with 10,000 cached objects exceed its memory request {request}"
    );
    Ok(())
}

/// `128Mi` → 128.
fn parse_mebibytes(quantity: &str) -> u64 {
    quantity
        .strip_suffix("Mi")
        .and_then(|number| number.parse().ok())
        .unwrap_or_else(|| panic!("the memory request {quantity} is not in Mi"))
}

/// The Pod as the kubelet runs it: no kubeconfig anywhere, the downward API for identity and namespace, the
/// hardened security context, and the root filesystem read-only with writable volumes where the host writes.
async fn check_pod_spec(client: &kube::Client, name: &str, node: Option<&str>) {
    let pod: Pod = pods::pod(client, name).await.expect("the leader Pod exists");
    let spec = pod.spec.as_ref().expect("a Pod has a spec");
    assert_eq!(spec.node_name.as_deref(), node, "the Pod runs on the harness's node");
    let container = &spec.containers[0];
    let env: BTreeMap<&str, &k8s_openapi::api::core::v1::EnvVar> = container
        .env
        .iter()
        .flatten()
        .map(|var| (var.name.as_str(), var))
        .collect();
    assert!(!env.contains_key("KUBECONFIG"), "no kubeconfig is given to the host");
    for (variable, field) in [("POD_NAME", "metadata.name"), ("POD_NAMESPACE", "metadata.namespace")] {
        let from = env[variable]
            .value_from
            .as_ref()
            .and_then(|from| from.field_ref.as_ref())
            .map(|field_ref| field_ref.field_path.as_str());
        assert_eq!(from, Some(field), "{variable} comes from the downward API");
    }
    let security = container.security_context.as_ref().expect("a security context");
    assert_eq!(security.read_only_root_filesystem, Some(true));
    assert_eq!(security.allow_privilege_escalation, Some(false));
    assert_eq!(security.run_as_non_root, Some(true));
    let mounts: BTreeSet<&str> = container
        .volume_mounts
        .iter()
        .flatten()
        .map(|mount| mount.mount_path.as_str())
        .collect();
    assert!(
        mounts.contains("/var/cache/wasm-reconciler"),
        "the artifact cache is a writable volume"
    );
    // The process really runs as 65532 without capabilities.
    let uid = &pod.metadata.uid.clone().expect("a Pod has a uid");
    let pid = container_pid(uid).expect("the leader's host process is found");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("its status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .map(|value| value.split_whitespace().collect::<Vec<_>>().join(" "))
            .unwrap_or_default()
    };
    assert_eq!(field("Uid:"), "65532 65532 65532 65532");
    assert_eq!(field("CapEff:"), "0000000000000000");
    assert_eq!(field("NoNewPrivs:"), "1");
    assert_eq!(
        field("Seccomp:"),
        "2",
        "the RuntimeDefault seccomp profile filters system calls"
    );
}

/// Every log line, parsed: each must be a JSON object.
fn json_lines(log: &str) -> Vec<Value> {
    log.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            serde_json::from_str::<Value>(line)
                .ok()
                .filter(Value::is_object)
                .unwrap_or_else(|| panic!("a log line is not a JSON object: {line}"))
        })
        .collect()
}

/// Creates a ConfigMapSet once its kind is served.
async fn create_set(sets: &Api<DynamicObject>, set: Value) -> anyhow::Result<()> {
    let object: DynamicObject = serde_json::from_value(set)?;
    wait_for(CONVERGE, "the ConfigMapSet kind to be served", || async {
        match sets.create(&PostParams::default(), &object).await {
            Ok(_) => Some(()),
            Err(kube::Error::Api(status)) if status.code == 409 => Some(()),
            Err(_) => None,
        }
    })
    .await;
    Ok(())
}

/// Fetches `path` from the host's metrics Service from a Pod in `namespace`: a busybox Pod (built with the node,
/// pulled from its registry) runs `wget` against the Service's cluster IP, and its log is the answer.
async fn fetch_in_cluster(
    cluster: &Cluster,
    client: &kube::Client,
    namespace: &str,
    path: &str,
) -> anyhow::Result<String> {
    let service: Service = Api::<Service>::namespaced(client.clone(), NAMESPACE)
        .get("wasm-reconciler-metrics")
        .await?;
    let spec = service.spec.expect("a Service has a spec");
    let ip = spec.cluster_ip.expect("a ClusterIP Service has an IP");
    let port = spec.ports.expect("ports")[0].port;
    let name = format!("fetch-{}", path.replace('/', "-"));
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{
                "name": "fetch",
                "image": crate::in_pod::BUSYBOX,
                // Debian's busybox wget crashes on its own -T: the timeout comes from `timeout`.
                "command": ["timeout", "10", "wget", "-q", "-O", "-", format!("http://{ip}:{port}/{path}")],
                "securityContext": {
                    "runAsNonRoot": true, "runAsUser": 65534, "allowPrivilegeEscalation": false,
                    "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"},
                },
            }],
        },
    }))?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    pods.create(&PostParams::default(), &pod).await?;
    let phase = wait_for(CONVERGE, "the fetching Pod to finish", || async {
        let phase = pods.get(&name).await.ok()?.status?.phase?;
        matches!(phase.as_str(), "Succeeded" | "Failed").then_some(phase)
    })
    .await;
    let output = cluster.kubectl_ok(&["-n", namespace, "logs", &name]);
    assert_eq!(phase, "Succeeded", "wget from inside the cluster failed:\n{output}");
    pods.delete(&name, &DeleteParams::default()).await?;
    Ok(output)
}

/// Deletes the leader Pod (by force with `force`), then measures how long until another Pod holds the Lease, is
/// Ready, and has converged a ConfigMapSet created at the moment of the deletion. Returns the seconds.
async fn hand_over(
    cluster: &Cluster,
    client: &kube::Client,
    install: &Install,
    sets: &Api<DynamicObject>,
    leader: &str,
    force: bool,
) -> anyhow::Result<f64> {
    let name = if force { "after-forced" } else { "after-graceful" };
    let started = Instant::now();
    let mut delete = vec!["-n", NAMESPACE, "delete", "pod", leader, "--wait=false"];
    if force {
        delete.extend(["--grace-period=0", "--force"]);
    }
    cluster.kubectl_ok(&delete);
    let mut set = configmapset(name, 2, 2, "handed over");
    set["metadata"]["namespace"] = json!(DEMO);
    create_set(sets, set).await?;
    let successor = wait_for(CONVERGE, "another Pod to hold the Lease", || async {
        pods::lease_holder(client).await.filter(|holder| holder != leader)
    })
    .await;
    wait_for(CONVERGE, &format!("{name} to converge after the handover"), || async {
        let set = sets.get(name).await.ok()?;
        set_ready_with(&serde_json::to_value(set).ok()?, 2).then_some(())
    })
    .await;
    let took = started.elapsed().as_secs_f64();
    // The successor is Ready; the Deployment replaced the deleted Pod.
    wait_for(ROLLOUT, &format!("{successor} to be Ready"), || async {
        pods::host_pods(client)
            .await
            .iter()
            .any(|p| p.name == successor && p.ready)
            .then_some(())
    })
    .await;
    wait_pods(client, install.replicas, install.replicas, ROLLOUT).await;
    Ok(took)
}

/// What the churn did to each ConfigMapSet: its final spec, or deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Fate {
    Exists { replicas: u64, greeting: String },
    Deleted,
}

/// Runs `kubectl rollout restart` while 1,000 ConfigMapSets are created, edited and deleted; then every set
/// converges to its last spec with exactly its children, the deleted ones are gone with their children, and the
/// audit log shows no set whose writes came from two Pods taking turns.
async fn rollout_under_churn(
    cluster: &Cluster,
    client: &kube::Client,
    install: &Install,
    report: &impl Fn(String),
) -> anyhow::Result<()> {
    create_namespace(client, CHURN).await?;
    let sets = namespaced(client, CHURN, &configmapset_resource());
    let started = Instant::now();
    let churn = {
        let sets = sets.clone();
        tokio::spawn(async move { churn(&sets).await })
    };
    // The restart begins while the creates are under way.
    wait_for(CONVERGE, "the churn to be under way", || async {
        let listed = sets.list(&ListParams::default().limit(1)).await.ok()?;
        (listed.metadata.remaining_item_count.unwrap_or(0) > 100).then_some(())
    })
    .await;
    let before: BTreeSet<String> = pods::host_pods(client).await.into_iter().map(|p| p.name).collect();
    cluster.kubectl_ok(&[
        "-n",
        NAMESPACE,
        "rollout",
        "restart",
        &format!("deployment/{DEPLOYMENT}"),
    ]);
    let restarted = Instant::now();
    rollout_status(cluster, 300);
    let leader = wait_leader(client, install.replicas, ROLLOUT).await;
    let rolled = restarted.elapsed().as_secs_f64();
    assert!(!before.contains(&leader), "the new leader is one of the new Pods");
    let fates = churn.await??;
    let churned = started.elapsed().as_secs_f64();
    wait_sets(client, CHURN, &fates, Duration::from_secs(300)).await;
    let converged = started.elapsed().as_secs_f64();
    let resident = pods::host_pods(client)
        .await
        .into_iter()
        .find(|p| p.name == leader)
        .and_then(|p| container_pid(&p.uid))
        .and_then(resident_bytes)
        .unwrap_or_default();

    let writes = audit::writes(&cluster.real().logs.join("audit.log"))?;
    let host_writes: Vec<&audit::Write> = writes
        .iter()
        .filter(|w| w.user == HOST_USER && w.namespace == CHURN)
        .collect();
    assert!(
        host_writes.iter().all(|w| !w.pod.is_empty()),
        "every write of the host names its Pod in the audit log"
    );
    let writers = writers_per_set(&writes, CHURN);
    let taking_turns = turn_taking(&writers);
    assert!(
        taking_turns.is_empty(),
        "{} sets were written by Pods taking turns, e.g. {:?}",
        taking_turns.len(),
        taking_turns.iter().take(5).collect::<Vec<_>>()
    );
    let handed_over = writers.values().filter(|w| w.len() > 1).count();
    let mut per_pod: BTreeMap<&str, usize> = BTreeMap::new();
    for write in &host_writes {
        *per_pod.entry(&write.pod).or_default() += 1;
    }
    report(format!(
        "rollout restart under churn of {CHURN_SETS} sets: rollout {rolled:.1} s, churn done after {churned:.1} s, \
         all converged after {converged:.1} s; {} host writes ({per_pod:?}), {handed_over} sets written by an old \
         and then a new Pod, none taking turns; leader RSS {:.1} MiB with {} cached objects",
        host_writes.len(),
        resident as f64 / 1024.0 / 1024.0,
        fates.values().filter(|f| **f != Fate::Deleted).count() * 3
    ));
    Ok(())
}

/// Creates `CHURN_SETS` sets at a steady pace (about 15 s in all), then edits a fifth of them (replicas and
/// greeting) and deletes a tenth, so that the creates, edits and deletes span the rollout; returns what each set
/// should end as.
async fn churn(sets: &Api<DynamicObject>) -> anyhow::Result<BTreeMap<String, Fate>> {
    let names: Vec<String> = (0..CHURN_SETS).map(|i| format!("set-{i:04}")).collect();
    let mut pace = tokio::time::interval(Duration::from_millis(15));
    for (index, name) in names.iter().enumerate() {
        pace.tick().await;
        let mut set = configmapset(name, (index % 3 + 1) as u32, 3, "v1");
        set["metadata"]["namespace"] = json!(CHURN);
        create_set(sets, set).await?;
    }
    let mut fates = BTreeMap::new();
    for (index, name) in names.iter().enumerate() {
        let fate = if index % 10 == 7 {
            Fate::Deleted
        } else if index % 5 == 0 {
            pace.tick().await;
            let replicas = (3 - index % 3) as u64;
            let patch = json!({"spec": {"replicas": replicas, "template": {"data": {"greeting": "v2"}}}});
            sets.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
            Fate::Exists {
                replicas,
                greeting: "v2".into(),
            }
        } else {
            Fate::Exists {
                replicas: (index % 3 + 1) as u64,
                greeting: "v1".into(),
            }
        };
        fates.insert(name.clone(), fate);
    }
    for (name, fate) in &fates {
        if *fate == Fate::Deleted {
            pace.tick().await;
            sets.delete(name, &DeleteParams::default()).await?;
        }
    }
    Ok(fates)
}

/// Waits until every ConfigMapSet of `namespace` is Ready with exactly its children (names `<set>-<index>`, the
/// greeting of its spec, one of each) and, for `fates` given, until the sets are exactly those `fates` keeps and
/// no child of a deleted set is left.
async fn wait_sets(client: &kube::Client, namespace: &str, fates: &BTreeMap<String, Fate>, timeout: Duration) {
    let sets = namespaced(client, namespace, &configmapset_resource());
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let deadline = Instant::now() + timeout;
    loop {
        let Err(why) = sets_settled(&sets, &config_maps, fates).await else {
            return;
        };
        assert!(
            Instant::now() < deadline,
            "the sets of {namespace} did not settle in {timeout:?}: {why}"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// `Ok` once the sets of a namespace are settled as [`wait_sets`] says; else why not.
async fn sets_settled(
    sets: &Api<DynamicObject>,
    config_maps: &Api<ConfigMap>,
    fates: &BTreeMap<String, Fate>,
) -> Result<(), String> {
    let listed = sets.list(&ListParams::default()).await.map_err(|e| e.to_string())?;
    let children = config_maps
        .list(&ListParams::default())
        .await
        .map_err(|e| e.to_string())?;
    let mut by_set: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for child in children.items {
        let owner = child
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|owner| owner.controller == Some(true) && owner.kind == "ConfigMapSet")
            .map(|owner| owner.name.clone());
        if let Some(owner) = owner {
            let greeting = child
                .data
                .as_ref()
                .and_then(|data| data.get("greeting"))
                .cloned()
                .unwrap_or_default();
            by_set
                .entry(owner)
                .or_default()
                .push((child.metadata.name.unwrap_or_default(), greeting));
        }
    }
    let mut seen = BTreeSet::new();
    for set in listed.items {
        let name = set.metadata.name.clone().unwrap_or_default();
        seen.insert(name.clone());
        if fates.get(&name) == Some(&Fate::Deleted) {
            return Err(format!("{name} was deleted and is still there"));
        }
        let value = serde_json::to_value(&set).map_err(|e| e.to_string())?;
        let replicas = value["spec"]["replicas"].as_u64().unwrap_or_default();
        let greeting = value["spec"]["template"]["data"]["greeting"]
            .as_str()
            .unwrap_or_default();
        if let Some(Fate::Exists {
            replicas: want,
            greeting: wanted,
        }) = fates.get(&name)
            && (*want != replicas || wanted != greeting)
        {
            return Err(format!(
                "{name} has spec {replicas}/{greeting}, the churn left {want}/{wanted}"
            ));
        }
        if !set_ready_with(&value, replicas) {
            return Err(format!(
                "{name} is not Ready with {replicas} replicas: {}",
                value["status"]
            ));
        }
        let mut expected: Vec<(String, String)> = (0..replicas)
            .map(|index| (format!("{name}-{index}"), greeting.to_owned()))
            .collect();
        let mut actual = by_set.remove(&name).unwrap_or_default();
        expected.sort();
        actual.sort();
        if actual != expected {
            return Err(format!("{name} has children {actual:?}, not {expected:?}"));
        }
    }
    if let Some((owner, left)) = by_set.into_iter().next() {
        return Err(format!("children {left:?} of the gone set {owner} are left"));
    }
    for (name, fate) in fates {
        if *fate != Fate::Deleted && !seen.contains(name) {
            return Err(format!("{name} is missing"));
        }
    }
    Ok(())
}
