//! The webapp example plugin end to end: a Deployment, Service and ConfigMap of the right shape, a configuration
//! change rolling the pod template, and readiness following the Deployment's status.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use crate::harness::{Cluster, Host, condition, wait_for};
use crate::kinds::{CONVERGE, create_when_served, install_example, namespaced, wait_object, webapp_resource};

const CONFIG_HASH: &str = "examples.wasm-reconciler.io/config-hash";

fn config_hash(deployment: &Deployment) -> Option<String> {
    deployment
        .spec
        .as_ref()?
        .template
        .metadata
        .as_ref()?
        .annotations
        .as_ref()?
        .get(CONFIG_HASH)
        .cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webapp_children_rollout_on_config_change_and_readiness() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    let plugins = cluster.dir.path().join("plugins");
    install_example(&plugins, "webapp", wasm_reconciler_artifacts::WEBAPP)?;
    let host = Host::start(&cluster, Host::dev_options(&plugins)).await?;
    let client = cluster.client().await?;
    let webapps = namespaced(&client, "default", &webapp_resource());
    create_when_served(
        &webapps,
        json!({
            "apiVersion": "examples.wasm-reconciler.io/v1alpha1", "kind": "WebApp",
            "metadata": {"name": "shop", "namespace": "default"},
            "spec": {"image": "nginx:1.27", "replicas": 2, "port": 8080, "config": {"LOG_LEVEL": "info"}},
        }),
    )
    .await?;

    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let deployment = wait_for(CONVERGE, "the Deployment", || {
        let deployments = deployments.clone();
        async move { deployments.get_opt("shop").await.ok()? }
    })
    .await;
    let service = wait_for(CONVERGE, "the Service", || {
        let services = services.clone();
        async move { services.get_opt("shop").await.ok()? }
    })
    .await;
    let config = wait_for(CONVERGE, "the ConfigMap", || {
        let config_maps = config_maps.clone();
        async move { config_maps.get_opt("shop-config").await.ok()? }
    })
    .await;

    let selector = json!({"app.kubernetes.io/name": "webapp", "app.kubernetes.io/instance": "shop"});
    let spec = deployment.spec.clone().expect("a Deployment spec");
    assert_eq!(spec.replicas, Some(2));
    assert_eq!(serde_json::to_value(&spec.selector.match_labels)?, selector);
    let pod = spec.template.spec.clone().expect("a pod spec");
    assert_eq!(pod.containers.len(), 1);
    let container = &pod.containers[0];
    assert_eq!(container.name, "web");
    assert_eq!(container.image.as_deref(), Some("nginx:1.27"));
    let port = &container.ports.as_ref().expect("a container port")[0];
    assert_eq!((port.name.as_deref(), port.container_port), (Some("http"), 8080));
    let env_from = container.env_from.as_ref().expect("configuration as environment");
    assert_eq!(
        env_from[0].config_map_ref.as_ref().map(|r| r.name.as_str()),
        Some("shop-config")
    );
    let first_hash = config_hash(&deployment).expect("the pod template carries the config hash");

    let service_spec = service.spec.expect("a Service spec");
    assert_eq!(service_spec.type_.as_deref(), Some("ClusterIP"));
    assert_eq!(serde_json::to_value(&service_spec.selector)?, selector);
    let service_port = &service_spec.ports.expect("a Service port")[0];
    assert_eq!(service_port.port, 8080);
    assert_eq!(
        serde_json::to_value(&service_port.target_port)?,
        json!(8080),
        "the Service targets the container port"
    );
    assert_eq!(config.data.unwrap_or_default()["LOG_LEVEL"], "info");

    for owners in [&deployment.metadata.owner_references, &config.metadata.owner_references] {
        let owner = &owners.as_ref().expect("owned")[0];
        assert_eq!((owner.kind.as_str(), owner.name.as_str()), ("WebApp", "shop"));
        assert_eq!(owner.controller, Some(true));
    }
    let waiting = wait_object(&webapps, "shop", "the WebApp status", |webapp| {
        webapp["status"]["observedGeneration"] == 1 && condition(webapp, "Ready").is_some()
    })
    .await;
    assert_eq!(condition(&waiting, "Ready"), Some("False"), "no pod is available yet");
    assert_eq!(waiting["status"]["url"], "http://shop.default.svc:8080");

    // A configuration change rolls the pods: a new hash on the pod template, new data in the ConfigMap.
    webapps
        .patch(
            "shop",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"config": {"LOG_LEVEL": "debug"}}})),
        )
        .await?;
    let rolled = wait_for(CONVERGE, "a new config hash on the pod template", || {
        let deployments = deployments.clone();
        let first_hash = first_hash.clone();
        async move {
            let deployment = deployments.get("shop").await.ok()?;
            config_hash(&deployment)
                .is_some_and(|hash| hash != first_hash)
                .then_some(deployment)
        }
    })
    .await;
    let config = config_maps.get("shop-config").await?;
    assert_eq!(config.data.unwrap_or_default()["LOG_LEVEL"], "debug");

    // The Deployment reports its pods available (as a Deployment controller would): the WebApp becomes Ready.
    let generation = rolled.metadata.generation.expect("a generation");
    let status = json!({"status": {
        "observedGeneration": generation, "replicas": 2, "updatedReplicas": 2,
        "readyReplicas": 2, "availableReplicas": 2,
    }})
    .to_string();
    let args = [
        "patch",
        "deployment",
        "shop",
        "--subresource=status",
        "--type=merge",
        "-p",
        status.as_str(),
    ];
    tokio::task::block_in_place(|| cluster.kubectl_ok(&args));
    let ready = wait_object(&webapps, "shop", "the WebApp to be Ready", |webapp| {
        condition(webapp, "Ready") == Some("True")
    })
    .await;
    assert_eq!(ready["status"]["availableReplicas"], 2);
    assert_eq!(ready["status"]["readyReplicas"], 2);
    assert_eq!(ready["status"]["observedGeneration"], 2);
    assert_eq!(condition(&ready, "Reconciled"), Some("True"));
    host.stop().await
}
