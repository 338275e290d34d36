//! The preview gate, as an operator meets it: `wasm-reconciler run` serves the echo plugin from its ConfigMap to
//! three objects; a new version that fails on every one of them where the serving version succeeds is held — the
//! objects keep the serving version's results, no revision is recorded, `kubectl get wasmplugin` says why and the
//! plugin still serves — and the same version with `preview.maxNewFailures: 100%` in its settings serves.

use std::time::Duration;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::{Value, json};
use wasm_reconciler::delivery::revisions::PLUGIN_LABEL;

use crate::harness::{Cluster, condition, wait_for};
use crate::host_process::HostProcess;
use crate::kinds::{ECHO_CRD, create_namespace, create_when_served, echo_resource, namespaced, test_object};
use crate::plugin_configmaps::{HOST_NAMESPACE, apply_config_map, install_crd, packed};
use crate::plugin_state::WASMPLUGIN_CRD;

const NAMESPACE: &str = "preview";
const OBJECTS: [&str; 3] = ["one", "two", "three"];

/// The echo plugin's ConfigMap with `config`, and `settings` when given.
fn echo(config: &str, settings: Option<&str>) -> anyhow::Result<ConfigMap> {
    let mut config_map = packed(wasm_reconciler_artifacts::ECHO, "echo", Some(config), true)?;
    if let Some(settings) = settings {
        config_map
            .data
            .get_or_insert_default()
            .insert("settings.yaml".to_owned(), settings.to_owned());
    }
    Ok(config_map)
}

/// The echo plugin's WasmPlugin as JSON.
fn wasmplugin(cluster: &Cluster) -> Value {
    let text = tokio::task::block_in_place(|| {
        cluster.kubectl_ok(&["get", "wasmplugin", "echo", "-n", HOST_NAMESPACE, "-o", "json"])
    });
    serde_json::from_str(&text).expect("kubectl prints JSON")
}

/// Waits until every object's status echoes `greeting` from the plugin's configuration, and Reconciled is True.
async fn wait_echoed(client: &kube::Client, greeting: &str) {
    let echoes = namespaced(client, NAMESPACE, &echo_resource());
    wait_for(
        Duration::from_secs(60),
        &format!("every object echoing greeting {greeting:?}"),
        || async {
            for name in OBJECTS {
                let object = serde_json::to_value(echoes.get(name).await.ok()?).ok()?;
                if object["status"]["echo"]["config"]["greeting"] != greeting
                    || condition(&object, "Reconciled") != Some("True")
                {
                    return None;
                }
            }
            Some(())
        },
    )
    .await;
}

async fn revision_count(client: &kube::Client) -> anyhow::Result<usize> {
    let api: Api<ControllerRevision> = Api::namespaced(client.clone(), HOST_NAMESPACE);
    let listed = api
        .list(&ListParams::default().labels(&format!("{PLUGIN_LABEL}=echo")))
        .await?;
    Ok(listed.items.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_failing_where_the_serving_one_succeeds_is_held_until_its_settings_allow_it() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let admin = cluster.client().await?;
    create_namespace(&admin, HOST_NAMESPACE).await?;
    create_namespace(&admin, NAMESPACE).await?;
    install_crd(&admin, WASMPLUGIN_CRD).await?;
    install_crd(&admin, ECHO_CRD).await?;

    apply_config_map(&admin, &echo("greeting: v1\n", None)?).await?;
    let host = HostProcess::start(cluster.dir.path(), &cluster.kubeconfig, "h0", &[])?;
    host.wait_ready(Duration::from_secs(60)).await;
    let echoes = namespaced(&admin, NAMESPACE, &echo_resource());
    for name in OBJECTS {
        create_when_served(&echoes, test_object("Echo", NAMESPACE, name)).await?;
    }
    wait_echoed(&admin, "v1").await;
    let serving = wait_for(
        Duration::from_secs(60),
        "the WasmPlugin to report revision 1",
        || async {
            let plugin = wasmplugin(&cluster);
            (plugin["status"]["revision"] == 1).then_some(plugin)
        },
    )
    .await;
    let digest = serving["status"]["digest"].clone();

    // A version that fails every reconcile: held, with why, and the serving version goes on serving.
    apply_config_map(&admin, &echo("greeting: v2\nfail: the new backend is down\n", None)?).await?;
    let held = wait_for(Duration::from_secs(60), "the new version to be held", || async {
        let plugin = wasmplugin(&cluster);
        let message = plugin["status"]["lastRefusal"]["message"].as_str()?.to_owned();
        Some((plugin, message))
    })
    .await;
    let (plugin, message) = held;
    assert!(
        message.starts_with("held by the preview gate: the new version fails on 3 of 3 primaries previewed"),
        "{message}"
    );
    assert!(message.contains("(preview.maxNewFailures is 0)"), "{message}");
    assert!(
        message.contains(&format!("{NAMESPACE}/one: ")),
        "names the objects: {message}"
    );
    assert!(
        message.contains("the new backend is down"),
        "carries the plugin's error: {message}"
    );
    let status = &plugin["status"];
    assert_eq!(condition(&plugin, "Ready"), Some("True"), "still serving: {status}");
    assert_eq!(status["digest"], digest);
    assert_eq!(status["revision"], 1, "{status}");
    assert_eq!(revision_count(&admin).await?, 1, "a held version is not a revision");
    // Nothing of the held version reaches the objects: each one changed now is reconciled by the serving version.
    for name in OBJECTS {
        let patch = json!({"spec": {"note": "changed after the hold"}});
        echoes
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
    }
    wait_for(
        Duration::from_secs(60),
        "every changed object reconciled by v1",
        || async {
            for name in OBJECTS {
                let object = serde_json::to_value(echoes.get(name).await.ok()?).ok()?;
                let status = &object["status"];
                if status["observedGeneration"] != 2 || condition(&object, "Reconciled") != Some("True") {
                    return None;
                }
                assert_eq!(status["echo"]["config"]["greeting"], "v1", "{object}");
            }
            Some(())
        },
    )
    .await;

    // The operator accepts the failures: the same version with a tolerance in its settings serves.
    apply_config_map(
        &admin,
        &echo(
            "greeting: v2\nfail: the new backend is down\n",
            Some("preview:\n  maxNewFailures: 100%\n"),
        )?,
    )
    .await?;
    wait_for(
        Duration::from_secs(60),
        "the failing version to serve as revision 2",
        || async {
            let plugin = wasmplugin(&cluster);
            (plugin["status"]["revision"] == 2).then_some(())
        },
    )
    .await;
    wait_for(
        Duration::from_secs(60),
        "every object to fail with the new version",
        || async {
            for name in OBJECTS {
                let object = serde_json::to_value(echoes.get(name).await.ok()?).ok()?;
                let reconciled = object["status"]["conditions"]
                    .as_array()?
                    .iter()
                    .find(|c| c["type"] == "Reconciled")?
                    .clone();
                if reconciled["status"] != "False"
                    || !reconciled["message"].as_str()?.contains("the new backend is down")
                {
                    return None;
                }
            }
            Some(())
        },
    )
    .await;

    // And a good version after it passes: the serving one fails everywhere, so nothing fails anew.
    apply_config_map(&admin, &echo("greeting: v3\n", None)?).await?;
    wait_echoed(&admin, "v3").await;
    wait_for(
        Duration::from_secs(60),
        "the good version to serve as revision 3",
        || async { (wasmplugin(&cluster)["status"]["revision"] == 3).then_some(()) },
    )
    .await;
    drop(host);
    Ok(())
}
