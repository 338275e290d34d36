//! A plugin limited to some namespaces watches only those: every list and watch the host makes for its kinds is
//! namespaced (so namespaced RBAC suffices), objects elsewhere are left alone, and a read of another namespace is
//! refused with a clear error instead of looking absent.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::harness::{Cluster, Host};
use crate::kinds::{
    ECHO_CRD, create_namespace, create_when_served, echo_resource, get_value, install_test_plugin, namespaced,
    test_object, wait_object,
};
use crate::request_info::RequestInfo;
use crate::request_recorder::RecordingFront;

const CONFIG: &str = "reads:\n- {apiVersion: v1, kind: Service, namespace: team-b, name: api}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_limited_to_namespaces_watches_only_those() -> anyhow::Result<()> {
    let cluster = Cluster::start_embedded(None).await?;
    let client = cluster.client().await?;
    for namespace in ["team-a", "team-b"] {
        create_namespace(&client, namespace).await?;
    }
    let plugins = cluster.dir.path().join("plugins");
    install_test_plugin(
        &plugins,
        "echo",
        wasm_reconciler_artifacts::ECHO,
        ECHO_CRD,
        CONFIG,
        Some("namespaces: [team-a]\n"),
    )?;
    let front = RecordingFront::start(cluster.embedded(), cluster.dir.path()).await?;
    let host = Host::start_with_kubeconfig(&front.kubeconfig, Host::dev_options(&plugins)).await?;

    let in_a = namespaced(&client, "team-a", &echo_resource());
    let in_b = namespaced(&client, "team-b", &echo_resource());
    create_when_served(&in_b, test_object("Echo", "team-b", "ignored")).await?;
    create_when_served(&in_a, test_object("Echo", "team-a", "served")).await?;
    let served = wait_object(&in_a, "served", "the Echo in team-a reconciled", |echo| {
        echo["status"]["echo"]["generation"] == 1
    })
    .await;
    let refused = served["status"]["reads"]["Service/api"]["error"]
        .as_str()
        .unwrap_or_default();
    assert!(
        refused.contains("namespace team-b is not watched") && refused.contains("team-a"),
        "a read of another namespace is refused clearly: {:?}",
        served["status"]["reads"]
    );
    // The object in team-b was created first; the one in team-a being done shows the host had its chance.
    let ignored = get_value(&in_b, "ignored").await.expect("the Echo in team-b exists");
    assert_eq!(ignored.get("status"), None::<&Value>, "team-b is not this plugin's");
    assert_eq!(ignored["metadata"].get("finalizers"), None::<&Value>);
    host.stop().await?;

    let mut scopes: BTreeSet<(String, String, String)> = BTreeSet::new();
    for request in front.recording.requests() {
        if let RequestInfo::Resource(attributes) = RequestInfo::resolve(&request.method, &request.path, &request.query)
            && matches!(attributes.verb.as_str(), "list" | "watch")
            && ["echoes", "configmaps", "secrets", "services"].contains(&attributes.resource.as_str())
        {
            scopes.insert((attributes.verb, attributes.resource, attributes.namespace));
        }
    }
    let expected: BTreeSet<(String, String, String)> = ["echoes", "configmaps", "secrets", "services"]
        .iter()
        .flat_map(|resource| {
            ["list", "watch"].map(|verb| (verb.to_owned(), (*resource).to_owned(), "team-a".to_owned()))
        })
        .collect();
    assert_eq!(scopes, expected, "every list and watch is in team-a");
    Ok(())
}
