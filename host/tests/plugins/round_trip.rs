//! SDK round trip: a guest built with the SDK, run in the host, exercising every part of the contract — and
//! the same logic compiled natively through the same host path gives the same outcome.

use serde_json::{Value, json};
use wasm_reconciler::plugin::{
    ConditionStatus, EventType, Gvk, Limits, NativePlugin, Outcome, ReconcileError, WorldView,
};
use wasm_reconciler_artifacts::ECHO;

fn world() -> Vec<Value> {
    vec![
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default", "labels": {"tier": "front"}}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db", "namespace": "default", "labels": {"tier": "back"}}}),
    ]
}

fn view(config: Value) -> WorldView {
    let primary = json!({
        "apiVersion": "test.wasm-reconciler.io/v1", "kind": "Echo",
        "metadata": {"name": "e1", "namespace": "default", "generation": 3}
    });
    let children =
        [json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "e1-a", "namespace": "default"}})];
    WorldView {
        deleting: true,
        attempt: 2,
        ..WorldView::from_json(&primary, &children, &config)
    }
}

fn full_config() -> Value {
    json!({
        "children": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "e1-b"}, "data": {"k": "v"}}],
        "reads": [
            {"apiVersion": "v1", "kind": "Service", "namespace": "default", "name": "web"},
            {"apiVersion": "v1", "kind": "Service", "namespace": "default", "name": "absent"},
            {"apiVersion": "v1", "kind": "Pod", "namespace": "default", "name": "p"}
        ],
        "list": {"apiVersion": "v1", "kind": "Service", "namespace": "default", "selector": "tier in (front)"},
        "requeueAfterMs": 1500,
        "finalize": true
    })
}

fn check_full_outcome(outcome: &Outcome) {
    let status = outcome.status.as_ref().expect("status");
    assert_eq!(status["echo"]["name"], "e1");
    assert_eq!(status["echo"]["generation"], 3);
    assert_eq!(status["echo"]["attempt"], 2);
    assert_eq!(status["echo"]["deleting"], true);
    assert_eq!(status["echo"]["children"], json!(["e1-a"]));
    assert_eq!(status["echo"]["config"]["requeueAfterMs"], 1500);
    assert_eq!(status["reads"]["Service/web"], json!({"found": true}));
    assert_eq!(status["reads"]["Service/absent"], json!({"found": false}));
    let undeclared = status["reads"]["Pod/p"]["error"]
        .as_str()
        .expect("reading an undeclared kind fails");
    assert!(undeclared.contains("kind v1/Pod is not declared"), "{undeclared}");
    assert_eq!(status["listed"], json!(["web"]));

    let children = outcome.children.as_ref().expect("children");
    assert_eq!(children.len(), 1);
    assert_eq!(children[0]["data"]["k"], "v");
    assert_eq!(outcome.conditions.len(), 1);
    assert_eq!(outcome.conditions[0].condition_type, "Ready");
    assert_eq!(outcome.conditions[0].status, ConditionStatus::True);
    assert_eq!(outcome.conditions[0].reason, "Echoed");
    assert_eq!(outcome.events.len(), 1);
    assert_eq!(outcome.events[0].event_type, EventType::Normal);
    assert_eq!(outcome.events[0].note, "reconciled attempt 2");
    assert_eq!(outcome.requeue_after, Some(std::time::Duration::from_millis(1500)));
    assert!(outcome.finalized);
}

#[test]
fn describe_round_trips_the_spec() {
    let plugin = super::load(ECHO, Limits::default());
    let spec = plugin.spec();
    assert_eq!(spec.primary, Gvk::new("test.wasm-reconciler.io", "v1", "Echo"));
    assert_eq!(
        spec.owns,
        vec![Gvk::new("", "v1", "ConfigMap"), Gvk::new("", "v1", "Secret")]
    );
    assert_eq!(spec.reads, vec![Gvk::new("", "v1", "Service")]);
    assert_eq!(spec.finalizer.as_deref(), Some("test.wasm-reconciler.io/echo"));
    assert_eq!(spec.resync_seconds, Some(3600));
    assert_eq!(plugin.wit_version(), "0.1.0");
}

#[test]
fn every_part_of_the_contract_round_trips() {
    let plugin = super::load(ECHO, Limits::default());
    let outcome = plugin
        .reconcile(view(full_config()), super::reader(world()))
        .expect("reconcile");
    check_full_outcome(&outcome);
}

#[test]
fn native_and_wasm_paths_agree() {
    let wasm = super::load(ECHO, Limits::default());
    let native = NativePlugin::new::<test_guest_echo::Echo>(Limits::default());
    assert_eq!(native.spec(), wasm.spec());
    let from_wasm = wasm.reconcile(view(full_config()), super::reader(world())).unwrap();
    let from_native = native.reconcile(view(full_config()), super::reader(world())).unwrap();
    check_full_outcome(&from_native);
    assert_eq!(from_wasm, from_native);
}

#[test]
fn no_children_in_the_outcome_means_leave_them_alone() {
    let plugin = super::load(ECHO, Limits::default());
    let outcome = plugin.reconcile(view(json!({})), super::reader(vec![])).unwrap();
    assert_eq!(outcome.children, None);
    let outcome = plugin
        .reconcile(view(json!({"children": []})), super::reader(vec![]))
        .unwrap();
    assert_eq!(outcome.children, Some(vec![]));
    assert!(!outcome.finalized, "finalize not asked for");
}

#[test]
fn the_plugins_own_error_comes_back_verbatim() {
    let plugin = super::load(ECHO, Limits::default());
    let error = plugin.reconcile(view(json!({"fail": "database unreachable"})), super::reader(vec![]));
    assert!(
        matches!(&error, Err(ReconcileError::Plugin(m)) if m == "database unreachable"),
        "{error:?}"
    );
    let error = plugin
        .reconcile(view(json!({"fail": 42})), super::reader(vec![]))
        .unwrap_err();
    let ReconcileError::Plugin(message) = error else {
        panic!("expected a plugin error")
    };
    assert!(
        message.contains("invalid type"),
        "bad config is the plugin's own error: {message}"
    );
}
