"""What a plugin reconciles: its primary kind, owned and read kinds, finalizer and resync period."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import timedelta

from .gvk import Gvk

__all__ = ["ControllerSpec"]

#: Largest resync period the contract carries (a WIT ``u32`` of seconds).
MAX_RESYNC_SECONDS = 2**32 - 1


@dataclass
class ControllerSpec:
    """What a plugin reconciles, returned by `Reconciler.describe`.

    >>> spec = ControllerSpec(Gvk("example.com", "v1", "Widget"),
    ...                       owns=[Gvk("", "v1", "ConfigMap")], finalizer="example.com/cleanup",
    ...                       resync=timedelta(minutes=5))
    >>> spec.resync_seconds
    300

    - `primary`: the kind whose objects are reconciled, one reconcile per object.
    - `owns`: kinds of children; the host applies them with a controller ownerReference, prunes those no
      longer desired, and reconciles the primary again when they change.
    - `reads`: further kinds the plugin reads with `host.get` / `host.list`.
    - `finalizer`: the host adds it before any child is written and calls the plugin with a deleting view
      until the outcome says `finalized`.
    - `resync`: reconcile every primary at least this often (seconds or a `timedelta`), rounded up to whole
      seconds, at least one.
    """

    primary: Gvk
    owns: list[Gvk] = field(default_factory=list)
    reads: list[Gvk] = field(default_factory=list)
    finalizer: str | None = None
    resync: timedelta | float | None = None

    def __post_init__(self) -> None:
        self.owns = _unique(self.owns)
        self.reads = _unique(self.reads)

    @property
    def resync_seconds(self) -> int | None:
        """The resync period in whole seconds (rounded up, at least 1, capped at ``2**32 - 1``), if any."""
        if self.resync is None:
            return None
        seconds = self.resync.total_seconds() if isinstance(self.resync, timedelta) else float(self.resync)
        return min(max(math.ceil(seconds), 1), MAX_RESYNC_SECONDS)


def _unique(kinds: list[Gvk]) -> list[Gvk]:
    seen: list[Gvk] = []
    for kind in kinds:
        if not isinstance(kind, Gvk):
            raise TypeError(f"expected a Gvk, got {kind!r}")
        if kind not in seen:
            seen.append(kind)
    return seen
