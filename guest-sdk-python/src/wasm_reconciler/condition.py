"""Conditions a plugin asserts about its primary object."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = ["Condition", "ConditionStatus"]


class ConditionStatus(Enum):
    """Status of a condition, as in Kubernetes ``metav1.Condition``; the value is the Kubernetes spelling."""

    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"

    @classmethod
    def from_bool(cls, holds: bool) -> ConditionStatus:
        """``TRUE`` when `holds`, else ``FALSE``."""
        return cls.TRUE if holds else cls.FALSE


@dataclass(frozen=True)
class Condition:
    """A condition for ``.status.conditions`` of the primary object.

    The host merges conditions by type, sets ``observedGeneration`` and moves ``lastTransitionTime`` only
    when the status changes. Type and reason are CamelCase (``Ready``, ``ScalingUp``).

    >>> Condition.status_true("Ready", "Available", "3/3 replicas available").status
    <ConditionStatus.TRUE: 'True'>
    >>> Condition.from_bool("Progressing", False, "Stable", "") == Condition.status_false("Progressing", "Stable", "")
    True
    """

    type: str
    status: ConditionStatus
    reason: str
    message: str

    @classmethod
    def status_true(cls, type: str, reason: str, message: str) -> Condition:
        """A condition with status ``True``."""
        return cls(type, ConditionStatus.TRUE, reason, message)

    @classmethod
    def status_false(cls, type: str, reason: str, message: str) -> Condition:
        """A condition with status ``False``."""
        return cls(type, ConditionStatus.FALSE, reason, message)

    @classmethod
    def status_unknown(cls, type: str, reason: str, message: str) -> Condition:
        """A condition with status ``Unknown``."""
        return cls(type, ConditionStatus.UNKNOWN, reason, message)

    @classmethod
    def from_bool(cls, type: str, holds: bool, reason: str, message: str) -> Condition:
        """A condition whose status is ``True`` when `holds`, else ``False``."""
        return cls(type, ConditionStatus.from_bool(holds), reason, message)

    @property
    def is_true(self) -> bool:
        """Whether the status is ``True``."""
        return self.status is ConditionStatus.TRUE
