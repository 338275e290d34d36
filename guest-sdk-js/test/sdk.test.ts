// Unit tests of the TypeScript SDK: builders, the wire conversion, error messages and the in-process host.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

import {
  Condition,
  ControllerSpec,
  ensure,
  errorMessage,
  Event,
  exportReconciler,
  Gvk,
  host,
  HostError,
  OUTGOING_HANDLER_IMPORT,
  Outcome,
  PluginError,
  toJsonText,
  type Reconciler,
  type WitWorldView,
  wire,
  WorldView,
} from "../src/index.js";
import { MemoryHost, withHost } from "../src/testing.js";

const widget = new Gvk("example.com", "v1", "Widget");
const configMap = new Gvk("", "v1", "ConfigMap");

function view(overrides: Partial<WitWorldView> = {}): WitWorldView {
  return {
    primary: JSON.stringify({ apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "w" } }),
    children: [JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" } })],
    config: JSON.stringify({ a: 1 }),
    deleting: true,
    attempt: 0,
    ...overrides,
  };
}

class Echo implements Reconciler {
  describe(): ControllerSpec {
    return new ControllerSpec(widget)
      .owns(configMap)
      .reads(new Gvk("", "v1", "Secret"))
      .finalizer("example.com/cleanup")
      .resync(60);
  }

  reconcile(view: WorldView): Outcome {
    ensure(view.attempt < 3, `gave up after ${view.attempt} attempts`);
    return new Outcome()
      .children(view.children())
      .status({ name: view.name, config: view.config })
      .condition(Condition.statusUnknown("Ready", "Waiting", "m"))
      .event(Event.warning("Seen", "n"))
      .requeueAfter(250)
      .finalized();
  }
}

describe("Gvk", () => {
  it("spells apiVersion and parses it back", () => {
    assert.equal(new Gvk("apps", "v1", "Deployment").apiVersion, "apps/v1");
    assert.equal(configMap.apiVersion, "v1");
    assert.ok(Gvk.fromApiVersion("apps/v1", "Deployment").equals(new Gvk("apps", "v1", "Deployment")));
    assert.equal(String(new Gvk("apps", "v1", "Deployment")), "apps/v1/Deployment");
  });

  it("matches objects by apiVersion and kind", () => {
    const deployment = new Gvk("apps", "v1", "Deployment");
    assert.ok(deployment.matches({ apiVersion: "apps/v1", kind: "Deployment" }));
    assert.ok(!deployment.matches({ apiVersion: "apps/v1beta1", kind: "Deployment" }));
    assert.ok(!deployment.matches({ kind: "Deployment" }));
    assert.ok(!deployment.matches("Deployment"));
  });
});

describe("ControllerSpec", () => {
  it("keeps one of each kind and rounds resync up", () => {
    const spec = new ControllerSpec(widget).owns(configMap).owns(new Gvk("", "v1", "ConfigMap"));
    assert.equal(spec.ownedKinds.length, 1);
    assert.equal(spec.resyncSeconds, null);
    assert.equal(spec.resync(1.5).resyncSeconds, 2);
    assert.equal(spec.resync(0).resyncSeconds, 1);
    assert.equal(spec.resync(2 ** 40).resyncSeconds, 2 ** 32 - 1);
  });
});

describe("Condition and Event", () => {
  it("helpers set the status and type", () => {
    assert.equal(Condition.statusTrue("Ready", "R", "m").status, "True");
    assert.equal(Condition.statusFalse("Ready", "R", "m").status, "False");
    assert.equal(Condition.statusUnknown("Ready", "R", "m").status, "Unknown");
    assert.ok(Condition.fromBool("Ready", true, "R", "m").isTrue);
    assert.deepEqual(Condition.fromBool("Ready", false, "R", "m"), Condition.statusFalse("Ready", "R", "m"));
    assert.equal(Event.normal("A", "b").type, "Normal");
    assert.equal(Event.warning("A", "b").type, "Warning");
  });
});

describe("WorldView", () => {
  it("reads primary metadata and filters children by kind", () => {
    const worldView = new WorldView(
      { metadata: { name: "w", namespace: "ns", uid: "u-1", generation: 2 } },
      {
        children: [
          { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a" } },
          { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "d" } },
        ],
      },
    );
    assert.deepEqual([worldView.name, worldView.namespace, worldView.uid, worldView.generation], ["w", "ns", "u-1", 2]);
    assert.equal(worldView.children().length, 2);
    assert.deepEqual(worldView.children(configMap).map((child) => (child["metadata"] as { name: string }).name), ["a"]);
    assert.deepEqual(worldView.config, {});
    assert.equal(worldView.deleting, false);
  });

  it("reads absent metadata as absent", () => {
    const worldView = new WorldView({});
    assert.deepEqual([worldView.name, worldView.namespace, worldView.generation], ["", null, null]);
  });
});

describe("Outcome", () => {
  it("declares a set or leaves children alone, explicitly", () => {
    const undecided = new Outcome();
    assert.equal(undecided.desiredChildren, null);
    assert.equal(undecided.leavesChildrenAlone, false);
    assert.deepEqual(new Outcome().children([]).desiredChildren, []);
    assert.deepEqual(new Outcome().deleteAllChildren().desiredChildren, []);
    const alone = new Outcome().leaveChildrenAlone();
    assert.equal(alone.desiredChildren, null);
    assert.equal(alone.leavesChildrenAlone, true);
  });

  it("refuses to both declare children and leave them alone", () => {
    const child = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a" } };
    const both = { name: "PluginError", message: "the outcome both declares desired children and leaves children alone: choose one" };
    assert.throws(() => new Outcome().child(child).leaveChildrenAlone(), both);
    assert.throws(() => new Outcome().leaveChildrenAlone().child(child), both);
    assert.throws(() => new Outcome().leaveChildrenAlone().children([]), both);
    assert.throws(() => new Outcome().deleteAllChildren().leaveChildrenAlone(), both);
  });

  it("refuses children without kind or name, naming their position", () => {
    const outcome = new Outcome().child({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a" } });
    assert.throws(() => outcome.child({ apiVersion: "v1", metadata: { name: "x" } }), {
      message: "desired child #1: has no `kind`",
    });
    assert.throws(() => new Outcome().child({ apiVersion: "v1", kind: "ConfigMap" }), {
      message: "desired child #0: has no `metadata.name`",
    });
  });

  it("rounds requeue down to milliseconds and finds the last condition of a type", () => {
    const outcome = new Outcome()
      .requeueAfter(100.9)
      .condition(Condition.statusFalse("Ready", "A", ""))
      .condition(Condition.statusTrue("Ready", "C", ""));
    assert.equal(outcome.requeueAfterMs, 100);
    assert.equal(outcome.conditionOfType("Ready")?.reason, "C");
    assert.equal(outcome.conditionOfType("Degraded"), undefined);
    assert.throws(() => new Outcome().requeueAfter(-1), PluginError);
  });
});

describe("wire", () => {
  it("describe converts every field", () => {
    assert.deepEqual(wire.describe(new Echo()), {
      primary: { group: "example.com", version: "v1", kind: "Widget" },
      owns: [{ group: "", version: "v1", kind: "ConfigMap" }],
      reads: [{ group: "", version: "v1", kind: "Secret" }],
      finalizer: "example.com/cleanup",
      resyncSeconds: 60,
    });
  });

  it("reconcile round-trips every field", () => {
    assert.deepEqual(wire.reconcile(new Echo(), view()), {
      children: ['{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}'],
      status: '{"name":"w","config":{"a":1}}',
      conditions: [{ type: "Ready", status: "unknown", reason: "Waiting", message: "m" }],
      events: [{ type: "warning", reason: "Seen", note: "n" }],
      requeueAfterMs: 250,
      finalized: true,
    });
  });

  it("a plugin error becomes the error string, thrown by the export as the contract's err", () => {
    assert.throws(() => wire.reconcile(new Echo(), view({ attempt: 3 })), { message: "gave up after 3 attempts" });
    const controller = exportReconciler(new Echo());
    assert.throws(
      () => controller.reconcile(view({ attempt: 3 })),
      (thrown: unknown) => thrown === "gave up after 3 attempts",
    );
  });

  it("a malformed view is reported before the plugin runs", () => {
    assert.throws(() => wire.reconcile(new Echo(), view({ children: ["{"] })), /^ReconcileFailed: world view: child #0 is not JSON: /);
    assert.throws(() => wire.reconcile(new Echo(), view({ primary: "nope" })), /world view: primary is not JSON: /);
  });

  it("a plugin owning kinds must say what to do with children", () => {
    // Owns ConfigMaps and answers as its configuration says: a set, leave alone, or nothing said.
    const chooser: Reconciler = {
      describe: () => new ControllerSpec(widget).owns(configMap),
      reconcile: (worldView) => {
        const replicas = (worldView.config["replicas"] as number | undefined) ?? 0;
        const names = Array.from({ length: replicas }, (_, index) => `c-${index}`);
        const outcome = new Outcome();
        switch (worldView.config["children"]) {
          case "loop":
            for (const name of names) {
              outcome.child({ apiVersion: "v1", kind: "ConfigMap", metadata: { name } });
            }
            break;
          case "set":
            outcome.children(names.map((name) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name } })));
            break;
          case "alone":
            outcome.leaveChildrenAlone();
            break;
        }
        return outcome;
      },
    };
    const answer = (children: string, replicas: number) =>
      wire.reconcile(chooser, view({ config: JSON.stringify({ children, replicas }) }));
    const undecided = {
      message:
        "the outcome does not say what to do with the owned children: declare the complete desired set with " +
        "children(...) (an empty set deletes them all) or call leaveChildrenAlone()",
    };
    assert.equal(answer("loop", 2).children?.length, 2);
    // Scaling to zero with a `child` loop: refused, where it used to leave the stale children in place.
    assert.throws(() => answer("loop", 0), undecided);
    assert.deepEqual(answer("set", 0).children, []);
    assert.equal(answer("alone", 0).children, null);
    assert.throws(() => answer("", 0), undecided);
  });

  it("an empty config reads as an empty object", () => {
    const outcome = wire.reconcile(new Echo(), view({ config: "" }));
    assert.equal(outcome.status, '{"name":"w","config":{}}');
  });

  it("an unexpected exception is reported with its name and where it was thrown, never as a trap", () => {
    const broken: Reconciler = {
      describe: () => new ControllerSpec(widget),
      reconcile: (worldView) => {
        const spec = worldView.primary["spec"] as { replicas: number };
        return new Outcome().status({ replicas: spec.replicas });
      },
    };
    assert.throws(() => wire.reconcile(broken, view()), (failure: Error) => {
      assert.match(failure.message, /^TypeError: .*replicas.* \(at .*sdk\.test\.js:\d+/);
      return true;
    });
  });
});

describe("errorMessage", () => {
  it("flattens PluginError causes without repeating them", () => {
    const inner = new PluginError("template has no data");
    assert.equal(errorMessage(new PluginError("building children", { cause: inner })), "building children: template has no data");
    assert.equal(errorMessage(new PluginError("bad: template has no data", { cause: inner })), "bad: template has no data");
    assert.equal(errorMessage(new PluginError("step").context("outer")), "outer: step");
    assert.equal(errorMessage("just a string"), "thrown value: just a string");
  });
});

describe("host", () => {
  const cluster = (): MemoryHost =>
    new MemoryHost([
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "web", namespace: "a", labels: { app: "web", tier: "front" } } },
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "db", namespace: "a", labels: { app: "db", tier: "back", legacy: "yes" } } },
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "web", namespace: "b", labels: { app: "web" } } },
      { apiVersion: "v1", kind: "Secret", metadata: { name: "web", namespace: "a" } },
    ]);
  const names = (selector: string): string[] =>
    withHost(cluster(), () => host.list(configMap, null, selector)).map((object) => (object["metadata"] as { name: string }).name);

  it("get finds by kind, namespace and name", () => {
    const found = withHost(cluster(), () => host.get(new Gvk("", "v1", "Secret"), "a", "web"));
    assert.equal(found?.["kind"], "Secret");
    assert.equal(withHost(cluster(), () => host.get(configMap, "c", "web")), null);
  });

  it("list filters by label selector", () => {
    assert.deepEqual(names("app=web"), ["web", "web"]);
    assert.deepEqual(names("app==db"), ["db"]);
    assert.deepEqual(names("app!=web"), ["db"]);
    assert.deepEqual(names("tier"), ["web", "db"]);
    assert.deepEqual(names("!legacy"), ["web", "web"]);
    assert.deepEqual(names("tier in (front, back),app=db"), ["db"]);
    assert.deepEqual(names("tier notin (front)"), ["db", "web"]);
    assert.deepEqual(names(""), ["web", "db", "web"]);
    assert.deepEqual(withHost(cluster(), () => host.list(configMap, "b")).length, 1);
  });

  it("a refused call is a HostError naming the call", () => {
    assert.throws(() => withHost(cluster(), () => host.list(configMap, null, "tier within (x)")), {
      name: "HostError",
      message: "host list v1/ConfigMap: invalid label selector term `tier within (x)`",
    });
    const refusing = new MemoryHost();
    refusing.get = () => {
      throw "kind not declared";
    };
    assert.throws(() => withHost(refusing, () => host.get(new Gvk("", "v1", "Secret"), "a", "s")), (failure: unknown) => {
      assert.ok(failure instanceof HostError);
      assert.equal(failure.message, "host get v1/Secret a/s: kind not declared");
      return true;
    });
  });

  it("logs reach the installed host, hosts nest and are restored, also after a throw", () => {
    const outer = new MemoryHost();
    const inner = new MemoryHost();
    withHost(outer, () => {
      withHost(inner, () => host.info("inner"));
      host.warn("outer");
    });
    assert.deepEqual(inner.logs, [["info", "inner"]]);
    assert.deepEqual(outer.logs, [["warn", "outer"]]);
    assert.throws(() => withHost(outer, () => {
      throw new Error("plugin bug");
    }));
    assert.equal(host.currentHost(), null);
  });

  it("calls without a host explain what to do", () => {
    assert.throws(() => host.get(configMap, null, "x"), /outside a component and outside `withHost`/);
  });
});

describe("toJsonText", () => {
  it("writes Maps in insertion order and plain values as JSON.stringify does", () => {
    const labels = new Map([["10", "a"], ["2", "b"], ["app", "c"]]);
    assert.equal(toJsonText({ metadata: { labels }, skip: undefined, list: [1, undefined, "x"] }), '{"metadata":{"labels":{"10":"a","2":"b","app":"c"}},"list":[1,null,"x"]}');
    assert.equal(toJsonText({ "10": 1, "2": 2 }), JSON.stringify({ "10": 1, "2": 2 }));
    assert.throws(() => toJsonText(Number.NaN), TypeError);
  });
});

describe("packaging", () => {
  const here = dirname(fileURLToPath(import.meta.url));
  const sdk = (...path: string[]): string => readFileSync(join(here, "..", "..", ...path), "utf8");
  const repository = (...path: string[]): string => readFileSync(join(here, "..", "..", "..", ...path), "utf8");

  it("ships the contract's WIT unchanged", () => {
    assert.equal(sdk("wit", "reconciler.wit"), repository("wit", "reconciler.wit"));
  });

  it("ships contract 0.2's WIT unchanged, with contract 0.1 as its dependency", () => {
    assert.equal(sdk("wit-v0.2", "reconciler.wit"), repository("wit", "v0.2", "reconciler.wit"));
    assert.equal(sdk("wit-v0.2", "deps", "plugin-0.1.0", "reconciler.wit"), repository("wit", "reconciler.wit"));
  });

  it("builds HTTP plugins against the wasi:http version it ships, and ships every directory it builds from", () => {
    const imported = /import (wasi:http\/outgoing-handler@([\d.]+));/.exec(sdk("wit-v0.2", "with-http.wit"));
    assert.ok(imported !== null);
    assert.equal(imported[1], OUTGOING_HANDLER_IMPORT);
    for (const name of ["http", "io", "clocks"]) {
      assert.match(sdk("wit-v0.2", "deps", name, `${name}.wit`), new RegExp(`^package wasi:${name}@${imported[2]?.replaceAll(".", "\\.")};`, "m"));
    }
    const manifest = JSON.parse(sdk("package.json")) as { files: string[]; exports: Record<string, unknown> };
    assert.ok(manifest.files.includes("wit") && manifest.files.includes("wit-v0.2"));
    assert.ok("./wit-v0.2/*" in manifest.exports && "./wasi-http" in manifest.exports);
  });
});
