// Behaviour of the TypeScript configmapset on world views built with `SetFixture`: the same cases as the Rust
// plugin's unit tests, and every shared fixture against its golden outcome.

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

import { Event, Gvk, type JsonObject, type Outcome, type WitOutcome, wire, WorldView } from "wasm-reconciler-sdk";
import { parse } from "yaml";

import { ConfigMapSetReconciler } from "../src/configmapset.js";
import { childIndex } from "../src/replicas.js";
import { SET_LABEL } from "../src/resource.js";

const SET_NAME = "demo";
/** The fixtures every language's configmapset must render identically. */
const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "configmapset", "fixtures");

/** A `ConfigMapSet` named `demo` in namespace `apps` and the children observed for it. */
class SetFixture {
  #replicas: unknown = 3;
  #burst: unknown = undefined;
  readonly #labels: Record<string, string> = { app: "demo" };
  readonly #data: Record<string, string> = { greeting: "hello" };
  readonly #children: JsonObject[] = [];
  #deleting = false;

  replicas(replicas: unknown): this {
    this.#replicas = replicas;
    return this;
  }

  burst(burst: unknown): this {
    this.#burst = burst;
    return this;
  }

  data(key: string, value: string): this {
    this.#data[key] = value;
    return this;
  }

  deleting(): this {
    this.#deleting = true;
    return this;
  }

  withReplicas(indexes: Iterable<number>): this {
    for (const index of indexes) {
      this.#children.push(this.#child(`${SET_NAME}-${index}`, { ...this.#data }));
    }
    return this;
  }

  withDriftedReplica(index: number): this {
    this.#children.push(this.#child(`${SET_NAME}-${index}`, { greeting: "stale" }));
    return this;
  }

  withChildNamed(name: string): this {
    this.#children.push(this.#child(name, { ...this.#data }));
    return this;
  }

  withChild(child: JsonObject): this {
    this.#children.push(child);
    return this;
  }

  primary(): JsonObject {
    const spec: JsonObject = {
      replicas: this.#replicas,
      template: { metadata: { labels: { ...this.#labels } }, data: { ...this.#data } },
    };
    if (this.#burst !== undefined) {
      spec["burst"] = this.#burst;
    }
    return {
      apiVersion: "examples.wasm-reconciler.io/v1alpha1",
      kind: "ConfigMapSet",
      metadata: { name: SET_NAME, namespace: "apps", generation: 1 },
      spec,
    };
  }

  reconcile(): Outcome {
    const view = new WorldView(this.primary(), { children: structuredClone(this.#children), deleting: this.#deleting });
    return new ConfigMapSetReconciler().reconcile(view);
  }

  #child(name: string, data: Record<string, string>): JsonObject {
    return {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name, namespace: "apps", uid: `uid-${name}`, labels: { ...this.#labels, [SET_LABEL]: SET_NAME } },
      data,
    };
  }
}

const range = (end: number): number[] => [...Array(end).keys()];

function childNames(outcome: Outcome): string[] {
  const children = outcome.desiredChildren;
  assert.ok(children !== null, "the outcome declares its children");
  return children.map((child) => (child["metadata"] as { name: string }).name);
}

/** A child as JSON would carry it (Maps become objects). */
function plain(value: unknown): unknown {
  return JSON.parse(toText(value)) as unknown;
}

function toText(value: unknown): string {
  return JSON.stringify(value, (_key, entry: unknown) => (entry instanceof Map ? Object.fromEntries(entry) : entry));
}

function condition(outcome: Outcome, type: string): [string, string] {
  const found = outcome.conditionOfType(type);
  assert.ok(found !== undefined, `condition ${type} present`);
  return [found.status, found.reason];
}

describe("configmapset", () => {
  it("describes ConfigMapSets owning ConfigMaps with a finalizer", () => {
    const spec = new ConfigMapSetReconciler().describe();
    assert.ok(spec.primary.equals(new Gvk("examples.wasm-reconciler.io", "v1alpha1", "ConfigMapSet")));
    assert.deepEqual(spec.ownedKinds.map(String), ["v1/ConfigMap"]);
    assert.equal(spec.finalizerName, "examples.wasm-reconciler.io/drain");
    assert.equal(spec.resyncSeconds, null);
  });

  it("a fresh set creates every replica from the template", () => {
    const outcome = new SetFixture().reconcile();
    assert.deepEqual(childNames(outcome), ["demo-0", "demo-1", "demo-2"]);
    const child = plain(outcome.desiredChildren?.[1]) as JsonObject;
    assert.deepEqual((child["metadata"] as JsonObject)["labels"], { app: "demo", [SET_LABEL]: "demo" });
    assert.deepEqual(child["data"], { greeting: "hello" });
    assert.deepEqual(outcome.desiredStatus, { replicas: 0, readyReplicas: 0 });
    assert.deepEqual(condition(outcome, "Ready"), ["False", "ReplicasNotReady"]);
    assert.deepEqual(condition(outcome, "Progressing"), ["True", "ScalingUp"]);
    assert.deepEqual(outcome.events, [Event.normal("ScalingUp", "creating 3 ConfigMap(s), 0 still missing after this round")]);
    assert.equal(outcome.requeueAfterMs, null);
  });

  it("slow start creates at most burst and requeues, then continues from what exists", () => {
    const first = new SetFixture().replicas(5).burst(2).reconcile();
    assert.deepEqual(childNames(first), ["demo-0", "demo-1"]);
    assert.equal(first.requeueAfterMs, 100);
    assert.equal(first.events[0]?.note, "creating 2 ConfigMap(s), 3 still missing after this round");
    const next = new SetFixture().replicas(5).burst(2).withReplicas([0, 1]).reconcile();
    assert.deepEqual(childNames(next), ["demo-0", "demo-1", "demo-2", "demo-3"]);
    assert.equal(next.requeueAfterMs, 100);
    const last = new SetFixture().replicas(4).burst(2).withReplicas([0, 1]).reconcile();
    assert.equal(childNames(last).length, 4);
    assert.equal(last.requeueAfterMs, null);
  });

  it("steady state is ready and stable", () => {
    const outcome = new SetFixture().withReplicas(range(3)).reconcile();
    assert.deepEqual(childNames(outcome), ["demo-0", "demo-1", "demo-2"]);
    assert.deepEqual(outcome.desiredStatus, { replicas: 3, readyReplicas: 3 });
    assert.deepEqual(condition(outcome, "Ready"), ["True", "ReplicasReady"]);
    assert.deepEqual(condition(outcome, "Progressing"), ["False", "Stable"]);
    assert.deepEqual(outcome.events, []);
    assert.equal(outcome.requeueAfterMs, null);
  });

  it("scale down removes the highest indexes first within burst", () => {
    const outcome = new SetFixture().replicas(1).burst(2).withReplicas(range(4)).reconcile();
    assert.deepEqual(childNames(outcome), ["demo-0", "demo-1"]);
    assert.deepEqual(condition(outcome, "Progressing"), ["True", "ScalingDown"]);
    assert.deepEqual(outcome.events, [Event.normal("ScalingDown", "deleting 2 ConfigMap(s), 1 excess left after this round")]);
    assert.equal(outcome.requeueAfterMs, 100);
  });

  it("carried-over children keep only managed fields", () => {
    const outcome = new SetFixture().replicas(0).burst(1).withReplicas(range(2)).reconcile();
    const kept = plain(outcome.desiredChildren?.[0]) as { metadata: JsonObject; data: JsonObject };
    assert.equal(kept.metadata["name"], "demo-0");
    assert.deepEqual(kept.data, { greeting: "hello" });
    assert.equal(kept.metadata["uid"], undefined);
    assert.equal(kept.metadata["namespace"], undefined);
  });

  it("children that are not replicas are deleted first", () => {
    const outcome = new SetFixture().replicas(1).burst(1).withReplicas(range(3)).withChildNamed("demo-old").reconcile();
    assert.deepEqual(childNames(outcome), ["demo-0", "demo-2", "demo-1"]);
  });

  it("scale to zero deletes everything", () => {
    assert.deepEqual(childNames(new SetFixture().replicas(0).withReplicas(range(2)).reconcile()), []);
    const outcome = new SetFixture().replicas(0).reconcile();
    assert.deepEqual(outcome.desiredChildren, []);
    assert.deepEqual(condition(outcome, "Ready"), ["True", "ReplicasReady"]);
  });

  it("a drifted replica is corrected and reported as updating", () => {
    const outcome = new SetFixture().withReplicas([0, 2]).withDriftedReplica(1).reconcile();
    const child = plain(outcome.desiredChildren?.[1]) as { metadata: JsonObject; data: JsonObject };
    assert.equal(child.metadata["name"], "demo-1");
    assert.deepEqual(child.data, { greeting: "hello" });
    assert.deepEqual(outcome.desiredStatus, { replicas: 3, readyReplicas: 2 });
    assert.deepEqual(condition(outcome, "Progressing"), ["True", "Updating"]);
    assert.deepEqual(outcome.events, []);
  });

  it("a template change makes existing replicas drift; entries added by others do not", () => {
    const changed = new SetFixture().withReplicas(range(3)).data("extra", "1").reconcile();
    assert.deepEqual(changed.desiredStatus, { replicas: 3, readyReplicas: 0 });
    const extra = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "demo-0", labels: { app: "demo", [SET_LABEL]: "demo", team: "x" } },
      data: { greeting: "hello", "added-by-someone": "yes" },
    };
    assert.deepEqual(condition(new SetFixture().replicas(1).withChild(extra).reconcile(), "Ready"), ["True", "ReplicasReady"]);
  });

  it("deleting drains the highest indexes in bursts, and is finalized once no child is left", () => {
    const draining = new SetFixture().burst(2).withReplicas(range(5)).deleting().reconcile();
    assert.deepEqual(childNames(draining), ["demo-2", "demo-1", "demo-0"]);
    assert.equal(draining.isFinalized, false);
    assert.equal(draining.requeueAfterMs, 100);
    assert.deepEqual(condition(draining, "Progressing"), ["True", "Draining"]);
    assert.deepEqual(condition(draining, "Ready"), ["False", "Deleting"]);
    const lastBurst = new SetFixture().burst(5).withReplicas(range(2)).deleting().reconcile();
    assert.deepEqual(lastBurst.desiredChildren, []);
    assert.equal(lastBurst.isFinalized, false);
    const drained = new SetFixture().deleting().reconcile();
    assert.equal(drained.isFinalized, true);
    assert.equal(drained.requeueAfterMs, null);
    assert.deepEqual(condition(drained, "Progressing"), ["False", "Drained"]);
  });

  it("burst defaults to ten", () => {
    assert.equal(childNames(new SetFixture().replicas(25).reconcile()).length, 10);
  });

  it("invalid specs are plugin errors with the Rust plugin's messages", () => {
    const cases: [SetFixture, string][] = [
      [new SetFixture().replicas(-1), "spec.replicas must not be negative, got -1"],
      [new SetFixture().burst(0), "spec.burst must be at least 1, got 0"],
      [new SetFixture().replicas("3"), 'reading the primary object: invalid type: string "3", expected i32'],
      [new SetFixture().replicas(2 ** 31), "reading the primary object: invalid value: integer `2147483648`, expected i32"],
      [new SetFixture().burst(1.5), "reading the primary object: invalid type: floating point `1.5`, expected i32"],
      [new SetFixture().burst(null), "reading the primary object: invalid type: null, expected i32"],
      [
        new SetFixture().data("check key", "v"),
        "spec.template.data: `check key` is not a valid ConfigMap key: at most 253 letters, digits, '-', '_' and " +
          "'.', and not `.` or `..`",
      ],
      [
        new SetFixture().withChild({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "bad" }, data: 5 }),
        "reading child v1/ConfigMap bad: invalid type: integer `5`, expected a map",
      ],
    ];
    for (const [fixture, message] of cases) {
      assert.throws(() => fixture.reconcile(), { message });
    }
    assert.throws(() => new ConfigMapSetReconciler().reconcile(new WorldView({ metadata: { name: "x" } })), {
      message: "reading the primary object: missing field `spec`",
    });
  });

  it("child index accepts only canonical replica names", () => {
    assert.equal(childIndex("demo", "demo-2"), 2);
    for (const name of ["demo-01", "demo-+1", "demo-x", "demox-2", "demo-1-2", "demo-4294967296", "demo-"]) {
      assert.equal(childIndex("demo", name), null, name);
    }
    assert.equal(childIndex("demo-1", "demo-1-2"), 2);
  });
});

/** A wire outcome in the shape of the checked-in `*.outcome.yaml` files. */
function goldenForm(outcome: WitOutcome): JsonObject {
  const status = (value: string): string => value.charAt(0).toUpperCase() + value.slice(1);
  const rendered: JsonObject = {};
  if (outcome.children !== null) {
    rendered["children"] = outcome.children.map((child) => JSON.parse(child) as unknown);
  }
  if (outcome.status !== null) {
    rendered["status"] = JSON.parse(outcome.status) as unknown;
  }
  if (outcome.conditions.length > 0) {
    rendered["conditions"] = outcome.conditions.map((c) => ({ ...c, status: status(c.status) }));
  }
  if (outcome.events.length > 0) {
    rendered["events"] = outcome.events.map((e) => ({ ...e, type: status(e.type) }));
  }
  if (outcome.requeueAfterMs !== null) {
    rendered["requeueAfterMs"] = outcome.requeueAfterMs;
  }
  rendered["finalized"] = outcome.finalized;
  return rendered;
}

describe("shared fixtures", () => {
  const worlds = readdirSync(FIXTURES)
    .filter((name) => name.endsWith(".world.yaml"))
    .sort();

  it("are found", () => {
    assert.ok(worlds.length >= 7, `only ${worlds.length} fixtures in ${FIXTURES}`);
  });

  for (const world of worlds) {
    it(`${world} renders its golden outcome`, () => {
      const fixture = parse(readFileSync(join(FIXTURES, world), "utf8")) as JsonObject;
      const expected = parse(readFileSync(join(FIXTURES, world.replace(".world.yaml", ".outcome.yaml")), "utf8")) as unknown;
      const outcome = wire.reconcile(new ConfigMapSetReconciler(), {
        primary: JSON.stringify(fixture["primary"]),
        children: ((fixture["children"] as unknown[] | null) ?? []).map((child) => JSON.stringify(child)),
        config: JSON.stringify(fixture["config"] ?? {}),
        deleting: fixture["deleting"] === true,
        attempt: Number(fixture["attempt"] ?? 0),
      });
      assert.deepEqual(goldenForm(outcome), expected);
    });
  }
});
