"""Write wasm-reconciler plugins in Python: Kubernetes reconcile logic compiled to WebAssembly components.

A plugin is a pure function from what the host observed (a `WorldView`) to what should be (an `Outcome`). The
host does every API call. Subclass `Reconciler` and export it from the app module::

    from wasm_reconciler import Condition, ControllerSpec, Gvk, Outcome, Reconciler, WorldView, export_reconciler

    class Greeting(Reconciler):
        def describe(self) -> ControllerSpec:
            return ControllerSpec(Gvk("example.com", "v1", "Greeting"), owns=[Gvk("", "v1", "ConfigMap")])

        def reconcile(self, view: WorldView) -> Outcome:
            message = view.primary.get("spec", {}).get("message", "hello")
            child = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": view.name},
                     "data": {"message": message}}
            return Outcome().child(child).condition(Condition.status_true("Ready", "Written", "ConfigMap desired"))

    Controller = export_reconciler(Greeting)

Build the component with ``python -m wasm_reconciler build app -o plugin.wasm`` (componentize-py, with the WIT
shipped in this package). In plain CPython the same module imports and runs, so reconcile logic is unit-tested
with pytest; host calls are then served by `wasm_reconciler.testing.MemoryHost`.

A plugin built with ``--contract 0.2`` may also read `variables` (values of Secret keys its settings name) and
send HTTP requests with `http` to the hosts its settings allow.
"""

from . import host, http, variables
from .component import export_reconciler, in_component
from .condition import Condition, ConditionStatus
from .controller_spec import ControllerSpec
from .error import Error, HostError, ensure
from .event import Event, EventType
from .gvk import Gvk
from .outcome import Outcome
from .reconciler import Reconciler
from .world_view import WorldView

#: The contract a plugin is built against by default (the WIT package shipped in ``wit/``).
WIT_PACKAGE = "wasm-reconciler:plugin@0.1.0"
#: The contract a plugin built with ``--contract 0.2`` targets (shipped in ``wit-v0.2/``, with ``wasi:http``).
WIT_PACKAGE_V0_2 = "wasm-reconciler:plugin@0.2.0"

__all__ = [
    "WIT_PACKAGE",
    "WIT_PACKAGE_V0_2",
    "Condition",
    "ConditionStatus",
    "ControllerSpec",
    "Error",
    "Event",
    "EventType",
    "Gvk",
    "HostError",
    "Outcome",
    "Reconciler",
    "WorldView",
    "ensure",
    "export_reconciler",
    "host",
    "http",
    "in_component",
    "variables",
]
