/**
 * The replica logic: which ConfigMaps to keep, create and delete this round, and what to report.
 *
 * @module
 */

import { Condition, Event, Outcome } from "wasm-reconciler-sdk";

import { type ConfigMapObject, toJson } from "./configMap.js";
import { compareCodePoints } from "./decode.js";
import { type ConfigMapSetSpec, type ConfigMapSetStatus, SET_LABEL } from "./resource.js";

/** Delay before the next round while creations or deletions remain beyond this round's burst, in milliseconds. */
export const REQUEUE_WHILE_CONVERGING_MS = 100;

const U32_MAX = 2 ** 32 - 1;

/**
 * One reconcile round of a set that is not being deleted.
 *
 * Every desired replica (index `0..replicas`) is in the outcome as the full object built from the template, so
 * drifted replicas are corrected; at most `burst` missing replicas are added (lowest indexes first), and at most
 * `burst` excess children are left out and so deleted (names that are not replicas first, then the highest
 * indexes). Excess children kept for a later round are carried over unchanged.
 */
export function converge(setName: string, spec: ConfigMapSetSpec, observed: readonly ConfigMapObject[]): Outcome {
  const replicas = Math.max(spec.replicas, 0);
  const limit = burst(spec);
  const outcome = new Outcome().deleteAllChildren();
  const byName = new Map<string, ConfigMapObject>();
  for (const child of observed) {
    if (!byName.has(child.name)) {
      byName.set(child.name, child);
    }
  }
  let missing = 0;
  let created = 0;
  let drifted = 0;
  for (let index = 0; index < replicas; index += 1) {
    const child = byName.get(childName(setName, index));
    if (child !== undefined) {
      drifted += matchesTemplate(setName, spec, child) ? 0 : 1;
      outcome.child(toJson(desiredChild(setName, spec, index)));
    } else {
      missing += 1;
      if (created < limit) {
        created += 1;
        outcome.child(toJson(desiredChild(setName, spec, index)));
      }
    }
  }
  const excess = scaleDownOrder(setName, replicas, observed);
  const deleted = Math.min(excess.length, limit);
  for (const child of excess.slice(deleted)) {
    outcome.child(toJson(child));
  }

  const status = observedStatus(setName, spec, observed);
  const ready = status.readyReplicas === spec.replicas && excess.length === 0;
  outcome
    .status({ replicas: status.replicas, readyReplicas: status.readyReplicas })
    .condition(
      Condition.fromBool(
        "Ready",
        ready,
        ready ? "ReplicasReady" : "ReplicasNotReady",
        `${status.readyReplicas} of ${status.replicas} observed ConfigMaps match the template; ` +
          `${spec.replicas} desired, ${excess.length} excess`,
      ),
    )
    .condition(progressing(missing, excess.length, drifted));
  if (created > 0) {
    outcome.event(
      Event.normal("ScalingUp", `creating ${created} ConfigMap(s), ${missing - created} still missing after this round`),
    );
  }
  if (deleted > 0) {
    outcome.event(
      Event.normal(
        "ScalingDown",
        `deleting ${deleted} ConfigMap(s), ${excess.length - deleted} excess left after this round`,
      ),
    );
  }
  if (missing > created || excess.length > deleted) {
    outcome.requeueAfter(REQUEUE_WHILE_CONVERGING_MS);
  }
  return outcome;
}

/**
 * One reconcile round of a set being deleted: deletes up to `burst` children (highest indexes first), keeps the
 * rest, and reports `finalized` only once no child is observed.
 */
export function drain(setName: string, spec: ConfigMapSetSpec, observed: readonly ConfigMapObject[]): Outcome {
  const status = observedStatus(setName, spec, observed);
  const outcome = new Outcome()
    .status({ replicas: status.replicas, readyReplicas: status.readyReplicas })
    .condition(Condition.statusFalse("Ready", "Deleting", "the ConfigMapSet is being deleted"));
  if (observed.length === 0) {
    return outcome
      .deleteAllChildren()
      .condition(Condition.statusFalse("Progressing", "Drained", "no ConfigMap left"))
      .finalized();
  }
  const order = scaleDownOrder(setName, 0, observed);
  const deleted = Math.min(order.length, burst(spec));
  const message = `deleting ${deleted} ConfigMap(s), ${order.length - deleted} left after this round`;
  outcome
    .deleteAllChildren()
    .condition(Condition.statusTrue("Progressing", "Draining", message))
    .event(Event.normal("Draining", message))
    .requeueAfter(REQUEUE_WHILE_CONVERGING_MS);
  for (const child of order.slice(deleted)) {
    outcome.child(toJson(child));
  }
  return outcome;
}

/** `<set>-<index>`. */
export function childName(setName: string, index: number): string {
  return `${setName}-${index}`;
}

/** The replica index of a child name, if it is exactly `<set>-<index>` (canonical decimal). */
export function childIndex(setName: string, name: string): number | null {
  const prefix = `${setName}-`;
  if (!name.startsWith(prefix)) {
    return null;
  }
  const digits = name.slice(prefix.length);
  if (!/^[0-9]+$/.test(digits)) {
    return null;
  }
  const index = Number(digits);
  return index <= U32_MAX && String(index) === digits ? index : null;
}

/** The full desired replica `index`: template labels plus the set label, template annotations and data. */
export function desiredChild(setName: string, spec: ConfigMapSetSpec, index: number): ConfigMapObject {
  return {
    name: childName(setName, index),
    labels: desiredLabels(setName, spec),
    annotations: spec.template.annotations,
    data: spec.template.data,
    binaryData: new Map(),
  };
}

/**
 * Whether an observed child carries every desired label, annotation and data entry. Extra entries do not count
 * as drift: under server-side apply they belong to other field managers.
 */
export function matchesTemplate(setName: string, spec: ConfigMapSetSpec, child: ConfigMapObject): boolean {
  return (
    containsAll(child.labels, desiredLabels(setName, spec)) &&
    containsAll(child.annotations, spec.template.annotations) &&
    containsAll(child.data, spec.template.data)
  );
}

/**
 * Children that are not desired replicas, in the order they are deleted: names that are not replicas of this
 * set first (by name), then the highest indexes.
 */
export function scaleDownOrder(
  setName: string,
  replicas: number,
  observed: readonly ConfigMapObject[],
): ConfigMapObject[] {
  const strays: ConfigMapObject[] = [];
  const surplus: [number, ConfigMapObject][] = [];
  for (const child of observed) {
    const index = childIndex(setName, child.name);
    if (index === null) {
      strays.push(child);
    } else if (index >= replicas) {
      surplus.push([index, child]);
    }
  }
  strays.sort((a, b) => compareCodePoints(a.name, b.name));
  surplus.sort(([a], [b]) => b - a);
  return [...strays, ...surplus.map(([, child]) => child)];
}

/** Status from what was observed: children seen and children matching the template. */
export function observedStatus(
  setName: string,
  spec: ConfigMapSetSpec,
  observed: readonly ConfigMapObject[],
): ConfigMapSetStatus {
  return {
    replicas: observed.length,
    readyReplicas: observed.filter((child) => matchesTemplate(setName, spec, child)).length,
  };
}

/**
 * `Progressing`: True while replicas are missing, in excess or drifted (in that order of precedence), False
 * with reason `Stable` when nothing is left to do.
 */
function progressing(missing: number, excess: number, drifted: number): Condition {
  const detail = `${missing} missing, ${excess} excess, ${drifted} drifted`;
  if (missing > 0) {
    return Condition.statusTrue("Progressing", "ScalingUp", detail);
  }
  if (excess > 0) {
    return Condition.statusTrue("Progressing", "ScalingDown", detail);
  }
  if (drifted > 0) {
    return Condition.statusTrue("Progressing", "Updating", detail);
  }
  return Condition.statusFalse("Progressing", "Stable", detail);
}

function desiredLabels(setName: string, spec: ConfigMapSetSpec): Map<string, string> {
  return new Map([...spec.template.labels, [SET_LABEL, setName]]);
}

function containsAll(actual: ReadonlyMap<string, string>, expected: ReadonlyMap<string, string>): boolean {
  for (const [key, value] of expected) {
    if (actual.get(key) !== value) {
      return false;
    }
  }
  return true;
}

function burst(spec: ConfigMapSetSpec): number {
  return Math.max(spec.burst, 1);
}
