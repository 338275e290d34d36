"""The reconciler on world views built in memory: ``pytest``, no WebAssembly build and no cluster."""

from __future__ import annotations

from typing import Any

import pytest
from wasm_reconciler import ConditionStatus, Error, Outcome, WorldView

from app import CONFIG_MAP, MANAGED_BY_LABEL, PLUGIN_NAME, PRIMARY, {{kind}}Reconciler


def primary(data: dict[str, Any]) -> dict[str, Any]:
    """A {{kind}} named ``demo`` whose spec holds `data`."""
    return {
        "apiVersion": "{{api_version}}",
        "kind": "{{kind}}",
        "metadata": {"name": "demo", "namespace": "default", "generation": 1},
        "spec": {"data": data},
    }


def observed_config_map(data: dict[str, str]) -> dict[str, Any]:
    """The ConfigMap of ``demo`` as the host observes it."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "demo", "namespace": "default", "uid": "uid-demo", "labels": {MANAGED_BY_LABEL: PLUGIN_NAME}},
        "data": data,
    }


def reconcile(view: WorldView) -> Outcome:
    return {{kind}}Reconciler().reconcile(view)


def ready(outcome: Outcome) -> tuple[ConditionStatus, str]:
    condition = outcome.condition_of_type("Ready")
    assert condition is not None, "a Ready condition"
    return condition.status, condition.reason


def test_describes_the_kind_and_the_config_maps_it_owns() -> None:
    spec = {{kind}}Reconciler().describe()
    assert spec.primary == PRIMARY
    assert spec.owns == [CONFIG_MAP]
    assert spec.reads == []


def test_a_new_object_asks_for_its_config_map() -> None:
    outcome = reconcile(WorldView(primary({"target": "world", "greeting": "hello"})))
    children = outcome.desired_children
    assert children is not None
    assert children == [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "demo", "labels": {MANAGED_BY_LABEL: PLUGIN_NAME}},
            "data": {"greeting": "hello", "target": "world"},
        }
    ]
    assert list(children[0]["data"]) == ["greeting", "target"]
    assert outcome.desired_status == {"configMap": "demo", "keys": 2}
    assert ready(outcome) == (ConditionStatus.FALSE, "ConfigMapCreating")
    assert [event.reason for event in outcome.events] == ["Creating"]


def test_ready_once_the_config_map_holds_the_data() -> None:
    view = WorldView(primary({"greeting": "hello"}), children=[observed_config_map({"greeting": "hello"})])
    outcome = reconcile(view)
    assert ready(outcome) == (ConditionStatus.TRUE, "ConfigMapReady")
    condition = outcome.condition_of_type("Ready")
    assert condition is not None and condition.message == "ConfigMap demo holds 1 key(s)"
    assert outcome.events == []


def test_a_changed_spec_is_not_ready_until_the_config_map_follows() -> None:
    view = WorldView(primary({"greeting": "bonjour"}), children=[observed_config_map({"greeting": "hello"})])
    outcome = reconcile(view)
    assert outcome.desired_children is not None
    assert outcome.desired_children[0]["data"] == {"greeting": "bonjour"}
    assert ready(outcome) == (ConditionStatus.FALSE, "ConfigMapUpdating")


def test_an_invalid_key_is_the_plugins_error() -> None:
    with pytest.raises(Error, match="`not a key` is not a valid ConfigMap key"):
        reconcile(WorldView(primary({"not a key": "x"})))
