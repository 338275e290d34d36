// The outbound guest in Node, through the SDK's test host: the status it reports for requests, redirects, denials
// and variables, exactly as the component reports it (the same JSON text, key order included).

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { http, type WitWorldView, wire } from "wasm-reconciler-sdk";
import { MemoryHost, TEST_HOST_DENIAL, withHost } from "wasm-reconciler-sdk/testing";

import { controller } from "../src/index.js";
import { Outbound, parseConfig } from "../src/outbound.js";

function view(config: unknown): WitWorldView {
  return {
    primary: JSON.stringify({
      apiVersion: "tests.wasm-reconciler.io/v1",
      kind: "Outbound",
      metadata: { name: "o", namespace: "default" },
    }),
    children: [],
    config: JSON.stringify(config),
    deleting: false,
    attempt: 0,
  };
}

/** The status text one reconcile under `host` reports. */
function status(host: MemoryHost, config: unknown): string {
  const outcome = withHost(host, () => wire.reconcile(new Outbound(), view(config)));
  assert.ok(outcome.status !== null);
  return outcome.status;
}

describe("outbound", () => {
  it("declares the Outbound kind and nothing else", () => {
    assert.deepEqual(controller.describe(), {
      primary: { group: "tests.wasm-reconciler.io", version: "v1", kind: "Outbound" },
      owns: [],
      reads: [],
      finalizer: null,
      resyncSeconds: null,
    });
  });

  it("sends the requests with variables in headers and reports responses and variable lengths", () => {
    const host = new MemoryHost()
      .withVariable("api_key", "k3y-for-tests")
      .withVariable("name", "é")
      .withHttp((exchange) => {
        if (exchange.target.pathWithQuery === "/start") {
          return new http.Response(303, "", { Location: "/zone" });
        }
        if (exchange.target.pathWithQuery === "/zone") {
          return new http.Response(200, '{"zone":"example.org."}');
        }
        return new http.Response(404, new Uint8Array([0x6e, 0x6f, 0xff]));
      });
    const text = status(host, {
      variables: ["name", "missing", "api_key"],
      requests: [
        { url: "http://api.test/start", method: "POST", body: "{}", headers: { "X-Missing": "${missing}", "X-API-Key": "${api_key}", "X-Plain": "${" } },
        { url: "http://api.test/other", method: "DELETE", maxRedirects: 0 },
      ],
      then: "spin",
    });
    assert.equal(
      text,
      JSON.stringify({
        responses: [
          { status: 200, body: '{"zone":"example.org."}' },
          { status: 404, body: "no\ufffd" },
        ],
        variables: {
          name: { length: 2 },
          missing: { error: 'the plugin\'s settings define no variable "missing"' },
          api_key: { length: 13 },
        },
      }),
    );
    const sent = host.requests.map((exchange) => [exchange.method, exchange.url, exchange.body.length, exchange.headers]);
    const headers = [["X-API-Key", "k3y-for-tests"], ["X-Missing", ""], ["X-Plain", "${"]];
    assert.deepEqual(sent, [
      ["POST", "http://api.test/start", 2, headers],
      ["GET", "http://api.test/zone", 0, headers],
      ["DELETE", "http://api.test/other", 0, []],
    ]);
  });

  it("reports errors by their Rust kind and message", () => {
    const text = status(new MemoryHost(), {
      requests: [{ url: "http://denied.test/steal" }, { url: "not a url" }, { url: "http://x.test/", method: "PROPFIND" }],
    });
    assert.deepEqual(JSON.parse(text), {
      responses: [
        { error: "Denied", message: `GET http://denied.test/steal: ${TEST_HOST_DENIAL}` },
        { error: "InvalidUrl", message: '"not a url": not an absolute URL' },
        { error: "Denied", message: `PROPFIND http://x.test/: ${TEST_HOST_DENIAL}` },
      ],
      variables: {},
    });
    const failing = new MemoryHost().withHttp(() => {
      throw http.HttpError.ofStatus(502, "the server answered 502: bad gateway");
    });
    assert.deepEqual(JSON.parse(status(failing, { requests: [{ url: "http://a.test/" }] })).responses, [
      { error: "Status(502)", message: "GET http://a.test/: the server answered 502: bad gateway" },
    ]);
  });

  it("an empty configuration reports nothing; a malformed one fails the reconcile naming the field", () => {
    assert.equal(status(new MemoryHost(), {}), '{"responses":[],"variables":{}}');
    assert.throws(() => parseConfig({ requests: [{ url: 1 }] }), { message: "config: requests[0].url must be a string" });
    assert.throws(() => parseConfig({ requests: [{ url: "http://a/", headers: { a: 1 } }] }), {
      message: "config: requests[0].headers.a must be a string",
    });
    assert.throws(() => parseConfig({ variables: "api_key" }), { message: "config: variables must be a list" });
    assert.throws(() => parseConfig({ requests: [{ url: "http://a/", maxRedirects: -1 }] }), {
      message: "config: requests[0].maxRedirects must be a whole number of at least 0",
    });
  });
});
