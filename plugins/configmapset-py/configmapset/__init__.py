"""``configmapset`` in Python: keeps N ConfigMaps from a template (the ReplicaSet pattern).

The same controller as the Rust example ``plugins/configmapset``, with identical behaviour: a ``ConfigMapSet``
(``examples.wasm-reconciler.io/v1alpha1``) names a replica count, a ConfigMap template and a burst size. The
plugin keeps ConfigMaps ``<set>-0`` … ``<set>-<replicas-1>`` equal to the template, creating and deleting at
most ``burst`` per reconcile and asking to be requeued for the rest (slow start). Status reports observed and
ready replicas with ``Ready`` and ``Progressing`` conditions; a finalizer drains the children in bursts before
the set goes away.
"""

from __future__ import annotations

from wasm_reconciler import ControllerSpec, Error, Gvk, Outcome, Reconciler, WorldView, ensure

from . import keys, replicas, resource
from .config_map import ConfigMapObject

__all__ = ["CONFIG_MAP", "ConfigMapSetReconciler"]

#: Core ``v1`` ConfigMap, the kind of every child.
CONFIG_MAP = Gvk("", "v1", "ConfigMap")


class ConfigMapSetReconciler(Reconciler):
    """Reconciles ``ConfigMapSet``s, owns ``ConfigMap``s, drains them through a finalizer."""

    def describe(self) -> ControllerSpec:
        return ControllerSpec(
            Gvk(resource.GROUP, resource.VERSION, resource.KIND),
            owns=[CONFIG_MAP],
            finalizer=resource.FINALIZER,
        )

    def reconcile(self, view: WorldView) -> Outcome:
        try:
            spec = resource.ConfigMapSetSpec.from_primary(view.primary)
        except Error as error:
            raise error.context("reading the primary object") from None
        ensure(spec.replicas >= 0, f"spec.replicas must not be negative, got {spec.replicas}")
        ensure(spec.burst >= 1, f"spec.burst must be at least 1, got {spec.burst}")
        observed = [ConfigMapObject.from_child(child) for child in view.children(CONFIG_MAP)]
        if view.deleting:
            # The drain writes no template, so a template the API server would refuse does not hold it up.
            return replicas.drain(view.name, spec, observed)
        problem = keys.check_template(spec.template)
        ensure(problem is None, problem or "")
        return replicas.converge(view.name, spec, observed)
