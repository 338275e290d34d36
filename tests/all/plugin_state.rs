//! Each plugin's state in kubectl, the way an operator looks at it: `wasm-reconciler run` serving plugins from
//! ConfigMaps, and `kubectl get wasmplugins` showing for each one whether it serves (and which digest and
//! contract), how many objects it reconciles, its recent failed reconciles and its last refused version — a plugin
//! waiting for its CRD, one whose first version is broken, a good one after a bad version. The plugin ConfigMaps are
//! never written by the host, and a removed plugin's WasmPlugin goes.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use serde_json::json;

use crate::harness::{Cluster, wait_for};
use crate::host_process::HostProcess;
use crate::kinds::{
    ECHO_CRD, configmapset, configmapset_resource, create_namespace, create_when_served, echo_resource, namespaced,
    test_object, wait_set_ready,
};
use crate::plugin_configmaps::{HOST_NAMESPACE, apply_config_map, delete_config_map, install_crd, packed};

const NAMESPACE: &str = "state";
/// The WasmPlugin CRD as `deploy/` installs it.
pub const WASMPLUGIN_CRD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/wasmplugins-crd.yaml");

/// `kubectl get wasmplugins -n wasm-reconciler`, each row by column name (the CRD's printer columns).
fn wasmplugins(cluster: &Cluster) -> BTreeMap<String, BTreeMap<String, String>> {
    let output = tokio::task::block_in_place(|| cluster.kubectl(&["get", "wasmplugins", "-n", HOST_NAMESPACE]));
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let mut lines = text.lines();
    let Some(header) = lines.next() else {
        return BTreeMap::new();
    };
    // Columns by where their headings start: kubectl leaves a missing value's cell empty.
    let starts: Vec<(usize, &str)> = header
        .split_whitespace()
        .scan(0, |from, column| {
            let start = *from + header[*from..].find(column).expect("a heading of the header");
            *from = start + column.len();
            Some((start, column))
        })
        .collect();
    lines
        .map(|line| {
            let row: BTreeMap<String, String> = starts
                .iter()
                .enumerate()
                .map(|(index, (start, column))| {
                    let end = starts
                        .get(index + 1)
                        .map_or(line.len(), |(next, _)| (*next).min(line.len()));
                    let cell = line.get((*start).min(line.len())..end).unwrap_or_default().trim();
                    ((*column).to_owned(), cell.to_owned())
                })
                .collect();
            (row["NAME"].clone(), row)
        })
        .collect()
}

/// Waits until `kubectl get wasmplugins` shows plugin `name` with a row `accept`s; returns the row.
async fn wait_row(
    cluster: &Cluster,
    name: &str,
    what: &str,
    accept: impl Fn(&BTreeMap<String, String>) -> bool,
) -> BTreeMap<String, String> {
    wait_for(Duration::from_secs(60), &format!("{name}: {what}"), || async {
        wasmplugins(cluster).remove(name).filter(|row| accept(row))
    })
    .await
}

/// The WasmPlugin `name` as JSON.
fn wasmplugin(cluster: &Cluster, name: &str) -> serde_json::Value {
    let text = tokio::task::block_in_place(|| {
        cluster.kubectl_ok(&["get", "wasmplugin", name, "-n", HOST_NAMESPACE, "-o", "json"])
    });
    serde_json::from_str(&text).expect("kubectl prints JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_get_wasmplugins_shows_what_each_plugin_is_doing() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let admin = cluster.client().await?;
    create_namespace(&admin, HOST_NAMESPACE).await?;
    create_namespace(&admin, NAMESPACE).await?;
    install_crd(&admin, WASMPLUGIN_CRD).await?;
    install_crd(&admin, &crate::harness::example_crd("configmapset")).await?;

    let good = packed(wasm_reconciler_artifacts::CONFIGMAPSET, "configmapset", None, true)?;
    let digest = good.metadata.annotations.as_ref().expect("annotations")["wasm-reconciler.io/sha256"].clone();
    apply_config_map(&admin, &good).await?;
    // The echo plugin fails every reconcile on purpose, and its CRD is not installed yet.
    let echo = packed(
        wasm_reconciler_artifacts::ECHO,
        "echo",
        Some("fail: on purpose\n"),
        true,
    )?;
    apply_config_map(&admin, &echo).await?;
    // A plugin whose only version is not a component.
    let mut broken = packed(wasm_reconciler_artifacts::ECHO, "broken", None, false)?;
    broken.metadata.annotations = None;
    broken.binary_data = Some([("plugin.wasm".to_owned(), ByteString(b"\0asm but not really".to_vec()))].into());
    apply_config_map(&admin, &broken).await?;

    let host = HostProcess::start(cluster.dir.path(), &cluster.kubeconfig, "h0", &[])?;
    host.wait_ready(Duration::from_secs(60)).await;

    // Serving, with the digest of its ConfigMap and the contract it targets; no objects yet.
    let row = wait_row(&cluster, "configmapset", "Ready", |row| row["READY"] == "True").await;
    assert_eq!(row["REASON"], "Serving");
    assert_eq!(row["DIGEST"], digest[..12]);
    assert_eq!(row["CONTRACT"], "0.3.0");
    assert_eq!(row["OBJECTS"], "0");
    let status = &wasmplugin(&cluster, "configmapset")["status"];
    assert_eq!(row["REFUSED"], "", "no refusal: {status}");
    assert_eq!(status["digest"], json!(format!("sha256:{digest}")));
    assert_eq!(
        status["source"],
        json!(format!("ConfigMap {HOST_NAMESPACE}/configmapset"))
    );
    assert_eq!(status["primary"], json!("ConfigMapSet.examples.wasm-reconciler.io"));

    // Waiting for its kind; refused with the reason.
    let row = wait_row(&cluster, "echo", "waiting for its kinds", |row| {
        row["REASON"] == "WaitingForKinds"
    })
    .await;
    assert_eq!(row["READY"], "False");
    let row = wait_row(&cluster, "broken", "refused", |row| row["REASON"] == "Refused").await;
    assert_eq!((row["READY"].as_str(), row["DIGEST"].as_str()), ("False", ""));
    assert_ne!(row["REFUSED"], "", "the refusal's age");
    let status = &wasmplugin(&cluster, "broken")["status"];
    let message = status["conditions"][0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("not a WebAssembly binary"), "{message}");
    assert_eq!(status["lastRefusal"]["message"], json!(message));

    // Objects are counted as they come.
    let sets = namespaced(&admin, NAMESPACE, &configmapset_resource());
    for name in ["a", "b", "c"] {
        let mut set = configmapset(name, 1, 1, "hi");
        set["metadata"]["namespace"] = json!(NAMESPACE);
        create_when_served(&sets, set).await?;
    }
    for name in ["a", "b", "c"] {
        wait_set_ready(&sets, name, 1).await;
    }
    wait_row(&cluster, "configmapset", "3 objects", |row| row["OBJECTS"] == "3").await;

    // Its CRD installed, the echo plugin serves, and its failures are counted.
    install_crd(&admin, ECHO_CRD).await?;
    wait_row(&cluster, "echo", "serving", |row| row["READY"] == "True").await;
    let echoes = namespaced(&admin, NAMESPACE, &echo_resource());
    create_when_served(&echoes, test_object("Echo", NAMESPACE, "fails")).await?;
    let row = wait_row(&cluster, "echo", "failed reconciles", |row| {
        row["ERRORS"].parse::<u64>().is_ok_and(|errors| errors >= 1)
    })
    .await;
    assert_eq!(row["OBJECTS"], "1");

    // A bad version of a good plugin: refused, the previous version still serving.
    let mut bad = good.clone();
    bad.binary_data = Some([("plugin.wasm.gz".to_owned(), ByteString(b"not gzip".to_vec()))].into());
    apply_config_map(&admin, &bad).await?;
    let row = wait_row(&cluster, "configmapset", "a refusal", |row| !row["REFUSED"].is_empty()).await;
    assert_eq!((row["READY"].as_str(), row["DIGEST"].as_str()), ("True", &digest[..12]));
    let status = &wasmplugin(&cluster, "configmapset")["status"];
    let refusal = status["lastRefusal"]["message"].as_str().unwrap_or_default();
    assert!(refusal.contains("not valid gzip"), "{refusal}");

    // The host never wrote a plugin ConfigMap (GitOps tools would see drift): only the operator's apply owns them.
    let plugins: Api<ConfigMap> = Api::namespaced(admin.clone(), HOST_NAMESPACE);
    for name in ["configmapset", "echo", "broken"] {
        let managers: Vec<String> = plugins
            .get(name)
            .await?
            .metadata
            .managed_fields
            .into_iter()
            .flatten()
            .filter_map(|entry| entry.manager)
            .collect();
        assert_eq!(managers, ["test-operator"], "{name}");
    }

    // A plugin removed: its WasmPlugin goes once it has been gone a while.
    delete_config_map(&admin, "broken").await?;
    wait_for(
        Duration::from_secs(90),
        "the removed plugin's WasmPlugin to go",
        || async { (!wasmplugins(&cluster).contains_key("broken")).then_some(()) },
    )
    .await;
    assert!(wasmplugins(&cluster).contains_key("configmapset"));
    drop(host);
    Ok(())
}
