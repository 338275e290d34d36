"""Behaviour of the Python configmapset on world views built with `SetFixture`: the same cases as the Rust
plugin's unit tests, and every shared fixture against its golden outcome."""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import FIXTURES, SetFixture, child_names, golden_form
from wasm_reconciler import ConditionStatus, Error, Event, Gvk, Outcome, WorldView
from wasm_reconciler.wire import WireWorldView, reconcile

from configmapset import ConfigMapSetReconciler
from configmapset.replicas import child_index


def condition(outcome: Outcome, type: str) -> tuple[ConditionStatus, str]:
    found = outcome.condition_of_type(type)
    assert found is not None, f"condition {type} present"
    return found.status, found.reason


def test_describes_configmapsets_owning_configmaps_with_a_finalizer() -> None:
    spec = ConfigMapSetReconciler().describe()
    assert spec.primary == Gvk("examples.wasm-reconciler.io", "v1alpha1", "ConfigMapSet")
    assert spec.owns == [Gvk("", "v1", "ConfigMap")]
    assert spec.reads == []
    assert spec.finalizer == "examples.wasm-reconciler.io/drain"
    assert spec.resync_seconds is None


def test_fresh_set_creates_every_replica_from_the_template(fixture: SetFixture) -> None:
    outcome = fixture.reconcile()
    assert child_names(outcome) == ["demo-0", "demo-1", "demo-2"]
    child = outcome.desired_children[1]  # type: ignore[index]
    assert child["metadata"]["labels"] == {"app": "demo", "examples.wasm-reconciler.io/configmapset": "demo"}
    assert child["data"] == {"greeting": "hello"}
    assert outcome.desired_status == {"replicas": 0, "readyReplicas": 0}
    assert condition(outcome, "Ready") == (ConditionStatus.FALSE, "ReplicasNotReady")
    assert condition(outcome, "Progressing") == (ConditionStatus.TRUE, "ScalingUp")
    assert outcome.events == [Event.normal("ScalingUp", "creating 3 ConfigMap(s), 0 still missing after this round")]
    assert outcome.requeue_after_ms is None


def test_slow_start_creates_at_most_burst_and_requeues(fixture: SetFixture) -> None:
    outcome = fixture.replicas(5).burst(2).reconcile()
    assert child_names(outcome) == ["demo-0", "demo-1"]
    assert outcome.requeue_after_ms == 100
    assert outcome.events[0].note == "creating 2 ConfigMap(s), 3 still missing after this round"


def test_slow_start_continues_from_what_exists(fixture: SetFixture) -> None:
    outcome = fixture.replicas(5).burst(2).with_replicas([0, 1]).reconcile()
    assert child_names(outcome) == ["demo-0", "demo-1", "demo-2", "demo-3"]
    assert outcome.requeue_after_ms == 100


def test_last_burst_does_not_requeue(fixture: SetFixture) -> None:
    outcome = fixture.replicas(4).burst(2).with_replicas([0, 1]).reconcile()
    assert len(child_names(outcome)) == 4
    assert outcome.requeue_after_ms is None


def test_steady_state_is_ready_and_stable(fixture: SetFixture) -> None:
    outcome = fixture.with_replicas(range(3)).reconcile()
    assert child_names(outcome) == ["demo-0", "demo-1", "demo-2"]
    assert outcome.desired_status == {"replicas": 3, "readyReplicas": 3}
    assert condition(outcome, "Ready") == (ConditionStatus.TRUE, "ReplicasReady")
    assert condition(outcome, "Progressing") == (ConditionStatus.FALSE, "Stable")
    assert outcome.events == []
    assert outcome.requeue_after_ms is None


def test_scale_down_removes_the_highest_indexes_first_within_burst(fixture: SetFixture) -> None:
    outcome = fixture.replicas(1).burst(2).with_replicas(range(4)).reconcile()
    # demo-3 and demo-2 go this round; demo-1 is carried over to the next.
    assert child_names(outcome) == ["demo-0", "demo-1"]
    assert condition(outcome, "Progressing") == (ConditionStatus.TRUE, "ScalingDown")
    assert condition(outcome, "Ready") == (ConditionStatus.FALSE, "ReplicasNotReady")
    assert outcome.events == [Event.normal("ScalingDown", "deleting 2 ConfigMap(s), 1 excess left after this round")]
    assert outcome.requeue_after_ms == 100


def test_carried_over_children_keep_only_managed_fields(fixture: SetFixture) -> None:
    outcome = fixture.replicas(0).burst(1).with_replicas(range(2)).reconcile()
    kept = outcome.desired_children[0]  # type: ignore[index]
    assert kept["metadata"]["name"] == "demo-0"
    assert kept["data"] == {"greeting": "hello"}
    assert "uid" not in kept["metadata"]
    assert "namespace" not in kept["metadata"]


def test_children_that_are_not_replicas_are_deleted_first(fixture: SetFixture) -> None:
    outcome = fixture.replicas(1).burst(1).with_replicas(range(3)).with_child_named("demo-old").reconcile()
    assert child_names(outcome) == ["demo-0", "demo-2", "demo-1"]


def test_scale_to_zero_deletes_everything() -> None:
    assert child_names(SetFixture().replicas(0).with_replicas(range(2)).reconcile()) == []
    outcome = SetFixture().replicas(0).reconcile()
    assert outcome.desired_children == []
    assert condition(outcome, "Ready") == (ConditionStatus.TRUE, "ReplicasReady")


def test_drifted_replica_is_corrected_and_reported_as_updating(fixture: SetFixture) -> None:
    outcome = fixture.with_replicas([0, 2]).with_drifted_replica(1).reconcile()
    children = outcome.desired_children
    assert children is not None
    assert children[1]["metadata"]["name"] == "demo-1"
    assert children[1]["data"] == {"greeting": "hello"}
    assert outcome.desired_status == {"replicas": 3, "readyReplicas": 2}
    assert condition(outcome, "Progressing") == (ConditionStatus.TRUE, "Updating")
    assert outcome.events == []


def test_template_change_makes_existing_replicas_drift(fixture: SetFixture) -> None:
    outcome = fixture.with_replicas(range(3)).data("extra", "1").reconcile()
    assert outcome.desired_status == {"replicas": 3, "readyReplicas": 0}
    assert outcome.desired_children[0]["data"]["extra"] == "1"  # type: ignore[index]


def test_entries_added_by_others_are_not_drift(fixture: SetFixture) -> None:
    child = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "demo-0",
            "labels": {"app": "demo", "examples.wasm-reconciler.io/configmapset": "demo", "team": "x"},
        },
        "data": {"greeting": "hello", "added-by-someone": "yes"},
    }
    outcome = fixture.replicas(1).with_child(child).reconcile()
    assert condition(outcome, "Ready") == (ConditionStatus.TRUE, "ReplicasReady")


def test_deleting_drains_highest_indexes_in_bursts(fixture: SetFixture) -> None:
    outcome = fixture.burst(2).with_replicas(range(5)).deleting().reconcile()
    assert child_names(outcome) == ["demo-2", "demo-1", "demo-0"]
    assert not outcome.is_finalized
    assert outcome.requeue_after_ms == 100
    assert condition(outcome, "Progressing") == (ConditionStatus.TRUE, "Draining")
    assert condition(outcome, "Ready") == (ConditionStatus.FALSE, "Deleting")


def test_deleting_the_last_burst_still_waits_for_the_children_to_go(fixture: SetFixture) -> None:
    outcome = fixture.burst(5).with_replicas(range(2)).deleting().reconcile()
    assert outcome.desired_children == []
    assert not outcome.is_finalized


def test_deleting_with_no_children_left_is_finalized(fixture: SetFixture) -> None:
    outcome = fixture.deleting().reconcile()
    assert outcome.desired_children == []
    assert outcome.is_finalized
    assert outcome.requeue_after_ms is None
    assert condition(outcome, "Progressing") == (ConditionStatus.FALSE, "Drained")


def test_burst_defaults_to_ten(fixture: SetFixture) -> None:
    assert len(child_names(fixture.replicas(25).reconcile())) == 10


@pytest.mark.parametrize(
    ("fixture_change", "message"),
    [
        (lambda f: f.replicas(-1), "spec.replicas must not be negative, got -1"),
        (lambda f: f.burst(0), "spec.burst must be at least 1, got 0"),
        (lambda f: f.replicas("3"), 'reading the primary object: invalid type: string "3", expected i32'),
        (lambda f: f.replicas(2**31), "reading the primary object: invalid value: integer `2147483648`, expected i32"),
        (lambda f: f.burst(1.5), "reading the primary object: invalid type: floating point `1.5`, expected i32"),
        (
            lambda f: f.data("check key", "v"),
            "spec.template.data: `check key` is not a valid ConfigMap key: at most 253 letters, digits, '-', '_' and "
            "'.', and not `.` or `..`",
        ),
    ],
)
def test_invalid_specs_are_plugin_errors(fixture: SetFixture, fixture_change, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(Error) as raised:
        fixture_change(fixture).reconcile()
    assert str(raised.value) == message


def test_a_set_without_spec_names_the_missing_field() -> None:
    with pytest.raises(Error, match=r"^reading the primary object: missing field `spec`$"):
        ConfigMapSetReconciler().reconcile(WorldView({"metadata": {"name": "x"}}))


def test_a_malformed_child_names_itself(fixture: SetFixture) -> None:
    bad = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bad"}, "data": 5}
    with pytest.raises(Error, match=r"^reading child v1/ConfigMap bad: invalid type: integer `5`, expected a map$"):
        fixture.with_child(bad).reconcile()


def test_child_index_accepts_only_canonical_replica_names() -> None:
    assert child_index("demo", "demo-2") == 2
    assert child_index("demo", "demo-01") is None
    assert child_index("demo", "demo-+1") is None
    assert child_index("demo", "demo-x") is None
    assert child_index("demo", "demox-2") is None
    assert child_index("demo", "demo-1-2") is None
    assert child_index("demo-1", "demo-1-2") == 2
    assert child_index("demo", "demo-4294967296") is None


def test_wire_entry_point_round_trips(fixture: SetFixture) -> None:
    outcome = reconcile(ConfigMapSetReconciler(), WireWorldView(json.dumps(fixture.replicas(1).primary())))
    assert outcome.children is not None and len(outcome.children) == 1
    assert outcome.requeue_after_ms is None


@pytest.mark.parametrize("world", sorted(FIXTURES.glob("*.world.yaml")), ids=lambda path: path.name)
def test_shared_fixture_renders_its_golden_outcome(world) -> None:  # type: ignore[no-untyped-def]
    fixture = yaml.safe_load(world.read_text())
    expected = yaml.safe_load(world.with_name(world.name.replace(".world.yaml", ".outcome.yaml")).read_text())
    view = WireWorldView(
        primary=json.dumps(fixture["primary"]),
        children=[json.dumps(child) for child in fixture.get("children") or []],
        config=json.dumps(fixture.get("config") or {}),
        deleting=bool(fixture.get("deleting", False)),
        attempt=int(fixture.get("attempt", 0)),
    )
    assert golden_form(reconcile(ConfigMapSetReconciler(), view)) == expected


def test_fixtures_are_found() -> None:
    assert len(list(FIXTURES.glob("*.world.yaml"))) >= 7
