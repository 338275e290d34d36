//! CustomResourceDefinitions through the kube client: discovery, DynamicObject CRUD, schema
//! validation, defaulting and pruning, status subresource, several versions, deletion.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::discovery::Discovery;
use kube::runtime::wait::{await_condition, conditions};
use serde_json::json;

use crate::support::{eventually, in_process, status_code};

fn widget_crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [
                {"name": "v1", "served": true, "storage": true,
                 "subresources": {"status": {}},
                 "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                     "spec": {"type": "object", "required": ["color"], "properties": {
                         "color": {"type": "string", "enum": ["red", "blue"]},
                         "size": {"type": "integer", "minimum": 1, "default": 3}}},
                     "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}}}},
                {"name": "v1beta1", "served": true, "storage": false,
                 "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
            ]
        }
    }))
    .unwrap()
}

fn widget_api(client: kube::Client, version: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("example.com", version, "Widget");
    Api::namespaced_with(client, "default", &ApiResource::from_gvk_with_plural(&gvk, "widgets"))
}

#[tokio::test]
async fn crd_lifecycle_with_dynamic_objects() {
    let (_server, client) = in_process().await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &widget_crd()).await.unwrap();
    tokio::time::timeout(
        Duration::from_secs(5),
        await_condition(crds.clone(), "widgets.example.com", conditions::is_crd_established()),
    )
    .await
    .unwrap()
    .unwrap();
    let discovery = Discovery::new(client.clone()).run().await.unwrap();
    let group = discovery.get("example.com").expect("group discovered");
    assert_eq!(group.preferred_version_or_latest(), "v1");

    let widgets = widget_api(client.clone(), "v1");
    let created = widgets
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w1"}, "spec": {"color": "red", "unknown": true},
                "status": {"ready": true}}))
            .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(
        created.data["spec"],
        json!({"color": "red", "size": 3}),
        "pruned and defaulted"
    );
    assert!(created.data.get("status").is_none(), "status is dropped on create");
    assert_eq!(created.metadata.generation, Some(1));

    let (code, reason, message) = status_code(
        widgets
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget",
                    "metadata": {"name": "bad"}, "spec": {"color": "green", "size": 0}}))
                .unwrap(),
            )
            .await,
    );
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert!(
        message.starts_with("Widget.example.com \"bad\" is invalid: ["),
        "{message}"
    );
    assert!(
        message.contains("spec.color: Unsupported value: \"green\": supported values: \"red\", \"blue\""),
        "{message}"
    );
    assert!(
        message.contains("spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"),
        "{message}"
    );

    let with_status = widgets
        .patch_status(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true}})),
        )
        .await
        .unwrap();
    assert_eq!(with_status.data["status"]["ready"], true);
    assert_eq!(with_status.metadata.generation, Some(1));

    let beta = widget_api(client.clone(), "v1beta1");
    let through_beta = beta.get("w1").await.unwrap();
    assert_eq!(through_beta.types.unwrap().api_version, "example.com/v1beta1");

    let (code, _, _) = status_code(
        widgets
            .patch(
                "w1",
                &PatchParams::default(),
                &Patch::Strategic(json!({"spec": {"size": 4}})),
            )
            .await,
    );
    assert_eq!(code, 415, "strategic merge is not available for custom resources");

    crds.delete("widgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    let crds2 = crds.clone();
    eventually("CRD removed", Duration::from_secs(5), || {
        let crds = crds2.clone();
        async move {
            crds.get_opt("widgets.example.com")
                .await
                .unwrap()
                .is_none()
                .then_some(())
        }
    })
    .await;
    let (code, _, _) = status_code(widgets.get("w1").await);
    assert_eq!(code, 404);
    let discovery = Discovery::new(client).run().await.unwrap();
    assert!(discovery.get("example.com").is_none(), "discovery forgets the group");
}

#[tokio::test]
async fn invalid_crd_is_rejected() {
    let (_server, client) = in_process().await;
    let crds: Api<CustomResourceDefinition> = Api::all(client);
    let mut crd = widget_crd();
    crd.metadata.name = Some("gadgets.example.com".into());
    let (code, _, message) = status_code(crds.create(&PostParams::default(), &crd).await);
    assert_eq!(code, 422);
    assert!(
        message.contains(
            "metadata.name: Invalid value: \"gadgets.example.com\": must be spec.names.plural+\".\"+spec.group"
        ),
        "{message}"
    );
}
