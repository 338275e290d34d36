//! Durable storage: a restart keeps every object and the resourceVersion counter.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::json;
use wasm_reconciler_apiserver::ApiServer;

use std::time::Duration;

use crate::support::{client, eventually};

#[tokio::test]
async fn restart_keeps_objects_and_resource_version() {
    let dir = tempfile::tempdir().unwrap();
    let before;
    {
        let server = ApiServer::builder()
            .data_dir(Some(dir.path().to_path_buf()))
            .build()
            .await
            .unwrap();
        assert!(server.is_durable());
        let api: Api<ConfigMap> = Api::default_namespaced(client(&server));
        api.create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "kept"}, "data": {"k": "v"}})).unwrap(),
        )
        .await
        .unwrap();
        before = server.resource_version();
    }
    // The first server is released once its client's background task has finished.
    let path = dir.path().to_path_buf();
    let server = eventually("the data directory to be released", Duration::from_secs(5), || {
        let path = path.clone();
        async move { ApiServer::builder().data_dir(Some(path)).build().await.ok() }
    })
    .await;
    assert_eq!(server.resource_version(), before, "bootstrap writes nothing new");
    let api: Api<ConfigMap> = Api::default_namespaced(client(&server));
    let kept = api.get("kept").await.unwrap();
    assert_eq!(kept.data.unwrap()["k"], "v");
    let next = api
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "next"}})).unwrap(),
        )
        .await
        .unwrap();
    let next_version: u64 = next.metadata.resource_version.unwrap().parse().unwrap();
    assert_eq!(next_version, before + 1);
}
