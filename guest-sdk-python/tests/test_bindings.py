"""The component side against the bindings componentize-py generates for each contract's world: which backend a
component installs, and how ``wasi:http`` error codes become `HttpError`s.

The generated modules are stubs (their imports raise `NotImplementedError`), but their records and variants are
the real generated classes, so the conversions are tested as a component runs them. Skipped without
componentize-py.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from wasm_reconciler.build import ToolMissing, bindings_command, find_componentize_py
from wasm_reconciler.http import HttpErrorKind

#: Top-level modules of generated bindings, and the SDK modules importing them.
GENERATED = ("wit_world", "componentize_py_types", "componentize_py_async_support", "poll_loop")
IMPORTING = ("wasm_reconciler._bindings", "wasm_reconciler._bindings_v0_2")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The bindings of each contract's world, by contract version."""
    try:
        executable = find_componentize_py()
    except ToolMissing as missing:
        pytest.fail(f"{missing}: these tests check the SDK against the bindings componentize-py generates")
    directories = {}
    for contract in ("0.1", "0.2"):
        directory = tmp_path_factory.mktemp(f"bindings-{contract}")
        subprocess.run(bindings_command(str(directory), executable, contract=contract), check=True)
        directories[contract] = directory
    return directories


def _forget() -> None:
    for name in list(sys.modules):
        if name.split(".")[0] in GENERATED or name in IMPORTING:
            del sys.modules[name]


@pytest.fixture
def world(generated: dict[str, Path], request: pytest.FixtureRequest) -> Iterator[ModuleType]:
    """``wasm_reconciler._bindings`` imported against the bindings of the contract the test is parametrized with;
    everything imported from them is forgotten afterwards."""
    directory = str(generated[request.param])
    sys.path.insert(0, directory)
    try:
        yield importlib.import_module("wasm_reconciler._bindings")
    finally:
        sys.path.remove(directory)
        _forget()


@pytest.mark.parametrize(
    ("world", "backend"), [("0.1", "ComponentHost"), ("0.2", "ComponentHostV0_2")], indirect=["world"]
)
def test_a_component_serves_variables_and_http_only_in_the_0_2_world(world: ModuleType, backend: str) -> None:
    installed = world.component_host()
    assert type(installed).__name__ == backend
    assert hasattr(installed, "variable") == hasattr(installed, "http") == (backend == "ComponentHostV0_2")


@pytest.fixture
def contract_0_2(world: ModuleType) -> ModuleType:
    return importlib.import_module("wasm_reconciler._bindings_v0_2")


def code(name: str, *payload: Any) -> Any:
    """The ``wasi:http`` ``error-code`` case `name` of the loaded 0.2 bindings."""
    types = importlib.import_module("wit_world.imports.wasi_http_types")
    return getattr(types, f"ErrorCode_{name}")(*payload)


@pytest.mark.parametrize("world", ["0.2"], indirect=True)
def test_error_codes_map_to_kinds_and_messages_as_in_the_rust_sdk(contract_0_2: ModuleType) -> None:
    types = importlib.import_module("wit_world.imports.wasi_http_types")

    def mapped(error_code: Any) -> tuple[HttpErrorKind, str]:
        error = contract_0_2.failure(error_code)
        return error.kind, error.message

    assert mapped(code("HttpRequestDenied")) == (
        HttpErrorKind.DENIED,
        "denied by the host: the plugin's settings do not allow this destination (allowedOutboundHosts, "
        "blockedNetworks); nothing was sent",
    )
    assert mapped(code("ConnectionReadTimeout")) == (
        HttpErrorKind.TIMEOUT,
        "timed out (ErrorCode::ConnectionReadTimeout)",
    )
    assert mapped(code("ConnectionRefused")) == (HttpErrorKind.CONNECT, "connection refused")
    assert mapped(code("ConnectionTerminated")) == (HttpErrorKind.CONNECT, "the connection was closed")
    assert mapped(code("DestinationNotFound")) == (
        HttpErrorKind.CONNECT,
        "the server is unreachable (ErrorCode::DestinationNotFound)",
    )
    assert mapped(code("DnsError", types.DnsErrorPayload("NXDOMAIN", 3))) == (
        HttpErrorKind.DNS,
        "the host name did not resolve: NXDOMAIN",
    )
    assert mapped(code("DnsError", types.DnsErrorPayload(None, None))) == (
        HttpErrorKind.DNS,
        "the host name did not resolve: no answer",
    )
    assert mapped(code("TlsAlertReceived", types.TlsAlertReceivedPayload(40, "handshake failure"))) == (
        HttpErrorKind.TLS,
        'TLS failed (ErrorCode::TlsAlertReceived(TlsAlertReceivedPayload { alert-id: Some(40), alert-message: '
        'Some("handshake failure") }))',
    )
    assert mapped(code("HttpResponseBodySize", 4096)) == (
        HttpErrorKind.TOO_LARGE,
        "the response body is over the host's limit of 4096 bytes",
    )
    assert mapped(code("HttpResponseBodySize", None)) == (
        HttpErrorKind.TOO_LARGE,
        "the response body is over the host's limit",
    )
    assert mapped(code("HttpRequestUriInvalid")) == (HttpErrorKind.INVALID_URL, "the host refused the URL")
    assert mapped(code("InternalError", "the pool is closed")) == (HttpErrorKind.OTHER, "the pool is closed")
    assert mapped(code("InternalError", None)) == (HttpErrorKind.OTHER, "ErrorCode::InternalError(None)")
    assert mapped(code("HttpProtocolError")) == (HttpErrorKind.OTHER, "ErrorCode::HttpProtocolError")


@pytest.mark.parametrize("world", ["0.2"], indirect=True)
def test_variants_print_as_rust_debug_prints_them(contract_0_2: ModuleType) -> None:
    types = importlib.import_module("wit_world.imports.wasi_http_types")
    debug = contract_0_2.debug_variant
    assert debug(types.HeaderError_Forbidden()) == "HeaderError::Forbidden"
    assert debug(code("HttpResponseContentCoding", "br")) == 'ErrorCode::HttpResponseContentCoding(Some("br"))'
    assert debug(code("HttpResponseHeaderSize", types.FieldSizePayload("x-big", None))) == (
        'ErrorCode::HttpResponseHeaderSize(FieldSizePayload { field-name: Some("x-big"), field-size: None })'
    )
    assert debug(code("HttpRequestHeaderSize", types.FieldSizePayload(None, 9000))) == (
        "ErrorCode::HttpRequestHeaderSize(Some(FieldSizePayload { field-name: None, field-size: Some(9000) }))"
    )
    assert debug(code("HttpRequestHeaderSize", None)) == "ErrorCode::HttpRequestHeaderSize(None)"
