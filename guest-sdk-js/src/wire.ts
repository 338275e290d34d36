/**
 * Between the contract's records (`contract.ts`) and the SDK's types. Both ways of running a plugin go through
 * here: the component's `controller` export and native tests call `describe` and `reconcile`, so the
 * conversion code is the same on both paths.
 *
 * @module
 */

import type { WitCondition, WitControllerSpec, WitEvent, WitGvk, WitOutcome, WitWorldView } from "./contract.js";
import { errorMessage, PluginError } from "./error.js";
import type { Gvk } from "./gvk.js";
import { isObject, type JsonObject, toJsonText } from "./json.js";
import { Outcome, UNDECIDED_CHILDREN } from "./outcome.js";
import type { Reconciler } from "./reconciler.js";
import { WorldView } from "./worldView.js";

/** `reconcile` failed; `message` is what the host records as the plugin's error. */
export class ReconcileFailed extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ReconcileFailed";
  }
}

/** Calls `reconciler.describe()` and converts the spec to its wire form. */
export function describe(reconciler: Reconciler): WitControllerSpec {
  const spec = reconciler.describe();
  return {
    primary: gvk(spec.primary),
    owns: spec.ownedKinds.map(gvk),
    reads: spec.readKinds.map(gvk),
    finalizer: spec.finalizerName,
    resyncSeconds: spec.resyncSeconds,
  };
}

/**
 * Parses a wire view, calls `reconciler.reconcile`, and converts the outcome to its wire form. Throws
 * `ReconcileFailed` with the message the host records: a malformed view, anything the plugin threw, an outcome
 * that cannot be encoded, or one that does not say what to do with children when the plugin owns kinds (see
 * `Outcome`).
 */
export function reconcile(reconciler: Reconciler, view: WitWorldView): WitOutcome {
  try {
    const outcome = reconciler.reconcile(parseView(view));
    if (!(outcome instanceof Outcome)) {
      throw new PluginError("reconcile did not return an Outcome");
    }
    if (outcome.desiredChildren === null && !outcome.leavesChildrenAlone && reconciler.describe().ownedKinds.length > 0) {
      throw new PluginError(UNDECIDED_CHILDREN);
    }
    return encodeOutcome(outcome);
  } catch (failure) {
    throw new ReconcileFailed(errorMessage(failure));
  }
}

function gvk(kind: Gvk): WitGvk {
  return { group: kind.group, version: kind.version, kind: kind.kind };
}

function parseView(view: WitWorldView): WorldView {
  const primary = parseObject(view.primary, "world view: primary is not JSON");
  const children = view.children.map((child, position) =>
    parseObject(child, `world view: child #${position} is not JSON`),
  );
  const config = view.config.trim() === "" ? {} : parseObject(view.config, "world view: config is not JSON");
  return new WorldView(primary, { children, config, deleting: view.deleting, attempt: view.attempt });
}

function parseObject(text: string, context: string): JsonObject {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (failure) {
    throw new PluginError(`${context}: ${failure instanceof Error ? failure.message : String(failure)}`);
  }
  return isObject(value) ? value : ({ value } as JsonObject);
}

function encodeOutcome(outcome: Outcome): WitOutcome {
  const encode = (value: unknown, what: string): string => {
    let text: string | undefined;
    try {
      text = toJsonText(value);
    } catch (failure) {
      throw new PluginError(
        `building the outcome: ${what} is not JSON: ${failure instanceof Error ? failure.message : String(failure)}`,
      );
    }
    if (text === undefined) {
      throw new PluginError(`building the outcome: ${what} is not JSON`);
    }
    return text;
  };
  const children = outcome.desiredChildren;
  const status = outcome.desiredStatus;
  return {
    children: children === null ? null : children.map((child, position) => encode(child, `desired child #${position}`)),
    status: status === null ? null : encode(status, "status"),
    conditions: outcome.conditions.map(
      (condition): WitCondition => ({
        type: condition.type,
        status: condition.status === "True" ? "true" : condition.status === "False" ? "false" : "unknown",
        reason: condition.reason,
        message: condition.message,
      }),
    ),
    events: outcome.events.map(
      (event): WitEvent => ({
        type: event.type === "Normal" ? "normal" : "warning",
        reason: event.reason,
        note: event.note,
      }),
    ),
    requeueAfterMs: outcome.requeueAfterMs,
    finalized: outcome.isFinalized,
  };
}
