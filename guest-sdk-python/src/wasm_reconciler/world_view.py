"""What the host observed about one primary object: the object, its children, the plugin configuration."""

from __future__ import annotations

from typing import Any

from .gvk import Gvk

__all__ = ["WorldView"]

JsonObject = dict[str, Any]


class WorldView:
    """What the host observed about one primary object, handed to `Reconciler.reconcile`.

    The primary, each child and the configuration are plain dicts, as the API server returns them (without
    ``managedFields``). The host builds views itself; the constructor exists for tests.

    >>> view = WorldView({"metadata": {"name": "w", "namespace": "prod", "generation": 3}},
    ...                  children=[{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w-0"}}])
    >>> view.name, view.namespace, view.generation
    ('w', 'prod', 3)
    >>> [child["metadata"]["name"] for child in view.children(Gvk("", "v1", "ConfigMap"))]
    ['w-0']
    """

    __slots__ = ("_attempt", "_children", "_config", "_deleting", "_primary")

    def __init__(
        self,
        primary: JsonObject,
        children: list[JsonObject] | None = None,
        config: JsonObject | None = None,
        deleting: bool = False,
        attempt: int = 0,
    ) -> None:
        self._primary = primary
        self._children = list(children or [])
        self._config = config if config is not None else {}
        self._deleting = deleting
        self._attempt = attempt

    @property
    def primary(self) -> JsonObject:
        """The primary object."""
        return self._primary

    def children(self, kind: Gvk | None = None) -> list[JsonObject]:
        """Observed children (objects of owned kinds whose controller ownerReference is the primary), all of
        them or only those of `kind` (matched by ``apiVersion`` and ``kind``)."""
        if kind is None:
            return list(self._children)
        return [child for child in self._children if kind.matches(child)]

    @property
    def config(self) -> JsonObject:
        """The plugin configuration (``{}`` when none is configured)."""
        return self._config

    @property
    def deleting(self) -> bool:
        """Whether the primary is being deleted and waits for this plugin's finalizer: clean up, and answer
        with `Outcome.finalized` once done."""
        return self._deleting

    @property
    def attempt(self) -> int:
        """Consecutive failed reconciles of this primary so far (0 after a success)."""
        return self._attempt

    @property
    def name(self) -> str:
        """The primary's ``metadata.name`` (empty if it has none)."""
        return self._metadata_str("name") or ""

    @property
    def namespace(self) -> str | None:
        """The primary's ``metadata.namespace``; ``None`` for cluster-scoped objects."""
        return self._metadata_str("namespace")

    @property
    def uid(self) -> str | None:
        """The primary's ``metadata.uid``, if set."""
        return self._metadata_str("uid")

    @property
    def generation(self) -> int | None:
        """The primary's ``metadata.generation``, if set."""
        value = self._metadata().get("generation")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def _metadata(self) -> JsonObject:
        metadata = self._primary.get("metadata") if isinstance(self._primary, dict) else None
        return metadata if isinstance(metadata, dict) else {}

    def _metadata_str(self, key: str) -> str | None:
        value = self._metadata().get(key)
        return value if isinstance(value, str) else None

    def __repr__(self) -> str:
        return (
            f"WorldView(name={self.name!r}, namespace={self.namespace!r}, children={len(self._children)}, "
            f"deleting={self._deleting}, attempt={self._attempt})"
        )
