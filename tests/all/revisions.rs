//! A plugin's revisions in the cluster, used as an operator would: every version delivered by the plugin's
//! ConfigMap becomes a numbered revision; `wasm-reconciler plugin rollback` serves an earlier one from the cluster's
//! history while the ConfigMap still holds the newer; a version delivered while pinned is held; the pin survives a
//! host restart; `plugin unpin` serves the held version. And the store itself: a version that comes back is
//! renumbered, the history is bounded, a large component is split and read back whole, damage is refused.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use serde_json::{Value, json};
use wasm_reconciler::delivery::PluginPackage;
use wasm_reconciler::delivery::revisions::{INLINE_BYTES, PART_OF_LABEL, PLUGIN_LABEL, RevisionError, RevisionStore};
use wasm_reconciler::lease::Fence;

use crate::harness::{Cluster, wait_for};
use crate::host_process::{HostProcess, binary};
use crate::kinds::{ECHO_CRD, create_namespace, create_when_served, echo_resource, namespaced};
use crate::plugin_configmaps::{HOST_NAMESPACE, apply_config_map, install_crd, packed, plugin_events};
use crate::plugin_state::WASMPLUGIN_CRD;
use crate::telemetry_probe::{http_get, sample};

const NAMESPACE: &str = "revisions";

/// The echo plugin's ConfigMap whose configuration makes one child, a ConfigMap with `version`.
fn echo_version(version: &str) -> anyhow::Result<ConfigMap> {
    let config = format!(
        "children:\n  - apiVersion: v1\n    kind: ConfigMap\n    metadata: {{name: echo-child}}\n    data: {{version: \"{version}\"}}\n"
    );
    packed(wasm_reconciler_artifacts::ECHO, "echo", Some(&config), true)
}

/// `wasm-reconciler plugin ARGS… --kubeconfig … -n wasm-reconciler`: (success, stdout, stderr).
fn plugin_command(cluster: &Cluster, args: &[&str]) -> (bool, String, String) {
    let output = tokio::task::block_in_place(|| {
        std::process::Command::new(binary())
            .arg("plugin")
            .args(args)
            .arg("--kubeconfig")
            .arg(&cluster.kubeconfig)
            .args(["--namespace", HOST_NAMESPACE])
            .output()
            .expect("running wasm-reconciler plugin")
    });
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The WasmPlugin of the echo plugin.
async fn wasmplugin(client: &kube::Client) -> Option<Value> {
    let api = namespaced(
        client,
        HOST_NAMESPACE,
        &wasm_reconciler::telemetry::plugin_status::resource(),
    );
    let object = api.get_opt("echo").await.ok()??;
    Some(serde_json::to_value(object).expect("an object"))
}

/// Waits until the echo plugin's WasmPlugin reports serving `revision` (and `latest` as its source's newest).
async fn wait_serving(client: &kube::Client, revision: i64, latest: i64) -> Value {
    wait_for(
        Duration::from_secs(60),
        &format!("the WasmPlugin to report revision {revision} serving, {latest} the newest"),
        || async {
            let plugin = wasmplugin(client).await?;
            let status = &plugin["status"];
            (status["revision"] == revision
                && status["latestRevision"] == latest
                && crate::harness::condition(&plugin, "Ready") == Some("True"))
            .then_some(plugin)
        },
    )
    .await
}

/// The child ConfigMap's `version` and resourceVersion.
async fn child(client: &kube::Client) -> Option<(String, String)> {
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
    let child = config_maps.get_opt("echo-child").await.ok()??;
    let version = child.data?.get("version")?.clone();
    Some((version, child.metadata.resource_version?))
}

async fn wait_child(client: &kube::Client, version: &str) -> String {
    wait_for(
        Duration::from_secs(60),
        &format!("the child to hold version {version}"),
        || async { child(client).await.filter(|(v, _)| v == version).map(|(_, rv)| rv) },
    )
    .await
}

/// The echo plugin's revisions: number → source.
async fn revisions(client: &kube::Client) -> anyhow::Result<BTreeMap<i64, String>> {
    let api: Api<ControllerRevision> = Api::namespaced(client.clone(), HOST_NAMESPACE);
    let list = api
        .list(&ListParams::default().labels(&format!("{PLUGIN_LABEL}=echo")))
        .await?;
    Ok(list
        .items
        .into_iter()
        .map(|revision| {
            let source = revision
                .data
                .as_ref()
                .map(|d| d.0["source"].clone())
                .unwrap_or_default();
            (revision.revision, source.as_str().unwrap_or_default().to_owned())
        })
        .collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_rolls_back_to_a_revision_kept_in_the_cluster_and_forward_again() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let admin = cluster.client().await?;
    create_namespace(&admin, HOST_NAMESPACE).await?;
    create_namespace(&admin, NAMESPACE).await?;
    install_crd(&admin, WASMPLUGIN_CRD).await?;
    install_crd(&admin, ECHO_CRD).await?;

    // Revision 1, then revision 2 from the same ConfigMap: each version's child.
    let v1 = apply_config_map(&admin, &echo_version("1")?).await?;
    let host = HostProcess::start(cluster.dir.path(), &cluster.kubeconfig, "h0", &[])?;
    host.wait_ready(Duration::from_secs(60)).await;
    let echoes = namespaced(&admin, NAMESPACE, &echo_resource());
    create_when_served(&echoes, crate::kinds::test_object("Echo", NAMESPACE, "one")).await?;
    wait_child(&admin, "1").await;
    wait_serving(&admin, 1, 1).await;
    let v2 = apply_config_map(&admin, &echo_version("2")?).await?;
    wait_child(&admin, "2").await;
    wait_serving(&admin, 2, 2).await;
    let sources = revisions(&admin).await?;
    let source = |config_map: &ConfigMap| {
        format!(
            "ConfigMap {HOST_NAMESPACE}/echo at resourceVersion {}",
            config_map.metadata.resource_version.as_deref().unwrap_or_default()
        )
    };
    assert_eq!(sources, BTreeMap::from([(1, source(&v1)), (2, source(&v2))]));

    // `plugin history` lists both, the serving one marked.
    let (ok, history, stderr) = plugin_command(&cluster, &["history", "echo"]);
    assert!(ok, "{stderr}");
    let rows: Vec<Vec<&str>> = history
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        (rows.len(), rows[0][0], rows[1][0], rows[1][1]),
        (2, "1", "2", "yes"),
        "{history}"
    );

    // A revision that does not exist: a clear error, and nothing pinned.
    let (ok, _, stderr) = plugin_command(&cluster, &["rollback", "echo", "--to-revision", "9"]);
    assert!(!ok);
    assert!(
        stderr.contains("plugin echo has no revision 9") && stderr.contains("(it has 1, 2)"),
        "{stderr}"
    );
    let plugin = wasmplugin(&admin).await.expect("the WasmPlugin");
    assert_eq!(plugin["spec"]["revision"], Value::Null, "{plugin}");

    // Roll back: revision 1 serves from the cluster while the ConfigMap still holds version 2.
    let (ok, stdout, stderr) = plugin_command(&cluster, &["rollback", "echo"]);
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains("plugin echo is serving revision 1"), "{stdout}");
    wait_child(&admin, "1").await;
    let plugin = wait_serving(&admin, 1, 2).await;
    assert_eq!(plugin["spec"]["revision"], 1);
    let ready = crate::harness::condition_object(&plugin, "Ready")
        .map(|c| c["message"].to_string())
        .unwrap_or_default();
    assert!(
        ready.contains("pinned to revision 1; the source's newest is revision 2"),
        "{ready}"
    );

    // Version 3 delivered while pinned: held (its Event says so), revision 1 keeps serving.
    let held_before = plugin_events(&admin, "echo", "PluginHeld").await?.len();
    apply_config_map(&admin, &echo_version("3")?).await?;
    wait_for(Duration::from_secs(60), "a PluginHeld Event", || async {
        (plugin_events(&admin, "echo", "PluginHeld").await.ok()?.len() > held_before).then_some(())
    })
    .await;
    let (version, before_restart) = child(&admin).await.expect("the child");
    assert_eq!(version, "1");
    wait_serving(&admin, 1, 2).await;

    // A restarted host serves the pinned revision from the start: after it reconciled, the child never changed.
    drop(host);
    let host = HostProcess::start(cluster.dir.path(), &cluster.kubeconfig, "h1", &[])?;
    host.wait_ready(Duration::from_secs(60)).await;
    wait_for(
        Duration::from_secs(60),
        "the restarted host to reconcile the Echo",
        || async {
            let (_, metrics) = http_get(host.telemetry, "/metrics").await?;
            let series = r#"wasm_reconciler_reconcile_total{plugin="echo",result="success"}"#;
            (sample(&metrics, series)? >= 1.0).then_some(())
        },
    )
    .await;
    wait_for(Duration::from_secs(60), "the restarted host's status", || async {
        let plugin = wasmplugin(&admin).await?;
        (plugin["status"]["host"] == "h1" && plugin["status"]["revision"] == 1).then_some(())
    })
    .await;
    assert_eq!(
        child(&admin).await.expect("the child"),
        ("1".to_owned(), before_restart)
    );

    // Unpinned: the held version 3 serves, as revision 3.
    let (ok, stdout, stderr) = plugin_command(&cluster, &["unpin", "echo"]);
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains("plugin echo is serving revision 3"), "{stdout}");
    wait_child(&admin, "3").await;
    let plugin = wait_serving(&admin, 3, 3).await;
    assert_eq!(plugin["spec"]["revision"], Value::Null);
    assert_eq!(revisions(&admin).await?.keys().copied().collect::<Vec<_>>(), [1, 2, 3]);

    // The ConfigMap reverted to version 1: revision 1 comes back as the newest, renumbered 4.
    apply_config_map(&admin, &echo_version("1")?).await?;
    wait_child(&admin, "1").await;
    wait_serving(&admin, 4, 4).await;
    assert_eq!(revisions(&admin).await?.keys().copied().collect::<Vec<_>>(), [2, 3, 4]);
    drop(host);
    Ok(())
}

/// A package of `wasm` with `config`, whose settings keep 3 revisions.
fn package(wasm: Vec<u8>, config: Value) -> PluginPackage {
    let settings = "concurrency: 2\nrevisionHistoryLimit: 3\n";
    PluginPackage::decode(Some(&wasm), None, Some(&config.to_string()), Some(settings), None).expect("a package")
}

/// The component's sha256, hex.
fn sha256(bytes: &[u8]) -> String {
    wasm_reconciler::delivery::artifact::sha256_digest(bytes)["sha256:".len()..].to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_revision_store_renumbers_bounds_splits_and_refuses_damage() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let admin = cluster.client().await?;
    create_namespace(&admin, HOST_NAMESPACE).await?;
    let store = RevisionStore::new(admin.clone(), HOST_NAMESPACE, Fence::always_open());
    let api: Api<ControllerRevision> = Api::namespaced(admin.clone(), HOST_NAMESPACE);

    // Four versions of a small component, by configuration: numbered 1 to 4, the oldest beyond the settings' 3
    // deleted.
    let wasm = b"\0asm\x0d\0\x01\0".to_vec();
    for n in 1..=4 {
        let number = store
            .record("small", &package(wasm.clone(), json!({"n": n})), &sha256(&wasm), "test")
            .await?;
        assert_eq!(number, n);
    }
    let numbers: Vec<i64> = store.list("small").await?.iter().map(|r| r.number).collect();
    assert_eq!(numbers, [2, 3, 4]);
    // A version seen before comes back as the newest, in the same object, renumbered.
    let name_of_2 = store.list("small").await?[0].name.clone();
    let again = store
        .record("small", &package(wasm.clone(), json!({"n": 2})), &sha256(&wasm), "test")
        .await?;
    assert_eq!(again, 5);
    let listed = store.list("small").await?;
    assert_eq!(listed.iter().map(|r| r.number).collect::<Vec<_>>(), [3, 4, 5]);
    assert_eq!(listed[2].name, name_of_2);
    // Recording the newest again changes nothing.
    let same = store
        .record("small", &package(wasm.clone(), json!({"n": 2})), &sha256(&wasm), "test")
        .await?;
    assert_eq!(same, 5);
    let (loaded, revision) = store.load("small", 4).await?;
    assert_eq!(
        (loaded.wasm, loaded.config, revision.number),
        (wasm.clone(), json!({"n": 4}), 4)
    );
    assert_eq!(loaded.settings.concurrency, 2);

    // A component that does not compress below the inline size is split over parts, and read back whole.
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let large: Vec<u8> = (0..INLINE_BYTES * 5 / 2)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    let number = store
        .record("large", &package(large.clone(), json!({})), &sha256(&large), "test")
        .await?;
    let name = store.list("large").await?[0].name.clone();
    let parts = api
        .list(&ListParams::default().labels(&format!("{PART_OF_LABEL}={name}")))
        .await?;
    assert_eq!(parts.items.len(), 3, "2.5 times the inline size compresses to 3 parts");
    assert!(
        parts.items.iter().all(|part| part
            .metadata
            .owner_references
            .as_ref()
            .is_some_and(|o| o[0].name == name)),
        "each part is owned by its revision"
    );
    let (loaded, _) = store.load("large", number).await?;
    assert!(loaded.wasm == large, "the split component reads back whole");

    // A missing part: the revision is damaged, and says which part.
    let part = format!("{name}-part-1");
    api.delete(&part, &DeleteParams::default()).await?;
    let error = store.load("large", number).await.expect_err("a part is missing");
    assert!(matches!(error, RevisionError::Damaged { .. }), "{error}");
    assert!(
        error.to_string().contains(&format!("its part {part} is missing")),
        "{error}"
    );
    // Recording the same version again writes the missing part, and the revision reads whole again.
    store
        .record("large", &package(large.clone(), json!({})), &sha256(&large), "test")
        .await?;
    assert!(store.load("large", number).await?.0.wasm == large);

    // A revision whose component does not match its digest is refused, never served.
    let mut forged = api.get(&store.list("small").await?[0].name).await?;
    let mut data = forged.data.take().expect("data").0;
    data["sha256"] = json!(format!("sha256:{}", "0".repeat(64)));
    forged.metadata = kube::api::ObjectMeta {
        name: Some("small-forged".into()),
        labels: forged.metadata.labels.clone(),
        ..Default::default()
    };
    forged.data = Some(k8s_openapi::apimachinery::pkg::runtime::RawExtension(data));
    forged.revision = 99;
    api.create(&Default::default(), &forged).await?;
    let error = store.load("small", 99).await.expect_err("a forged digest");
    assert!(
        error.to_string().contains("is damaged: its component's sha256 is"),
        "{error}"
    );

    // The number of an existing revision is all that may change: its data is immutable on the server.
    let immutable = api
        .patch(
            "small-forged",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"sha256": "sha256:1"}})),
        )
        .await;
    assert!(
        matches!(&immutable, Err(kube::Error::Api(status)) if status.code == 422),
        "{immutable:?}"
    );
    Ok(())
}
