//! The configmapset example plugin end to end: children, status and conditions converge.

use std::time::Duration;

use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::discovery::ApiResource;
use serde_json::json;

use crate::harness::{Cluster, Host, PluginFiles, condition, example_crd, wait_for, write_plugin};

fn configmapsets(client: &kube::Client) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: "examples.wasm-reconciler.io".into(),
        version: "v1alpha1".into(),
        api_version: "examples.wasm-reconciler.io/v1alpha1".into(),
        kind: "ConfigMapSet".into(),
        plural: "configmapsets".into(),
    };
    Api::namespaced_with(client.clone(), "default", &resource)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_converges_to_children_status_and_conditions() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let plugins = cluster.dir.path().join("plugins");
    write_plugin(
        &plugins,
        &PluginFiles {
            name: "configmapset",
            wasm: wasm_reconciler_artifacts::CONFIGMAPSET,
            crd: Some(&example_crd("configmapset")),
            config: None,
            settings: None,
        },
    )?;
    let host = Host::start(&cluster, Host::dev_options(&plugins)).await?;
    let client = cluster.client().await?;
    let sets = configmapsets(&client);
    let set: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "examples.wasm-reconciler.io/v1alpha1", "kind": "ConfigMapSet",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 3, "template": {"data": {"greeting": "hello"}}}
    }))?;
    // The CRD is installed by the host when it loads the plugin; retry until it is served.
    wait_for(Duration::from_secs(30), "the ConfigMapSet kind to be served", || {
        let sets = sets.clone();
        let set = set.clone();
        async move { sets.create(&PostParams::default(), &set).await.ok() }
    })
    .await;

    let ready = wait_for(Duration::from_secs(30), "Ready=True", || {
        let sets = sets.clone();
        async move {
            let set = serde_json::to_value(sets.get("web").await.ok()?).ok()?;
            (condition(&set, "Ready") == Some("True")).then_some(set)
        }
    })
    .await;
    assert_eq!(ready["status"]["replicas"], 3);
    assert_eq!(ready["status"]["readyReplicas"], 3);
    assert_eq!(ready["status"]["observedGeneration"], 1);
    assert_eq!(condition(&ready, "Reconciled"), Some("True"));

    let config_maps: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(client.clone(), "default");
    // Selected by the set's label: a real cluster also keeps its CA bundle (`kube-root-ca.crt`) in every namespace.
    let children = config_maps
        .list(&ListParams::default().labels("examples.wasm-reconciler.io/configmapset=web"))
        .await?;
    let mut names: Vec<String> = children.items.iter().filter_map(|c| c.metadata.name.clone()).collect();
    names.sort();
    assert_eq!(names, ["web-0", "web-1", "web-2"]);
    for child in &children.items {
        let owner = &child.metadata.owner_references.as_ref().expect("owned")[0];
        assert_eq!(owner.kind, "ConfigMapSet");
        assert_eq!(owner.controller, Some(true));
        assert_eq!(owner.block_owner_deletion, Some(true));
        assert_eq!(child.data.as_ref().unwrap()["greeting"], "hello");
    }
    host.stop().await
}
