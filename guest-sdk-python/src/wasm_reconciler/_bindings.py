"""Inside a component: the generated ``wit_world`` bindings to and from `wire` records.

Imported only when running as a WebAssembly component, where ``componentize-py`` provides ``wit_world``. The
contract 0.1 and 0.2 worlds generate the records (``types``), ``host`` and the exported ``Controller`` under the
same names (see `wasm_reconciler.build.CONTRACTS`), so this module serves both; in a component built against
0.2, `_bindings_v0_2` adds variables and outbound HTTP.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import cast

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import host as wit_host
from wit_world.imports import types as wit

from . import host, wire
from .condition import ConditionStatus
from .event import EventType
from .gvk import Gvk
from .reconciler import Reconciler

_CONDITION_STATUS = {
    ConditionStatus.TRUE: wit.ConditionStatus.TRUE,
    ConditionStatus.FALSE: wit.ConditionStatus.FALSE,
    ConditionStatus.UNKNOWN: wit.ConditionStatus.UNKNOWN,
}
_EVENT_TYPE = {EventType.NORMAL: wit.EventType.NORMAL, EventType.WARNING: wit.EventType.WARNING}
_LEVEL = {
    host.Level.TRACE: wit_host.Level.TRACE,
    host.Level.DEBUG: wit_host.Level.DEBUG,
    host.Level.INFO: wit_host.Level.INFO,
    host.Level.WARN: wit_host.Level.WARN,
    host.Level.ERROR: wit_host.Level.ERROR,
}


def _gvk(kind: Gvk) -> wit.Gvk:
    return wit.Gvk(kind.group, kind.version, kind.kind)


class ComponentHost:
    """`host.HostBackend` calling the component's imports."""

    def log(self, level: host.Level, message: str) -> None:
        wit_host.log(_LEVEL[level], message)

    def get(self, kind: Gvk, namespace: str | None, name: str) -> str | None:
        try:
            return wit_host.get(_gvk(kind), namespace, name)
        except Err as refused:
            raise host.RefusedCall(str(refused.value)) from None

    def list(self, kind: Gvk, namespace: str | None, label_selector: str | None) -> list[str]:
        try:
            return wit_host.list(_gvk(kind), namespace, label_selector)
        except Err as refused:
            raise host.RefusedCall(str(refused.value)) from None


def component_host() -> host.HostBackend:
    """The backend of the host functions in this component: the imports of contract 0.1, and when the world
    is contract 0.2's (it imports ``variables``) those of 0.2 too.

    The 0.2 module is imported by name, not statically: it needs bindings a 0.1 world does not generate."""
    if importlib.util.find_spec("wit_world.imports.variables") is None:
        return ComponentHost()
    contract_0_2 = importlib.import_module(f"{__package__}._bindings_v0_2")
    return cast(host.HostBackend, contract_0_2.ComponentHostV0_2())


def component_controller(reconciler: Reconciler) -> type:
    """The ``Controller`` class ``componentize-py`` exports, serving `reconciler`."""
    host.install(component_host())

    class Controller(exports.Controller):
        def describe(self) -> wit.ControllerSpec:
            spec = wire.describe(reconciler)
            return wit.ControllerSpec(
                _gvk(spec.primary),
                [_gvk(kind) for kind in spec.owns],
                [_gvk(kind) for kind in spec.reads],
                spec.finalizer,
                spec.resync_seconds,
            )

        def reconcile(self, view: wit.WorldView) -> wit.Outcome:
            wire_view = wire.WireWorldView(view.primary, view.children, view.config, view.deleting, view.attempt)
            try:
                outcome = wire.reconcile(reconciler, wire_view)
            except wire.ReconcileFailed as failed:
                raise Err(failed.message) from None
            return wit.Outcome(
                outcome.children,
                outcome.status,
                [
                    wit.Condition(c.type, _CONDITION_STATUS[c.status], c.reason, c.message)
                    for c in outcome.conditions
                ],
                [wit.Event(_EVENT_TYPE[e.type], e.reason, e.note) for e in outcome.events],
                outcome.requeue_after_ms,
                outcome.finalized,
            )

    return Controller
