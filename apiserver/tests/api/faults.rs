//! Fault injection as host tests use it.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::json;
use wasm_reconciler_apiserver::WriteFault;

use crate::support::{in_process, status_code};

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}})).unwrap()
}

#[tokio::test]
async fn injected_write_failures_then_recovery() {
    let (server, client) = in_process().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    server.faults().fail_writes("configmaps", 1, WriteFault::Conflict);
    let (code, reason, _) = status_code(api.create(&PostParams::default(), &config_map("a")).await);
    assert_eq!((code, reason.as_str()), (409, "Conflict"));
    server.faults().fail_writes("configmaps", 2, WriteFault::Status(503));
    for _ in 0..2 {
        let (code, reason, _) = status_code(api.create(&PostParams::default(), &config_map("a")).await);
        assert_eq!((code, reason.as_str()), (503, "ServiceUnavailable"));
    }
    api.create(&PostParams::default(), &config_map("a")).await.unwrap();

    server.faults().set_latency(Duration::from_millis(150));
    let started = Instant::now();
    api.get("a").await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(150));
    server.faults().clear();
}
