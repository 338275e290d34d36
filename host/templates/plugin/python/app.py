"""The {{kind}} controller: keeps a ConfigMap holding each {{kind}}'s ``spec.data``, and reports in ``.status`` and
the ``Ready`` condition whether that ConfigMap is in place. The component exports ``Controller``."""

from __future__ import annotations

import re
from typing import Any

from wasm_reconciler import (
    Condition,
    ControllerSpec,
    Event,
    Gvk,
    Outcome,
    Reconciler,
    WorldView,
    ensure,
    export_reconciler,
)

#: The label on every ConfigMap this plugin writes, valued with the plugin's name.
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
#: This plugin's name.
PLUGIN_NAME = "{{name}}"
#: The kind this plugin reconciles.
PRIMARY = Gvk("{{group}}", "{{version}}", "{{kind}}")
#: The kind of the children it owns.
CONFIG_MAP = Gvk("", "v1", "ConfigMap")

#: What may name an entry of a ConfigMap.
CONFIG_MAP_KEY = re.compile(r"[-._a-zA-Z0-9]{1,253}")


def desired_data(primary: dict[str, Any]) -> dict[str, str]:
    """``spec.data`` of a {{kind}} (its schema is in ``crd.yaml``), checked, with keys sorted."""
    spec = primary.get("spec")
    data = (spec if isinstance(spec, dict) else {}).get("data", {})
    ensure(isinstance(data, dict), "spec.data must be an object")
    for key, value in data.items():
        ensure(
            CONFIG_MAP_KEY.fullmatch(key) is not None,
            f"spec.data key `{key}` is not a valid ConfigMap key (letters, digits, '-', '_' and '.')",
        )
        ensure(isinstance(value, str), f"spec.data key `{key}` must hold a string")
    return dict(sorted(data.items()))


class {{kind}}Reconciler(Reconciler):
    """Reconciles {{kind}} objects."""

    def describe(self) -> ControllerSpec:
        return ControllerSpec(PRIMARY, owns=[CONFIG_MAP])

    def reconcile(self, view: WorldView) -> Outcome:
        data = desired_data(view.primary)
        name = view.name
        observed = next(
            (child for child in view.children(CONFIG_MAP) if child.get("metadata", {}).get("name") == name),
            None,
        )

        # Only the fields this plugin manages: the host applies the ConfigMap with server-side apply.
        outcome = (
            Outcome()
            .child(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": name, "labels": {MANAGED_BY_LABEL: PLUGIN_NAME}},
                    "data": data,
                }
            )
            .status({"configMap": name, "keys": len(data)})
        )
        if observed is None:
            return outcome.condition(
                Condition.status_false("Ready", "ConfigMapCreating", f"ConfigMap {name} is being created")
            ).event(Event.normal("Creating", f"creating ConfigMap {name}"))
        if (observed.get("data") or {}) != data:
            return outcome.condition(
                Condition.status_false("Ready", "ConfigMapUpdating", f"ConfigMap {name} is being updated")
            )
        return outcome.condition(
            Condition.status_true("Ready", "ConfigMapReady", f"ConfigMap {name} holds {len(data)} key(s)")
        )


Controller = export_reconciler({{kind}}Reconciler)
