"""A test plugin built against contract 0.2 that sends the HTTP requests and reads the variables its configuration
names, and reports what happened in its status (variable values only by length, never verbatim).

The Python port of ``test-guests/outbound``: for the same configuration and host it reports the same status, so
the host's tests run one configuration through each language and compare.

Configuration: ``requests`` (each ``{url, method, headers, body, maxRedirects}``; a header value ``${name}`` is
the value of variable ``name``, empty when it cannot be read) and ``variables`` (names to read). The Rust
guest's ``then`` (computing or sleeping after the requests) is not ported: it is ignored.

Status: ``{"responses": [{"status": N, "body": "text"} | {"error": "<kind>", "message": "..."}],
"variables": {name: {"length": N} | {"error": "..."}}}``, the kind spelled as the Rust SDK's ``Debug`` prints
it (``Denied``, ``Status(404)``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

from wasm_reconciler import ControllerSpec, Error, Gvk, HostError, Outcome, Reconciler, WorldView, http, variables

__all__ = ["KIND", "Outbound", "RequestSpec", "kind_name"]

#: The kind it reconciles.
KIND = Gvk("tests.wasm-reconciler.io", "v1", "Outbound")

T = TypeVar("T")


@dataclass(frozen=True)
class RequestSpec:
    """One entry of ``requests``."""

    url: str
    method: str = "GET"
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None
    max_redirects: int | None = None

    @classmethod
    def parse(cls, value: Any, where: str) -> RequestSpec:
        """Reads one entry of ``requests``; raises `Error` naming `where` when it is malformed."""
        if not isinstance(value, dict):
            raise Error(f"{where}: expected an object")
        url = value.get("url")
        if not isinstance(url, str):
            raise Error(f"{where}.url: expected a string")
        method = _optional(value, "method", str, where)
        headers = _optional(value, "headers", dict, where) or {}
        if not all(isinstance(header, str) for header in headers.values()):
            raise Error(f"{where}.headers: expected string values")
        redirects = _optional(value, "maxRedirects", int, where)
        if redirects is not None and (isinstance(redirects, bool) or redirects < 0):
            raise Error(f"{where}.maxRedirects: expected a non-negative integer")
        body = _optional(value, "body", str, where)
        return cls(url, method if method is not None else "GET", headers, body, redirects)


class Outbound(Reconciler):
    """Reads the configured variables, sends the configured requests, reports both in its status."""

    def describe(self) -> ControllerSpec:
        return ControllerSpec(KIND)

    def reconcile(self, view: WorldView) -> Outcome:
        names = _list(view.config, "variables")
        if not all(isinstance(name, str) for name in names):
            raise Error("config.variables: expected a list of strings")
        requests = _list(view.config, "requests")
        specs = [RequestSpec.parse(entry, f"config.requests[{index}]") for index, entry in enumerate(requests)]
        read: dict[str, dict[str, Any]] = {}
        for name in names:
            try:
                read[name] = {"length": len(variables.get(name).encode("utf-8"))}
            except HostError as error:
                read[name] = {"error": error.message}
        responses = [send(spec) for spec in specs]
        return Outcome().status({"responses": responses, "variables": read})


def send(spec: RequestSpec) -> dict[str, Any]:
    """Sends one configured request; its entry of the status ``responses``."""
    headers = [(name, _header_value(value)) for name, value in sorted(spec.headers.items())]
    body = spec.body.encode("utf-8") if spec.body is not None else b""
    request = http.Request(spec.method, spec.url, headers, body)
    if spec.max_redirects is not None:
        request.max_redirects = spec.max_redirects
    try:
        response = request.send()
    except http.HttpError as error:
        return {"error": kind_name(error), "message": str(error)}
    return {"status": response.status, "body": response.body.decode("utf-8", errors="replace")}


def kind_name(error: http.HttpError) -> str:
    """An error's kind as the Rust SDK's ``Debug`` prints it: ``Denied``, ``Status(404)``.

    >>> kind_name(http.HttpError(http.HttpErrorKind.STATUS, "the server answered 404: gone", status=404))
    'Status(404)'
    """
    if error.kind is http.HttpErrorKind.STATUS:
        return f"Status({error.status})"
    return error.kind.value


def _header_value(value: str) -> str:
    """A configured header value: ``${name}`` is variable ``name``'s value, empty when it cannot be read."""
    if value.startswith("${") and value[2:].endswith("}"):
        try:
            return variables.get(value[2:-1])
        except HostError:
            return ""
    return value


def _list(config: dict[str, Any], key: str) -> list[Any]:
    value = config.get(key, [])
    if not isinstance(value, list):
        raise Error(f"config.{key}: expected a list")
    return value


_EXPECTED = {str: "a string", int: "an integer", dict: "an object"}


def _optional(obj: dict[str, Any], key: str, expected: type[T], where: str) -> T | None:
    """Field `key` of `obj` when present and not null; raises `Error` when it is not an `expected`."""
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, expected):
        raise Error(f"{where}.{key}: expected {_EXPECTED[expected]}")
    return value
