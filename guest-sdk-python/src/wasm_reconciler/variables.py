"""Variables, for plugins built against contract 0.2 (``python -m wasm_reconciler build --contract 0.2``): values
the plugin's settings name under ``variables:``, each one key of a Kubernetes Secret the host reads for it.

::

    api_key = variables.get("api_key")

A value is a secret: send it where it is needed (a request header), never into a log line, an event, a
condition or status — the host keeps it out of everything it writes, but cannot see what a plugin does with it.

In plain CPython (unit tests) the installed host answers, e.g. a `wasm_reconciler.testing.MemoryHost` given
``variables={"api_key": "..."}``:

>>> from wasm_reconciler.testing import MemoryHost, with_host
>>> with with_host(MemoryHost(variables={"api_key": "s3cret"})):
...     len(get("api_key"))
6
>>> with with_host(MemoryHost()):
...     get("token")
Traceback (most recent call last):
...
wasm_reconciler.error.HostError: the plugin's settings define no variable "token"
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from . import host
from .component import in_component
from .error import HostError
from .host import RefusedCall

__all__ = ["VariablesBackend", "get"]


@runtime_checkable
class VariablesBackend(Protocol):
    """A `host.HostBackend` that also serves variables: the component's imports (contract 0.2), or a stand-in
    such as `wasm_reconciler.testing.MemoryHost` in unit tests."""

    def variable(self, name: str) -> str:
        """The value of variable `name`; raises `RefusedCall` with the host's message when there is none."""
        ...


def get(name: str) -> str:
    """The value of variable `name`.

    Raises `HostError` with the host's message (naming the variable and its Secret, never a value) when the
    settings define no such variable or its Secret or key cannot be read, and when the plugin was built against
    contract 0.1, which has no variables."""
    backend = host.require("variables.get")
    if not isinstance(backend, VariablesBackend):
        if in_component():
            raise HostError(
                f"variable {name!r}: this plugin was built against contract 0.1, which has no variables; "
                "build it with `--contract 0.2`"
            )
        raise HostError(f"variable {name!r}: the installed host ({type(backend).__name__}) serves no variables")
    try:
        return backend.variable(name)
    except RefusedCall as refused:
        raise HostError(str(refused)) from None
