//! Deletion propagation and garbage collection through the kube client.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, PropagationPolicy};
use serde_json::json;

use crate::support::{eventually, in_process, status_code};

async fn owner_and_dependent(api: &Api<ConfigMap>, block: bool, dependent_finalizer: bool) -> String {
    let owner = api
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "owner"}})).unwrap(),
        )
        .await
        .unwrap();
    let uid = owner.metadata.uid.unwrap();
    let mut dependent = json!({"metadata": {"name": "dependent", "ownerReferences": [{
        "apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid, "blockOwnerDeletion": block}]}});
    if dependent_finalizer {
        dependent["metadata"]["finalizers"] = json!(["example.com/slow"]);
    }
    api.create(&PostParams::default(), &serde_json::from_value(dependent).unwrap())
        .await
        .unwrap();
    uid
}

/// The periodic sweep runs every 10 s; waiting less shows that a write wakes the collector up.
const SOONER_THAN_THE_SWEEP: Duration = Duration::from_secs(5);

/// Waits (less than a sweep period) until `name` is gone.
async fn gone(api: &Api<ConfigMap>, name: &str) {
    let api = api.clone();
    let name = name.to_string();
    eventually(&format!("{name} to be gone"), SOONER_THAN_THE_SWEEP, || {
        let api = api.clone();
        let name = name.clone();
        async move { api.get_opt(&name).await.unwrap().is_none().then_some(()) }
    })
    .await;
}

#[tokio::test]
async fn background_deletion_collects_dependents() {
    let (_server, client) = in_process().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    owner_and_dependent(&api, false, false).await;
    api.delete("owner", &DeleteParams::background()).await.unwrap();
    assert!(api.get_opt("owner").await.unwrap().is_none(), "owner goes at once");
    gone(&api, "dependent").await;
}

#[tokio::test]
async fn orphan_deletion_keeps_dependents_without_the_reference() {
    let (_server, client) = in_process().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    owner_and_dependent(&api, false, false).await;
    api.delete("owner", &DeleteParams::orphan()).await.unwrap();
    gone(&api, "owner").await;
    let dependent = api.get("dependent").await.unwrap();
    assert!(dependent.metadata.owner_references.unwrap_or_default().is_empty());
}

#[tokio::test]
async fn foreground_deletion_waits_for_blocking_dependents() {
    let (_server, client) = in_process().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    owner_and_dependent(&api, true, true).await;
    api.delete("owner", &DeleteParams::foreground()).await.unwrap();
    let api2 = api.clone();
    eventually("dependent marked for deletion", Duration::from_secs(5), || {
        let api = api2.clone();
        async move {
            let dependent = api.get("dependent").await.unwrap();
            dependent.metadata.deletion_timestamp.map(|_| ())
        }
    })
    .await;
    let owner = api.get("owner").await.unwrap();
    assert!(
        owner
            .metadata
            .finalizers
            .unwrap()
            .contains(&"foregroundDeletion".to_string())
    );
    api.patch(
        "dependent",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    gone(&api, "dependent").await;
    gone(&api, "owner").await;
    let _ = PropagationPolicy::Foreground;
}

#[tokio::test]
async fn namespace_deletion_removes_contents() {
    let (_server, client) = in_process().await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "doomed"}})).unwrap(),
        )
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "doomed");
    api.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "inside"}})).unwrap(),
    )
    .await
    .unwrap();
    namespaces.delete("doomed", &DeleteParams::default()).await.unwrap();
    let terminating = namespaces.get_opt("doomed").await.unwrap();
    if let Some(ns) = terminating {
        assert_eq!(ns.status.unwrap().phase.as_deref(), Some("Terminating"));
        let (code, _, message) = status_code(
            api.create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": "late"}})).unwrap(),
            )
            .await,
        );
        assert_eq!(code, 403);
        assert!(message.contains("because it is being terminated"), "{message}");
    }
    let namespaces2 = namespaces.clone();
    eventually("namespace gone", Duration::from_secs(5), || {
        let namespaces = namespaces2.clone();
        async move { namespaces.get_opt("doomed").await.unwrap().is_none().then_some(()) }
    })
    .await;
    let (code, _, message) = status_code(namespaces.delete("default", &DeleteParams::default()).await);
    assert_eq!(
        (code, message.as_str()),
        (
            403,
            "namespaces \"default\" is forbidden: this namespace may not be deleted"
        )
    );
}

#[tokio::test]
async fn a_dependent_written_with_an_absent_owner_is_collected_without_waiting_for_the_sweep() {
    let (_server, client) = in_process().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let dependent = json!({"metadata": {"name": "stray", "ownerReferences": [{
        "apiVersion": "v1", "kind": "ConfigMap", "name": "never-existed", "uid": "0000-absent"}]}});
    api.create(&PostParams::default(), &serde_json::from_value(dependent).unwrap())
        .await
        .unwrap();
    gone(&api, "stray").await;
}

#[tokio::test]
async fn dependents_go_soon_after_a_held_owner_loses_its_last_finalizer() {
    let (_server, client) = in_process().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    owner_and_dependent(&api, false, false).await;
    api.patch(
        "owner",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": ["example.com/hold"]}})),
    )
    .await
    .unwrap();
    api.delete("owner", &DeleteParams::background()).await.unwrap();
    // The dependent is rewritten while its owner is held in deletion: the owner still exists, so it stays.
    api.patch(
        "dependent",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"touched": "yes"}})),
    )
    .await
    .unwrap();
    assert!(api.get_opt("dependent").await.unwrap().is_some());
    api.patch(
        "owner",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    gone(&api, "owner").await;
    gone(&api, "dependent").await;
}

#[tokio::test]
async fn dependents_of_a_live_owner_stay() {
    let (server, client) = in_process().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    owner_and_dependent(&api, false, false).await;
    api.patch(
        "dependent",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"touched": "yes"}})),
    )
    .await
    .unwrap();
    // A collector pass now (as the periodic sweep would run one) keeps a dependent whose owner is alive.
    server.collect_garbage();
    assert!(api.get_opt("dependent").await.unwrap().is_some());
}
