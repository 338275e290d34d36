"""Kubernetes group/version/kind identifiers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Gvk"]


@dataclass(frozen=True, order=True)
class Gvk:
    """A Kubernetes group/version/kind, e.g. ``apps/v1/Deployment``; the core group is the empty string.

    >>> Gvk("apps", "v1", "Deployment").api_version
    'apps/v1'
    >>> Gvk.from_api_version("v1", "ConfigMap")
    Gvk(group='', version='v1', kind='ConfigMap')
    """

    group: str
    version: str
    kind: str

    @classmethod
    def from_api_version(cls, api_version: str, kind: str) -> Gvk:
        """Parses an object's ``apiVersion`` (``apps/v1`` or ``v1``) together with its ``kind``."""
        group, slash, version = api_version.partition("/")
        return cls(group, version, kind) if slash else cls("", api_version, kind)

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` objects of this kind carry: ``group/version``, or ``version`` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def matches(self, obj: Any) -> bool:
        """Whether a JSON object's ``apiVersion`` and ``kind`` name this group/version/kind."""
        if not isinstance(obj, dict):
            return False
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            return False
        return kind == self.kind and Gvk.from_api_version(api_version, kind) == self

    def __str__(self) -> str:
        return f"{self.api_version}/{self.kind}"
