"""Unit tests of the replica logic and the status merge (``python -m unittest`` in this directory)."""

from __future__ import annotations

import unittest

import replicas
from replicas import Child, ConditionState
from status import desired_status

SPEC = {"replicas": 5, "burst": 2, "template": {"metadata": {"labels": {"app": "demo"}}, "data": {"greeting": "hello"}}}


def children(spec: dict, *indexes: int) -> list[Child]:
    return [
        Child(replicas.child_name("demo", i), f"uid-{i}", replicas.desired_labels("demo", spec), {}, replicas.desired_data(spec))
        for i in indexes
    ]


class ReplicaTests(unittest.TestCase):
    def test_slow_start_creates_at_most_burst_and_requeues(self) -> None:
        round_ = replicas.converge("demo", SPEC, children(SPEC, 0, 1))
        self.assertEqual(round_.apply, [2, 3])
        self.assertTrue(round_.requeue)
        self.assertEqual(round_.events, [("ScalingUp", "creating 2 ConfigMap(s), 1 still missing after this round")])

    def test_steady_state_writes_nothing_and_is_ready(self) -> None:
        spec = {**SPEC, "replicas": 3}
        round_ = replicas.converge("demo", spec, children(spec, 0, 1, 2))
        self.assertEqual((round_.apply, round_.delete, round_.requeue), ([], [], False))
        self.assertTrue(round_.conditions[0].status)
        self.assertEqual(round_.conditions[1].reason, "Stable")

    def test_scale_down_deletes_highest_indexes_first(self) -> None:
        spec = {**SPEC, "replicas": 1}
        round_ = replicas.converge("demo", spec, children(spec, 0, 1, 2, 3))
        self.assertEqual([child.name for child in round_.delete], ["demo-3", "demo-2"])

    def test_drain_finalizes_only_when_no_child_is_left(self) -> None:
        self.assertFalse(replicas.drain("demo", SPEC, children(SPEC, 0, 1, 2)).finalized)
        self.assertTrue(replicas.drain("demo", SPEC, []).finalized)

    def test_transition_time_moves_only_when_the_status_changes(self) -> None:
        round_ = replicas.converge("demo", SPEC, [])
        ok = ConditionState("Reconciled", True, "Succeeded", "ok")
        first = desired_status(None, round_, ok, 1, "2026-01-01T00:00:00Z")
        again = desired_status(first, round_, ok, 1, "2026-01-01T00:01:00Z")
        self.assertEqual(first, again)


if __name__ == "__main__":
    unittest.main()
