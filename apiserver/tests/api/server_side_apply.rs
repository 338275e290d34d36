//! Server-side apply through the kube client: ownership, conflicts, force, removal of unapplied fields.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use crate::support::{in_process, status_code};

fn apply_config(data: serde_json::Value) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": data})
}

#[tokio::test]
async fn apply_creates_conflicts_forces_and_prunes() {
    let (_server, client) = in_process().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let alice = PatchParams::apply("alice");
    let created = api
        .patch("cfg", &alice, &Patch::Apply(apply_config(json!({"a": "1", "b": "2"}))))
        .await
        .unwrap();
    let managed = created.metadata.managed_fields.unwrap();
    assert_eq!(managed.len(), 1);
    assert_eq!(managed[0].manager.as_deref(), Some("alice"));
    assert_eq!(managed[0].operation.as_deref(), Some("Apply"));

    let bob = PatchParams::apply("bob");
    let (code, reason, message) = status_code(
        api.patch("cfg", &bob, &Patch::Apply(apply_config(json!({"a": "other"}))))
            .await,
    );
    assert_eq!((code, reason.as_str()), (409, "Conflict"));
    assert_eq!(
        message,
        "Apply failed with 1 conflict: conflict with \"alice\": .data.a"
    );

    let forced = api
        .patch(
            "cfg",
            &bob.clone().force(),
            &Patch::Apply(apply_config(json!({"a": "other"}))),
        )
        .await
        .unwrap();
    assert_eq!(forced.data.as_ref().unwrap()["a"], "other");

    let pruned = api
        .patch("cfg", &alice, &Patch::Apply(apply_config(json!({}))))
        .await
        .unwrap();
    let data = pruned.data.unwrap();
    assert!(!data.contains_key("b"), "alice stopped applying b");
    assert_eq!(data["a"], "other", "bob still owns a");
}
