"""Running plugin logic in plain CPython: an in-process stand-in for the host, for unit tests.

`MemoryHost` serves ``get`` and ``list`` from a fixed set of objects, records log lines and, for contract 0.2
plugins, serves variables and answers HTTP requests with a handler; `with_host` installs it for the code under
test::

    with with_host(MemoryHost([secret])) as cluster:
        outcome = MyReconciler().reconcile(view)
    assert cluster.logs == [(Level.INFO, "...")]

    def zones(request: Request) -> Response:
        return Response(200, b'{"serial": 7}')

    with with_host(MemoryHost(variables={"api_key": "k3y"}, http=zones)) as cluster:
        outcome = MyReconciler().reconcile(view)
    assert [request.url for request in cluster.requests] == ["http://dns.test/zones/example.org."]
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from . import host
from .gvk import Gvk
from .host import HostBackend, Level, RefusedCall
from .http import HttpError, HttpErrorKind, Request, Response, debug_quote

__all__ = ["HttpHandler", "LabelSelector", "MemoryHost", "with_host"]

#: Answers one HTTP request (redirects come back as responses): returns a `Response` or raises `HttpError`.
HttpHandler = Callable[[Request], Response]


class MemoryHost:
    """A host serving a fixed set of objects from memory and recording log lines; for contract 0.2 plugins it
    also serves `variables` and answers HTTP requests with the `http` handler.

    ``get`` matches kind, namespace and name; ``list`` matches kind, namespace (when given) and a label
    selector supporting ``k=v``, ``k==v``, ``k!=v``, ``k``, ``!k``, ``k in (a,b)`` and ``k notin (a,b)``.
    A variable not in `variables` is an error naming it, as the host's is. Without a handler every request
    is denied, as by a host whose settings allow no outbound host; `requests` records every request the
    plugin asked to send, denied or not, one per redirect followed.
    """

    def __init__(
        self,
        objects: Iterable[dict[str, Any]] = (),
        *,
        variables: Mapping[str, str] | None = None,
        http: HttpHandler | None = None,
    ) -> None:
        self.objects: list[dict[str, Any]] = list(objects)
        self.logs: list[tuple[Level, str]] = []
        self.variables: dict[str, str] = dict(variables or {})
        self.http_handler: HttpHandler | None = http
        self.requests: list[Request] = []

    def with_object(self, obj: dict[str, Any]) -> MemoryHost:
        """Adds an object ``get`` and ``list`` can see (with ``apiVersion``, ``kind`` and ``metadata``)."""
        self.objects.append(obj)
        return self

    def with_variable(self, name: str, value: str) -> MemoryHost:
        """Defines a variable `wasm_reconciler.variables.get` returns."""
        self.variables[name] = value
        return self

    def variable(self, name: str) -> str:
        try:
            return self.variables[name]
        except KeyError:
            raise RefusedCall(f"the plugin's settings define no variable {debug_quote(name)}") from None

    def http(self, request: Request) -> Response:
        self.requests.append(request)
        if self.http_handler is None:
            raise HttpError(
                HttpErrorKind.DENIED, "denied: the test host sends no HTTP requests (give MemoryHost an `http` handler)"
            )
        return self.http_handler(request)

    def log(self, level: Level, message: str) -> None:
        self.logs.append((level, message))

    def get(self, kind: Gvk, namespace: str | None, name: str) -> str | None:
        for obj in self._visible(kind, namespace):
            if _metadata(obj).get("name") == name:
                return json.dumps(obj)
        return None

    def list(self, kind: Gvk, namespace: str | None, label_selector: str | None) -> list[str]:
        selector = LabelSelector.parse(label_selector or "")
        return [
            json.dumps(obj)
            for obj in self._visible(kind, namespace)
            if selector.matches(_metadata(obj).get("labels"))
        ]

    def _visible(self, kind: Gvk, namespace: str | None) -> Iterator[dict[str, Any]]:
        for obj in self.objects:
            if kind.matches(obj) and (namespace is None or _metadata(obj).get("namespace") == namespace):
                yield obj


@contextmanager
def with_host(backend: HostBackend) -> Iterator[Any]:
    """Serves the `wasm_reconciler.host` functions with `backend` inside the block, then restores the previous
    backend (also when the block raises). Blocks nest. Yields `backend`."""
    previous = host.install(backend)
    try:
        yield backend
    finally:
        host.install(previous)


@dataclass(frozen=True)
class _Requirement:
    key: str
    operator: str  # "exists", "!exists", "in", "notin"
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, Any]) -> bool:
        value = labels.get(self.key)
        present = isinstance(value, str)
        if self.operator == "exists":
            return present
        if self.operator == "!exists":
            return not present
        if self.operator == "in":
            return present and value in self.values
        return not present or value not in self.values


_KEY = re.compile(r"[A-Za-z0-9\-_./]+")


class LabelSelector:
    """A parsed label selector: every requirement must hold."""

    def __init__(self, requirements: list[_Requirement]) -> None:
        self.requirements = requirements

    @classmethod
    def parse(cls, text: str) -> LabelSelector:
        """Parses Kubernetes selector syntax; raises `RefusedCall` naming a term that does not parse."""
        return cls([_parse_term(term.strip()) for term in _split_terms(text) if term.strip()])

    def matches(self, labels: Any) -> bool:
        """Whether a ``metadata.labels`` value satisfies every requirement."""
        labels = labels if isinstance(labels, dict) else {}
        return all(requirement.matches(labels) for requirement in self.requirements)


def _parse_term(term: str) -> _Requirement:
    def key_of(text: str) -> str:
        if not _KEY.fullmatch(text):
            raise RefusedCall(f"invalid label selector term `{term}`")
        return text

    if term.startswith("!"):
        return _Requirement(key_of(term[1:].strip()), "!exists")
    if "!=" in term:
        key, _, value = term.partition("!=")
        return _Requirement(key_of(key.strip()), "notin", (value.strip(),))
    if "=" in term:
        separator = "==" if "==" in term else "="
        key, _, value = term.partition(separator)
        return _Requirement(key_of(key.strip()), "in", (value.strip(),))
    parts = term.split(None, 1)
    if len(parts) == 2:
        key, rest = key_of(parts[0]), parts[1].lstrip()
        if rest.startswith("notin"):
            operator, values = "notin", rest[len("notin") :]
        elif rest.startswith("in"):
            operator, values = "in", rest[len("in") :]
        else:
            raise RefusedCall(f"invalid label selector term `{term}`")
        values = values.strip()
        if not (values.startswith("(") and values.endswith(")")):
            raise RefusedCall(f"invalid label selector term `{term}`")
        return _Requirement(key, operator, tuple(value.strip() for value in values[1:-1].split(",")))
    return _Requirement(key_of(term), "exists")


def _split_terms(text: str) -> list[str]:
    terms, depth, start = [], 0, 0
    for index, character in enumerate(text):
        if character == "(":
            depth += 1
        elif character == ")":
            depth = max(depth - 1, 0)
        elif character == "," and depth == 0:
            terms.append(text[start:index])
            start = index + 1
    terms.append(text[start:])
    return terms


def _metadata(obj: dict[str, Any]) -> dict[str, Any]:
    metadata = obj.get("metadata")
    return metadata if isinstance(metadata, dict) else {}
