/**
 * Kubernetes group/version/kind identifiers.
 *
 * @module
 */

import { isObject } from "./json.js";

/**
 * A Kubernetes group/version/kind, e.g. `apps/v1/Deployment`; the core group is the empty string.
 *
 * ```ts
 * new Gvk("apps", "v1", "Deployment").apiVersion; // "apps/v1"
 * Gvk.fromApiVersion("v1", "ConfigMap");          // Gvk("", "v1", "ConfigMap")
 * ```
 */
export class Gvk {
  constructor(
    readonly group: string,
    readonly version: string,
    readonly kind: string,
  ) {}

  /** Parses an object's `apiVersion` (`apps/v1` or `v1`) together with its `kind`. */
  static fromApiVersion(apiVersion: string, kind: string): Gvk {
    const slash = apiVersion.indexOf("/");
    return slash < 0
      ? new Gvk("", apiVersion, kind)
      : new Gvk(apiVersion.slice(0, slash), apiVersion.slice(slash + 1), kind);
  }

  /** The `apiVersion` objects of this kind carry: `group/version`, or `version` for the core group. */
  get apiVersion(): string {
    return this.group ? `${this.group}/${this.version}` : this.version;
  }

  /** Whether two identifiers are the same group/version/kind. */
  equals(other: Gvk): boolean {
    return this.group === other.group && this.version === other.version && this.kind === other.kind;
  }

  /** Whether a JSON object's `apiVersion` and `kind` name this group/version/kind. */
  matches(object: unknown): boolean {
    if (!isObject(object)) {
      return false;
    }
    const { apiVersion, kind } = object;
    return (
      typeof apiVersion === "string" &&
      typeof kind === "string" &&
      kind === this.kind &&
      Gvk.fromApiVersion(apiVersion, kind).equals(this)
    );
  }

  toString(): string {
    return `${this.apiVersion}/${this.kind}`;
  }
}
