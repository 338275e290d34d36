//! The configmapset plugin written in Python and in TypeScript, run by the host against the embedded API server and
//! driven with `kubectl` and the kube client: created and scaled up in bursts, a drifted child repaired, scaled
//! down highest index first, and drained through the finalizer on delete. The components are built by
//! `make polyglot`.

use std::path::Path;
use std::process::Output;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams};
use serde_json::Value;

use crate::harness::{Cluster, Host, PluginFiles, condition_object, example_crd, wait_for, write_plugin};
use crate::journal::{Action, Journal, bursts_between, count_per_name};
use crate::kinds::{
    CONVERGE, config_map_resource, configmapset_resource, events_about, get_value, namespaced, set_children, wait_gone,
    wait_set_ready,
};

/// How long the host may take to compile and load a port (Python components are ~19 MB of wasm).
const LOAD: std::time::Duration = std::time::Duration::from_secs(300);

/// The set every test drives: 7 replicas of `greeting: hello`, at most 3 created or deleted per reconcile.
const SET_MANIFEST: &str = r#"
apiVersion: examples.wasm-reconciler.io/v1alpha1
kind: ConfigMapSet
metadata:
  name: greetings
  namespace: default
spec:
  replicas: 7
  burst: 3
  template:
    metadata:
      labels:
        app: greetings
    data:
      greeting: hello
"#;

/// Runs `kubectl` against the cluster, failing the test (never skipping it) when kubectl is not installed.
fn kubectl(cluster: &Cluster, args: &[&str], stdin: Option<&str>) -> String {
    use std::io::Write as _;
    let mut command = std::process::Command::new("kubectl");
    command
        .args(args)
        .env("KUBECONFIG", &cluster.kubeconfig)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            panic!("kubectl is required by the polyglot end-to-end tests and is not installed")
        }
        Err(error) => panic!("running kubectl: {error}"),
    };
    if let Some(text) = stdin {
        child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    }
    drop(child.stdin.take());
    let Output { status, stdout, stderr } = child.wait_with_output().unwrap();
    assert!(
        status.success(),
        "kubectl {} failed:\n{}",
        args.join(" "),
        String::from_utf8_lossy(&stderr)
    );
    String::from_utf8_lossy(&stdout).into_owned()
}

/// Installs a port as the `configmapset` plugin (its component, the shared CRD, its `settings.yaml` if any) and
/// starts a host on it.
async fn start(cluster: &Cluster, wasm: &str, directory: &str) -> anyhow::Result<Host> {
    let plugins = cluster.dir.path().join("plugins");
    let settings_path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../plugins")
        .join(directory)
        .join("settings.yaml");
    let settings = std::fs::read_to_string(&settings_path).ok();
    write_plugin(
        &plugins,
        &PluginFiles {
            name: "configmapset",
            wasm: wasm_reconciler_artifacts::polyglot(wasm),
            crd: Some(&example_crd("configmapset")),
            config: None,
            settings: settings.as_deref(),
        },
    )?;
    Host::start(cluster, Host::dev_options(&plugins)).await
}

fn message<'a>(set: &'a Value, type_: &str) -> &'a str {
    condition_object(set, type_)
        .and_then(|condition| condition["message"].as_str())
        .unwrap_or_default()
}

/// The whole life of a set under one port.
async fn lifecycle(wasm: &str, directory: &str) -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let host = start(&cluster, wasm, directory).await?;
    let client = cluster.client().await?;
    let sets = namespaced(&client, "default", &configmapset_resource());
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    // Compiling a Python component takes a while on a loaded machine; the host installs the CRD once it has.
    wait_for(LOAD, "the plugin to load and its kind to be served", || {
        let sets = sets.clone();
        async move { sets.list(&ListParams::default().limit(1)).await.ok().map(|_| ()) }
    })
    .await;
    let journal = Journal::start(&client, "default", &[configmapset_resource(), config_map_resource()]).await?;

    // Create with kubectl: 7 replicas appear in bursts of at most 3, each exactly once.
    tokio::task::block_in_place(|| kubectl(&cluster, &["apply", "-f", "-"], Some(SET_MANIFEST)));
    wait_for(
        LOAD,
        "the host to reconcile greetings (a refused plugin is logged; see it with RUST_LOG=warn)",
        || {
            let sets = sets.clone();
            async move {
                get_value(&sets, "greetings")
                    .await
                    .filter(|set| condition_object(set, "Reconciled").is_some())
            }
        },
    )
    .await;
    let ready = wait_set_ready(&sets, "greetings", 7).await;
    assert_eq!(ready["status"]["readyReplicas"], 7);
    assert_eq!(
        message(&ready, "Ready"),
        "7 of 7 observed ConfigMaps match the template; 7 desired, 0 excess"
    );
    assert_eq!(message(&ready, "Progressing"), "0 missing, 0 excess, 0 drifted");
    assert!(
        ready["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f == "examples.wasm-reconciler.io/drain")),
        "the drain finalizer holds the set"
    );
    let entries = journal
        .wait_until("7 ConfigMaps added", |entries| {
            count_per_name(entries, "ConfigMap", Action::Added).len() == 7
        })
        .await;
    let added = count_per_name(&entries, "ConfigMap", Action::Added);
    assert!(
        added.values().all(|&n| n == 1),
        "every replica is created once: {added:?}"
    );
    let bursts = bursts_between(&entries, "ConfigMapSet", "greetings", "ConfigMap", Action::Added);
    assert!(
        bursts.iter().all(|&n| n <= 3),
        "at most burst=3 per reconcile: {bursts:?}"
    );
    assert!(
        bursts.len() >= 3,
        "7 replicas at burst 3 take at least 3 rounds: {bursts:?}"
    );
    let scaling_up = events_about(&client, "default", "greetings")
        .await?
        .into_iter()
        .filter(|event| event.reason.as_deref() == Some("ScalingUp"))
        .filter_map(|event| event.note)
        .collect::<Vec<_>>();
    assert!(
        scaling_up.contains(&"creating 3 ConfigMap(s), 4 still missing after this round".to_owned()),
        "{scaling_up:?}"
    );

    // Drift: a person edits a replica's data; the plugin puts it back in place.
    let before = set_children(&config_maps, "greetings").await?;
    tokio::task::block_in_place(|| {
        kubectl(
            &cluster,
            &[
                "patch",
                "configmap",
                "greetings-4",
                "--type=merge",
                "-p",
                r#"{"data":{"greeting":"tampered"}}"#,
            ],
            None,
        )
    });
    wait_for(CONVERGE, "greetings-4 to be repaired", || {
        let config_maps = config_maps.clone();
        async move {
            let child = config_maps.get("greetings-4").await.ok()?;
            (child.data.as_ref()?.get("greeting")? == "hello").then_some(())
        }
    })
    .await;
    assert_eq!(
        set_children(&config_maps, "greetings").await?,
        before,
        "repaired in place, nothing recreated"
    );

    // A deleted replica comes back.
    config_maps.delete("greetings-1", &DeleteParams::default()).await?;
    wait_for(CONVERGE, "greetings-1 to come back", || {
        let config_maps = config_maps.clone();
        let old_uid = before["greetings-1"].clone();
        async move {
            let child = config_maps.get_opt("greetings-1").await.ok()??;
            (child.metadata.uid.as_deref() != Some(old_uid.as_str())).then_some(())
        }
    })
    .await;

    // Scale down with kubectl: the highest indexes go, at most 3 per round.
    tokio::task::block_in_place(|| {
        kubectl(
            &cluster,
            &[
                "patch",
                "configmapset",
                "greetings",
                "--type=merge",
                "-p",
                r#"{"spec":{"replicas":2}}"#,
            ],
            None,
        )
    });
    let scaled = wait_set_ready(&sets, "greetings", 2).await;
    assert_eq!(
        message(&scaled, "Ready"),
        "2 of 2 observed ConfigMaps match the template; 2 desired, 0 excess"
    );
    let kept = set_children(&config_maps, "greetings").await?;
    assert_eq!(kept.keys().cloned().collect::<Vec<_>>(), ["greetings-0", "greetings-1"]);
    let entries = journal
        .wait_until("greetings-1 and the 5 excess ConfigMaps deleted", |entries| {
            count_per_name(entries, "ConfigMap", Action::Deleted).len() == 6
        })
        .await;
    let deleted = count_per_name(&entries, "ConfigMap", Action::Deleted);
    for name in [
        "greetings-2",
        "greetings-3",
        "greetings-4",
        "greetings-5",
        "greetings-6",
    ] {
        assert!(deleted.contains_key(name), "{name} is deleted: {deleted:?}");
    }

    // Delete with kubectl: the finalizer drains the children before the set goes.
    tokio::task::block_in_place(|| kubectl(&cluster, &["delete", "configmapset", "greetings", "--wait=false"], None));
    wait_gone(&sets, "greetings", "the set to be drained and gone").await;
    assert!(set_children(&config_maps, "greetings").await?.is_empty());
    // The journal follows a watch, which may trail the 404 a moment.
    let entries = journal
        .wait_until("the set's deletion", |entries| {
            entries
                .iter()
                .any(|e| e.kind == "ConfigMapSet" && e.action == Action::Deleted)
        })
        .await;
    let set_gone = entries
        .iter()
        .find(|e| e.kind == "ConfigMapSet" && e.action == Action::Deleted)
        .map(|e| e.resource_version)
        .expect("the set's deletion is journaled");
    assert!(
        entries
            .iter()
            .filter(|e| e.kind == "ConfigMap" && e.action == Action::Deleted)
            .all(|e| e.resource_version < set_gone),
        "every child is drained before the finalizer lets the set go"
    );
    let draining = wait_for(CONVERGE, "a Draining event", || {
        let client = client.clone();
        async move {
            let events = events_about(&client, "default", "greetings").await.ok()?;
            events
                .into_iter()
                .find(|event| event.reason.as_deref() == Some("Draining"))
                .and_then(|event| event.note)
        }
    })
    .await;
    assert_eq!(draining, "deleting 2 ConfigMap(s), 0 left after this round");
    host.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_configmapset_creates_scales_repairs_and_drains() -> anyhow::Result<()> {
    lifecycle(wasm_reconciler_artifacts::CONFIGMAPSET_PY, "configmapset-py").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_configmapset_creates_scales_repairs_and_drains() -> anyhow::Result<()> {
    lifecycle(wasm_reconciler_artifacts::CONFIGMAPSET_TS, "configmapset-ts").await
}
