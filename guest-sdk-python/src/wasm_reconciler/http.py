"""A small blocking HTTP client, for plugins built against contract 0.2
(``python -m wasm_reconciler build --contract 0.2``).

Requests go out through ``wasi:http/outgoing-handler``; the host sends one only when it matches an entry of the
plugin's ``allowedOutboundHosts`` setting, and answers anything else with an `HttpError` of kind
`HttpErrorKind.DENIED` without sending it. Time spent waiting for responses counts against the plugin's
outbound budget, not its deadline. ::

    from wasm_reconciler import http, variables

    zone = http.get(
        "http://127.0.0.1:8081/api/v1/servers/localhost/zones/example.org.",
        headers={"X-API-Key": variables.get("api_key")},
    ).error_for_status().json()

Redirects are followed (up to ``max_redirects``, 5 by default); each one is a new request the host checks
against the allowlist again. A 303, or a 301 or 302 answering a ``POST``, is followed with a ``GET`` without
body, as browsers do. An `HttpError` is an `Error`: raised out of ``reconcile`` it is reported with its message,
which names the request (``GET http://…/: …``).

In plain CPython (unit tests) requests go to the installed host: a `wasm_reconciler.testing.MemoryHost` given
an ``http`` handler answers them, one call per request sent (each redirect is one):

>>> from wasm_reconciler.testing import MemoryHost, with_host
>>> def api(request: Request) -> Response:
...     if request.url == "http://api.test/old":
...         return Response(301, headers=[("Location", "/new")])
...     return Response(200, b'{"serial": 7}')
>>> with with_host(MemoryHost(http=api)):
...     get("http://api.test/old").json()
{'serial': 7}
>>> with with_host(MemoryHost()):
...     get("http://api.test/")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
wasm_reconciler.http.HttpError: GET http://api.test/: denied: the test host sends no HTTP requests ...
"""

from __future__ import annotations

import json as _json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from . import host
from .component import in_component
from .error import Error

__all__ = [
    "DEFAULT_MAX_REDIRECTS",
    "HttpBackend",
    "HttpError",
    "HttpErrorKind",
    "Request",
    "Response",
    "Url",
    "delete",
    "get",
    "patch",
    "post",
    "put",
    "request",
]

#: Redirects `Request.send` follows unless told otherwise.
DEFAULT_MAX_REDIRECTS = 5
#: Statuses that redirect (when the response has a ``Location``).
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
#: Characters of the body `Response.error_for_status` puts in its message.
_EXCERPT = 200

Headers = Mapping[str, str] | Iterable[tuple[str, str]]


class HttpErrorKind(StrEnum):
    """What went wrong with a request."""

    #: The host refused to send it: no entry of ``allowedOutboundHosts`` matches, or its host resolves to a
    #: blocked network. Nothing was sent.
    DENIED = "Denied"
    #: No response in time (the request's timeout, the host's ``outboundTimeout`` or the outbound budget).
    TIMEOUT = "Timeout"
    #: The server could not be reached: connection refused or reset, unreachable.
    CONNECT = "Connect"
    #: The host name did not resolve.
    DNS = "Dns"
    #: TLS failed: untrusted certificate, handshake error.
    TLS = "Tls"
    #: The response body is over the host's ``maxResponseSize``.
    TOO_LARGE = "TooLarge"
    #: The URL is not an absolute ``http`` or ``https`` URL.
    INVALID_URL = "InvalidUrl"
    #: The response had a non-2xx status (`Response.error_for_status`); `HttpError.status` holds it.
    STATUS = "Status"
    #: Anything else: a protocol error, a header the host refuses, an internal error.
    OTHER = "Other"


class HttpError(Error):
    """A failed request: what kind of failure (`kind`, with the `status` for `HttpErrorKind.STATUS`), and a
    message naming the request.

    >>> error = HttpError(HttpErrorKind.STATUS, "the server answered 404: no such zone", status=404)
    >>> error.kind, error.status, str(error)
    (<HttpErrorKind.STATUS: 'Status'>, 404, 'the server answered 404: no such zone')
    """

    def __init__(self, kind: HttpErrorKind, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        if (kind is HttpErrorKind.STATUS) != (status is not None):
            raise ValueError(f"an HttpError has a status exactly when its kind is Status, got {kind} and {status}")
        self.kind = kind
        self.status = status

    @property
    def is_denied(self) -> bool:
        """Whether the host refused to send the request."""
        return self.kind is HttpErrorKind.DENIED

    def during(self, method: str, url: Url) -> HttpError:
        """The same error, its message prefixed with the request it happened to: ``GET http://…/: message``."""
        return HttpError(self.kind, f"{method} {url}: {self.message}", status=self.status)

    def __repr__(self) -> str:
        status = f", status={self.status}" if self.status is not None else ""
        return f"HttpError({self.kind.value}{status}, {self.message!r})"


@dataclass(frozen=True)
class Url:
    """A URL split the way ``wasi:http`` takes it.

    >>> url = Url.parse("https://api.example.com:8443/zones?rrsets=false#top")
    >>> url.scheme, url.authority, url.path_with_query
    ('https', 'api.example.com:8443', '/zones?rrsets=false')
    >>> Url.parse("ftp://example.com/")
    Traceback (most recent call last):
    ...
    wasm_reconciler.http.HttpError: "ftp://example.com/": only http and https URLs are supported
    """

    #: ``http`` or ``https``.
    scheme: str
    #: ``host[:port]``.
    authority: str
    #: The path and query, starting with ``/``.
    path_with_query: str

    @classmethod
    def parse(cls, text: str) -> Url:
        """Parses an absolute ``http`` or ``https`` URL, dropping the fragment; raises `HttpError` of kind
        `HttpErrorKind.INVALID_URL` otherwise."""

        def invalid(why: str) -> HttpError:
            return HttpError(HttpErrorKind.INVALID_URL, f"{debug_quote(text)}: {why}")

        scheme, separator, rest = text.partition("://")
        if not separator:
            raise invalid("not an absolute URL")
        scheme = scheme.lower()
        if scheme not in ("http", "https"):
            raise invalid("only http and https URLs are supported")
        rest = rest.split("#", 1)[0]
        split = min((index for index in (rest.find("/"), rest.find("?")) if index >= 0), default=len(rest))
        authority, path = rest[:split], rest[split:]
        if not authority or any(character.isspace() for character in authority):
            raise invalid("no host")
        if not path:
            path = "/"
        elif path.startswith("?"):
            path = "/" + path
        return cls(scheme, authority, path)

    def join(self, location: str) -> Url:
        """Resolves a ``Location`` header against this URL: absolute, scheme-relative, absolute-path or relative.

        >>> base = Url.parse("http://a.test:8081/api/v1/zones/x?y=1")
        >>> [str(base.join(location)) for location in ["/other", "sibling", "//b.test/p", "https://c.test/q"]]
        ['http://a.test:8081/other', 'http://a.test:8081/api/v1/zones/sibling', 'http://b.test/p', 'https://c.test/q']
        """
        if "://" in location:
            return Url.parse(location)
        if location.startswith("//"):
            return Url.parse(f"{self.scheme}:{location}")
        if location.startswith("/"):
            path = location
        else:
            base = self.path_with_query.split("?", 1)[0]
            path = base[: base.rfind("/") + 1] + location
        return Url.parse(f"{self.scheme}://{self.authority}{path}")

    def __str__(self) -> str:
        return f"{self.scheme}://{self.authority}{self.path_with_query}"


@dataclass
class Response:
    """A whole HTTP response. Header names are kept in lower case.

    >>> response = Response(422, b"RRset example.org. IN A: Conflicts with pre-existing RRset")
    >>> response.error_for_status()
    Traceback (most recent call last):
    ...
    wasm_reconciler.http.HttpError: the server answered 422: RRset example.org. IN A: Conflicts with pre-existing RRset
    """

    #: The status code.
    status: int
    #: The body.
    body: bytes = b""
    #: Header fields, in order, names in lower case.
    headers: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.headers = [(name.lower(), value) for name, value in self.headers]

    def with_header(self, name: str, value: str) -> Response:
        """Adds a header field and returns the response; for tests."""
        self.headers.append((name.lower(), value))
        return self

    def header(self, name: str) -> str | None:
        """The first value of header `name` (any case), ``None`` when absent."""
        return _first(self.headers, name)

    @property
    def is_success(self) -> bool:
        """Whether the status is 2xx."""
        return 200 <= self.status < 300

    def text(self) -> str:
        """The body as UTF-8 text; raises `Error` when it is not."""
        try:
            return self.body.decode("utf-8")
        except UnicodeDecodeError as failure:
            raise Error(f"reading the response body: {failure}") from None

    def json(self) -> Any:
        """The body parsed as JSON; raises `Error` when it is not JSON."""
        try:
            return _json.loads(self.body)
        except ValueError as failure:
            raise Error(f"parsing the response body: {failure}") from None

    def error_for_status(self) -> Response:
        """The response itself when its status is 2xx; else raises an `HttpError` of kind `HttpErrorKind.STATUS`
        carrying the status and the start of the body."""
        if self.is_success:
            return self
        excerpt = self.body.decode("utf-8", errors="replace")[:_EXCERPT].strip()
        raise HttpError(HttpErrorKind.STATUS, f"the server answered {self.status}: {excerpt}", status=self.status)


@dataclass
class Request:
    """An HTTP request; `send` sends it. Build one with `request` (or `get`, `post`, …), which also sends it.

    An `HttpBackend` receives one `Request` per request sent: the redirects already followed are resolved
    into its method, URL and body, and its `max_redirects` is 0.
    """

    #: The method, e.g. ``GET`` (case-sensitive, as in HTTP).
    method: str
    #: The URL, as given (parsed when sent).
    url: str
    #: Header fields, in order.
    headers: list[tuple[str, str]] = field(default_factory=list)
    #: The body (empty for none).
    body: bytes = b""
    #: Longest wait for the response headers; the host's ``outboundTimeout`` applies too.
    timeout: timedelta | None = None
    #: Redirects followed before giving up (0: return the redirect response itself).
    max_redirects: int = DEFAULT_MAX_REDIRECTS

    def header(self, name: str) -> str | None:
        """The first value of header `name` (any case), ``None`` when absent."""
        return _first(self.headers, name)

    def send(self) -> Response:
        """Sends the request and reads the whole response, following redirects.

        Raises `HttpError`: of kind `HttpErrorKind.INVALID_URL` when `url` does not parse; otherwise with a
        message starting with the method and URL of the request that failed."""
        url = Url.parse(self.url)
        method, body, redirects = self.method, self.body, 0
        while True:
            sent = Request(method, str(url), list(self.headers), body, self.timeout, max_redirects=0)
            try:
                response = _send(sent)
            except HttpError as error:
                raise error.during(method, url) from None
            location = response.header("location")
            if location is None or response.status not in _REDIRECTS or redirects >= self.max_redirects:
                return response
            redirects += 1
            try:
                url = url.join(location)
            except HttpError as error:
                raise error.during(method, url) from None
            if response.status == 303 or (response.status in (301, 302) and method == "POST"):
                method, body = "GET", b""


_NO_JSON: Any = object()


def request(
    method: str,
    url: str,
    *,
    headers: Headers | None = None,
    body: bytes | str | None = None,
    json: Any = _NO_JSON,
    timeout: timedelta | float | None = None,
    max_redirects: int = DEFAULT_MAX_REDIRECTS,
) -> Response:
    """Sends a request and reads the whole response, following redirects (see `Request.send`).

    - `headers`: a mapping or ``(name, value)`` pairs.
    - `body`: bytes, or text sent as UTF-8; `json`: a value sent as JSON, with ``Content-Type: application/json``.
    - `timeout`: longest wait for the response headers (a `timedelta`, or seconds).
    - `max_redirects`: redirects followed before the redirect response itself is returned.
    """
    fields = list(headers.items()) if isinstance(headers, Mapping) else list(headers or ())
    if json is not _NO_JSON:
        if body is not None:
            raise ValueError("give a request `body` or `json`, not both")
        fields.append(("Content-Type", "application/json"))
        body = _json.dumps(json, ensure_ascii=False, separators=(",", ":"))
    data = body.encode("utf-8") if isinstance(body, str) else (body or b"")
    wait = timedelta(seconds=timeout) if isinstance(timeout, int | float) else timeout
    return Request(method, url, fields, data, wait, max_redirects).send()


def get(url: str, **options: Any) -> Response:
    """Sends a ``GET`` request; `options` as for `request`."""
    return request("GET", url, **options)


def post(url: str, **options: Any) -> Response:
    """Sends a ``POST`` request; `options` as for `request`."""
    return request("POST", url, **options)


def put(url: str, **options: Any) -> Response:
    """Sends a ``PUT`` request; `options` as for `request`."""
    return request("PUT", url, **options)


def patch(url: str, **options: Any) -> Response:
    """Sends a ``PATCH`` request; `options` as for `request`."""
    return request("PATCH", url, **options)


def delete(url: str, **options: Any) -> Response:
    """Sends a ``DELETE`` request; `options` as for `request`."""
    return request("DELETE", url, **options)


@runtime_checkable
class HttpBackend(Protocol):
    """A `host.HostBackend` that also sends HTTP requests: the component's imports (contract 0.2), or a stand-in
    such as `wasm_reconciler.testing.MemoryHost` in unit tests."""

    def http(self, request: Request) -> Response:
        """Sends one request (no redirects followed: they come back as responses); raises `HttpError`."""
        ...


def _send(request: Request) -> Response:
    backend = host.require("http")
    if isinstance(backend, HttpBackend):
        return backend.http(request)
    if in_component():
        raise HttpError(
            HttpErrorKind.OTHER,
            "this plugin was built against contract 0.1, which has no outbound HTTP; build it with `--contract 0.2`",
        )
    raise HttpError(
        HttpErrorKind.DENIED, f"denied: the installed host ({type(backend).__name__}) sends no HTTP requests"
    )


def _first(headers: list[tuple[str, str]], name: str) -> str | None:
    wanted = name.lower()
    return next((value for field_name, value in headers if field_name.lower() == wanted), None)


def debug_quote(text: str) -> str:
    """`text` quoted and escaped as Rust's ``{:?}`` prints a string, for messages alike in every SDK.

    >>> print(debug_quote('say "hi"\\n'))
    "say \\"hi\\"\\n"
    """
    escaped = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\0": "\\0"}
    quoted = (
        escaped.get(character)
        or (character if character.isprintable() else f"\\u{{{ord(character):x}}}")
        for character in text
    )
    return '"' + "".join(quoted) + '"'
