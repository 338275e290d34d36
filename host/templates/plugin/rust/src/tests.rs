//! The reconciler on world views built in memory: `cargo test`, no WebAssembly build and no cluster.

use serde_json::{Value, json};
use wasm_reconciler_sdk::{ConditionStatus, Outcome, Reconciler, WorldView};

use super::*;

/// A {{kind}} named `demo` whose spec holds `data`.
fn primary(data: Value) -> Value {
    json!({
        "apiVersion": "{{api_version}}",
        "kind": "{{kind}}",
        "metadata": {"name": "demo", "namespace": "default", "generation": 1},
        "spec": {"data": data},
    })
}

/// The ConfigMap of `demo` as the host observes it.
fn observed_config_map(data: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "demo", "namespace": "default", "uid": "uid-demo", "labels": {MANAGED_BY_LABEL: PLUGIN_NAME}},
        "data": data,
    })
}

fn ready(outcome: &Outcome) -> (ConditionStatus, &str) {
    let condition = outcome.condition_of_type("Ready").expect("a Ready condition");
    (condition.status, condition.reason.as_str())
}

#[test]
fn describes_the_kind_and_the_config_maps_it_owns() {
    let spec = {{kind}}Reconciler::describe();
    assert_eq!(spec.primary, primary_kind());
    assert_eq!(spec.owns, [config_map_kind()]);
    assert!(spec.reads.is_empty());
}

#[test]
fn a_new_object_asks_for_its_config_map() {
    let view = WorldView::new(primary(json!({"target": "world", "greeting": "hello"})));
    let outcome = {{kind}}Reconciler::reconcile(view).unwrap();

    let children = outcome.desired_children().unwrap();
    assert_eq!(children.len(), 1);
    assert_eq!(children[0]["metadata"]["name"], "demo");
    assert_eq!(children[0]["metadata"]["labels"][MANAGED_BY_LABEL], PLUGIN_NAME);
    assert_eq!(children[0]["data"], json!({"greeting": "hello", "target": "world"}));
    assert_eq!(outcome.desired_status(), Some(&json!({"configMap": "demo", "keys": 2})));
    assert_eq!(ready(&outcome), (ConditionStatus::False, "ConfigMapCreating"));
    assert_eq!(outcome.events().len(), 1);
    assert_eq!(outcome.events()[0].reason, "Creating");
}

#[test]
fn ready_once_the_config_map_holds_the_data() {
    let view = WorldView::new(primary(json!({"greeting": "hello"})))
        .with_child(observed_config_map(json!({"greeting": "hello"})));
    let outcome = {{kind}}Reconciler::reconcile(view).unwrap();

    assert_eq!(ready(&outcome), (ConditionStatus::True, "ConfigMapReady"));
    assert_eq!(outcome.condition_of_type("Ready").unwrap().message, "ConfigMap demo holds 1 key(s)");
    assert!(outcome.events().is_empty());
}

#[test]
fn a_changed_spec_is_not_ready_until_the_config_map_follows() {
    let view = WorldView::new(primary(json!({"greeting": "bonjour"})))
        .with_child(observed_config_map(json!({"greeting": "hello"})));
    let outcome = {{kind}}Reconciler::reconcile(view).unwrap();

    assert_eq!(outcome.desired_children().unwrap()[0]["data"], json!({"greeting": "bonjour"}));
    assert_eq!(ready(&outcome), (ConditionStatus::False, "ConfigMapUpdating"));
}

#[test]
fn an_invalid_key_is_the_plugins_error() {
    let error = {{kind}}Reconciler::reconcile(WorldView::new(primary(json!({"not a key": "x"})))).unwrap_err();
    assert!(error.message().contains("`not a key` is not a valid ConfigMap key"), "{error}");
}
