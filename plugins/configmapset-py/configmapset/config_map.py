"""A ConfigMap as this plugin reads and writes it: only the fields it manages."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wasm_reconciler import Error

from . import decode


@dataclass
class ConfigMapObject:
    """A core ``v1`` ConfigMap, reduced to name, labels, annotations, data and binary data."""

    name: str
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    data: dict[str, str] = field(default_factory=dict)
    binary_data: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_child(cls, child: Any) -> ConfigMapObject:
        """An observed child; raises `wasm_reconciler.Error` naming the child when it does not fit."""
        try:
            obj = decode.struct(child, "ConfigMapObject")
            decode.string(decode.field(obj, "apiVersion"))
            decode.string(decode.field(obj, "kind"))
            metadata = decode.struct(decode.field(obj, "metadata"), "ConfigMapMetadata")
            return cls(
                name=decode.string(decode.field(metadata, "name")),
                labels=decode.optional_string_map(metadata, "labels"),
                annotations=decode.optional_string_map(metadata, "annotations"),
                data=decode.optional_string_map(obj, "data"),
                binary_data=decode.optional_string_map(obj, "binaryData"),
            )
        except Error as error:
            found = child.get("metadata") if isinstance(child, dict) else None
            name = found.get("name") if isinstance(found, dict) else None
            raise error.context(f"reading child v1/ConfigMap {name if isinstance(name, str) else '?'}") from None

    def to_json(self) -> dict[str, Any]:
        """The object as a desired child: empty maps left out, keys sorted."""
        metadata: dict[str, Any] = {"name": self.name}
        if self.labels:
            metadata["labels"] = dict(sorted(self.labels.items()))
        if self.annotations:
            metadata["annotations"] = dict(sorted(self.annotations.items()))
        obj: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}
        if self.data:
            obj["data"] = dict(sorted(self.data.items()))
        if self.binary_data:
            obj["binaryData"] = dict(sorted(self.binary_data.items()))
        return obj
