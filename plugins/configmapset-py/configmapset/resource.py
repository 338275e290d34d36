"""The ``ConfigMapSet`` custom resource: names, spec and status (the CRD is ``plugins/configmapset/crd.yaml``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import decode

#: API group of ``ConfigMapSet``.
GROUP = "examples.wasm-reconciler.io"
#: API version of ``ConfigMapSet``.
VERSION = "v1alpha1"
#: Kind name.
KIND = "ConfigMapSet"
#: Label put on every child, naming its set.
SET_LABEL = "examples.wasm-reconciler.io/configmapset"
#: Finalizer that drains children before the set goes away.
FINALIZER = "examples.wasm-reconciler.io/drain"
#: ``spec.burst`` when not given.
DEFAULT_BURST = 10


@dataclass(frozen=True)
class TemplateMetadata:
    """Labels and annotations of every replica (the set label is added to the labels)."""

    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ConfigMapTemplate:
    """The ConfigMap every replica is built from."""

    metadata: TemplateMetadata = field(default_factory=TemplateMetadata)
    data: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ConfigMapSetSpec:
    """Keeps `replicas` ConfigMaps named ``<set>-<index>`` built from `template`, creating and deleting at most
    `burst` of them per reconcile."""

    replicas: int
    template: ConfigMapTemplate
    burst: int = DEFAULT_BURST

    @classmethod
    def from_primary(cls, primary: Any) -> ConfigMapSetSpec:
        """The spec of a ``ConfigMapSet`` object; raises `wasm_reconciler.Error` saying what does not fit."""
        obj = decode.struct(primary, "ConfigMapSetObject")
        spec = decode.struct(decode.field(obj, "spec"), "ConfigMapSetSpec")
        replicas = decode.i32(decode.field(spec, "replicas"))
        template = decode.struct(decode.field(spec, "template"), "ConfigMapTemplate")
        metadata: dict[str, Any] = (
            decode.struct(template["metadata"], "TemplateMetadata") if "metadata" in template else {}
        )
        burst = decode.i32(spec["burst"]) if "burst" in spec else DEFAULT_BURST
        return cls(
            replicas=replicas,
            template=ConfigMapTemplate(
                metadata=TemplateMetadata(
                    labels=decode.optional_string_map(metadata, "labels"),
                    annotations=decode.optional_string_map(metadata, "annotations"),
                ),
                data=decode.optional_string_map(template, "data"),
            ),
            burst=burst,
        )


@dataclass(frozen=True)
class ConfigMapSetStatus:
    """Observed state: ConfigMaps of this set seen, and those matching the template."""

    replicas: int
    ready_replicas: int

    def to_json(self) -> dict[str, Any]:
        """The status as the host merges it into ``.status``."""
        return {"replicas": self.replicas, "readyReplicas": self.ready_replicas}
