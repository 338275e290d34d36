"""The component's app module: exports the configmapset reconciler."""

from configmapset import ConfigMapSetReconciler
from wasm_reconciler import export_reconciler

Controller = export_reconciler(ConfigMapSetReconciler)
