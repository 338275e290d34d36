//! Behaviour of the plugin on world views built with [`SetFixture`](crate::fixtures::SetFixture).

use std::time::Duration;

use serde_json::json;
use wasm_reconciler_sdk::{ConditionStatus, Event, Gvk, Reconciler};

use crate::ConfigMapSetReconciler;
use crate::fixtures::{SetFixture, child_names};
use crate::replicas::{REQUEUE_WHILE_CONVERGING, child_index};

fn condition(outcome: &wasm_reconciler_sdk::Outcome, condition_type: &str) -> (ConditionStatus, String) {
    let condition = outcome.condition_of_type(condition_type).expect("condition present");
    (condition.status, condition.reason.clone())
}

#[test]
fn describes_configmapsets_owning_configmaps_with_a_finalizer() {
    let spec = ConfigMapSetReconciler::describe();
    assert_eq!(
        spec.primary,
        Gvk::new("examples.wasm-reconciler.io", "v1alpha1", "ConfigMapSet")
    );
    assert_eq!(spec.owns, [Gvk::new("", "v1", "ConfigMap")]);
    assert_eq!(spec.finalizer.as_deref(), Some("examples.wasm-reconciler.io/drain"));
}

#[test]
fn fresh_set_creates_every_replica_from_the_template() {
    let outcome = SetFixture::test().reconcile();
    assert_eq!(child_names(&outcome), ["demo-0", "demo-1", "demo-2"]);
    let child = &outcome.desired_children().unwrap()[1];
    assert_eq!(
        child["metadata"]["labels"],
        json!({"app": "demo", "examples.wasm-reconciler.io/configmapset": "demo"})
    );
    assert_eq!(child["data"], json!({"greeting": "hello"}));
    assert_eq!(
        outcome.desired_status(),
        Some(&json!({"replicas": 0, "readyReplicas": 0}))
    );
    assert_eq!(
        condition(&outcome, "Ready"),
        (ConditionStatus::False, "ReplicasNotReady".into())
    );
    assert_eq!(
        condition(&outcome, "Progressing"),
        (ConditionStatus::True, "ScalingUp".into())
    );
    assert_eq!(
        outcome.events(),
        [Event::normal(
            "ScalingUp",
            "creating 3 ConfigMap(s), 0 still missing after this round"
        )]
    );
    assert_eq!(outcome.requeue_interval(), None);
}

#[test]
fn slow_start_creates_at_most_burst_and_requeues() {
    let outcome = SetFixture::test().replicas(5).burst(2).reconcile();
    assert_eq!(child_names(&outcome), ["demo-0", "demo-1"]);
    assert_eq!(outcome.requeue_interval(), Some(REQUEUE_WHILE_CONVERGING));
    assert_eq!(
        outcome.events()[0].note,
        "creating 2 ConfigMap(s), 3 still missing after this round"
    );
}

#[test]
fn slow_start_continues_from_what_exists() {
    let outcome = SetFixture::test()
        .replicas(5)
        .burst(2)
        .with_replicas([0, 1])
        .reconcile();
    assert_eq!(child_names(&outcome), ["demo-0", "demo-1", "demo-2", "demo-3"]);
    assert_eq!(outcome.requeue_interval(), Some(REQUEUE_WHILE_CONVERGING));
}

#[test]
fn last_burst_does_not_requeue() {
    let outcome = SetFixture::test()
        .replicas(4)
        .burst(2)
        .with_replicas([0, 1])
        .reconcile();
    assert_eq!(child_names(&outcome).len(), 4);
    assert_eq!(outcome.requeue_interval(), None);
}

#[test]
fn steady_state_is_ready_and_stable() {
    let outcome = SetFixture::test().with_replicas(0..3).reconcile();
    assert_eq!(child_names(&outcome), ["demo-0", "demo-1", "demo-2"]);
    assert_eq!(
        outcome.desired_status(),
        Some(&json!({"replicas": 3, "readyReplicas": 3}))
    );
    assert_eq!(
        condition(&outcome, "Ready"),
        (ConditionStatus::True, "ReplicasReady".into())
    );
    assert_eq!(
        condition(&outcome, "Progressing"),
        (ConditionStatus::False, "Stable".into())
    );
    assert!(outcome.events().is_empty());
    assert_eq!(outcome.requeue_interval(), None);
}

#[test]
fn scale_down_removes_the_highest_indexes_first_within_burst() {
    let outcome = SetFixture::test().replicas(1).burst(2).with_replicas(0..4).reconcile();
    // demo-3 and demo-2 go this round; demo-1 is carried over to the next.
    assert_eq!(child_names(&outcome), ["demo-0", "demo-1"]);
    assert_eq!(
        condition(&outcome, "Progressing"),
        (ConditionStatus::True, "ScalingDown".into())
    );
    assert_eq!(
        condition(&outcome, "Ready"),
        (ConditionStatus::False, "ReplicasNotReady".into())
    );
    assert_eq!(
        outcome.events(),
        [Event::normal(
            "ScalingDown",
            "deleting 2 ConfigMap(s), 1 excess left after this round"
        )]
    );
    assert_eq!(outcome.requeue_interval(), Some(REQUEUE_WHILE_CONVERGING));
}

#[test]
fn carried_over_children_keep_only_managed_fields() {
    let outcome = SetFixture::test().replicas(0).burst(1).with_replicas(0..2).reconcile();
    let kept = &outcome.desired_children().unwrap()[0];
    assert_eq!(kept["metadata"]["name"], "demo-0");
    assert_eq!(kept["data"], json!({"greeting": "hello"}));
    assert!(kept["metadata"].get("uid").is_none());
    assert!(kept["metadata"].get("namespace").is_none());
}

#[test]
fn children_that_are_not_replicas_are_deleted_first() {
    let outcome = SetFixture::test()
        .replicas(1)
        .burst(1)
        .with_replicas(0..3)
        .with_child_named("demo-old")
        .reconcile();
    assert_eq!(child_names(&outcome), ["demo-0", "demo-2", "demo-1"]);
}

#[test]
fn scale_to_zero_deletes_everything() {
    let outcome = SetFixture::test().replicas(0).with_replicas(0..2).reconcile();
    assert_eq!(child_names(&outcome), Vec::<String>::new());
    let outcome = SetFixture::test().replicas(0).reconcile();
    assert_eq!(outcome.desired_children(), Some(&[][..]));
    assert_eq!(
        condition(&outcome, "Ready"),
        (ConditionStatus::True, "ReplicasReady".into())
    );
}

#[test]
fn drifted_replica_is_corrected_and_reported_as_updating() {
    let outcome = SetFixture::test()
        .with_replicas([0, 2])
        .with_drifted_replica(1)
        .reconcile();
    let children = outcome.desired_children().unwrap();
    assert_eq!(children[1]["metadata"]["name"], "demo-1");
    assert_eq!(children[1]["data"], json!({"greeting": "hello"}));
    assert_eq!(
        outcome.desired_status(),
        Some(&json!({"replicas": 3, "readyReplicas": 2}))
    );
    assert_eq!(
        condition(&outcome, "Progressing"),
        (ConditionStatus::True, "Updating".into())
    );
    assert!(outcome.events().is_empty());
}

#[test]
fn template_change_makes_existing_replicas_drift() {
    let outcome = SetFixture::test().with_replicas(0..3).data("extra", "1").reconcile();
    assert_eq!(
        outcome.desired_status(),
        Some(&json!({"replicas": 3, "readyReplicas": 0}))
    );
    assert_eq!(outcome.desired_children().unwrap()[0]["data"]["extra"], "1");
}

#[test]
fn entries_added_by_others_are_not_drift() {
    let child = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "demo-0", "labels": {
            "app": "demo", "examples.wasm-reconciler.io/configmapset": "demo", "team": "x"}},
        "data": {"greeting": "hello", "added-by-someone": "yes"},
    });
    let outcome = SetFixture::test().replicas(1).with_child(child).reconcile();
    assert_eq!(
        condition(&outcome, "Ready"),
        (ConditionStatus::True, "ReplicasReady".into())
    );
}

#[test]
fn deleting_drains_highest_indexes_in_bursts() {
    let outcome = SetFixture::test().burst(2).with_replicas(0..5).deleting().reconcile();
    assert_eq!(child_names(&outcome), ["demo-2", "demo-1", "demo-0"]);
    assert!(!outcome.is_finalized());
    assert_eq!(outcome.requeue_interval(), Some(REQUEUE_WHILE_CONVERGING));
    assert_eq!(
        condition(&outcome, "Progressing"),
        (ConditionStatus::True, "Draining".into())
    );
    assert_eq!(
        condition(&outcome, "Ready"),
        (ConditionStatus::False, "Deleting".into())
    );
}

#[test]
fn deleting_the_last_burst_still_waits_for_the_children_to_go() {
    let outcome = SetFixture::test().burst(5).with_replicas(0..2).deleting().reconcile();
    assert_eq!(outcome.desired_children(), Some(&[][..]));
    assert!(!outcome.is_finalized());
}

#[test]
fn deleting_with_no_children_left_is_finalized() {
    let outcome = SetFixture::test().deleting().reconcile();
    assert_eq!(outcome.desired_children(), Some(&[][..]));
    assert!(outcome.is_finalized());
    assert_eq!(outcome.requeue_interval(), None);
    assert_eq!(
        condition(&outcome, "Progressing"),
        (ConditionStatus::False, "Drained".into())
    );
}

#[test]
fn burst_defaults_to_ten() {
    let outcome = SetFixture::test().replicas(25).reconcile();
    assert_eq!(child_names(&outcome).len(), 10);
}

#[test]
fn invalid_specs_are_plugin_errors() {
    let negative = ConfigMapSetReconciler::reconcile(SetFixture::test().replicas(-1).view()).unwrap_err();
    assert_eq!(negative.message(), "spec.replicas must not be negative, got -1");
    let zero_burst = ConfigMapSetReconciler::reconcile(SetFixture::test().burst(0).view()).unwrap_err();
    assert_eq!(zero_burst.message(), "spec.burst must be at least 1, got 0");
    let no_spec = wasm_reconciler_sdk::WorldView::new(json!({"metadata": {"name": "x"}}));
    let error = ConfigMapSetReconciler::reconcile(no_spec).unwrap_err();
    assert!(error.message().starts_with("reading the primary object: "), "{error}");
    let bad_key = ConfigMapSetReconciler::reconcile(SetFixture::test().data("check key", "v").view()).unwrap_err();
    assert_eq!(
        bad_key.message(),
        "spec.template.data: `check key` is not a valid ConfigMap key: at most 253 letters, digits, '-', '_' and \
         '.', and not `.` or `..`"
    );
}

#[test]
fn a_template_the_api_server_would_refuse_does_not_hold_up_the_drain() {
    let fixture = SetFixture::test().data("check key", "v").with_replicas(0..1).deleting();
    let outcome = ConfigMapSetReconciler::reconcile(fixture.view()).unwrap();
    assert_eq!(outcome.desired_children(), Some(&[][..]));
}

#[test]
fn child_index_accepts_only_canonical_replica_names() {
    assert_eq!(child_index("demo", "demo-2"), Some(2));
    assert_eq!(child_index("demo", "demo-01"), None);
    assert_eq!(child_index("demo", "demo-x"), None);
    assert_eq!(child_index("demo", "demox-2"), None);
    assert_eq!(child_index("demo", "demo-1-2"), None);
    assert_eq!(child_index("demo-1", "demo-1-2"), Some(2));
}

#[test]
fn native_entry_point_round_trips_through_wire_types() {
    let fixture = SetFixture::test().replicas(1);
    let outcome =
        wasm_reconciler_sdk::native::reconcile::<ConfigMapSetReconciler>(wasm_reconciler_sdk::wire::WorldView {
            primary: fixture.primary().to_string(),
            children: Vec::new(),
            config: "{}".into(),
            deleting: false,
            attempt: 0,
        })
        .unwrap();
    assert_eq!(outcome.children.unwrap().len(), 1);
    assert_eq!(
        Duration::from_millis(outcome.requeue_after_ms.unwrap_or(0)),
        Duration::ZERO
    );
}
