//! A plugin writing outside its scope: children of undeclared kinds or in other namespaces are refused before
//! anything reaches the API server, and the refusal is visible on the object and in a Warning Event.

use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kube::api::Api;
use serde_json::{Value, json};

use crate::harness::{Cluster, Host, condition};
use crate::kinds::{
    ECHO_CRD, create_namespace, create_when_served, echo_resource, failed_with, install_test_plugin, namespaced,
    reconciled, wait_event, wait_object,
};

/// Echo configuration returning `children` verbatim.
fn returning(children: Value) -> String {
    serde_json::to_string(&json!({ "children": children })).expect("JSON is YAML")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_scope_children_are_refused_and_reported() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let client = cluster.client().await?;
    create_namespace(&client, "elsewhere").await?;
    let plugins = cluster.dir.path().join("plugins");
    let pod = json!([{
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sneaky"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }]);
    install_test_plugin(
        &plugins,
        "echo",
        wasm_reconciler_artifacts::ECHO,
        ECHO_CRD,
        &returning(pod),
        None,
    )?;
    let host = Host::start(&cluster, Host::dev_options(&plugins)).await?;
    let echoes = namespaced(&client, "default", &echo_resource());
    create_when_served(&echoes, crate::kinds::test_object("Echo", "default", "bold")).await?;

    // A Pod: not a kind the plugin owns.
    let refused = wait_object(&echoes, "bold", "ScopeDenied for the Pod", |echo| {
        failed_with(echo, "ScopeDenied")
    })
    .await;
    let (_, _, message) = reconciled(&refused).expect("a Reconciled condition");
    assert!(message.contains("nothing was written"), "{message}");
    assert!(message.contains("v1/Pod \"sneaky\""), "{message}");
    assert!(message.contains("does not declare in `owns`"), "{message}");
    assert!(
        refused["status"].get("echo").is_none(),
        "a refused outcome's status is not written either"
    );
    let warning = wait_event(&client, "default", "bold", "Warning", "ScopeDenied", |_| true).await;
    assert!(warning.note.as_deref().unwrap_or_default().contains("sneaky"));
    let pods: Api<Pod> = Api::all(client.clone());
    assert!(
        pods.list(&Default::default()).await?.items.is_empty(),
        "no Pod was created"
    );

    // An owned kind in another namespace, next to an in-scope child: the whole outcome is refused.
    let elsewhere = json!([
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fine"}, "data": {"k": "v"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "leak", "namespace": "elsewhere"},
         "data": {"password": "aHVudGVyMg=="}},
    ]);
    install_test_plugin(
        &plugins,
        "echo",
        wasm_reconciler_artifacts::ECHO,
        ECHO_CRD,
        &returning(elsewhere),
        None,
    )?;
    let refused = wait_object(&echoes, "bold", "ScopeDenied for the other namespace", |echo| {
        failed_with(echo, "ScopeDenied")
            && reconciled(echo).is_some_and(|(_, _, message)| message.contains("elsewhere"))
    })
    .await;
    let (_, _, message) = reconciled(&refused).expect("a Reconciled condition");
    assert!(
        message
            .contains("is in namespace \"elsewhere\", but children must live in the primary's namespace \"default\""),
        "{message}"
    );
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "elsewhere");
    assert!(
        secrets.get_opt("leak").await?.is_none(),
        "nothing reached the other namespace"
    );
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    assert!(
        config_maps.get_opt("fine").await?.is_none(),
        "the in-scope child of a refused outcome is not written either"
    );

    // The same children in scope are written: the refusal was about scope alone.
    let in_scope = json!([
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fine"}, "data": {"k": "v"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "leak"}, "data": {"password": "aHVudGVyMg=="}},
    ]);
    install_test_plugin(
        &plugins,
        "echo",
        wasm_reconciler_artifacts::ECHO,
        ECHO_CRD,
        &returning(in_scope),
        None,
    )?;
    let accepted = wait_object(&echoes, "bold", "Reconciled=True with in-scope children", |echo| {
        condition(echo, "Reconciled") == Some("True")
    })
    .await;
    assert_eq!(accepted["status"]["echo"]["name"], "bold");
    let fine = config_maps.get("fine").await?;
    assert_eq!(fine.metadata.owner_references.unwrap_or_default()[0].name, "bold");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    assert!(secrets.get_opt("leak").await?.is_some());
    host.stop().await
}
