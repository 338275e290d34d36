//! Behaviour of the plugin on world views built with [`AppFixture`](crate::fixtures::AppFixture).

use serde_json::json;
use wasm_reconciler_sdk::{ConditionStatus, Gvk, Reconciler};

use crate::WebAppReconciler;
use crate::fixtures::{AppFixture, DeploymentStatus, desired};

fn ready(outcome: &wasm_reconciler_sdk::Outcome) -> (ConditionStatus, String) {
    let condition = outcome.condition_of_type("Ready").expect("Ready is reported");
    (condition.status, condition.reason.clone())
}

fn kinds(outcome: &wasm_reconciler_sdk::Outcome) -> Vec<String> {
    outcome
        .desired_children()
        .unwrap()
        .iter()
        .map(|child| child["kind"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn describes_webapps_owning_deployments_services_and_configmaps() {
    let spec = WebAppReconciler::describe();
    assert_eq!(
        spec.primary,
        Gvk::new("examples.wasm-reconciler.io", "v1alpha1", "WebApp")
    );
    assert_eq!(
        spec.owns,
        [
            Gvk::new("apps", "v1", "Deployment"),
            Gvk::new("", "v1", "Service"),
            Gvk::new("", "v1", "ConfigMap")
        ]
    );
    assert_eq!(spec.finalizer.as_deref(), None);
}

#[test]
fn fresh_app_gets_a_deployment_and_a_service_with_defaults() {
    let outcome = AppFixture::test().reconcile();
    assert_eq!(kinds(&outcome), ["Deployment", "Service"]);
    let deployment = desired(&outcome, "Deployment");
    assert_eq!(deployment["metadata"]["name"], "shop");
    assert_eq!(deployment["spec"]["replicas"], 1);
    let labels = json!({"app.kubernetes.io/instance": "shop", "app.kubernetes.io/name": "webapp"});
    assert_eq!(deployment["metadata"]["labels"], labels);
    assert_eq!(deployment["spec"]["selector"]["matchLabels"], labels);
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["name"], "web");
    assert_eq!(container["image"], "nginx:1.27");
    assert_eq!(container["ports"][0]["containerPort"], 8080);
    assert!(container.get("envFrom").is_none());
    assert!(deployment["spec"]["template"]["metadata"].get("annotations").is_none());

    let service = desired(&outcome, "Service");
    assert_eq!(service["spec"]["type"], "ClusterIP");
    assert_eq!(service["spec"]["selector"], labels);
    assert_eq!(service["spec"]["ports"][0]["port"], 8080);
    assert_eq!(service["spec"]["ports"][0]["targetPort"], 8080);
}

#[test]
fn fresh_app_reports_the_missing_deployment() {
    let outcome = AppFixture::test().reconcile();
    assert_eq!(ready(&outcome), (ConditionStatus::False, "DeploymentMissing".into()));
    assert_eq!(
        outcome.desired_status(),
        Some(&json!({"readyReplicas": 0, "availableReplicas": 0, "url": "http://shop.prod.svc:8080"}))
    );
}

#[test]
fn config_becomes_a_configmap_used_as_environment() {
    let outcome = AppFixture::test().config(&[("LOG_LEVEL", "info")]).reconcile();
    assert_eq!(kinds(&outcome), ["Deployment", "Service", "ConfigMap"]);
    let config_map = desired(&outcome, "ConfigMap");
    assert_eq!(config_map["metadata"]["name"], "shop-config");
    assert_eq!(config_map["data"], json!({"LOG_LEVEL": "info"}));
    let deployment = desired(&outcome, "Deployment");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["envFrom"], json!([{"configMapRef": {"name": "shop-config"}}]));
    let annotations = &deployment["spec"]["template"]["metadata"]["annotations"];
    assert_eq!(
        annotations["examples.wasm-reconciler.io/config-hash"]
            .as_str()
            .unwrap()
            .len(),
        16
    );
}

#[test]
fn config_change_changes_the_pod_template_hash() {
    let hash = |value: &str| {
        let outcome = AppFixture::test().config(&[("LOG_LEVEL", value)]).reconcile();
        desired(&outcome, "Deployment")["spec"]["template"]["metadata"]["annotations"]
            ["examples.wasm-reconciler.io/config-hash"]
            .clone()
    };
    assert_eq!(hash("info"), hash("info"));
    assert_ne!(hash("info"), hash("debug"));
}

#[test]
fn custom_port_and_replicas_flow_into_children_and_url() {
    let outcome = AppFixture::test()
        .replicas(3)
        .spec_field("port", json!(9000))
        .reconcile();
    assert_eq!(desired(&outcome, "Deployment")["spec"]["replicas"], 3);
    assert_eq!(desired(&outcome, "Service")["spec"]["ports"][0]["targetPort"], 9000);
    assert_eq!(outcome.desired_status().unwrap()["url"], "http://shop.prod.svc:9000");
}

#[test]
fn available_deployment_at_its_generation_is_ready() {
    let status = DeploymentStatus {
        observed_generation: 2,
        ready: 2,
        available: 2,
    };
    let outcome = AppFixture::test()
        .replicas(2)
        .with_deployment(2, Some(status))
        .reconcile();
    assert_eq!(ready(&outcome), (ConditionStatus::True, "Available".into()));
    assert_eq!(outcome.desired_status().unwrap()["readyReplicas"], 2);
    assert_eq!(outcome.desired_status().unwrap()["availableReplicas"], 2);
}

#[test]
fn too_few_available_replicas_is_progressing() {
    let status = DeploymentStatus {
        observed_generation: 1,
        ready: 1,
        available: 1,
    };
    let outcome = AppFixture::test()
        .replicas(3)
        .with_deployment(1, Some(status))
        .reconcile();
    assert_eq!(ready(&outcome), (ConditionStatus::False, "Progressing".into()));
}

#[test]
fn stale_observed_generation_is_progressing() {
    let status = DeploymentStatus {
        observed_generation: 1,
        ready: 1,
        available: 1,
    };
    let outcome = AppFixture::test().with_deployment(2, Some(status)).reconcile();
    assert_eq!(ready(&outcome), (ConditionStatus::False, "Progressing".into()));
}

#[test]
fn deployment_without_status_is_progressing() {
    let outcome = AppFixture::test().with_deployment(1, None).reconcile();
    assert_eq!(ready(&outcome), (ConditionStatus::False, "Progressing".into()));
    assert_eq!(outcome.desired_status().unwrap()["availableReplicas"], 0);
}

#[test]
fn zero_replicas_is_ready_once_rolled_out() {
    let status = DeploymentStatus {
        observed_generation: 1,
        ready: 0,
        available: 0,
    };
    let outcome = AppFixture::test()
        .replicas(0)
        .with_deployment(1, Some(status))
        .reconcile();
    assert_eq!(ready(&outcome), (ConditionStatus::True, "Available".into()));
}

#[test]
fn invalid_specs_are_plugin_errors() {
    let error = |fixture: AppFixture| WebAppReconciler::reconcile(fixture.view()).unwrap_err().to_string();
    assert_eq!(
        error(AppFixture::test().spec_field("image", json!(""))),
        "spec.image must not be empty"
    );
    assert_eq!(
        error(AppFixture::test().replicas(-2)),
        "spec.replicas must not be negative, got -2"
    );
    assert_eq!(
        error(AppFixture::test().spec_field("port", json!(70000))),
        "spec.port must be between 1 and 65535, got 70000"
    );
    let missing_image = AppFixture::test().spec_field("image", serde_json::Value::Null);
    assert!(error(missing_image).starts_with("reading the primary object: "));
    assert_eq!(
        error(AppFixture::test().config(&[("LOG LEVEL", "info")])),
        "spec.config: `LOG LEVEL` is not a valid ConfigMap key: at most 253 letters, digits, '-', '_' and '.', and \
         not `.` or `..`"
    );
}

#[test]
fn the_pull_policy_follows_the_image_as_kubernetes_defaults_it() {
    use crate::children::image_pull_policy;
    for (image, policy) in [
        ("nginx:1.27", "IfNotPresent"),
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("registry.example.com:5000/shop", "Always"),
        ("registry.example.com:5000/shop:2", "IfNotPresent"),
        ("shop@sha256:0123", "IfNotPresent"),
    ] {
        assert_eq!(image_pull_policy(image), policy, "{image}");
    }
    // The Deployment carries it, so a later image change changes it as a fresh Deployment would have it.
    let pulled = |image: &str| {
        let outcome = AppFixture::test().spec_field("image", json!(image)).reconcile();
        desired(&outcome, "Deployment")["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"].clone()
    };
    assert_eq!(pulled("nginx:1.27"), "IfNotPresent");
    assert_eq!(pulled("nginx"), "Always");
}
