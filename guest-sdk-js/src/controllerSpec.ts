/**
 * What a plugin reconciles: its primary kind, owned and read kinds, finalizer and resync period.
 *
 * @module
 */

import { Gvk } from "./gvk.js";

/** Largest resync period the contract carries (a WIT `u32` of seconds). */
export const MAX_RESYNC_SECONDS = 2 ** 32 - 1;

/**
 * What a plugin reconciles, returned by `Reconciler.describe`, built with chained calls.
 *
 * ```ts
 * new ControllerSpec(new Gvk("example.com", "v1", "Widget"))
 *   .owns(new Gvk("", "v1", "ConfigMap"))
 *   .finalizer("example.com/cleanup")
 *   .resync(300);
 * ```
 */
export class ControllerSpec {
  readonly #owns: Gvk[] = [];
  readonly #reads: Gvk[] = [];
  #finalizer: string | null = null;
  #resyncSeconds: number | null = null;

  /** A spec reconciling objects of `primary`, owning and reading nothing else yet. */
  constructor(readonly primary: Gvk) {}

  /**
   * Declares a kind of children: the host applies them with a controller ownerReference, prunes the ones
   * no longer desired, and reconciles the primary again when they change.
   */
  owns(kind: Gvk): this {
    if (!this.#owns.some((known) => known.equals(kind))) {
      this.#owns.push(kind);
    }
    return this;
  }

  /** Declares a kind the plugin reads with `host.get` or `host.list` without owning it. */
  reads(kind: Gvk): this {
    if (!this.#reads.some((known) => known.equals(kind))) {
      this.#reads.push(kind);
    }
    return this;
  }

  /**
   * Names a finalizer (`example.com/cleanup`): the host adds it before writing any child and calls the
   * plugin with a deleting view until the outcome says `finalized`.
   */
  finalizer(name: string): this {
    this.#finalizer = name;
    return this;
  }

  /** Reconciles every primary at least every `seconds`: rounded up to whole seconds, at least one. */
  resync(seconds: number): this {
    this.#resyncSeconds = Math.min(Math.max(Math.ceil(seconds), 1), MAX_RESYNC_SECONDS);
    return this;
  }

  /** The declared child kinds. */
  get ownedKinds(): readonly Gvk[] {
    return [...this.#owns];
  }

  /** The declared read-only kinds. */
  get readKinds(): readonly Gvk[] {
    return [...this.#reads];
  }

  /** The finalizer, if any. */
  get finalizerName(): string | null {
    return this.#finalizer;
  }

  /** The resync period in seconds, if any. */
  get resyncSeconds(): number | null {
    return this.#resyncSeconds;
  }
}
