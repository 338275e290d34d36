"""The replica logic, free of I/O: which ConfigMaps to write and delete this round, and what to report."""

from __future__ import annotations

import dataclasses
from typing import Any

SET_LABEL = "examples.wasm-reconciler.io/configmapset"
DEFAULT_BURST = 10


@dataclasses.dataclass(frozen=True)
class Child:
    """An observed ConfigMap of a set: only the fields this controller reads."""

    name: str
    uid: str
    labels: dict[str, str]
    annotations: dict[str, str]
    data: dict[str, str]


@dataclasses.dataclass(frozen=True)
class ConditionState:
    """A condition this controller reports."""

    type: str
    status: bool
    reason: str
    message: str


@dataclasses.dataclass
class Round:
    """What one handler call does."""

    apply: list[int] = dataclasses.field(default_factory=list)
    """Indexes of replicas to write: missing ones within the burst and drifted ones."""
    delete: list[Child] = dataclasses.field(default_factory=list)
    replicas: int = 0
    ready_replicas: int = 0
    conditions: list[ConditionState] = dataclasses.field(default_factory=list)
    events: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    """(reason, note) of Normal events."""
    requeue: bool = False
    finalized: bool = False


def converge(set_name: str, spec: dict[str, Any], observed: list[Child]) -> Round:
    """One round of a set that is not being deleted.

    Missing replicas are created lowest index first, at most ``burst``; drifted replicas are rewritten; at most
    ``burst`` excess children are deleted (names that are not replicas first, then the highest indexes).
    """
    replicas = max(int(spec.get("replicas", 0)), 0)
    burst = burst_of(spec)
    round_ = observed_counts(set_name, spec, observed)
    by_name = {child.name: child for child in observed}
    missing = created = drifted = 0
    for index in range(replicas):
        child = by_name.get(child_name(set_name, index))
        if child is None:
            missing += 1
            if created < burst:
                created += 1
                round_.apply.append(index)
        elif not matches_template(set_name, spec, child):
            drifted += 1
            round_.apply.append(index)
    excess = scale_down_order(set_name, replicas, observed)
    deleted = min(len(excess), burst)
    round_.delete = excess[:deleted]

    ready = round_.ready_replicas == int(spec.get("replicas", 0)) and not excess
    round_.conditions.append(
        ConditionState(
            "Ready",
            ready,
            "ReplicasReady" if ready else "ReplicasNotReady",
            f"{round_.ready_replicas} of {round_.replicas} observed ConfigMaps match the template; "
            f"{spec.get('replicas', 0)} desired, {len(excess)} excess",
        )
    )
    round_.conditions.append(progressing(missing, len(excess), drifted))
    if created:
        round_.events.append(
            ("ScalingUp", f"creating {created} ConfigMap(s), {missing - created} still missing after this round")
        )
    if deleted:
        round_.events.append(
            ("ScalingDown", f"deleting {deleted} ConfigMap(s), {len(excess) - deleted} excess left after this round")
        )
    round_.requeue = missing > created or len(excess) > deleted
    return round_


def drain(set_name: str, spec: dict[str, Any], observed: list[Child]) -> Round:
    """One round of a set being deleted: up to ``burst`` children go; finalized once none is observed."""
    round_ = observed_counts(set_name, spec, observed)
    round_.conditions.append(ConditionState("Ready", False, "Deleting", "the ConfigMapSet is being deleted"))
    if not observed:
        round_.conditions.append(ConditionState("Progressing", False, "Drained", "no ConfigMap left"))
        round_.finalized = True
        return round_
    order = scale_down_order(set_name, 0, observed)
    deleted = min(len(order), burst_of(spec))
    message = f"deleting {deleted} ConfigMap(s), {len(order) - deleted} left after this round"
    round_.delete = order[:deleted]
    round_.conditions.append(ConditionState("Progressing", True, "Draining", message))
    round_.events.append(("Draining", message))
    round_.requeue = True
    return round_


def child_name(set_name: str, index: int) -> str:
    """``<set>-<index>``."""
    return f"{set_name}-{index}"


def child_index(set_name: str, name: str) -> int | None:
    """The replica index of a child name, if it is exactly ``<set>-<index>``."""
    prefix = f"{set_name}-"
    if not name.startswith(prefix):
        return None
    digits = name[len(prefix):]
    if not digits.isascii() or not digits.isdigit() or str(int(digits)) != digits:
        return None
    return int(digits)


def desired_labels(set_name: str, spec: dict[str, Any]) -> dict[str, str]:
    """Template labels plus the set label."""
    labels = dict(template_metadata(spec).get("labels") or {})
    labels[SET_LABEL] = set_name
    return labels


def desired_annotations(spec: dict[str, Any]) -> dict[str, str]:
    """Template annotations."""
    return dict(template_metadata(spec).get("annotations") or {})


def desired_data(spec: dict[str, Any]) -> dict[str, str]:
    """Template data."""
    return dict((spec.get("template") or {}).get("data") or {})


def matches_template(set_name: str, spec: dict[str, Any], child: Child) -> bool:
    """Whether a child carries every desired label, annotation and data entry (extra entries are not drift)."""
    return (
        contains_all(child.labels, desired_labels(set_name, spec))
        and contains_all(child.annotations, desired_annotations(spec))
        and contains_all(child.data, desired_data(spec))
    )


def scale_down_order(set_name: str, replicas: int, observed: list[Child]) -> list[Child]:
    """Children that are not desired replicas, in deletion order: non-replica names first, then highest indexes."""
    excess = []
    for child in observed:
        index = child_index(set_name, child.name)
        if index is None or index >= replicas:
            excess.append((index, child))
    non_replicas = sorted((child for index, child in excess if index is None), key=lambda child: child.name)
    replicas_ = [child for _, child in sorted(((i, c) for i, c in excess if i is not None), key=lambda p: -p[0])]
    return non_replicas + replicas_


def observed_counts(set_name: str, spec: dict[str, Any], observed: list[Child]) -> Round:
    return Round(
        replicas=len(observed),
        ready_replicas=sum(1 for child in observed if matches_template(set_name, spec, child)),
    )


def progressing(missing: int, excess: int, drifted: int) -> ConditionState:
    """True while replicas are missing, in excess or drifted (in that order), False/Stable otherwise."""
    message = f"{missing} missing, {excess} excess, {drifted} drifted"
    if missing:
        return ConditionState("Progressing", True, "ScalingUp", message)
    if excess:
        return ConditionState("Progressing", True, "ScalingDown", message)
    if drifted:
        return ConditionState("Progressing", True, "Updating", message)
    return ConditionState("Progressing", False, "Stable", message)


def template_metadata(spec: dict[str, Any]) -> dict[str, Any]:
    return (spec.get("template") or {}).get("metadata") or {}


def contains_all(actual: dict[str, str], expected: dict[str, str]) -> bool:
    return all(actual.get(key) == value for key, value in expected.items())


def burst_of(spec: dict[str, Any]) -> int:
    return max(int(spec.get("burst", DEFAULT_BURST)), 1)
