//! Echo objects (the echo test plugin's kind) and the status the plugin writes, which echoes its configuration:
//! the observable sign of which plugin version served a reconcile.

use std::time::Duration;

use kube::api::{Api, DynamicObject, PostParams};
use serde_json::{Value, json};

use crate::harness::wait_for;
use crate::kinds::{echo_resource, namespaced};

/// Echo objects in `namespace`.
pub fn echoes(client: &kube::Client, namespace: &str) -> Api<DynamicObject> {
    namespaced(client, namespace, &echo_resource())
}

/// Creates an Echo named `name` in the namespace of `api`.
pub async fn create_echo(api: &Api<DynamicObject>, name: &str) -> anyhow::Result<()> {
    let echo: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "test.wasm-reconciler.io/v1", "kind": "Echo",
        "metadata": {"name": name},
        "spec": {"note": format!("Echo {name}")},
    }))?;
    api.create(&PostParams::default(), &echo).await?;
    Ok(())
}

/// The plugin configuration the echo status reports, once the plugin reconciled the object.
pub fn echoed_config(echo: &Value) -> Option<&Value> {
    echo["status"]["echo"]["config"]
        .as_object()
        .map(|_| &echo["status"]["echo"]["config"])
}

/// Waits until the Echo `name` has a status echoing a configuration for which `accept` holds; returns the object.
pub async fn wait_for_echo(
    api: &Api<DynamicObject>,
    name: &str,
    timeout: Duration,
    what: &str,
    accept: impl Fn(&Value) -> bool,
) -> Value {
    wait_for(timeout, what, || {
        let api = api.clone();
        let accept = &accept;
        async move {
            let echo = serde_json::to_value(api.get(name).await.ok()?).ok()?;
            echoed_config(&echo).is_some_and(accept).then_some(echo)
        }
    })
    .await
}
