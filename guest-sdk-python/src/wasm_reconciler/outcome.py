"""The plugin's answer: desired children, status, conditions, events, requeue and finalization."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Iterable

from .condition import Condition
from .error import Error
from .event import Event

__all__ = ["Outcome"]

JsonObject = dict[str, Any]

#: The error of an outcome that both declares children and leaves them alone.
BOTH_CHOICES = "the outcome both declares desired children and leaves children alone: choose one"
#: The refusal of an outcome of a plugin owning kinds that did not say what to do with its children (worded as in
#: the Rust and TypeScript SDKs).
UNDECIDED_CHILDREN = (
    "the outcome does not say what to do with the owned children: declare the complete desired set with "
    "children(...) (an empty set deletes them all) or call leave_children_alone()"
)


class Outcome:
    """The desired state for one primary object, built with chained calls.

    **Children: a complete set, or leave them alone — say which.** A plugin that owns kinds makes one of two
    choices in every outcome, explicitly: `children` declares the *complete* desired set, also when it is empty
    (the host applies each child and deletes every owned child not in it; `child` adds one child to that set,
    `delete_all_children` declares it empty), or `leave_children_alone` keeps the observed children as they
    are. An outcome that made neither choice (``Outcome()`` with no `child` call, as after a `child` loop that
    ran zero times) is refused when it is handed to the host of a plugin that owns kinds, with a message naming
    both calls, rather than silently keeping children the plugin no longer wants. Build a set that comes from a
    loop with ``children(...)``. A plugin that owns no kind needs neither call; making both choices in one
    outcome raises `Error`. A child is a dict with ``apiVersion``, ``kind`` and ``metadata.name``; the host
    fills in the namespace and the ownerReference.

    >>> outcome = (Outcome()
    ...     .child({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app"}})
    ...     .status({"replicas": 1})
    ...     .condition(Condition.status_true("Ready", "Synced", "all children applied"))
    ...     .event(Event.normal("Created", "created ConfigMap app"))
    ...     .requeue_after(timedelta(seconds=30)))
    >>> outcome.desired_children[0]["kind"], outcome.requeue_after_ms
    ('ConfigMap', 30000)
    >>> Outcome().children([]).desired_children, Outcome().leave_children_alone().leaves_children_alone
    ([], True)
    """

    __slots__ = (
        "_children",
        "_conditions",
        "_events",
        "_finalized",
        "_leave_children_alone",
        "_requeue_after_ms",
        "_status",
    )

    def __init__(self) -> None:
        self._children: list[JsonObject] | None = None
        self._leave_children_alone = False
        self._status: JsonObject | None = None
        self._conditions: list[Condition] = []
        self._events: list[Event] = []
        self._requeue_after_ms: int | None = None
        self._finalized = False

    def child(self, child: JsonObject) -> Outcome:
        """Adds one desired child to the complete desired set. Raises `Error` when it has no ``apiVersion``,
        ``kind`` or ``metadata.name``. For children built in a loop prefer `children`: a loop of `child` calls
        that runs zero times declares nothing."""
        self._check_not_left_alone()
        children = self._children if self._children is not None else []
        self._children = children
        _check_child(child, len(children))
        children.append(child)
        return self

    def children(self, children: Iterable[JsonObject]) -> Outcome:
        """Declares the complete desired set of children, adding to children already added; declares the set
        even when `children` is empty (which deletes every owned child)."""
        self._check_not_left_alone()
        if self._children is None:
            self._children = []
        for child in children:
            self.child(child)
        return self

    def delete_all_children(self) -> Outcome:
        """Declares an empty desired set: the host deletes every owned child. Children added before are
        dropped."""
        self._check_not_left_alone()
        self._children = []
        return self

    def leave_children_alone(self) -> Outcome:
        """Leaves the observed children as they are: nothing is applied and nothing is deleted (the host still
        writes the status, conditions and events of this outcome)."""
        if self._children is not None:
            raise Error(BOTH_CHOICES)
        self._leave_children_alone = True
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
        """The desired children; ``None`` when the outcome leaves children alone or has not said."""
        return self._children

    @property
    def leaves_children_alone(self) -> bool:
        """Whether `leave_children_alone` was called."""
        return self._leave_children_alone

    def _check_not_left_alone(self) -> None:
        if self._leave_children_alone:
            raise Error(BOTH_CHOICES)

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
