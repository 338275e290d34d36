//! Progressive rollout, as an operator meets it: `wasm-reconciler run` serves the echo plugin from its ConfigMap to
//! twenty objects (one per namespace, each with one child ConfigMap). A v2 whose settings roll it out to 30% of the
//! objects computes a child the API server refuses: its first failed reconcile rolls it back, v2 wrote only inside
//! its share, and the serving version restores every child it touched. A good v3 rolls through 50% to every object
//! and becomes the serving revision.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use kube::runtime::watcher;
use serde_json::Value;
use wasm_reconciler::controller::rollout::{BUCKETS, bucket};

use crate::harness::{Cluster, condition, wait_for};
use crate::host_process::HostProcess;
use crate::kinds::{ECHO_CRD, create_namespace, create_when_served, echo_resource, namespaced, test_object};
use crate::plugin_configmaps::{HOST_NAMESPACE, apply_config_map, install_crd, packed};
use crate::plugin_state::WASMPLUGIN_CRD;

const OBJECTS: usize = 20;

fn namespace(index: usize) -> String {
    format!("canary-{index:02}")
}

/// The echo plugin's ConfigMap: one child `echo-child` with `version`, the extra `children` YAML items, and
/// `rollout` as its settings' rollout.
fn echo(version: &str, extra: &str, rollout: &str) -> anyhow::Result<ConfigMap> {
    let config = format!(
        "children:\n  - apiVersion: v1\n    kind: ConfigMap\n    metadata: {{name: echo-child}}\n    data: {{version: \"{version}\"}}\n{extra}"
    );
    let mut config_map = packed(wasm_reconciler_artifacts::ECHO, "echo", Some(&config), true)?;
    if !rollout.is_empty() {
        config_map
            .data
            .get_or_insert_default()
            .insert("settings.yaml".to_owned(), format!("rollout:\n{rollout}"));
    }
    Ok(config_map)
}

/// What the watch of the children saw: (namespace, version) of each `echo-child` delivered, in order.
type Seen = Arc<Mutex<Vec<(String, String)>>>;

/// Every version of `echo-child` the watch delivered, until the task is aborted.
fn watch_children(client: &kube::Client) -> (Seen, tokio::task::JoinHandle<()>) {
    let seen: Seen = Arc::default();
    let api: Api<ConfigMap> = Api::all(client.clone());
    let task = tokio::spawn({
        let seen = seen.clone();
        async move {
            let mut events = std::pin::pin!(watcher::watcher(api, watcher::Config::default()));
            while let Some(event) = events.next().await {
                let Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object)) = event else {
                    continue;
                };
                if object.metadata.name.as_deref() != Some("echo-child") {
                    continue;
                }
                let version = object
                    .data
                    .as_ref()
                    .and_then(|data| data.get("version"))
                    .cloned()
                    .unwrap_or_default();
                seen.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push((object.metadata.namespace.unwrap_or_default(), version));
            }
        }
    });
    (seen, task)
}

/// Each namespace's child version now.
async fn children(client: &kube::Client) -> BTreeMap<String, String> {
    let mut versions = BTreeMap::new();
    for index in 0..OBJECTS {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace(index));
        if let Ok(Some(child)) = api.get_opt("echo-child").await {
            let version = child.data.and_then(|d| d.get("version").cloned()).unwrap_or_default();
            versions.insert(namespace(index), version);
        }
    }
    versions
}

async fn wait_children(client: &kube::Client, what: &str, accept: impl Fn(&BTreeMap<String, String>) -> bool) {
    wait_for(Duration::from_secs(90), what, || async {
        let versions = children(client).await;
        (versions.len() == OBJECTS && accept(&versions)).then_some(())
    })
    .await;
}

fn wasmplugin(cluster: &Cluster) -> Value {
    let text = tokio::task::block_in_place(|| {
        cluster.kubectl_ok(&["get", "wasmplugin", "echo", "-n", HOST_NAMESPACE, "-o", "json"])
    });
    serde_json::from_str(&text).expect("kubectl prints JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_canary_is_rolled_back_inside_its_share_and_a_good_one_rolls_out_to_every_object()
-> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let admin = cluster.client().await?;
    create_namespace(&admin, HOST_NAMESPACE).await?;
    install_crd(&admin, WASMPLUGIN_CRD).await?;
    install_crd(&admin, ECHO_CRD).await?;
    apply_config_map(&admin, &echo("1", "", "")?).await?;
    let host = HostProcess::start(cluster.dir.path(), &cluster.kubeconfig, "h0", &[])?;
    host.wait_ready(Duration::from_secs(60)).await;

    // Twenty objects, and which of them a 30% and a 50% canary serve (the host's own hash of their uid).
    let mut buckets = BTreeMap::new();
    for index in 0..OBJECTS {
        create_namespace(&admin, &namespace(index)).await?;
        let echoes = namespaced(&admin, &namespace(index), &echo_resource());
        let created = create_when_served(&echoes, test_object("Echo", &namespace(index), "one")).await?;
        let uid = created["metadata"]["uid"].as_str().unwrap_or_default().to_owned();
        buckets.insert(namespace(index), bucket(&uid));
    }
    let share = |percent: u32| -> BTreeSet<String> {
        buckets
            .iter()
            .filter(|(_, b)| **b < percent * BUCKETS / 100)
            .map(|(n, _)| n.clone())
            .collect()
    };
    let (thirty, fifty) = (share(30), share(50));
    assert!(
        !thirty.is_empty() && fifty.len() < OBJECTS,
        "a share with some objects and not all: {buckets:?}"
    );
    wait_children(&admin, "every child at version 1", |v| v.values().all(|v| v == "1")).await;
    let (seen, watching) = watch_children(&admin);

    // v2 at 30%: its second child has a name the API server refuses, so its first reconcile fails.
    let bad = "  - apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: Not_A_Name}\n    data: {version: \"2\"}\n";
    apply_config_map(&admin, &echo("2", bad, "  steps: [{share: 30%, pause: 60s}]\n")?).await?;
    let started = Instant::now();
    let refusal = wait_for(Duration::from_secs(60), "the canary to be rolled back", || async {
        let plugin = wasmplugin(&cluster);
        let message = plugin["status"]["lastRefusal"]["message"].as_str()?.to_owned();
        message.starts_with("rolled back:").then_some((plugin, message))
    })
    .await;
    let (plugin, message) = refusal;
    let rolled_back = started.elapsed();
    assert!(
        message.contains("at 30% of the objects (rollout.maxFailures is 0)"),
        "{message}"
    );
    assert!(
        thirty
            .iter()
            .any(|n| message.contains(&format!("{n}/one (ApplyFailed)"))),
        "names an object of the share and why: {message}"
    );
    assert_eq!(plugin["status"]["revision"], 1, "v1 still serves: {}", plugin["status"]);
    assert!(plugin["status"]["canary"].is_null(), "{}", plugin["status"]);
    wait_children(&admin, "every child restored to version 1", |v| {
        v.values().all(|v| v == "1")
    })
    .await;
    let restored = started.elapsed();
    let touched: BTreeSet<String> = seen
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .filter(|(_, version)| version == "2")
        .map(|(namespace, _)| namespace.clone())
        .collect();
    assert!(
        !touched.is_empty(),
        "the canary wrote v2's child somewhere before its rollback"
    );
    assert!(
        touched.is_subset(&thirty),
        "v2 wrote outside its share: {touched:?}, share {thirty:?}"
    );
    println!(
        "canary: v2 touched {} of {} objects in its share ({} in all), rolled back after {:.1} s, every child restored after {:.1} s",
        touched.len(),
        thirty.len(),
        OBJECTS,
        rolled_back.as_secs_f64(),
        restored.as_secs_f64()
    );

    // v3, good, at 50% for 3 s: half the children move first, then all, and v3 becomes the serving revision.
    apply_config_map(&admin, &echo("3", "", "  steps: [{share: 50%, pause: 3s}]\n")?).await?;
    let canary = wait_for(Duration::from_secs(60), "v3 rolling out at 50%", || async {
        let plugin = wasmplugin(&cluster);
        (plugin["status"]["canary"]["share"] == 50).then_some(plugin)
    })
    .await;
    assert_eq!(
        canary["status"]["revision"], 1,
        "v1 serves the rest: {}",
        canary["status"]
    );
    wait_children(&admin, "every child at version 3", |v| v.values().all(|v| v == "3")).await;
    let moved_early: Vec<String> = {
        let seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
        let first_outside = seen
            .iter()
            .position(|(namespace, version)| version == "3" && !fifty.contains(namespace));
        seen[..first_outside.unwrap_or(seen.len())]
            .iter()
            .filter(|(_, version)| version == "3")
            .map(|(namespace, _)| namespace.clone())
            .collect()
    };
    assert!(
        !moved_early.is_empty() && moved_early.iter().all(|n| fifty.contains(n)),
        "the 50% step moved its share first: {moved_early:?}"
    );
    let served = wait_for(Duration::from_secs(30), "v3 serving as revision 3", || async {
        let plugin = wasmplugin(&cluster);
        (plugin["status"]["revision"] == 3 && plugin["status"]["canary"].is_null()).then_some(plugin)
    })
    .await;
    assert_eq!(condition(&served, "Ready"), Some("True"));
    watching.abort();
    drop(host);
    Ok(())
}

/// A host killed in the middle of a rollout: the next one serves the revision the WasmPlugin names to the rest and
/// rolls the new version out again from its first step, so no object outside the share ever gets the new version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_resumes_after_the_host_is_killed_without_leaving_its_share() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let admin = cluster.client().await?;
    create_namespace(&admin, HOST_NAMESPACE).await?;
    install_crd(&admin, WASMPLUGIN_CRD).await?;
    install_crd(&admin, ECHO_CRD).await?;
    apply_config_map(&admin, &echo("1", "", "")?).await?;
    let host = HostProcess::start(cluster.dir.path(), &cluster.kubeconfig, "h0", &[])?;
    host.wait_ready(Duration::from_secs(60)).await;
    let mut buckets = BTreeMap::new();
    for index in 0..OBJECTS {
        create_namespace(&admin, &namespace(index)).await?;
        let echoes = namespaced(&admin, &namespace(index), &echo_resource());
        let created = create_when_served(&echoes, test_object("Echo", &namespace(index), "one")).await?;
        buckets.insert(
            namespace(index),
            bucket(created["metadata"]["uid"].as_str().unwrap_or_default()),
        );
    }
    let fifty: BTreeSet<String> = buckets
        .iter()
        .filter(|(_, b)| **b < 50 * BUCKETS / 100)
        .map(|(n, _)| n.clone())
        .collect();
    assert!(!fifty.is_empty() && fifty.len() < OBJECTS, "{buckets:?}");
    wait_children(&admin, "every child at version 1", |v| v.values().all(|v| v == "1")).await;
    wait_for(Duration::from_secs(60), "revision 1 in the WasmPlugin", || async {
        (wasmplugin(&cluster)["status"]["revision"] == 1).then_some(())
    })
    .await;
    let (seen, watching) = watch_children(&admin);

    let split = |versions: &BTreeMap<String, String>| {
        versions
            .iter()
            .all(|(namespace, version)| version == if fifty.contains(namespace) { "2" } else { "1" })
    };
    apply_config_map(&admin, &echo("2", "", "  steps: [{share: 50%, pause: 10m}]\n")?).await?;
    wait_children(&admin, "v2 on its 50% only", split).await;
    host.kill();

    let host = HostProcess::start(cluster.dir.path(), &cluster.kubeconfig, "h1", &[])?;
    host.wait_ready(Duration::from_secs(60)).await;
    let resumed = wait_for(Duration::from_secs(60), "h1 to report the rollout resumed", || async {
        let plugin = wasmplugin(&cluster);
        let status = &plugin["status"];
        (status["host"] == "h1" && status["canary"]["share"] == 50 && status["canary"]["objects"].as_u64().is_some())
            .then_some(plugin)
    })
    .await;
    assert_eq!(
        resumed["status"]["revision"], 1,
        "v1 serves the rest: {}",
        resumed["status"]
    );
    host.wait_logged(
        &["resuming a rollout: the revision serving before serves the rest"],
        Duration::from_secs(10),
    )
    .await;
    wait_children(&admin, "v2 still on its 50% only", split).await;
    let outside: Vec<(String, String)> = seen
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .filter(|(namespace, version)| version == "2" && !fifty.contains(namespace))
        .cloned()
        .collect();
    assert!(outside.is_empty(), "v2 reached objects outside its share: {outside:?}");

    // Delivered without its rollout, the same version serves every object.
    apply_config_map(&admin, &echo("2", "", "")?).await?;
    wait_children(&admin, "every child at version 2", |v| v.values().all(|v| v == "2")).await;
    watching.abort();
    drop(host);
    Ok(())
}

/// `kubectl patch wasmplugin … spec.rollout`: `promote` naming the canary's revision serves it to every object at
/// once, `paused` holds a share, and `abort` rolls a canary back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_promotes_pauses_and_aborts_rollouts_with_kubectl() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let admin = cluster.client().await?;
    create_namespace(&admin, HOST_NAMESPACE).await?;
    install_crd(&admin, WASMPLUGIN_CRD).await?;
    install_crd(&admin, ECHO_CRD).await?;
    apply_config_map(&admin, &echo("1", "", "")?).await?;
    let host = HostProcess::start(cluster.dir.path(), &cluster.kubeconfig, "h0", &[])?;
    host.wait_ready(Duration::from_secs(60)).await;
    for index in 0..OBJECTS {
        create_namespace(&admin, &namespace(index)).await?;
        let echoes = namespaced(&admin, &namespace(index), &echo_resource());
        create_when_served(&echoes, test_object("Echo", &namespace(index), "one")).await?;
    }
    wait_children(&admin, "every child at version 1", |v| v.values().all(|v| v == "1")).await;
    let patch = |rollout: &str| {
        let patch = format!("{{\"spec\":{{\"rollout\":{rollout}}}}}");
        tokio::task::block_in_place(|| {
            cluster.kubectl_ok(&[
                "-n",
                HOST_NAMESPACE,
                "patch",
                "wasmplugin",
                "echo",
                "--type",
                "merge",
                "-p",
                &patch,
            ])
        });
    };
    let wait_canary = |revision: i64, share: u64| {
        let cluster = &cluster;
        async move {
            wait_for(
                Duration::from_secs(60),
                &format!("revision {revision} rolling out at {share}%"),
                || async {
                    let plugin = wasmplugin(cluster);
                    (plugin["status"]["canary"]["revision"] == revision && plugin["status"]["canary"]["share"] == share)
                        .then_some(())
                },
            )
            .await;
        }
    };
    let long = "  steps: [{share: 20%, pause: 2s}, {share: 60%, pause: 10m}]\n";

    // Paused at 20%, the share does not grow past its 2 s pause; resumed, it moves to 60%; promoted, it serves all.
    patch("{\"paused\":true}");
    apply_config_map(&admin, &echo("2", "", long)?).await?;
    wait_canary(2, 20).await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    let plugin = wasmplugin(&cluster);
    assert_eq!(
        plugin["status"]["canary"]["share"], 20,
        "held while paused: {}",
        plugin["status"]
    );
    patch("{\"paused\":null}");
    wait_canary(2, 60).await;
    patch("{\"promote\":2}");
    wait_children(&admin, "every child at version 2 once promoted", |v| {
        v.values().all(|v| v == "2")
    })
    .await;
    wait_for(Duration::from_secs(30), "revision 2 serving", || async {
        let plugin = wasmplugin(&cluster);
        (plugin["status"]["revision"] == 2 && plugin["status"]["canary"].is_null()).then_some(())
    })
    .await;

    // Aborted, revision 3 is rolled back and revision 2 restores its share.
    apply_config_map(&admin, &echo("3", "", "  steps: [{share: 20%, pause: 10m}]\n")?).await?;
    wait_canary(3, 20).await;
    wait_children(&admin, "revision 3 on a share", |v| v.values().any(|v| v == "3")).await;
    patch("{\"promote\":null,\"abort\":3}");
    let message = wait_for(Duration::from_secs(60), "revision 3 rolled back", || async {
        let plugin = wasmplugin(&cluster);
        let message = plugin["status"]["lastRefusal"]["message"].as_str()?.to_owned();
        (plugin["status"]["canary"].is_null() && message.starts_with("rolled back by spec.rollout.abort"))
            .then_some(message)
    })
    .await;
    assert!(message.contains("at 20% of the objects"), "{message}");
    wait_children(&admin, "every child back at version 2", |v| {
        v.values().all(|v| v == "2")
    })
    .await;
    assert_eq!(wasmplugin(&cluster)["status"]["revision"], 2);
    drop(host);
    Ok(())
}
