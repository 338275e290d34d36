/**
 * The plugin's answer: desired children, status, conditions, events, requeue and finalization.
 *
 * @module
 */

import type { Condition } from "./condition.js";
import { PluginError } from "./error.js";
import type { Event } from "./event.js";
import { isObject, type JsonObject } from "./json.js";

/**
 * The desired state for one primary object, built with chained calls.
 *
 * **Children.** An outcome carries either "leave children alone" (the default) or the *complete* desired set
 * of children. The first `child`, `children` or `deleteAllChildren` call switches it to a desired set, and the
 * host then deletes every owned child not in it — so a plugin managing children adds all of them on every
 * reconcile. A child is an object with `apiVersion`, `kind` and `metadata.name`; the host fills in the
 * namespace and the ownerReference. Inside children and status, a `Map` is written as a JSON object in its
 * insertion order (see `toJsonText`).
 *
 * ```ts
 * new Outcome()
 *   .child({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "app" } })
 *   .status({ replicas: 1 })
 *   .condition(Condition.statusTrue("Ready", "Synced", "all children applied"))
 *   .event(Event.normal("Created", "created ConfigMap app"))
 *   .requeueAfter(30_000);
 * ```
 */
export class Outcome {
  #children: JsonObject[] | null = null;
  #status: JsonObject | null = null;
  readonly #conditions: Condition[] = [];
  readonly #events: Event[] = [];
  #requeueAfterMs: number | null = null;
  #finalized = false;

  /** Adds one desired child; throws `PluginError` when it has no `apiVersion`, `kind` or `metadata.name`. */
  child(child: JsonObject): this {
    const children = (this.#children ??= []);
    checkChild(child, children.length);
    children.push(child);
    return this;
  }

  /** Adds desired children; declares a desired set even when empty (which deletes every owned child). */
  children(children: Iterable<JsonObject>): this {
    this.#children ??= [];
    for (const child of children) {
      this.child(child);
    }
    return this;
  }

  /** Declares an empty desired set: the host deletes every owned child. */
  deleteAllChildren(): this {
    this.#children = [];
    return this;
  }

  /**
   * Sets the object merged into `.status` (top-level keys replace). Leave `conditions` and
   * `observedGeneration` out: the host owns those.
   */
  status(status: JsonObject): this {
    if (!isObject(status)) {
      throw new PluginError(`status: must be a JSON object, got ${JSON.stringify(status)}`);
    }
    this.#status = status;
    return this;
  }

  /** Adds a condition to merge into `.status.conditions`. */
  condition(condition: Condition): this {
    this.#conditions.push(condition);
    return this;
  }

  /** Adds an event to record on the primary. */
  event(event: Event): this {
    this.#events.push(event);
    return this;
  }

  /** Asks to reconcile this primary again after `milliseconds` (rounded down), even with no change. */
  requeueAfter(milliseconds: number): this {
    if (!(milliseconds >= 0) || !Number.isFinite(milliseconds)) {
      throw new PluginError(`requeueAfter: the delay must be a non-negative number of milliseconds, got ${milliseconds}`);
    }
    this.#requeueAfterMs = Math.floor(milliseconds);
    return this;
  }

  /** Declares cleanup complete: with a deleting view, the host removes the finalizer. */
  finalized(): this {
    this.#finalized = true;
    return this;
  }

  /** The desired children; `null` means "leave children alone". */
  get desiredChildren(): readonly JsonObject[] | null {
    return this.#children === null ? null : [...this.#children];
  }

  /** The status to merge, if any. */
  get desiredStatus(): JsonObject | null {
    return this.#status;
  }

  /** The conditions, in the order added. */
  get conditions(): readonly Condition[] {
    return [...this.#conditions];
  }

  /** The condition of a type, if added (the last one wins when added twice). */
  conditionOfType(type: string): Condition | undefined {
    return [...this.#conditions].reverse().find((condition) => condition.type === type);
  }

  /** The events, in the order added. */
  get events(): readonly Event[] {
    return [...this.#events];
  }

  /** The requested requeue delay in milliseconds, if any. */
  get requeueAfterMs(): number | null {
    return this.#requeueAfterMs;
  }

  /** Whether cleanup was declared complete. */
  get isFinalized(): boolean {
    return this.#finalized;
  }
}

function checkChild(child: unknown, position: number): void {
  const refuse = (reason: string) => new PluginError(`desired child #${position}: ${reason}`);
  if (!isObject(child)) {
    throw refuse(`must be a JSON object, got ${JSON.stringify(child)}`);
  }
  for (const key of ["apiVersion", "kind"]) {
    const value = child[key];
    if (typeof value !== "string" || value === "") {
      throw refuse(`has no \`${key}\``);
    }
  }
  const metadata = child["metadata"];
  const name = isObject(metadata) ? metadata["name"] : undefined;
  if (typeof name !== "string" || name === "") {
    throw refuse("has no `metadata.name`");
  }
}
