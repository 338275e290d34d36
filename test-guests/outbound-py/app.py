"""The component's app module: exports the outbound test reconciler (build it with ``--contract 0.2``)."""

from outbound import Outbound
from wasm_reconciler import export_reconciler

Controller = export_reconciler(Outbound)
