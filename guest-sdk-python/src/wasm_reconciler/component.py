"""Exporting a `Reconciler` as the component's implementation of the contract.

``componentize-py`` looks for a class named after the exported interface, ``Controller``, in the app module.
`export_reconciler` builds it: inside a component it implements the generated ``wit_world`` protocol and
installs the host's imports as the backend of `wasm_reconciler.host` (and, built against contract 0.2, of
`wasm_reconciler.variables` and `wasm_reconciler.http`); in plain CPython it returns a class with the same
methods on `wire` records, so an app module imports (and can be tested) anywhere.

The contract is the one the component is built against (``python -m wasm_reconciler build --contract 0.2``):
the app module is the same for both, and `export_reconciler` finds out which world it runs in when the
component starts, from the imports the generated bindings have.
"""

from __future__ import annotations

import sys

from . import wire
from .reconciler import Reconciler

__all__ = ["export_reconciler", "in_component"]


def in_component() -> bool:
    """Whether this code runs inside a WebAssembly component (CPython built for WASI)."""
    return sys.platform == "wasi"


def export_reconciler(reconciler_class: type[Reconciler]) -> type:
    """Exports a `Reconciler` subclass; assign the result to ``Controller`` in the app module::

        Controller = export_reconciler(GreetingReconciler)

    The reconciler is instantiated once, with no arguments. The same line serves contract 0.1 and 0.2: which
    one is chosen when building (``--contract``).
    """
    if not (isinstance(reconciler_class, type) and issubclass(reconciler_class, Reconciler)):
        raise TypeError(
            f"export_reconciler expects a subclass of wasm_reconciler.Reconciler, got {reconciler_class!r}"
        )
    reconciler = reconciler_class()
    if in_component():
        from ._bindings import component_controller

        return component_controller(reconciler)
    return _native_controller(reconciler)


def _native_controller(reconciler: Reconciler) -> type:
    class Controller:
        """The exported controller on wire records (plain CPython)."""

        def describe(self) -> wire.WireControllerSpec:
            return wire.describe(reconciler)

        def reconcile(self, view: wire.WireWorldView) -> wire.WireOutcome:
            return wire.reconcile(reconciler, view)

    Controller.reconciler = reconciler  # type: ignore[attr-defined]
    return Controller


