/**
 * Events a plugin records on its primary object.
 *
 * @module
 */

/** Kind of a Kubernetes Event. */
export type EventType = "Normal" | "Warning";

/**
 * An event to record on the primary object; the host turns it into a Kubernetes Event and aggregates
 * repeats.
 */
export class Event {
  constructor(
    readonly type: EventType,
    readonly reason: string,
    readonly note: string,
  ) {}

  /** A `Normal` event: something expected happened. */
  static normal(reason: string, note: string): Event {
    return new Event("Normal", reason, note);
  }

  /** A `Warning` event: something the user should look at. */
  static warning(reason: string, note: string): Event {
    return new Event("Warning", reason, note);
  }
}
