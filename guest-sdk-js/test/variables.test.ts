// Unit tests of variables in Node, through the test host.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { errorMessage, PluginError, variables } from "../src/index.js";
import { MemoryHost, withHost } from "../src/testing.js";

describe("variables", () => {
  it("reads a value the test host defines", () => {
    const host = new MemoryHost().withVariable("api_key", "k3y");
    assert.equal(withHost(host, () => variables.get("api_key")), "k3y");
  });

  it("a missing variable is a PluginError with the host's message naming it", () => {
    assert.throws(
      () => withHost(new MemoryHost(), () => variables.get("missing")),
      (error: unknown) => {
        assert.ok(error instanceof PluginError);
        assert.equal(error.message, 'the plugin\'s settings define no variable "missing"');
        assert.equal(errorMessage(error), error.message);
        return true;
      },
    );
    const bare = { log: () => undefined, get: () => null, list: () => [] };
    assert.throws(() => withHost(bare, () => variables.get("x")), { message: 'this test host defines no variable "x"' });
  });

  it("takes the reason from an error carrying it, as a component's import throws it", () => {
    const refusal = Object.assign(new Error("see payload"), { payload: 'no Secret "creds" in namespace "ops"' });
    const previous = variables.installVariables({
      get: () => {
        throw refusal;
      },
    });
    try {
      assert.throws(() => variables.get("token"), { name: "PluginError", message: 'no Secret "creds" in namespace "ops"' });
    } finally {
      variables.installVariables(previous);
    }
  });

  it("hosts nest and are restored, also after a throw; without one, a call explains what to do", () => {
    const outer = new MemoryHost().withVariable("a", "outer");
    const inner = new MemoryHost().withVariable("a", "inner");
    withHost(outer, () => {
      assert.equal(withHost(inner, () => variables.get("a")), "inner");
      assert.equal(variables.get("a"), "outer");
    });
    assert.throws(() =>
      withHost(outer, () => {
        throw new Error("plugin bug");
      }),
    );
    assert.equal(variables.currentVariables(), null);
    assert.throws(() => variables.get("a"), /outside a component built with `--contract 0.2` and outside `withHost`/);
  });
});
