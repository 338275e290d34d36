"""The Python outbound guest against the test host: the status it reports for requests and variables, in the
shape the Rust guest reports (``host/tests/plugins/outbound.rs`` compares the two through the components)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from wasm_reconciler import Error, WorldView
from wasm_reconciler.http import HttpError, HttpErrorKind, Request, Response
from wasm_reconciler.testing import MemoryHost, with_host
from wasm_reconciler.wire import WireWorldView

from app import Controller
from outbound import KIND, Outbound

PRIMARY = {"apiVersion": "tests.wasm-reconciler.io/v1", "kind": "Outbound", "metadata": {"name": "o"}}


def zone_server(request: Request) -> Response:
    """A server redirecting ``/start`` to ``/zone`` with a 303, serving the zone there and 404 elsewhere."""
    if request.url.endswith("/start"):
        return Response(303, headers=[("Location", "/zone")])
    if request.url.endswith("/zone"):
        return Response(200, b'{"zone":"example.org."}', [("Content-Type", "application/json")])
    return Response(404, b"no such zone")


def status(config: dict[str, Any], host: MemoryHost) -> Any:
    """The status the guest reports for `config`, as the host receives it (JSON through the exported controller)."""
    view = WireWorldView(json.dumps(PRIMARY), [], json.dumps(config), False, 0)
    with with_host(host):
        outcome = Controller().reconcile(view)
    assert outcome.children is None and outcome.conditions == []
    return json.loads(outcome.status)


def test_describes_outbound_objects_and_nothing_else() -> None:
    spec = Outbound().describe()
    assert (spec.primary, spec.owns, spec.reads, spec.finalizer, spec.resync_seconds) == (KIND, [], [], None, None)


def test_requests_and_variables_are_reported_as_the_rust_guest_reports_them() -> None:
    host = MemoryHost(variables={"api_key": "k3y-for-tests"}, http=zone_server)
    config = {
        "variables": ["api_key", "missing"],
        "requests": [
            {"url": "http://api.test/start", "method": "POST", "body": "{}", "headers": {"X-API-Key": "${api_key}"}},
            {"url": "http://api.test/other", "method": "DELETE"},
        ],
    }
    assert status(config, host) == {
        "responses": [{"status": 200, "body": '{"zone":"example.org."}'}, {"status": 404, "body": "no such zone"}],
        "variables": {
            "api_key": {"length": 13},
            "missing": {"error": 'the plugin\'s settings define no variable "missing"'},
        },
    }
    assert [(request.method, request.url, request.body) for request in host.requests] == [
        ("POST", "http://api.test/start", b"{}"),
        ("GET", "http://api.test/zone", b""),
        ("DELETE", "http://api.test/other", b""),
    ]
    assert [request.header("x-api-key") for request in host.requests] == ["k3y-for-tests", "k3y-for-tests", None]


def test_failures_are_reported_by_kind_and_message() -> None:
    def server(request: Request) -> Response:
        if request.url.endswith("/slow"):
            raise HttpError(HttpErrorKind.TIMEOUT, "timed out (ErrorCode::HttpResponseTimeout)")
        return zone_server(request)

    config = {
        "requests": [
            {"url": "http://api.test/slow"},
            {"url": "not a url"},
            {"url": "http://api.test/start", "maxRedirects": 0},
        ]
    }
    assert status(config, MemoryHost(http=server))["responses"] == [
        {"error": "Timeout", "message": "GET http://api.test/slow: timed out (ErrorCode::HttpResponseTimeout)"},
        {"error": "InvalidUrl", "message": '"not a url": not an absolute URL'},
        {"status": 303, "body": ""},
    ]
    denied = status({"requests": [{"url": "http://api.test/"}]}, MemoryHost())["responses"][0]
    assert denied["error"] == "Denied" and denied["message"].startswith("GET http://api.test/: denied: ")


def test_headers_go_out_sorted_by_name_with_unreadable_variables_empty() -> None:
    host = MemoryHost(variables={"token": "t0k€n"}, http=lambda request: Response(204))
    config = {
        "variables": ["token"],
        "requests": [{"url": "http://api.test/", "headers": {"b": "${token}", "a": "${missing}", "c": "${"}}],
    }
    reported = status(config, host)
    assert reported["variables"] == {"token": {"length": len("t0k€n".encode())}}
    assert host.requests[0].headers == [("a", ""), ("b", "t0k€n"), ("c", "${")]


def test_an_empty_configuration_reports_nothing() -> None:
    assert status({}, MemoryHost()) == {"responses": [], "variables": {}}


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"requests": {}}, "config.requests: expected a list"),
        ({"requests": [{"method": "GET"}]}, "config.requests[0].url: expected a string"),
        ({"requests": [{"url": "http://a/", "maxRedirects": -1}]}, "config.requests[0].maxRedirects: expected a"),
        ({"requests": [{"url": "http://a/", "headers": {"a": 1}}]}, "config.requests[0].headers: expected string"),
        ({"variables": [1]}, "config.variables: expected a list of strings"),
    ],
)
def test_a_malformed_configuration_is_the_plugins_error(config: dict[str, Any], message: str) -> None:
    with with_host(MemoryHost()), pytest.raises(Error, match=f"^{re.escape(message)}"):
        Outbound().reconcile(WorldView(PRIMARY, config=config))
