"""Contract 0.2 in plain CPython: `http` (redirects, errors, responses) and `variables`, served by the test host."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta

import pytest
from wasm_reconciler import Error, Gvk, HostError, http, variables
from wasm_reconciler.error import error_message
from wasm_reconciler.host import Level
from wasm_reconciler.http import HttpError, HttpErrorKind, Request, Response, Url, debug_quote
from wasm_reconciler.testing import MemoryHost, with_host


class Script:
    """An HTTP handler answering each request with the next scripted response."""

    def __init__(self, *responses: Response) -> None:
        self.responses = list(responses)

    def __call__(self, request: Request) -> Response:
        return self.responses.pop(0)


@pytest.fixture
def api() -> Iterator[MemoryHost]:
    """A test host whose ``http`` handler is set by each test; yields it installed."""
    with with_host(MemoryHost(variables={"api_key": "k3y-for-tests"})) as host:
        yield host


def sent(host: MemoryHost) -> list[tuple[str, str, bytes]]:
    return [(request.method, request.url, request.body) for request in host.requests]


def test_a_see_other_is_followed_with_a_get_without_body_keeping_the_headers(api: MemoryHost) -> None:
    api.http_handler = Script(Response(303, headers=[("Location", "/done")]), Response(200, b'{"ok": true}'))
    response = http.post("http://api.test/create", json={"a": 1}, headers={"X-API-Key": "k"})
    assert response.json() == {"ok": True}
    assert sent(api) == [("POST", "http://api.test/create", b'{"a":1}'), ("GET", "http://api.test/done", b"")]
    assert [request.header("x-api-key") for request in api.requests] == ["k", "k"]
    assert api.requests[0].header("Content-Type") == "application/json"
    assert all(request.max_redirects == 0 for request in api.requests)


@pytest.mark.parametrize(
    ("status", "method", "then"),
    [(301, "POST", "GET"), (302, "POST", "GET"), (307, "POST", "POST"), (308, "PUT", "PUT"), (302, "PUT", "PUT")],
)
def test_only_a_301_or_302_answering_a_post_changes_the_method(
    api: MemoryHost, status: int, method: str, then: str
) -> None:
    api.http_handler = Script(Response(status, headers=[("location", "https://other.test/next")]), Response(204))
    assert http.request(method, "http://api.test/", body="x").status == 204
    body = b"" if then == "GET" else b"x"
    assert sent(api) == [(method, "http://api.test/", b"x"), (then, "https://other.test/next", body)]


def test_locations_resolve_against_the_request_that_was_redirected(api: MemoryHost) -> None:
    api.http_handler = Script(
        Response(302, headers=[("Location", "sibling?page=2")]),
        Response(302, headers=[("Location", "//b.test/p")]),
        Response(200, b"here"),
    )
    assert http.get("http://a.test:8081/api/v1/zones/x?y=1").text() == "here"
    assert [request.url for request in api.requests] == [
        "http://a.test:8081/api/v1/zones/x?y=1",
        "http://a.test:8081/api/v1/zones/sibling?page=2",
        "http://b.test/p",
    ]


def test_redirects_stop_at_max_redirects_with_the_redirect_response(api: MemoryHost) -> None:
    api.http_handler = lambda request: Response(302, f"to {request.url}".encode(), [("Location", "/again")])
    response = http.get("http://api.test/", max_redirects=2)
    assert (response.status, response.header("LOCATION"), len(api.requests)) == (302, "/again", 3)
    api.requests.clear()
    assert http.get("http://api.test/", max_redirects=0).status == 302
    assert len(api.requests) == 1
    api.requests.clear()
    assert http.get("http://api.test/").status == 302
    assert len(api.requests) == 1 + http.DEFAULT_MAX_REDIRECTS


def test_a_redirect_without_location_is_the_response(api: MemoryHost) -> None:
    api.http_handler = Script(Response(301, b"moved, somewhere"))
    assert http.get("http://api.test/").status == 301


def test_status_errors_carry_the_status_and_the_start_of_the_body() -> None:
    ok = Response(201, b"created")
    assert ok.error_for_status() is ok and ok.is_success
    with pytest.raises(HttpError) as failed:
        Response(422, b"  RRset example.org. IN A: Conflicts with pre-existing RRset\n").error_for_status()
    assert (failed.value.kind, failed.value.status) == (HttpErrorKind.STATUS, 422)
    assert str(failed.value) == "the server answered 422: RRset example.org. IN A: Conflicts with pre-existing RRset"
    assert error_message(failed.value) == str(failed.value)
    with pytest.raises(HttpError) as long:
        Response(500, "é".encode() * 300 + b"\xff").error_for_status()
    assert str(long.value) == "the server answered 500: " + "é" * 200
    with pytest.raises(ValueError):
        HttpError(HttpErrorKind.STATUS, "no status")
    with pytest.raises(ValueError):
        HttpError(HttpErrorKind.DENIED, "a status", status=403)


def test_bodies_read_as_text_and_json_or_fail_with_the_sdk_error() -> None:
    assert Response(200, '{"zone": "é"}'.encode()).json() == {"zone": "é"}
    assert Response(200, "é".encode()).text() == "é"
    with pytest.raises(Error, match=r"^parsing the response body: Expecting value"):
        Response(200, b"<html>").json()
    with pytest.raises(Error, match=r"^reading the response body: 'utf-8' codec can't decode"):
        Response(200, b"\xff").text()


def test_requests_take_headers_as_a_mapping_or_pairs_and_text_bodies_and_timeouts(api: MemoryHost) -> None:
    api.http_handler = Script(Response(200), Response(200))
    http.put("http://api.test/a", headers=[("A", "1"), ("A", "2")], body="é", timeout=1.5)
    http.patch("http://api.test/b", headers={"B": "3"}, timeout=timedelta(seconds=2))
    first, second = api.requests
    assert (first.headers, first.body) == ([("A", "1"), ("A", "2")], "é".encode())
    assert first.timeout == timedelta(seconds=1.5)
    assert (second.headers, second.timeout) == ([("B", "3")], timedelta(seconds=2))
    with pytest.raises(ValueError, match="not both"):
        http.post("http://api.test/", body="x", json={})


def test_without_a_handler_the_test_host_denies_requests_naming_them(api: MemoryHost) -> None:
    with pytest.raises(HttpError) as denied:
        http.delete("http://api.test")
    assert denied.value.is_denied
    assert str(denied.value) == (
        "DELETE http://api.test/: denied: the test host sends no HTTP requests (give MemoryHost an `http` handler)"
    )
    assert sent(api) == [("DELETE", "http://api.test/", b"")]


def test_a_handler_error_keeps_its_kind_and_gains_the_request_it_happened_to(api: MemoryHost) -> None:
    def unreachable(request: Request) -> Response:
        if request.url.endswith("/start"):
            return Response(302, headers=[("location", "http://elsewhere.test/x")])
        raise HttpError(HttpErrorKind.TIMEOUT, "timed out (ErrorCode::ConnectionTimeout)")

    api.http_handler = unreachable
    with pytest.raises(HttpError) as failed:
        http.post("http://api.test/start", body=b"{}")
    assert failed.value.kind is HttpErrorKind.TIMEOUT
    assert str(failed.value) == "GET http://elsewhere.test/x: timed out (ErrorCode::ConnectionTimeout)"


def test_an_invalid_url_fails_before_sending_and_a_bad_location_names_the_redirect(api: MemoryHost) -> None:
    with pytest.raises(HttpError) as invalid:
        http.get("not a url")
    assert (invalid.value.kind, str(invalid.value)) == (HttpErrorKind.INVALID_URL, '"not a url": not an absolute URL')
    assert api.requests == []
    api.http_handler = Script(Response(302, headers=[("Location", "ftp://files.test/")]))
    with pytest.raises(HttpError) as redirected:
        http.get("http://api.test/")
    assert redirected.value.kind is HttpErrorKind.INVALID_URL
    assert str(redirected.value) == (
        'GET http://api.test/: "ftp://files.test/": only http and https URLs are supported'
    )


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("HTTP://h", ("http", "h", "/")),
        ("http://h?x=1", ("http", "h", "/?x=1")),
        ("https://h:8443/a/b?c#d", ("https", "h:8443", "/a/b?c")),
        ("http://[::1]:80/", ("http", "[::1]:80", "/")),
    ],
)
def test_urls_split_into_scheme_authority_and_path(text: str, parsed: tuple[str, str, str]) -> None:
    url = Url.parse(text)
    assert (url.scheme, url.authority, url.path_with_query) == parsed


@pytest.mark.parametrize(
    ("text", "why"), [("h/path", "not an absolute URL"), ("http:///path", "no host"), ("http://a b/", "no host")]
)
def test_urls_without_a_host_are_invalid(text: str, why: str) -> None:
    with pytest.raises(HttpError, match=f"^{re.escape(debug_quote(text))}: {why}$"):
        Url.parse(text)


def test_strings_are_quoted_as_rust_debug_prints_them() -> None:
    assert debug_quote("a\tb\x1b'é\0") == '"a\\tb\\u{1b}\'é\\0"'


def test_variables_come_from_the_test_host_and_a_missing_one_is_named(api: MemoryHost) -> None:
    assert variables.get("api_key") == "k3y-for-tests"
    with pytest.raises(HostError) as missing:
        variables.get("missing")
    assert str(missing.value) == 'the plugin\'s settings define no variable "missing"'
    assert api.with_variable("missing", "found") is api
    assert variables.get("missing") == "found"


def test_a_host_backend_without_variables_or_http_refuses_both() -> None:
    class Minimal:
        def log(self, level: Level, message: str) -> None:
            pass

        def get(self, kind: Gvk, namespace: str | None, name: str) -> str | None:
            return None

        def list(self, kind: Gvk, namespace: str | None, label_selector: str | None) -> list[str]:
            return []

    with with_host(Minimal()):
        with pytest.raises(HostError, match=r"^variable 'x': the installed host \(Minimal\) serves no variables$"):
            variables.get("x")
        with pytest.raises(HttpError, match=r"^GET http://api.test/: denied: the installed host \(Minimal\)"):
            http.get("http://api.test/")


def test_calls_without_a_host_explain_what_to_do() -> None:
    with pytest.raises(RuntimeError, match=r"^wasm_reconciler\.variables\.get was called outside a component"):
        variables.get("x")
    with pytest.raises(RuntimeError, match=r"^wasm_reconciler\.http was called outside a component"):
        http.get("http://api.test/")
