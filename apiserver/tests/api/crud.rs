//! CRUD through the kube client: conflicts, errors, generateName, status, generation, finalizers,
//! selectors, pagination and dry runs.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Event as CoreEvent;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Service};
use k8s_openapi::api::events::v1::Event as NewEvent;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::support::{in_process, status_code};

fn config_map(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>()},
        "data": {"key": "value"},
    }))
    .unwrap()
}

#[tokio::test]
async fn create_get_replace_patch_delete() {
    let (_server, client) = in_process().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let created = api.create(&PostParams::default(), &config_map("a", &[])).await.unwrap();
    let meta = &created.metadata;
    assert!(meta.uid.is_some());
    assert!(meta.creation_timestamp.is_some());
    assert_eq!(meta.namespace.as_deref(), Some("default"));
    assert!(meta.generation.is_none(), "ConfigMaps have no generation");
    let managed = meta.managed_fields.as_ref().unwrap();
    assert_eq!(managed[0].operation.as_deref(), Some("Update"));

    let (code, reason, message) = status_code(api.create(&PostParams::default(), &config_map("a", &[])).await);
    assert_eq!((code, reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(message, "configmaps \"a\" already exists");

    let mut stale = created.clone();
    let mut fresh = created.clone();
    fresh.data = Some(BTreeMap::from([("key".into(), "new".into())]));
    let replaced = api.replace("a", &PostParams::default(), &fresh).await.unwrap();
    assert_ne!(replaced.metadata.resource_version, created.metadata.resource_version);
    stale.data = Some(BTreeMap::from([("key".into(), "stale".into())]));
    let (code, reason, message) = status_code(api.replace("a", &PostParams::default(), &stale).await);
    assert_eq!((code, reason.as_str()), (409, "Conflict"));
    assert_eq!(
        message,
        "Operation cannot be fulfilled on configmaps \"a\": the object has been modified; please apply your changes to the latest version and try again"
    );

    let patched = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"other": "x"}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.data.unwrap().len(), 2);
    let unchanged = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"other": "x"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        unchanged.metadata.resource_version, patched.metadata.resource_version,
        "a no-op patch does not write"
    );
    let json_patched = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::<()>::Json(serde_json::from_value(json!([{"op": "remove", "path": "/data/other"}])).unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(json_patched.data.unwrap().len(), 1);

    api.delete("a", &DeleteParams::default()).await.unwrap();
    let (code, reason, message) = status_code(api.get("a").await);
    assert_eq!(
        (code, reason.as_str(), message.as_str()),
        (404, "NotFound", "configmaps \"a\" not found")
    );
    let (code, _, message) = status_code(api.delete("a", &DeleteParams::default()).await);
    assert_eq!((code, message.as_str()), (404, "configmaps \"a\" not found"));
}

#[tokio::test]
async fn generate_name_and_validation_errors() {
    let (_server, client) = in_process().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let generated: ConfigMap = serde_json::from_value(json!({"metadata": {"generateName": "gen-"}})).unwrap();
    let created = api.create(&PostParams::default(), &generated).await.unwrap();
    let name = created.metadata.name.unwrap();
    assert!(name.starts_with("gen-") && name.len() == 9, "{name}");

    let (code, reason, message) = status_code(api.create(&PostParams::default(), &config_map("Bad_Name", &[])).await);
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert!(
        message.starts_with("ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"),
        "{message}"
    );
    let elsewhere: Api<ConfigMap> = Api::namespaced(client, "missing");
    let (code, _, message) = status_code(elsewhere.create(&PostParams::default(), &config_map("x", &[])).await);
    assert_eq!((code, message.as_str()), (404, "namespaces \"missing\" not found"));
}

#[tokio::test]
async fn default_namespaces_and_kubernetes_service_exist() {
    let (_server, client) = in_process().await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let names: Vec<String> = namespaces
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|n| n.metadata.name.unwrap())
        .collect();
    assert_eq!(names, ["default", "kube-node-lease", "kube-public", "kube-system"]);
    let services: Api<Service> = Api::default_namespaced(client);
    let kubernetes = services.get("kubernetes").await.unwrap();
    assert_eq!(kubernetes.spec.unwrap().cluster_ip.as_deref(), Some("10.96.0.1"));
}

fn deployment(name: &str, image: &str) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": image}]}}},
        "status": {"replicas": 5},
    }))
    .unwrap()
}

#[tokio::test]
async fn status_subresource_and_generation() {
    let (_server, client) = in_process().await;
    let api: Api<Deployment> = Api::default_namespaced(client);
    let created = api
        .create(&PostParams::default(), &deployment("web", "nginx:1"))
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    assert_eq!(created.spec.as_ref().unwrap().replicas, Some(1), "defaulted");
    assert!(
        created.status.as_ref().and_then(|s| s.replicas).is_none(),
        "status is reset on create"
    );

    let status = api
        .patch_status(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 2, "readyReplicas": 2}, "spec": {"replicas": 9}})),
        )
        .await
        .unwrap();
    assert_eq!(status.status.as_ref().unwrap().ready_replicas, Some(2));
    assert_eq!(
        status.spec.as_ref().unwrap().replicas,
        Some(1),
        "status writes ignore spec"
    );
    assert_eq!(status.metadata.generation, Some(1), "status writes keep the generation");

    let mut main = status.clone();
    main.status.as_mut().unwrap().ready_replicas = Some(0);
    main.metadata.labels = Some(BTreeMap::from([("l".into(), "v".into())]));
    let relabelled = api.replace("web", &PostParams::default(), &main).await.unwrap();
    assert_eq!(
        relabelled.status.as_ref().unwrap().ready_replicas,
        Some(2),
        "main resource ignores status"
    );
    assert_eq!(
        relabelled.metadata.generation,
        Some(1),
        "metadata changes keep the generation"
    );

    let respec = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Strategic(
                json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(respec.metadata.generation, Some(2));
    let containers = respec.spec.unwrap().template.spec.unwrap().containers;
    assert_eq!(containers.len(), 1, "strategic merge by name");
    assert_eq!(containers[0].image.as_deref(), Some("nginx:2"));
}

#[tokio::test]
async fn finalizers_hold_deletion() {
    let (_server, client) = in_process().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let mut held = config_map("held", &[]);
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    api.create(&PostParams::default(), &held).await.unwrap();
    let pending = api.delete("held", &DeleteParams::default()).await.unwrap();
    let pending = pending.left().expect("object returned while finalizers remain");
    assert!(pending.metadata.deletion_timestamp.is_some());
    let still = api.get("held").await.unwrap();
    assert!(still.metadata.deletion_timestamp.is_some());

    let (code, _, message) = status_code(
        api.patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": ["example.com/hold", "example.com/new"]}})),
        )
        .await,
    );
    assert_eq!(code, 422);
    assert!(
        message.contains("no new finalizers can be added if the object is being deleted"),
        "{message}"
    );

    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert_eq!(status_code(api.get("held").await).0, 404);
}

#[tokio::test]
async fn selectors_pagination_and_dry_run() {
    let (_server, client) = in_process().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    for (name, tier) in [("a", "web"), ("b", "db"), ("c", "web"), ("d", "cache")] {
        api.create(&PostParams::default(), &config_map(name, &[("tier", tier)]))
            .await
            .unwrap();
    }
    let names = |list: kube::core::ObjectList<ConfigMap>| -> Vec<String> {
        list.items.into_iter().map(|c| c.metadata.name.unwrap()).collect()
    };
    assert_eq!(
        names(api.list(&ListParams::default().labels("tier=web")).await.unwrap()),
        ["a", "c"]
    );
    assert_eq!(
        names(
            api.list(&ListParams::default().labels("tier in (db,cache)"))
                .await
                .unwrap()
        ),
        ["b", "d"]
    );
    assert_eq!(
        names(
            api.list(&ListParams::default().labels("tier notin (web),tier"))
                .await
                .unwrap()
        ),
        ["b", "d"]
    );
    assert_eq!(
        names(
            api.list(&ListParams::default().fields("metadata.name=c"))
                .await
                .unwrap()
        ),
        ["c"]
    );
    let (code, _, message) = status_code(api.list(&ListParams::default().fields("data.key=x")).await);
    assert_eq!(
        (code, message.as_str()),
        (
            400,
            "\"data.key\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        )
    );

    let first = api.list(&ListParams::default().limit(3)).await.unwrap();
    assert_eq!(first.items.len(), 3);
    // The namespace's kube-root-ca.crt is listed too, as in a cluster.
    assert_eq!(first.metadata.remaining_item_count, Some(2));
    let token = first.metadata.continue_.clone().unwrap();
    let rest = api
        .list(&ListParams::default().limit(3).continue_token(&token))
        .await
        .unwrap();
    assert_eq!(names(rest), ["d", "kube-root-ca.crt"]);

    let dry = api
        .create(
            &PostParams {
                dry_run: true,
                ..Default::default()
            },
            &config_map("dry", &[]),
        )
        .await
        .unwrap();
    assert_eq!(dry.metadata.name.as_deref(), Some("dry"));
    assert_eq!(status_code(api.get("dry").await).0, 404);

    let all: Api<ConfigMap> = Api::all(client);
    let listed = all.list(&ListParams::default()).await.unwrap().items;
    let own: Vec<_> = listed
        .iter()
        .filter(|c| c.metadata.name.as_deref() != Some("kube-root-ca.crt"))
        .collect();
    assert_eq!(own.len(), 4);
}

#[tokio::test]
async fn events_are_served_by_both_groups() {
    let (_server, client) = in_process().await;
    let new_api: Api<NewEvent> = Api::default_namespaced(client.clone());
    let event: NewEvent = serde_json::from_value(json!({
        "metadata": {"name": "e1"},
        "eventTime": "2025-01-01T00:00:00.000000Z",
        "regarding": {"kind": "ConfigMap", "name": "a", "namespace": "default"},
        "note": "hello", "reason": "Tested", "type": "Normal",
        "reportingController": "tests", "reportingInstance": "tests-1", "action": "Test",
    }))
    .unwrap();
    new_api.create(&PostParams::default(), &event).await.unwrap();
    let core: Api<CoreEvent> = Api::default_namespaced(client);
    let listed = core
        .list(&ListParams::default().fields("involvedObject.name=a,involvedObject.kind=ConfigMap"))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].message.as_deref(), Some("hello"));
    assert_eq!(listed.items[0].reporting_component.as_deref(), Some("tests"));
}
