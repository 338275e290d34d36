//! Dependency tracking from reads: a plugin that read an absent Service, or listed Services by label, is
//! reconciled again when such a Service appears, changes or goes — without declaring any watch mapping.

use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::harness::{Cluster, Host, condition};
use crate::kinds::{ECHO_CRD, create_when_served, echo_resource, install_test_plugin, namespaced, wait_object};

const CONFIG: &str = "\
reads:
  - {apiVersion: v1, kind: Service, namespace: default, name: backend}
  - {apiVersion: v1, kind: Pod, namespace: default, name: undeclared}
list: {apiVersion: v1, kind: Service, namespace: default, selector: tier=db}
";

fn service(name: &str, tier: &str) -> anyhow::Result<Service> {
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"tier": tier}},
        "spec": {"ports": [{"port": 5432}]},
    }))?)
}

fn backend_found(echo: &Value) -> Option<bool> {
    echo["status"]["reads"]["Service/backend"]["found"].as_bool()
}

fn listed(echo: &Value) -> Vec<&str> {
    echo["status"]["listed"]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_of_absent_and_listed_objects_requeue_the_reader() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let plugins = cluster.dir.path().join("plugins");
    install_test_plugin(
        &plugins,
        "echo",
        wasm_reconciler_artifacts::ECHO,
        ECHO_CRD,
        CONFIG,
        None,
    )?;
    let host = Host::start(&cluster, Host::dev_options(&plugins)).await?;
    let client = cluster.client().await?;
    let echoes = namespaced(&client, "default", &echo_resource());
    create_when_served(&echoes, crate::kinds::test_object("Echo", "default", "reader")).await?;

    let first = wait_object(&echoes, "reader", "the first reconcile", |echo| {
        condition(echo, "Reconciled") == Some("True")
    })
    .await;
    assert_eq!(backend_found(&first), Some(false), "{}", first["status"]);
    assert!(listed(&first).is_empty(), "{}", first["status"]);
    let undeclared = &first["status"]["reads"]["Pod/undeclared"];
    assert!(
        undeclared["error"].is_string(),
        "a kind neither read nor owned cannot be read: {undeclared}"
    );

    // The absent name appears: the reader is reconciled again (its resync is an hour away).
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    services
        .create(&PostParams::default(), &service("backend", "web")?)
        .await?;
    let found = wait_object(&echoes, "reader", "the reader to see the backend", |echo| {
        backend_found(echo) == Some(true)
    })
    .await;
    assert!(listed(&found).is_empty(), "backend is not tier=db yet");

    // A Service starts matching the listed selector.
    services
        .patch(
            "backend",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"tier": "db"}}})),
        )
        .await?;
    wait_object(&echoes, "reader", "the list to include backend", |echo| {
        listed(echo) == ["backend"]
    })
    .await;
    services
        .create(&PostParams::default(), &service("replica", "db")?)
        .await?;
    wait_object(&echoes, "reader", "the list to include replica", |echo| {
        listed(echo) == ["backend", "replica"]
    })
    .await;

    // The object read goes away again.
    services.delete("backend", &DeleteParams::default()).await?;
    let gone = wait_object(&echoes, "reader", "the reader to see the backend gone", |echo| {
        backend_found(echo) == Some(false)
    })
    .await;
    assert_eq!(listed(&gone), ["replica"]);
    assert_eq!(
        gone["status"]["echo"]["generation"], 1,
        "every reconcile here came from a read, not from a change to the reader"
    );
    host.stop().await
}
