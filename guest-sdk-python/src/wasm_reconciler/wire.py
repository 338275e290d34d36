"""The contract's records as plain dataclasses, one to one with ``wit/reconciler.wit``, objects as JSON text.

Both ways of running a plugin go through this module: the WebAssembly component converts the generated
bindings to these records and back, and native tests call `describe` and `reconcile` directly. So the
conversion code is the same on both paths.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .condition import Condition
from .error import Error, error_message
from .event import Event
from .gvk import Gvk
from .outcome import UNDECIDED_CHILDREN, Outcome
from .reconciler import Reconciler
from .world_view import WorldView

__all__ = ["WireControllerSpec", "WireOutcome", "WireWorldView", "describe", "reconcile", "to_json"]


@dataclass(frozen=True)
class WireControllerSpec:
    """``record controller-spec``."""

    primary: Gvk
    owns: list[Gvk]
    reads: list[Gvk]
    finalizer: str | None
    resync_seconds: int | None


@dataclass(frozen=True)
class WireWorldView:
    """``record world-view``: JSON text of the primary, each child and the configuration."""

    primary: str
    children: list[str] = field(default_factory=list)
    config: str = "{}"
    deleting: bool = False
    attempt: int = 0


@dataclass(frozen=True)
class WireOutcome:
    """``record outcome``: JSON text of each desired child and of the status."""

    children: list[str] | None
    status: str | None
    conditions: list[Condition]
    events: list[Event]
    requeue_after_ms: int | None
    finalized: bool


class ReconcileFailed(Exception):
    """`reconcile` failed; the argument is the message the host records as the plugin's error."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def describe(reconciler: Reconciler) -> WireControllerSpec:
    """Calls `reconciler.describe()` and converts the spec to its wire form."""
    spec = reconciler.describe()
    return WireControllerSpec(
        primary=spec.primary,
        owns=list(spec.owns),
        reads=list(spec.reads),
        finalizer=spec.finalizer,
        resync_seconds=spec.resync_seconds,
    )


def reconcile(reconciler: Reconciler, view: WireWorldView) -> WireOutcome:
    """Parses a wire view, calls `reconciler.reconcile`, and converts the outcome to its wire form.

    Raises `ReconcileFailed` with the message the host records: a malformed view, an exception raised by the
    plugin, an outcome that cannot be encoded, or one that does not say what to do with children when the plugin
    owns kinds (see `Outcome`)."""
    try:
        parsed = _parse_view(view)
        outcome = reconciler.reconcile(parsed)
        if not isinstance(outcome, Outcome):
            raise Error(f"reconcile returned {type(outcome).__name__}, not an Outcome")
        if outcome.desired_children is None and not outcome.leaves_children_alone and reconciler.describe().owns:
            raise Error(UNDECIDED_CHILDREN)
        return _encode_outcome(outcome)
    except Exception as failure:  # every exception becomes the plugin's error, never a trap
        raise ReconcileFailed(error_message(failure)) from None


def to_json(value: Any) -> str:
    """Compact JSON text, as the host expects it (UTF-8, no NaN or infinities)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _parse_view(view: WireWorldView) -> WorldView:
    primary = _parse(view.primary, "world view: primary is not JSON")
    children = [
        _parse(child, f"world view: child #{position} is not JSON") for position, child in enumerate(view.children)
    ]
    config = {} if not view.config.strip() else _parse(view.config, "world view: config is not JSON")
    return WorldView(primary, children, config, view.deleting, view.attempt)


def _parse(text: str, context: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as failure:
        raise Error(f"{context}: {failure}") from None


def _encode_outcome(outcome: Outcome) -> WireOutcome:
    def encode(value: Any, what: str) -> str:
        try:
            return to_json(value)
        except (TypeError, ValueError) as failure:
            raise Error(f"building the outcome: {what} is not JSON: {failure}") from None

    children = outcome.desired_children
    status = outcome.desired_status
    return WireOutcome(
        children=None
        if children is None
        else [encode(child, f"desired child #{position}") for position, child in enumerate(children)],
        status=None if status is None else encode(status, "status"),
        conditions=outcome.conditions,
        events=outcome.events,
        requeue_after_ms=outcome.requeue_after_ms,
        finalized=outcome.is_finalized,
    )
