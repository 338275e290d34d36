/**
 * The plugin's answer: desired children, status, conditions, events, requeue and finalization.
 *
 * @module
 */

import type { Condition } from "./condition.js";
import { PluginError } from "./error.js";
import type { Event } from "./event.js";
import { isObject, type JsonObject } from "./json.js";

/** The error of an outcome that both declares children and leaves them alone. */
const BOTH_CHOICES = "the outcome both declares desired children and leaves children alone: choose one";

/**
 * The refusal of an outcome of a plugin owning kinds that did not say what to do with its children (worded as in
 * the Rust and Python SDKs, with this SDK's names of the two calls).
 */
export const UNDECIDED_CHILDREN =
  "the outcome does not say what to do with the owned children: declare the complete desired set with " +
  "children(...) (an empty set deletes them all) or call leaveChildrenAlone()";

/**
 * The desired state for one primary object, built with chained calls.
 *
 * **Children: a complete set, or leave them alone — say which.** A plugin that owns kinds makes one of two
 * choices in every outcome, explicitly: `children` declares the *complete* desired set, also when it is empty
 * (the host applies each child and deletes every owned child not in it; `child` adds one child to that set,
 * `deleteAllChildren` declares it empty), or `leaveChildrenAlone` keeps the observed children as they are. An
 * outcome that made neither choice (`new Outcome()` with no `child` call, as after a `child` loop that ran zero
 * times) is refused when it is handed to the host of a plugin that owns kinds, with a message naming both calls,
 * rather than silently keeping children the plugin no longer wants. Build a set that comes from a loop with
 * `children(...)`. A plugin that owns no kind needs neither call; making both choices in one outcome throws
 * `PluginError`. A child is an object with `apiVersion`, `kind` and `metadata.name`; the host fills in the
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
 * new Outcome().children(replicas.map(build)); // the complete set, also when replicas is empty
 * new Outcome().leaveChildrenAlone().condition(Condition.statusFalse("Ready", "Waiting", "no Secret yet"));
 * ```
 */
export class Outcome {
  #children: JsonObject[] | null = null;
  #leaveChildrenAlone = false;
  #status: JsonObject | null = null;
  readonly #conditions: Condition[] = [];
  readonly #events: Event[] = [];
  #requeueAfterMs: number | null = null;
  #finalized = false;

  /**
   * Adds one desired child to the complete desired set; throws `PluginError` when it has no `apiVersion`, `kind` or
   * `metadata.name`. For children built in a loop prefer `children`: a loop of `child` calls that runs zero times
   * declares nothing.
   */
  child(child: JsonObject): this {
    this.#checkNotLeftAlone();
    const children = (this.#children ??= []);
    checkChild(child, children.length);
    children.push(child);
    return this;
  }

  /**
   * Declares the complete desired set of children, adding to children already added; declares the set even when
   * empty (which deletes every owned child).
   */
  children(children: Iterable<JsonObject>): this {
    this.#checkNotLeftAlone();
    this.#children ??= [];
    for (const child of children) {
      this.child(child);
    }
    return this;
  }

  /** Declares an empty desired set: the host deletes every owned child. Children added before are dropped. */
  deleteAllChildren(): this {
    this.#checkNotLeftAlone();
    this.#children = [];
    return this;
  }

  /**
   * Leaves the observed children as they are: nothing is applied and nothing is deleted (the host still writes the
   * status, conditions and events of this outcome).
   */
  leaveChildrenAlone(): this {
    if (this.#children !== null) {
      throw new PluginError(BOTH_CHOICES);
    }
    this.#leaveChildrenAlone = true;
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

  /** The desired children; `null` when the outcome leaves children alone or has not said. */
  get desiredChildren(): readonly JsonObject[] | null {
    return this.#children === null ? null : [...this.#children];
  }

  /** Whether `leaveChildrenAlone` was called. */
  get leavesChildrenAlone(): boolean {
    return this.#leaveChildrenAlone;
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

  #checkNotLeftAlone(): void {
    if (this.#leaveChildrenAlone) {
      throw new PluginError(BOTH_CHOICES);
    }
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
