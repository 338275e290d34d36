"""The replica logic: which ConfigMaps to keep, create and delete this round, and what to report."""

from __future__ import annotations

import re
from datetime import timedelta

from wasm_reconciler import Condition, Event, Outcome

from .config_map import ConfigMapObject
from .resource import SET_LABEL, ConfigMapSetSpec, ConfigMapSetStatus

#: Delay before the next round while creations or deletions remain beyond this round's burst.
REQUEUE_WHILE_CONVERGING = timedelta(milliseconds=100)

_U32_MAX = 2**32 - 1
_DIGITS = re.compile(r"\+?[0-9]+")


def converge(set_name: str, spec: ConfigMapSetSpec, observed: list[ConfigMapObject]) -> Outcome:
    """One reconcile round of a set that is not being deleted.

    Every desired replica (index ``0..replicas``) is in the outcome as the full object built from the
    template, so drifted replicas are corrected; at most `burst` missing replicas are added (lowest indexes
    first), and at most `burst` excess children are left out and so deleted (names that are not replicas
    first, then the highest indexes). Excess children kept for a later round are carried over unchanged.
    """
    replicas = max(spec.replicas, 0)
    limit = _burst(spec)
    outcome = Outcome().delete_all_children()
    by_name = {child.name: child for child in reversed(observed)}
    missing = created = drifted = 0
    for index in range(replicas):
        name = child_name(set_name, index)
        child = by_name.get(name)
        if child is not None:
            drifted += 0 if matches_template(set_name, spec, child) else 1
            outcome.child(desired_child(set_name, spec, index).to_json())
        else:
            missing += 1
            if created < limit:
                created += 1
                outcome.child(desired_child(set_name, spec, index).to_json())
    excess = scale_down_order(set_name, replicas, observed)
    deleted = min(len(excess), limit)
    for child in excess[deleted:]:
        outcome.child(_carried_over(child).to_json())

    status = observed_status(set_name, spec, observed)
    ready = status.ready_replicas == spec.replicas and not excess
    outcome.status(status.to_json())
    outcome.condition(
        Condition.from_bool(
            "Ready",
            ready,
            "ReplicasReady" if ready else "ReplicasNotReady",
            f"{status.ready_replicas} of {status.replicas} observed ConfigMaps match the template; "
            f"{spec.replicas} desired, {len(excess)} excess",
        )
    )
    outcome.condition(_progressing(missing, len(excess), drifted))
    if created > 0:
        outcome.event(
            Event.normal(
                "ScalingUp",
                f"creating {created} ConfigMap(s), {missing - created} still missing after this round",
            )
        )
    if deleted > 0:
        outcome.event(
            Event.normal(
                "ScalingDown",
                f"deleting {deleted} ConfigMap(s), {len(excess) - deleted} excess left after this round",
            )
        )
    if missing > created or len(excess) > deleted:
        outcome.requeue_after(REQUEUE_WHILE_CONVERGING)
    return outcome


def drain(set_name: str, spec: ConfigMapSetSpec, observed: list[ConfigMapObject]) -> Outcome:
    """One reconcile round of a set being deleted: deletes up to `burst` children (highest indexes first),
    keeps the rest, and reports `finalized` only once no child is observed."""
    outcome = (
        Outcome()
        .status(observed_status(set_name, spec, observed).to_json())
        .condition(Condition.status_false("Ready", "Deleting", "the ConfigMapSet is being deleted"))
    )
    if not observed:
        return (
            outcome.delete_all_children()
            .condition(Condition.status_false("Progressing", "Drained", "no ConfigMap left"))
            .finalized()
        )
    order = scale_down_order(set_name, 0, observed)
    deleted = min(len(order), _burst(spec))
    remaining = len(order) - deleted
    message = f"deleting {deleted} ConfigMap(s), {remaining} left after this round"
    outcome = (
        outcome.delete_all_children()
        .condition(Condition.status_true("Progressing", "Draining", message))
        .event(Event.normal("Draining", message))
        .requeue_after(REQUEUE_WHILE_CONVERGING)
    )
    for child in order[deleted:]:
        outcome.child(_carried_over(child).to_json())
    return outcome


def child_name(set_name: str, index: int) -> str:
    """``<set>-<index>``."""
    return f"{set_name}-{index}"


def child_index(set_name: str, name: str) -> int | None:
    """The replica index of a child name, if it is exactly ``<set>-<index>`` (canonical decimal)."""
    prefix = f"{set_name}-"
    if not name.startswith(prefix):
        return None
    digits = name[len(prefix) :]
    if not _DIGITS.fullmatch(digits):
        return None
    index = int(digits)
    return index if index <= _U32_MAX and str(index) == digits else None


def desired_child(set_name: str, spec: ConfigMapSetSpec, index: int) -> ConfigMapObject:
    """The full desired replica `index`: template labels plus the set label, template annotations and data."""
    return ConfigMapObject(
        name=child_name(set_name, index),
        labels=_desired_labels(set_name, spec),
        annotations=dict(spec.template.metadata.annotations),
        data=dict(spec.template.data),
    )


def matches_template(set_name: str, spec: ConfigMapSetSpec, child: ConfigMapObject) -> bool:
    """Whether an observed child carries every desired label, annotation and data entry.

    Extra entries do not count as drift: under server-side apply they belong to other field managers."""
    return (
        _contains_all(child.labels, _desired_labels(set_name, spec))
        and _contains_all(child.annotations, spec.template.metadata.annotations)
        and _contains_all(child.data, spec.template.data)
    )


def scale_down_order(set_name: str, replicas: int, observed: list[ConfigMapObject]) -> list[ConfigMapObject]:
    """Children that are not desired replicas, in the order they are deleted: names that are not replicas of
    this set first (by name), then the highest indexes."""
    strays: list[ConfigMapObject] = []
    surplus: list[tuple[int, ConfigMapObject]] = []
    for child in observed:
        index = child_index(set_name, child.name)
        if index is None:
            strays.append(child)
        elif index >= replicas:
            surplus.append((index, child))
    strays.sort(key=lambda child: child.name.encode())
    surplus.sort(key=lambda entry: entry[0], reverse=True)
    return strays + [child for _, child in surplus]


def observed_status(set_name: str, spec: ConfigMapSetSpec, observed: list[ConfigMapObject]) -> ConfigMapSetStatus:
    """Status from what was observed: children seen and children matching the template."""
    ready = sum(1 for child in observed if matches_template(set_name, spec, child))
    return ConfigMapSetStatus(replicas=len(observed), ready_replicas=ready)


def _progressing(missing: int, excess: int, drifted: int) -> Condition:
    """``Progressing``: True while replicas are missing, in excess or drifted (in that order of precedence),
    False with reason ``Stable`` when nothing is left to do."""
    detail = f"{missing} missing, {excess} excess, {drifted} drifted"
    if missing > 0:
        return Condition.status_true("Progressing", "ScalingUp", detail)
    if excess > 0:
        return Condition.status_true("Progressing", "ScalingDown", detail)
    if drifted > 0:
        return Condition.status_true("Progressing", "Updating", detail)
    return Condition.status_false("Progressing", "Stable", detail)


def _carried_over(child: ConfigMapObject) -> ConfigMapObject:
    """An excess child kept for a later round, as observed (only the fields this plugin manages)."""
    return ConfigMapObject(
        name=child.name,
        labels=dict(child.labels),
        annotations=dict(child.annotations),
        data=dict(child.data),
        binary_data=dict(child.binary_data),
    )


def _desired_labels(set_name: str, spec: ConfigMapSetSpec) -> dict[str, str]:
    return {**spec.template.metadata.labels, SET_LABEL: set_name}


def _contains_all(actual: dict[str, str], expected: dict[str, str]) -> bool:
    return all(actual.get(key) == value for key, value in expected.items())


def _burst(spec: ConfigMapSetSpec) -> int:
    return max(spec.burst, 1)
