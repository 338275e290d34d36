"""Events a plugin records on its primary object."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = ["Event", "EventType"]


class EventType(Enum):
    """Kind of a Kubernetes Event."""

    NORMAL = "Normal"
    WARNING = "Warning"


@dataclass(frozen=True)
class Event:
    """An event to record on the primary object; the host turns it into a Kubernetes Event and aggregates
    repeats.

    >>> Event.normal("ScalingUp", "created 3 ConfigMaps").type
    <EventType.NORMAL: 'Normal'>
    """

    type: EventType
    reason: str
    note: str

    @classmethod
    def normal(cls, reason: str, note: str) -> Event:
        """A ``Normal`` event: something expected happened."""
        return cls(EventType.NORMAL, reason, note)

    @classmethod
    def warning(cls, reason: str, note: str) -> Event:
        """A ``Warning`` event: something the user should look at."""
        return cls(EventType.WARNING, reason, note)
