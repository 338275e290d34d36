/**
 * What the host observed about one primary object: the object, its children, the plugin configuration.
 *
 * @module
 */

import type { Gvk } from "./gvk.js";
import { isObject, type JsonObject } from "./json.js";

/** Optional parts of a view built in a test. */
export interface WorldViewParts {
  children?: JsonObject[];
  config?: JsonObject;
  deleting?: boolean;
  attempt?: number;
}

/**
 * What the host observed about one primary object, handed to `Reconciler.reconcile`. The primary, each
 * child and the configuration are plain objects as the API server returns them (without `managedFields`).
 * The host builds views itself; the constructor exists for tests.
 */
export class WorldView {
  readonly #children: JsonObject[];

  /** The plugin configuration (`{}` when none is configured). */
  readonly config: JsonObject;
  /**
   * Whether the primary is being deleted and waits for this plugin's finalizer: clean up, and answer with
   * `Outcome.finalized()` once done.
   */
  readonly deleting: boolean;
  /** Consecutive failed reconciles of this primary so far (0 after a success). */
  readonly attempt: number;

  constructor(
    /** The primary object. */
    readonly primary: JsonObject,
    parts: WorldViewParts = {},
  ) {
    this.#children = [...(parts.children ?? [])];
    this.config = parts.config ?? {};
    this.deleting = parts.deleting ?? false;
    this.attempt = parts.attempt ?? 0;
  }

  /**
   * Observed children (objects of owned kinds whose controller ownerReference is the primary), all of them
   * or only those of `kind` (matched by `apiVersion` and `kind`).
   */
  children(kind?: Gvk): JsonObject[] {
    return kind === undefined ? [...this.#children] : this.#children.filter((child) => kind.matches(child));
  }

  /** The primary's `metadata.name` (empty if it has none). */
  get name(): string {
    return this.#metadataString("name") ?? "";
  }

  /** The primary's `metadata.namespace`; `null` for cluster-scoped objects. */
  get namespace(): string | null {
    return this.#metadataString("namespace");
  }

  /** The primary's `metadata.uid`, if set. */
  get uid(): string | null {
    return this.#metadataString("uid");
  }

  /** The primary's `metadata.generation`, if set. */
  get generation(): number | null {
    const generation = this.#metadata()["generation"];
    return typeof generation === "number" && Number.isInteger(generation) ? generation : null;
  }

  #metadata(): JsonObject {
    const metadata = this.primary["metadata"];
    return isObject(metadata) ? metadata : {};
  }

  #metadataString(key: string): string | null {
    const value = this.#metadata()[key];
    return typeof value === "string" ? value : null;
  }
}
