"""The status to write: counts, conditions merged by type (``lastTransitionTime`` moves only when ``status``
changes), ``observedGeneration`` and the ``Reconciled`` condition."""

from __future__ import annotations

import copy
from typing import Any

from replicas import ConditionState, Round

RECONCILED = "Reconciled"


def desired_status(
    observed: dict[str, Any] | None,
    round_: Round,
    reconciled: ConditionState,
    generation: int | None,
    now: str,
) -> dict[str, Any]:
    """The status after ``round_``, starting from ``observed``."""
    status = copy.deepcopy(dict(observed or {}))
    status["replicas"] = round_.replicas
    status["readyReplicas"] = round_.ready_replicas
    conditions = [dict(condition) for condition in status.get("conditions") or [] if condition.get("type")]
    for condition in [*round_.conditions, reconciled]:
        merge_condition(conditions, condition, generation, now)
    status["conditions"] = conditions
    if generation is not None:
        status["observedGeneration"] = generation
    return status


def merge_condition(conditions: list[dict[str, Any]], state: ConditionState, generation: int | None, now: str) -> None:
    fresh: dict[str, Any] = {
        "type": state.type,
        "status": "True" if state.status else "False",
        "reason": state.reason,
        "message": state.message,
        "lastTransitionTime": now,
    }
    if generation is not None:
        fresh["observedGeneration"] = generation
    for position, existing in enumerate(conditions):
        if existing.get("type") == state.type:
            if existing.get("status") == fresh["status"] and existing.get("lastTransitionTime"):
                fresh["lastTransitionTime"] = existing["lastTransitionTime"]
            conditions[position] = fresh
            return
    conditions.append(fresh)
