"""Read-only calls into the host: ``get`` and ``list`` from its caches, and logging; the backend serving them.

In a WebAssembly component these call the host's imports. In plain CPython (unit tests) they call the host
installed with `wasm_reconciler.testing.with_host`, e.g. a `wasm_reconciler.testing.MemoryHost`.

Only kinds declared in `ControllerSpec.owns` or `ControllerSpec.reads` can be read. The host remembers every
read (including names that were absent) and reconciles the primary again when any of them changes.
"""

from __future__ import annotations

import json
import sys
from enum import IntEnum
from typing import Any, Protocol, cast

from .error import Error, HostError
from .gvk import Gvk

__all__ = [
    "HostBackend",
    "Level",
    "RefusedCall",
    "debug",
    "error",
    "get",
    "info",
    "list",
    "log",
    "trace",
    "warn",
]

_list = list


class Level(IntEnum):
    """Severity of a log line."""

    TRACE = 0
    DEBUG = 1
    INFO = 2
    WARN = 3
    ERROR = 4


class RefusedCall(Exception):
    """Raised by a `HostBackend` when the host refuses a call; the argument is the host's reason."""


class HostBackend(Protocol):
    """What the host functions call: the component's imports, or a stand-in such as
    `wasm_reconciler.testing.MemoryHost` in unit tests. Objects travel as JSON text, as on the wire."""

    def log(self, level: Level, message: str) -> None:
        """Receives a log line."""
        ...

    def get(self, kind: Gvk, namespace: str | None, name: str) -> str | None:
        """One object as JSON text, ``None`` when absent; raises `RefusedCall` with the host's reason."""
        ...

    def list(self, kind: Gvk, namespace: str | None, label_selector: str | None) -> _list[str]:
        """Objects as JSON text; raises `RefusedCall` with the host's reason."""
        ...


_backend: HostBackend | None = None


def install(backend: HostBackend | None) -> HostBackend | None:
    """Makes `backend` serve the host functions and returns the previous one (`testing.with_host` wraps this)."""
    global _backend
    previous, _backend = _backend, backend
    return previous


def current() -> HostBackend | None:
    """The backend serving the host functions, if any."""
    return _backend


def require(call: str) -> HostBackend:
    """The installed backend, for the SDK function `call` (``host.get``, ``variables.get``); raises
    `RuntimeError` explaining how to install one when there is none."""
    if _backend is None:
        raise RuntimeError(
            f"wasm_reconciler.{call} was called outside a component and outside "
            "`wasm_reconciler.testing.with_host`: wrap the code under test in "
            "`with with_host(MemoryHost(...)):`"
        )
    return _backend


def log(level: Level, message: str) -> None:
    """Writes a line to the host's log, tagged with the plugin's name and the object being reconciled.

    Without an installed host (plain unit tests) the line goes to stderr."""
    if _backend is None:
        print(f"[{level.name}] {message}", file=sys.stderr)
    else:
        _backend.log(level, message)


def trace(message: str) -> None:
    """Logs at `Level.TRACE`."""
    log(Level.TRACE, message)


def debug(message: str) -> None:
    """Logs at `Level.DEBUG`."""
    log(Level.DEBUG, message)


def info(message: str) -> None:
    """Logs at `Level.INFO`."""
    log(Level.INFO, message)


def warn(message: str) -> None:
    """Logs at `Level.WARN`."""
    log(Level.WARN, message)


def error(message: str) -> None:
    """Logs at `Level.ERROR`."""
    log(Level.ERROR, message)


def get(kind: Gvk, namespace: str | None, name: str) -> dict[str, Any] | None:
    """Reads one object; ``None`` when it does not exist. `namespace` is ignored for cluster-scoped kinds.

    Raises `HostError` when the host refuses (the kind is not declared in ``owns`` or ``reads``)."""
    backend = require("host.get")
    where = f"{namespace}/{name}" if namespace is not None else name
    try:
        text = backend.get(kind, namespace, name)
    except RefusedCall as refused:
        raise HostError(f"host get {kind} {where}: {refused}") from None
    if text is None:
        return None
    return cast("dict[str, Any]", _parse(text, f"reading {kind} {name} from the host"))


def list(kind: Gvk, namespace: str | None = None, label_selector: str | None = None) -> _list[dict[str, Any]]:
    """Lists objects of a kind, in one namespace or all (``None``), optionally filtered by a label selector in
    Kubernetes syntax (``app=web,tier in (a,b),!legacy``).

    Raises `HostError` when the host refuses (an undeclared kind, a selector that does not parse)."""
    backend = require("host.list")
    try:
        texts = backend.list(kind, namespace, label_selector)
    except RefusedCall as refused:
        raise HostError(f"host list {kind}: {refused}") from None
    return [_parse(text, f"reading a listed {kind} from the host") for text in texts]


def _parse(text: str, context: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as failure:
        raise Error(f"{context}: {failure}") from None
