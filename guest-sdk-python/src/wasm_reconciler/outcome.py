"""The plugin's answer: desired children, status, conditions, events, requeue and finalization."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Iterable

from .condition import Condition
from .error import Error
from .event import Event

__all__ = ["Outcome"]

JsonObject = dict[str, Any]


class Outcome:
    """The desired state for one primary object, built with chained calls.

    **Children.** An outcome carries either "leave children alone" (the default) or the *complete* desired
    set of children. The first `child`, `children` or `delete_all_children` call switches it to a desired
    set, and the host then deletes every owned child not in it — so a plugin managing children adds all of
    them on every reconcile. A child is a dict with ``apiVersion``, ``kind`` and ``metadata.name``; the host
    fills in the namespace and the ownerReference.

    >>> outcome = (Outcome()
    ...     .child({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app"}})
    ...     .status({"replicas": 1})
    ...     .condition(Condition.status_true("Ready", "Synced", "all children applied"))
    ...     .event(Event.normal("Created", "created ConfigMap app"))
    ...     .requeue_after(timedelta(seconds=30)))
    >>> outcome.desired_children[0]["kind"], outcome.requeue_after_ms
    ('ConfigMap', 30000)
    """

    __slots__ = (
        "_children",
        "_conditions",
        "_events",
        "_finalized",
        "_requeue_after_ms",
        "_status",
    )

    def __init__(self) -> None:
        self._children: list[JsonObject] | None = None
        self._status: JsonObject | None = None
        self._conditions: list[Condition] = []
        self._events: list[Event] = []
        self._requeue_after_ms: int | None = None
        self._finalized = False

    def child(self, child: JsonObject) -> Outcome:
        """Adds one desired child. Raises `Error` when it has no ``apiVersion``, ``kind`` or ``metadata.name``."""
        children = self._children if self._children is not None else []
        self._children = children
        _check_child(child, len(children))
        children.append(child)
        return self

    def children(self, children: Iterable[JsonObject]) -> Outcome:
        """Adds desired children; declares a desired set even when `children` is empty (which deletes every
        owned child)."""
        if self._children is None:
            self._children = []
        for child in children:
            self.child(child)
        return self

    def delete_all_children(self) -> Outcome:
        """Declares an empty desired set: the host deletes every owned child."""
        self._children = []
        return self

    def status(self, status: JsonObject) -> Outcome:
        """Sets the dict merged into ``.status`` (top-level keys replace). Leave ``conditions`` and
        ``observedGeneration`` out: the host owns those."""
        if not isinstance(status, dict):
            raise Error(f"status: must be a JSON object, got {status!r}")
        self._status = status
        return self

    def condition(self, condition: Condition) -> Outcome:
        """Adds a condition to merge into ``.status.conditions``."""
        self._conditions.append(condition)
        return self

    def event(self, event: Event) -> Outcome:
        """Adds an event to record on the primary."""
        self._events.append(event)
        return self

    def requeue_after(self, delay: timedelta | float) -> Outcome:
        """Asks to reconcile this primary again after `delay` (a `timedelta`, or seconds), even with no change;
        millisecond precision, rounded down."""
        seconds = delay.total_seconds() if isinstance(delay, timedelta) else float(delay)
        if seconds < 0:
            raise Error(f"requeue_after: the delay must not be negative, got {seconds}s")
        self._requeue_after_ms = int(round(seconds * 1_000_000)) // 1000
        return self

    def finalized(self) -> Outcome:
        """Declares cleanup complete: with a deleting view, the host removes the finalizer."""
        self._finalized = True
        return self

    @property
    def desired_children(self) -> list[JsonObject] | None:
        """The desired children; ``None`` means "leave children alone"."""
        return self._children

    @property
    def desired_status(self) -> JsonObject | None:
        """The status to merge, if any."""
        return self._status

    @property
    def conditions(self) -> list[Condition]:
        """The conditions, in the order added."""
        return list(self._conditions)

    def condition_of_type(self, type: str) -> Condition | None:
        """The condition of a type, if added (the last one wins when added twice)."""
        for condition in reversed(self._conditions):
            if condition.type == type:
                return condition
        return None

    @property
    def events(self) -> list[Event]:
        """The events, in the order added."""
        return list(self._events)

    @property
    def requeue_after_ms(self) -> int | None:
        """The requested requeue delay in milliseconds, if any."""
        return self._requeue_after_ms

    @property
    def is_finalized(self) -> bool:
        """Whether cleanup was declared complete."""
        return self._finalized


def _check_child(child: object, position: int) -> None:
    def refuse(reason: str) -> Error:
        return Error(f"desired child #{position}: {reason}")

    if not isinstance(child, dict):
        raise refuse(f"must be a JSON object, got {child!r}")
    for key in ("apiVersion", "kind"):
        value = child.get(key)
        if not isinstance(value, str) or not value:
            raise refuse(f"has no `{key}`")
    metadata = child.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if not isinstance(name, str) or not name:
        raise refuse("has no `metadata.name`")
