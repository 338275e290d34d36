/**
 * Conditions a plugin asserts about its primary object.
 *
 * @module
 */

/** Status of a condition, as in Kubernetes `metav1.Condition`. */
export type ConditionStatus = "True" | "False" | "Unknown";

/**
 * A condition for `.status.conditions` of the primary object. The host merges conditions by type, sets
 * `observedGeneration` and moves `lastTransitionTime` only when the status changes. Type and reason are
 * CamelCase (`Ready`, `ScalingUp`).
 *
 * ```ts
 * Condition.statusTrue("Ready", "Available", "3/3 replicas available");
 * Condition.fromBool("Progressing", false, "Stable", "nothing to do");
 * ```
 */
export class Condition {
  constructor(
    readonly type: string,
    readonly status: ConditionStatus,
    readonly reason: string,
    readonly message: string,
  ) {}

  /** A condition with status `True`. */
  static statusTrue(type: string, reason: string, message: string): Condition {
    return new Condition(type, "True", reason, message);
  }

  /** A condition with status `False`. */
  static statusFalse(type: string, reason: string, message: string): Condition {
    return new Condition(type, "False", reason, message);
  }

  /** A condition with status `Unknown`. */
  static statusUnknown(type: string, reason: string, message: string): Condition {
    return new Condition(type, "Unknown", reason, message);
  }

  /** A condition whose status is `True` when `holds`, else `False`. */
  static fromBool(type: string, holds: boolean, reason: string, message: string): Condition {
    return new Condition(type, holds ? "True" : "False", reason, message);
  }

  /** Whether the status is `True`. */
  get isTrue(): boolean {
    return this.status === "True";
  }
}
