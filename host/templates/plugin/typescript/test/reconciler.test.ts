// The reconciler on world views built in memory: `npm test`, no WebAssembly build and no cluster.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { type JsonObject, type Outcome, PluginError, toJsonText, WorldView } from "wasm-reconciler-sdk";

import { CONFIG_MAP, MANAGED_BY_LABEL, PLUGIN_NAME, PRIMARY, {{kind}}Reconciler } from "../src/index.js";

/** A {{kind}} named `demo` whose spec holds `data`. */
function primary(data: JsonObject): JsonObject {
  return {
    apiVersion: "{{api_version}}",
    kind: "{{kind}}",
    metadata: { name: "demo", namespace: "default", generation: 1 },
    spec: { data },
  };
}

/** The ConfigMap of `demo` as the host observes it. */
function observedConfigMap(data: JsonObject): JsonObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "demo", namespace: "default", uid: "uid-demo", labels: { [MANAGED_BY_LABEL]: PLUGIN_NAME } },
    data,
  };
}

function reconcile(view: WorldView): Outcome {
  return new {{kind}}Reconciler().reconcile(view);
}

/** The desired children as the host receives them (JSON, keys in the order written). */
function children(outcome: Outcome): JsonObject[] {
  return (outcome.desiredChildren ?? []).map((child) => JSON.parse(toJsonText(child)) as JsonObject);
}

function ready(outcome: Outcome): [string, string] {
  const condition = outcome.conditionOfType("Ready");
  assert.ok(condition, "a Ready condition");
  return [condition.status, condition.reason];
}

describe("{{kind}}Reconciler", () => {
  it("describes the kind and the ConfigMaps it owns", () => {
    const spec = new {{kind}}Reconciler().describe();
    assert.ok(spec.primary.equals(PRIMARY));
    assert.deepEqual(spec.ownedKinds, [CONFIG_MAP]);
    assert.deepEqual(spec.readKinds, []);
  });

  it("asks for the ConfigMap of a new object", () => {
    const outcome = reconcile(new WorldView(primary({ target: "world", greeting: "hello" })));
    const [child] = children(outcome);
    assert.deepEqual(child, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "demo", labels: { [MANAGED_BY_LABEL]: PLUGIN_NAME } },
      data: { greeting: "hello", target: "world" },
    });
    assert.deepEqual(Object.keys(child?.["data"] as JsonObject), ["greeting", "target"]);
    assert.deepEqual(outcome.desiredStatus, { configMap: "demo", keys: 2 });
    assert.deepEqual(ready(outcome), ["False", "ConfigMapCreating"]);
    assert.deepEqual(
      outcome.events.map((event) => event.reason),
      ["Creating"],
    );
  });

  it("is ready once the ConfigMap holds the data", () => {
    const view = new WorldView(primary({ greeting: "hello" }), {
      children: [observedConfigMap({ greeting: "hello" })],
    });
    const outcome = reconcile(view);
    assert.deepEqual(ready(outcome), ["True", "ConfigMapReady"]);
    assert.equal(outcome.conditionOfType("Ready")?.message, "ConfigMap demo holds 1 key(s)");
    assert.deepEqual(outcome.events, []);
  });

  it("is not ready until the ConfigMap follows a changed spec", () => {
    const view = new WorldView(primary({ greeting: "bonjour" }), {
      children: [observedConfigMap({ greeting: "hello" })],
    });
    const outcome = reconcile(view);
    assert.deepEqual(children(outcome)[0]?.["data"], { greeting: "bonjour" });
    assert.deepEqual(ready(outcome), ["False", "ConfigMapUpdating"]);
  });

  it("refuses a key a ConfigMap cannot hold with the plugin's own error", () => {
    assert.throws(() => reconcile(new WorldView(primary({ "not a key": "x" }))), {
      name: PluginError.name,
      message: /`not a key` is not a valid ConfigMap key/,
    });
  });
});
