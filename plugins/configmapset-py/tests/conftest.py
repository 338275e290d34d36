"""Shared builders for the plugin's tests: `SetFixture` world views and the golden-file form of an outcome."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from wasm_reconciler import Outcome, WorldView
from wasm_reconciler.wire import WireOutcome

from configmapset import ConfigMapSetReconciler
from configmapset.resource import SET_LABEL

SET_NAME = "demo"
#: The fixtures every language's configmapset must render identically.
FIXTURES = Path(__file__).resolve().parents[2] / "configmapset" / "fixtures"


class SetFixture:
    """A ``ConfigMapSet`` named ``demo`` in namespace ``apps`` and the children observed for it: 3 replicas of
    ``{greeting: hello}`` labelled ``app=demo``, burst left to its default, no children."""

    def __init__(self) -> None:
        self._replicas: Any = 3
        self._burst: Any = None
        self._labels = {"app": "demo"}
        self._data = {"greeting": "hello"}
        self._children: list[dict[str, Any]] = []
        self._deleting = False

    def replicas(self, replicas: Any) -> SetFixture:
        self._replicas = replicas
        return self

    def burst(self, burst: Any) -> SetFixture:
        self._burst = burst
        return self

    def data(self, key: str, value: str) -> SetFixture:
        self._data[key] = value
        return self

    def deleting(self) -> SetFixture:
        self._deleting = True
        return self

    def with_replicas(self, indexes: Any) -> SetFixture:
        for index in indexes:
            self._children.append(self._child(f"{SET_NAME}-{index}", dict(self._data)))
        return self

    def with_drifted_replica(self, index: int) -> SetFixture:
        self._children.append(self._child(f"{SET_NAME}-{index}", {"greeting": "stale"}))
        return self

    def with_child_named(self, name: str) -> SetFixture:
        self._children.append(self._child(name, dict(self._data)))
        return self

    def with_child(self, child: dict[str, Any]) -> SetFixture:
        self._children.append(child)
        return self

    def primary(self) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "replicas": self._replicas,
            "template": {"metadata": {"labels": dict(self._labels)}, "data": dict(self._data)},
        }
        if self._burst is not None:
            spec["burst"] = self._burst
        return {
            "apiVersion": "examples.wasm-reconciler.io/v1alpha1",
            "kind": "ConfigMapSet",
            "metadata": {"name": SET_NAME, "namespace": "apps", "generation": 1},
            "spec": spec,
        }

    def view(self) -> WorldView:
        return WorldView(self.primary(), copy.deepcopy(self._children), deleting=self._deleting)

    def reconcile(self) -> Outcome:
        return ConfigMapSetReconciler().reconcile(self.view())

    def _child(self, name: str, data: dict[str, str]) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "namespace": "apps",
                "uid": f"uid-{name}",
                "labels": {**self._labels, SET_LABEL: SET_NAME},
            },
            "data": data,
        }


def child_names(outcome: Outcome) -> list[str]:
    children = outcome.desired_children
    assert children is not None, "the outcome declares its children"
    return [child["metadata"]["name"] for child in children]


def golden_form(outcome: WireOutcome) -> dict[str, Any]:
    """A wire outcome in the shape of the checked-in ``*.outcome.yaml`` files."""
    rendered: dict[str, Any] = {}
    if outcome.children is not None:
        rendered["children"] = [json.loads(child) for child in outcome.children]
    if outcome.status is not None:
        rendered["status"] = json.loads(outcome.status)
    if outcome.conditions:
        rendered["conditions"] = [
            {"type": c.type, "status": c.status.value, "reason": c.reason, "message": c.message}
            for c in outcome.conditions
        ]
    if outcome.events:
        rendered["events"] = [{"type": e.type.value, "reason": e.reason, "note": e.note} for e in outcome.events]
    if outcome.requeue_after_ms is not None:
        rendered["requeueAfterMs"] = outcome.requeue_after_ms
    rendered["finalized"] = outcome.finalized
    return rendered


@pytest.fixture
def fixture() -> SetFixture:
    return SetFixture()
