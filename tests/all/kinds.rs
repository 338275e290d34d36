//! The kinds the scenarios drive (ConfigMapSet, WebApp, Echo, Chaos): API handles, plugin installation, waiting
//! on objects, and reading the Events the host records about them.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::discovery::ApiResource;
use serde_json::{Value, json};

use crate::harness::{PluginFiles, condition_object, example_crd, wait_for, write_plugin};

/// How long any single convergence may take, generous for two busy cores.
pub const CONVERGE: Duration = Duration::from_secs(40);

/// CRD of the echo test plugin's kind, `test.wasm-reconciler.io/v1` Echo.
pub const ECHO_CRD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/all/fixtures/echo-crd.yaml");

/// CRD of the mirror test plugin's kind, `test.wasm-reconciler.io/v1` Mirror.
pub const MIRROR_CRD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/all/fixtures/mirror-crd.yaml");

/// CRD of the outbound test plugin's kind, `tests.wasm-reconciler.io/v1` Outbound.
pub const OUTBOUND_CRD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/all/fixtures/outbound-crd.yaml");

/// CRD of the chaos test plugin's kind, `test.wasm-reconciler.io/v1` Chaos.
pub const CHAOS_CRD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/all/fixtures/chaos-crd.yaml");

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: format!("{group}/{version}"),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// `examples.wasm-reconciler.io/v1alpha1` ConfigMapSet.
pub fn configmapset_resource() -> ApiResource {
    resource(
        "examples.wasm-reconciler.io",
        "v1alpha1",
        "ConfigMapSet",
        "configmapsets",
    )
}

/// `examples.wasm-reconciler.io/v1alpha1` WebApp.
pub fn webapp_resource() -> ApiResource {
    resource("examples.wasm-reconciler.io", "v1alpha1", "WebApp", "webapps")
}

/// `examples.wasm-reconciler.io/v1alpha1` DNSRecord.
pub fn dnsrecord_resource() -> ApiResource {
    resource("examples.wasm-reconciler.io", "v1alpha1", "DNSRecord", "dnsrecords")
}

/// `test.wasm-reconciler.io/v1` Echo.
pub fn echo_resource() -> ApiResource {
    resource("test.wasm-reconciler.io", "v1", "Echo", "echoes")
}

/// `test.wasm-reconciler.io/v1` Mirror.
pub fn mirror_resource() -> ApiResource {
    resource("test.wasm-reconciler.io", "v1", "Mirror", "mirrors")
}

/// `test.wasm-reconciler.io/v1` Chaos.
pub fn chaos_resource() -> ApiResource {
    resource("test.wasm-reconciler.io", "v1", "Chaos", "chaoses")
}

/// Core `v1` ConfigMap, for journals.
pub fn config_map_resource() -> ApiResource {
    ApiResource {
        group: String::new(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        plural: "configmaps".into(),
    }
}

/// Objects of `resource` in `namespace`.
pub fn namespaced(client: &kube::Client, namespace: &str, resource: &ApiResource) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), namespace, resource)
}

/// Installs an example plugin (`configmapset`, `webapp`) with its CRD into `plugins_dir`.
pub fn install_example(plugins_dir: &Path, name: &str, wasm: &str) -> anyhow::Result<()> {
    write_plugin(
        plugins_dir,
        &PluginFiles {
            name,
            wasm,
            crd: Some(&example_crd(name)),
            config: None,
            settings: None,
        },
    )?;
    Ok(())
}

/// Installs (or rewrites) a test plugin named `name` with a CRD fixture, configuration and settings.
pub fn install_test_plugin(
    plugins_dir: &Path,
    name: &str,
    wasm: &str,
    crd: &str,
    config: &str,
    settings: Option<&str>,
) -> anyhow::Result<()> {
    write_plugin(
        plugins_dir,
        &PluginFiles {
            name,
            wasm,
            crd: Some(crd),
            config: Some(config),
            settings,
        },
    )?;
    Ok(())
}

/// Creates `manifest`, retrying while its kind is not served yet (the host installs CRDs when it loads plugins).
pub async fn create_when_served(api: &Api<DynamicObject>, manifest: Value) -> anyhow::Result<Value> {
    let object: DynamicObject = serde_json::from_value(manifest)?;
    let name = object.metadata.name.clone().unwrap_or_default();
    let created = wait_for(CONVERGE, &format!("the kind of {name} to be served"), || {
        let api = api.clone();
        let object = object.clone();
        async move { api.create(&PostParams::default(), &object).await.ok() }
    })
    .await;
    Ok(serde_json::to_value(created)?)
}

/// The object `name` as JSON, or `None` when it does not exist (or cannot be read right now).
pub async fn get_value(api: &Api<DynamicObject>, name: &str) -> Option<Value> {
    let object = api.get_opt(name).await.ok()??;
    serde_json::to_value(object).ok()
}

/// Waits until object `name` exists and `accept` holds for it; returns it.
pub async fn wait_object(api: &Api<DynamicObject>, name: &str, what: &str, accept: impl Fn(&Value) -> bool) -> Value {
    wait_for(CONVERGE, what, || {
        let api = api.clone();
        let accept = &accept;
        async move { get_value(&api, name).await.filter(|object| accept(object)) }
    })
    .await
}

/// Waits until object `name` no longer exists.
pub async fn wait_gone(api: &Api<DynamicObject>, name: &str, what: &str) {
    wait_for(CONVERGE, what, || {
        let api = api.clone();
        async move { matches!(api.get_opt(name).await, Ok(None)).then_some(()) }
    })
    .await;
}

/// The host's `Reconciled` condition as `(status, reason, message)`.
pub fn reconciled(object: &Value) -> Option<(&str, &str, &str)> {
    let condition = condition_object(object, "Reconciled")?;
    Some((
        condition["status"].as_str()?,
        condition["reason"].as_str()?,
        condition["message"].as_str().unwrap_or_default(),
    ))
}

/// Whether the `Reconciled` condition is False with `reason`.
pub fn failed_with(object: &Value, reason: &str) -> bool {
    reconciled(object).is_some_and(|(status, actual, _)| status == "False" && actual == reason)
}

/// Events (`events.k8s.io/v1`) regarding the object `name` in `namespace`, oldest first.
pub async fn events_about(client: &kube::Client, namespace: &str, name: &str) -> anyhow::Result<Vec<Event>> {
    let api: Api<Event> = Api::namespaced(client.clone(), namespace);
    let mut events: Vec<Event> = api
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|event| event.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .collect();
    events.sort_by_key(|event| {
        event
            .metadata
            .resource_version
            .as_deref()
            .and_then(|version| version.parse::<u64>().ok())
    });
    Ok(events)
}

/// How many times an event was observed: its series count, or 1.
pub fn occurrences(event: &Event) -> i32 {
    event.series.as_ref().map_or(1, |series| series.count)
}

/// Waits for an Event of `type_` (`Normal`, `Warning`) and `reason` regarding `name` that `accept`s; returns it.
pub async fn wait_event(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    type_: &str,
    reason: &str,
    accept: impl Fn(&Event) -> bool,
) -> Event {
    wait_for(CONVERGE, &format!("a {type_} {reason} Event about {name}"), || {
        let accept = &accept;
        async move {
            events_about(client, namespace, name)
                .await
                .ok()?
                .into_iter()
                .find(|event| {
                    event.type_.as_deref() == Some(type_) && event.reason.as_deref() == Some(reason) && accept(event)
                })
        }
    })
    .await
}

/// Creates namespace `name`.
pub async fn create_namespace(client: &kube::Client, name: &str) -> anyhow::Result<()> {
    let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": name}}))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await?;
    Ok(())
}

/// A ConfigMapSet manifest in `default`.
pub fn configmapset(name: &str, replicas: u32, burst: u32, greeting: &str) -> Value {
    json!({
        "apiVersion": "examples.wasm-reconciler.io/v1alpha1", "kind": "ConfigMapSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": replicas, "burst": burst, "template": {"data": {"greeting": greeting}}},
    })
}

/// An object of a test kind (Echo, Chaos) named `name` in `namespace`.
pub fn test_object(kind: &str, namespace: &str, name: &str) -> Value {
    json!({
        "apiVersion": "test.wasm-reconciler.io/v1", "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"note": format!("{kind} {name}")},
    })
}

/// Whether a ConfigMapSet reports `Ready=True` for `replicas` observed children at its current generation.
pub fn set_ready_with(set: &Value, replicas: u64) -> bool {
    crate::harness::condition(set, "Ready") == Some("True")
        && set["status"]["replicas"].as_u64() == Some(replicas)
        && set["status"]["observedGeneration"] == set["metadata"]["generation"]
}

/// Waits until ConfigMapSet `name` is Ready with `replicas` children at its current generation; returns it.
pub async fn wait_set_ready(sets: &Api<DynamicObject>, name: &str, replicas: u64) -> Value {
    wait_object(sets, name, &format!("{name} Ready with {replicas} replicas"), |set| {
        set_ready_with(set, replicas)
    })
    .await
}

/// Names and uids of the ConfigMaps of ConfigMapSet `set`.
pub async fn set_children(config_maps: &Api<ConfigMap>, set: &str) -> anyhow::Result<BTreeMap<String, String>> {
    let selector = format!("examples.wasm-reconciler.io/configmapset={set}");
    Ok(config_maps
        .list(&ListParams::default().labels(&selector))
        .await?
        .items
        .into_iter()
        .map(|child| {
            (
                child.metadata.name.unwrap_or_default(),
                child.metadata.uid.unwrap_or_default(),
            )
        })
        .collect())
}

/// Waits until the API server serves `api`'s kind (its CRD installed by the host).
pub async fn wait_served(api: &Api<DynamicObject>) {
    wait_for(CONVERGE, "the kind to be served", || {
        let api = api.clone();
        async move { api.list(&ListParams::default().limit(1)).await.ok().map(|_| ()) }
    })
    .await;
}
