// Unit tests of the HTTP client in Node, through the test host: redirects, errors, bodies, and the mapping of
// wasi:http error codes a component's requests end in.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { errorMessage, http, PluginError } from "../src/index.js";
import { decodeUtf8, decodeUtf8Portable, encodeUtf8, encodeUtf8Portable, Utf8Error } from "../src/utf8.js";
import { debugErrorCode, failure } from "../src/wasiHttp.js";
import { MemoryHost, TEST_HOST_DENIAL, withHost } from "../src/testing.js";

const { HttpError, Request, Response, Url } = http;

/** A host answering from a script, one response per exchange, recording what it was sent. */
function scripted(...responses: http.Response[]): MemoryHost {
  const queue = [...responses];
  return new MemoryHost().withHttp(() => {
    const next = queue.shift();
    assert.ok(next !== undefined, "the plugin sent more requests than the script answers");
    return next;
  });
}

const text = (bytes: Uint8Array): string => Buffer.from(bytes).toString("utf8");

describe("Url", () => {
  it("parses absolute http and https URLs, dropping the fragment", () => {
    const url = Url.parse("https://api.example.com:8443/zones?rrsets=false#top");
    assert.deepEqual([url.scheme, url.authority, url.pathWithQuery], ["https", "api.example.com:8443", "/zones?rrsets=false"]);
    assert.equal(Url.parse("HTTP://h").scheme, "http");
    assert.equal(Url.parse("http://h?x=1").pathWithQuery, "/?x=1");
    assert.equal(Url.parse("http://h").pathWithQuery, "/");
  });

  it("refuses anything else with an InvalidUrl error quoting the text as the Rust SDK does", () => {
    assert.throws(() => Url.parse("not a url"), { name: "HttpError", kind: "InvalidUrl", message: '"not a url": not an absolute URL' });
    assert.throws(() => Url.parse("ftp://example.com/"), { message: '"ftp://example.com/": only http and https URLs are supported' });
    assert.throws(() => Url.parse("http:///path"), { message: '"http:///path": no host' });
    assert.throws(() => Url.parse('http://a b/"\n'), { message: '"http://a b/\\"\\n": no host' });
  });

  it("resolves Location headers: absolute, scheme-relative, absolute-path and relative", () => {
    const base = Url.parse("http://a.test:8081/api/v1/zones/x?y=1");
    assert.equal(String(base.join("/other")), "http://a.test:8081/other");
    assert.equal(String(base.join("sibling")), "http://a.test:8081/api/v1/zones/sibling");
    assert.equal(String(base.join("//b.test/p")), "http://b.test/p");
    assert.equal(String(base.join("https://c.test/q")), "https://c.test/q");
  });
});

describe("Request", () => {
  it("follows a 303 with a GET without body, keeping the headers", () => {
    const host = scripted(new Response(303).withHeader("Location", "/done"), new Response(200, '{"ok":true}'));
    const response = withHost(host, () =>
      Request.post("http://api.test/create").header("X-API-Key", "k").json({ a: 1 }).send(),
    );
    assert.deepEqual(response.json(), { ok: true });
    const [post, get] = host.requests;
    assert.deepEqual([post?.method, post?.url, text(post?.body ?? new Uint8Array())], ["POST", "http://api.test/create", '{"a":1}']);
    assert.deepEqual(post?.headers, [["X-API-Key", "k"], ["Content-Type", "application/json"]]);
    assert.deepEqual([get?.method, get?.url, get?.body.length], ["GET", "http://api.test/done", 0]);
    assert.deepEqual(get?.headers, post?.headers);
    assert.equal(host.requests.length, 2);
  });

  it("turns a 301 or 302 answering a POST into a GET, and keeps the method and body on a 307 or 308", () => {
    for (const status of [301, 302]) {
      const host = scripted(new Response(status, "", { location: "/next" }), new Response(200));
      withHost(host, () => Request.post("http://api.test/a").body("x").send());
      assert.deepEqual(host.requests.map((exchange) => [exchange.method, exchange.body.length]), [["POST", 1], ["GET", 0]]);
    }
    for (const status of [307, 308]) {
      const host = scripted(new Response(status, "", { location: "b" }), new Response(204));
      const response = withHost(host, () => Request.post("http://api.test/dir/a").body("x").send());
      assert.equal(response.status, 204);
      assert.deepEqual(
        host.requests.map((exchange) => [exchange.method, exchange.url, text(exchange.body)]),
        [["POST", "http://api.test/dir/a", "x"], ["POST", "http://api.test/dir/b", "x"]],
      );
    }
    const put = scripted(new Response(302, "", { location: "/next" }), new Response(200));
    withHost(put, () => Request.put("http://api.test/a").body("x").send());
    assert.deepEqual(put.requests.map((exchange) => exchange.method), ["PUT", "PUT"]);
  });

  it("stops after maxRedirects and returns the redirect itself; 5 by default", () => {
    const loop = (): MemoryHost =>
      new MemoryHost().withHttp((exchange) => new Response(302).withHeader("Location", `${exchange.target.pathWithQuery}x`));
    const limited = loop();
    const response = withHost(limited, () => Request.get("http://api.test/").maxRedirects(2).send());
    assert.equal(response.status, 302);
    assert.equal(response.header("LOCATION"), "/xxx");
    assert.deepEqual(limited.requests.map((exchange) => exchange.url), ["http://api.test/", "http://api.test/x", "http://api.test/xx"]);
    const byDefault = loop();
    withHost(byDefault, () => Request.get("http://api.test/").send());
    assert.equal(byDefault.requests.length, http.DEFAULT_MAX_REDIRECTS + 1);
    const none = loop();
    assert.equal(withHost(none, () => Request.get("http://api.test/").maxRedirects(0).send()).status, 302);
    assert.equal(none.requests.length, 1);
    const noLocation = scripted(new Response(301));
    assert.equal(withHost(noLocation, () => Request.get("http://api.test/").send()).status, 301);
  });

  it("request() takes the same parts as the builder", () => {
    const host = scripted(new Response(201, "made"));
    const response = withHost(host, () =>
      http.request({ method: "PATCH", url: "http://api.test/x", headers: { "X-A": "1", "X-B": "2" }, body: "é", timeoutMs: 1500 }),
    );
    assert.equal(response.text(), "made");
    const [exchange] = host.requests;
    assert.deepEqual(exchange?.headers, [["X-A", "1"], ["X-B", "2"]]);
    assert.deepEqual([...(exchange?.body ?? [])], [0xc3, 0xa9]);
    assert.equal(exchange?.timeoutMs, 1500);
    const parts = Request.from({ url: "http://api.test/" }).parts;
    assert.deepEqual([parts.method, parts.timeoutMs, parts.maxRedirects, parts.body.length], ["GET", null, 5, 0]);
  });

  it("refuses a timeout or redirect limit that is not a number of at least 0", () => {
    assert.throws(() => Request.get("http://a/").timeout(-1), PluginError);
    assert.throws(() => Request.get("http://a/").timeout(Number.NaN), PluginError);
    assert.throws(() => Request.get("http://a/").maxRedirects(1.5), PluginError);
    assert.throws(() => Request.get("http://a/").json(undefined), { message: /^the request body is not JSON: / });
  });
});

describe("errors", () => {
  it("a test host without a handler denies every request and records it", () => {
    const host = new MemoryHost();
    assert.throws(
      () => withHost(host, () => Request.get("http://api.test/").send()),
      (error: unknown) => {
        assert.ok(error instanceof HttpError);
        assert.equal(error.kind, "Denied");
        assert.ok(error.isDenied);
        assert.equal(error.message, `GET http://api.test/: ${TEST_HOST_DENIAL}`);
        return true;
      },
    );
    assert.equal(host.requests.length, 1);
    const bare = { log: () => undefined, get: () => null, list: () => [] };
    assert.throws(() => withHost(bare, () => http.request({ url: "http://x.test/a" })), {
      kind: "Denied",
      message: `GET http://x.test/a: ${TEST_HOST_DENIAL}`,
    });
  });

  it("a failed exchange names the request; an invalid URL names the URL only", () => {
    const host = new MemoryHost().withHttp(() => {
      throw new HttpError("Timeout", "timed out (ErrorCode::ConnectionTimeout)");
    });
    assert.throws(() => withHost(host, () => Request.delete("http://api.test/x#frag").send()), {
      kind: "Timeout",
      message: "DELETE http://api.test/x: timed out (ErrorCode::ConnectionTimeout)",
    });
    assert.throws(() => withHost(host, () => Request.get("not a url").send()), {
      kind: "InvalidUrl",
      message: '"not a url": not an absolute URL',
    });
    const badLocation = scripted(new Response(302, "", { location: "ftp://elsewhere/" }));
    assert.throws(() => withHost(badLocation, () => Request.get("http://api.test/a").send()), {
      kind: "InvalidUrl",
      message: 'GET http://api.test/a: "ftp://elsewhere/": only http and https URLs are supported',
    });
  });

  it("errorForStatus carries the status and the start of the body", () => {
    const ok = new Response(204);
    assert.equal(ok.errorForStatus(), ok);
    assert.throws(
      () => new Response(422, "RRset example.org. IN A: Conflicts with pre-existing RRset\n").errorForStatus(),
      (error: unknown) => {
        assert.ok(error instanceof HttpError && error instanceof PluginError);
        assert.equal(error.kind, "Status(422)");
        assert.equal(error.status, 422);
        assert.equal(error.message, "the server answered 422: RRset example.org. IN A: Conflicts with pre-existing RRset");
        assert.equal(errorMessage(error), error.message);
        return true;
      },
    );
    const long = `${"é".repeat(250)}`;
    assert.throws(() => new Response(500, long).errorForStatus(), { message: `the server answered 500: ${"é".repeat(200)}` });
    assert.throws(() => new Response(503, "😀".repeat(300)).errorForStatus(), { message: `the server answered 503: ${"😀".repeat(200)}` });
    assert.throws(() => new Response(404).errorForStatus(), { message: "the server answered 404: " });
  });

  it("context keeps the kind", () => {
    const error = new HttpError("Connect", "connection refused").context("reading the zone");
    assert.ok(error instanceof HttpError);
    assert.deepEqual([error.kind, error.message, error.status], ["Connect", "reading the zone: connection refused", null]);
  });

  it("without a host, a request explains how to get one", () => {
    assert.throws(() => Request.get("http://api.test/").send(), /outbound HTTP is not available here/);
  });
});

describe("Response", () => {
  it("reads headers by any case, text and JSON", () => {
    const response = new Response(200, '{"a":[1,"x"]}', [["Content-Type", "application/json"]]).withHeader("X-Two", "2");
    assert.deepEqual(response.headers, [["content-type", "application/json"], ["x-two", "2"]]);
    assert.equal(response.header("content-TYPE"), "application/json");
    assert.equal(response.header("missing"), null);
    assert.deepEqual(response.json(), { a: [1, "x"] });
    assert.ok(response.isSuccess && !new Response(302).isSuccess);
  });

  it("a body that is not UTF-8 or not JSON is a PluginError saying so", () => {
    const binary = new Response(200, new Uint8Array([0x7b, 0xff]));
    assert.equal(binary.text({ lossy: true }), "{\ufffd");
    assert.throws(() => binary.text(), { name: "PluginError", message: /^reading the response body: the body is not UTF-8 \(invalid UTF-8 sequence at byte 1\)$/ });
    assert.throws(() => binary.json(), { message: /^parsing the response body: the body is not UTF-8/ });
    assert.throws(() => new Response(200, "{").json(), { name: "PluginError", message: /^parsing the response body: / });
  });
});

describe("wasi:http error codes", () => {
  it("map to kinds and messages as the Rust SDK words them", () => {
    const cases: [http.HttpErrorKind, string, { tag: string; val?: unknown }][] = [
      ["Denied", "denied by the host: the plugin's settings do not allow this destination (allowedOutboundHosts, blockedNetworks); nothing was sent", { tag: "HTTP-request-denied" }],
      ["Timeout", "timed out (ErrorCode::ConnectionTimeout)", { tag: "connection-timeout" }],
      ["Timeout", "timed out (ErrorCode::HttpResponseTimeout)", { tag: "HTTP-response-timeout" }],
      ["Timeout", "timed out (ErrorCode::DnsTimeout)", { tag: "DNS-timeout" }],
      ["Connect", "connection refused", { tag: "connection-refused" }],
      ["Connect", "the connection was closed", { tag: "connection-terminated" }],
      ["Connect", "the server is unreachable (ErrorCode::DestinationIpUnroutable)", { tag: "destination-IP-unroutable" }],
      ["Dns", "the host name did not resolve: NXDOMAIN", { tag: "DNS-error", val: { rcode: "NXDOMAIN", infoCode: null } }],
      ["Dns", "the host name did not resolve: no answer", { tag: "DNS-error", val: { rcode: undefined, infoCode: undefined } }],
      ["Tls", "TLS failed (ErrorCode::TlsCertificateError)", { tag: "TLS-certificate-error" }],
      [
        "Tls",
        'TLS failed (ErrorCode::TlsAlertReceived(TlsAlertReceivedPayload { alert-id: Some(40), alert-message: Some("handshake \\"failure\\"") }))',
        { tag: "TLS-alert-received", val: { alertId: 40, alertMessage: 'handshake "failure"' } },
      ],
      ["TooLarge", "the response body is over the host's limit of 4194304 bytes", { tag: "HTTP-response-body-size", val: 4194304n }],
      ["TooLarge", "the response body is over the host's limit", { tag: "HTTP-response-body-size", val: null }],
      ["InvalidUrl", "the host refused the URL", { tag: "HTTP-request-URI-invalid" }],
      ["Other", "connection pool exhausted", { tag: "internal-error", val: "connection pool exhausted" }],
      ["Other", "ErrorCode::InternalError(None)", { tag: "internal-error", val: null }],
      ["Other", "ErrorCode::HttpProtocolError", { tag: "HTTP-protocol-error" }],
      [
        "Other",
        'ErrorCode::HttpResponseHeaderSize(FieldSizePayload { field-name: Some("x-big"), field-size: None })',
        { tag: "HTTP-response-header-size", val: { fieldName: "x-big" } },
      ],
      ["Other", "ErrorCode::HttpRequestHeaderSize(None)", { tag: "HTTP-request-header-size", val: undefined }],
    ];
    for (const [kind, message, code] of cases) {
      const error = failure(code);
      assert.deepEqual([error.kind, error.message], [kind, message], JSON.stringify(code, (_, value: unknown) => (typeof value === "bigint" ? String(value) : value)));
    }
    assert.equal(debugErrorCode({ tag: "DNS-error", val: { rcode: "x", infoCode: 3 } }), 'ErrorCode::DnsError(DnsErrorPayload { rcode: Some("x"), info-code: Some(3) })');
  });
});

describe("UTF-8", () => {
  const samples = ["", "plain", "é ü ß", "日本語", "😀 emoji", "\u0000\u007f\u0080\u07ff\u0800\uffff", "\ud800 lone", "x\udc00", "\ud83d"];

  it("encodes as TextEncoder does, lone surrogates included, with or without it", () => {
    for (const sample of samples) {
      const expected = new TextEncoder().encode(sample);
      assert.deepEqual(encodeUtf8Portable(sample), expected, JSON.stringify(sample));
      assert.deepEqual(encodeUtf8(sample), expected, JSON.stringify(sample));
    }
  });

  it("decodes as TextDecoder does, replacing each maximal invalid subpart or failing when fatal", () => {
    const invalid = [
      [0xff],
      [0xc0, 0x80],
      [0xe0, 0x80, 0x80],
      [0xed, 0xa0, 0x80],
      [0xf0, 0x9f, 0x98],
      [0xf4, 0x90, 0x80, 0x80],
      [0x61, 0xe2, 0x82, 0x62],
      [0xf0, 0x9f, 0x98, 0x80, 0x80],
      [0xef, 0xbb, 0xbf, 0x41],
    ];
    const mixed = [...new TextEncoder().encode("ascii run then é"), 0xff, ...new TextEncoder().encode("x".repeat(9000)), 0xc3];
    for (const sample of [...samples.map((sample) => [...new TextEncoder().encode(sample)]), ...invalid, mixed]) {
      const bytes = Uint8Array.from(sample);
      const expected = new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes);
      assert.equal(decodeUtf8Portable(bytes, { fatal: false }), expected, JSON.stringify(sample));
      assert.equal(decodeUtf8(bytes, { fatal: false }), expected, JSON.stringify(sample));
    }
    for (const decode of [decodeUtf8, decodeUtf8Portable]) {
      assert.throws(() => decode(Uint8Array.from([0x61, 0xe2, 0x82, 0x62]), { fatal: true }), (error: unknown) => error instanceof Utf8Error && error.index === 1);
      const large = "abcdé😀".repeat(5000);
      assert.equal(decode(encodeUtf8Portable(large), { fatal: true }), large);
    }
  });
});
