"""Inside a component built against contract 0.2: `wasm_reconciler.variables` and `wasm_reconciler.http` over the
generated bindings of the 0.2 world — ``wit_world.imports.variables`` and ``wasi:http/outgoing-handler``
(``wit_world.imports.outgoing_handler``, ``wasi_http_types``, ``streams``).

`_bindings.component_host` imports this module only when the component's world has these imports.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import TYPE_CHECKING

from componentize_py_types import Err
from wit_world.imports import outgoing_handler, streams
from wit_world.imports import variables as wit_variables
from wit_world.imports import wasi_http_types as wasi_http

from ._bindings import ComponentHost
from .host import RefusedCall
from .http import HttpError, HttpErrorKind, Request, Response, Url, debug_quote

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["ComponentHostV0_2", "send"]

#: Largest write to the request body stream at once (what ``blocking-write-and-flush`` takes).
WRITE_CHUNK = 4096
#: Largest read from the response body stream at once.
READ_CHUNK = 64 * 1024
_U64_MAX = 2**64 - 1

_METHODS: dict[str, wasi_http.Method] = {
    "GET": wasi_http.Method_Get(),
    "HEAD": wasi_http.Method_Head(),
    "POST": wasi_http.Method_Post(),
    "PUT": wasi_http.Method_Put(),
    "DELETE": wasi_http.Method_Delete(),
    "CONNECT": wasi_http.Method_Connect(),
    "OPTIONS": wasi_http.Method_Options(),
    "TRACE": wasi_http.Method_Trace(),
    "PATCH": wasi_http.Method_Patch(),
}


class ComponentHostV0_2(ComponentHost):
    """`host.HostBackend` calling the imports of contract 0.2: those of 0.1, variables and outbound HTTP."""

    def variable(self, name: str) -> str:
        try:
            return wit_variables.get(name)
        except Err as refused:
            raise RefusedCall(str(refused.value)) from None

    def http(self, request: Request) -> Response:
        return send(request)


def send(request: Request) -> Response:
    """Sends one request through ``wasi:http/outgoing-handler`` and reads the whole response (no redirects
    followed); raises `HttpError` with the ``error-code`` mapped to its kind."""
    url = Url.parse(request.url)
    fields = [(name.lower(), value.encode("utf-8")) for name, value in request.headers]
    if request.body and not any(name == "content-length" for name, _ in fields):
        fields.append(("content-length", str(len(request.body)).encode("ascii")))
    try:
        headers = wasi_http.Fields.from_list(fields)
    except Err as refused:
        raise HttpError(HttpErrorKind.OTHER, f"a header is not allowed: {debug_variant(refused.value)}") from None
    outgoing = wasi_http.OutgoingRequest(headers)
    try:
        outgoing.set_method(_METHODS.get(request.method) or wasi_http.Method_Other(request.method))
        outgoing.set_scheme(wasi_http.Scheme_Https() if url.scheme == "https" else wasi_http.Scheme_Http())
        outgoing.set_authority(url.authority)
        outgoing.set_path_with_query(url.path_with_query)
    except Err:
        raise HttpError(HttpErrorKind.INVALID_URL, "the host refused the URL's parts") from None
    try:
        body = outgoing.body()
    except Err:
        raise HttpError(HttpErrorKind.OTHER, "the request body was taken twice") from None
    try:
        pending = outgoing_handler.handle(outgoing, _options(request.timeout))
    except Err as refused:
        raise failure(refused.value) from None
    with pending:
        # The body is written once the request is on its way, so a large body never waits for a reader.
        _write_body(body, request.body)
        try:
            wasi_http.OutgoingBody.finish(body, None)
        except Err as refused:
            raise failure(refused.value) from None
        with pending.subscribe() as ready:
            ready.block()
        answer = pending.get()
        if answer is None or isinstance(answer, Err):
            raise HttpError(HttpErrorKind.OTHER, "the response was already taken")
        if isinstance(answer.value, Err):
            raise failure(answer.value.value)
        with answer.value.value as response:
            status = response.status()
            with response.headers() as response_headers:
                entries = response_headers.entries()
            try:
                incoming = response.consume()
            except Err:
                raise HttpError(HttpErrorKind.OTHER, "the response body was taken twice") from None
            try:
                data = _read_body(incoming)
            except BaseException:
                incoming.__exit__(None, None, None)
                raise
            with wasi_http.IncomingBody.finish(incoming):
                pass
    return Response(status, data, [(name, value.decode("utf-8", errors="replace")) for name, value in entries])


def _options(timeout: timedelta | None) -> wasi_http.RequestOptions | None:
    if timeout is None:
        return None
    options = wasi_http.RequestOptions()
    nanos = min(max(timeout // timedelta(microseconds=1), 0) * 1000, _U64_MAX)
    # A host that does not take a timeout keeps its own; the outbound timeout applies either way.
    for set_timeout in (options.set_connect_timeout, options.set_first_byte_timeout):
        try:
            set_timeout(nanos)
        except Err:
            pass
    return options


def _write_body(body: wasi_http.OutgoingBody, data: bytes) -> None:
    if not data:
        return
    try:
        stream = body.write()
    except Err:
        raise HttpError(HttpErrorKind.OTHER, "the request body stream was taken twice") from None
    with stream:
        for start in range(0, len(data), WRITE_CHUNK):
            try:
                stream.blocking_write_and_flush(data[start : start + WRITE_CHUNK])
            except Err as failed:
                raise _stream_failure("writing the request body", failed.value) from None


def _read_body(body: wasi_http.IncomingBody) -> bytes:
    try:
        stream = body.stream()
    except Err:
        raise HttpError(HttpErrorKind.OTHER, "the response body stream was taken twice") from None
    chunks: list[bytes] = []
    with stream:
        while True:
            try:
                chunks.append(stream.blocking_read(READ_CHUNK))
            except Err as failed:
                if isinstance(failed.value, streams.StreamError_Closed):
                    return b"".join(chunks)
                raise _stream_failure("reading the response body", failed.value) from None


def _stream_failure(doing: str, error: streams.StreamError) -> HttpError:
    if isinstance(error, streams.StreamError_Closed):
        return HttpError(HttpErrorKind.OTHER, f"{doing}: the stream closed")
    with error.value as io_error:
        # The host puts the response error (a body over the size limit, a reset) behind the stream error.
        code = wasi_http.http_error_code(io_error)
        if code is not None:
            return failure(code)
        return HttpError(HttpErrorKind.OTHER, f"{doing}: {io_error.to_debug_string()}")


def failure(code: wasi_http.ErrorCode) -> HttpError:
    """The `HttpError` for a ``wasi:http`` ``error-code``, worded as the Rust SDK words it."""
    kind, message = HttpErrorKind.OTHER, debug_variant(code)
    match code:
        case wasi_http.ErrorCode_HttpRequestDenied():
            kind = HttpErrorKind.DENIED
            message = (
                "denied by the host: the plugin's settings do not allow this destination (allowedOutboundHosts, "
                "blockedNetworks); nothing was sent"
            )
        case (
            wasi_http.ErrorCode_ConnectionTimeout()
            | wasi_http.ErrorCode_ConnectionReadTimeout()
            | wasi_http.ErrorCode_ConnectionWriteTimeout()
            | wasi_http.ErrorCode_HttpResponseTimeout()
            | wasi_http.ErrorCode_DnsTimeout()
        ):
            kind, message = HttpErrorKind.TIMEOUT, f"timed out ({debug_variant(code)})"
        case wasi_http.ErrorCode_ConnectionRefused():
            kind, message = HttpErrorKind.CONNECT, "connection refused"
        case wasi_http.ErrorCode_ConnectionTerminated():
            kind, message = HttpErrorKind.CONNECT, "the connection was closed"
        case (
            wasi_http.ErrorCode_DestinationUnavailable()
            | wasi_http.ErrorCode_DestinationNotFound()
            | wasi_http.ErrorCode_DestinationIpUnroutable()
        ):
            kind, message = HttpErrorKind.CONNECT, f"the server is unreachable ({debug_variant(code)})"
        case wasi_http.ErrorCode_DnsError(payload):
            rcode = payload.rcode if payload.rcode is not None else "no answer"
            kind, message = HttpErrorKind.DNS, f"the host name did not resolve: {rcode}"
        case (
            wasi_http.ErrorCode_TlsProtocolError()
            | wasi_http.ErrorCode_TlsCertificateError()
            | wasi_http.ErrorCode_TlsAlertReceived()
        ):
            kind, message = HttpErrorKind.TLS, f"TLS failed ({debug_variant(code)})"
        case wasi_http.ErrorCode_HttpResponseBodySize(limit):
            kind = HttpErrorKind.TOO_LARGE
            message = (
                f"the response body is over the host's limit of {limit} bytes"
                if limit is not None
                else "the response body is over the host's limit"
            )
        case wasi_http.ErrorCode_HttpRequestUriInvalid():
            kind, message = HttpErrorKind.INVALID_URL, "the host refused the URL"
        case wasi_http.ErrorCode_InternalError(detail) if detail is not None:
            message = detail
    return HttpError(kind, message)


def debug_variant(value: object) -> str:
    """A ``wasi:http`` variant (``error-code``, ``header-error``) as Rust's ``{:?}`` prints it, for messages alike
    in every SDK: ``ErrorCode::ConnectionTimeout``, ``ErrorCode::DnsError(DnsErrorPayload { rcode: Some("x"),
    info-code: None })``, ``HeaderError::Forbidden``."""
    type_name, _, case = type(value).__name__.partition("_")
    text = f"{type_name}::{case}"
    if not dataclasses.is_dataclass(value) or not dataclasses.fields(value):
        return text
    payload = getattr(value, "value")
    if dataclasses.is_dataclass(payload) and not isinstance(payload, type):
        rendered = _debug_record(payload)
        # Of the record payloads, only this one is optional.
        if isinstance(value, wasi_http.ErrorCode_HttpRequestHeaderSize):
            rendered = f"Some({rendered})"
    else:
        rendered = _debug_option(payload)
    return f"{text}({rendered})"


def _debug_record(record: DataclassInstance) -> str:
    fields = ", ".join(
        f"{field.name.replace('_', '-')}: {_debug_option(getattr(record, field.name))}"
        for field in dataclasses.fields(record)
    )
    return f"{type(record).__name__} {{ {fields} }}"


def _debug_option(value: object) -> str:
    if value is None:
        return "None"
    return f"Some({debug_quote(value) if isinstance(value, str) else value})"
