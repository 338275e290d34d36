/**
 * The `ConfigMapSet` custom resource: names, spec and status (the CRD is `plugins/configmapset/crd.yaml`).
 *
 * @module
 */

import { type JsonObject } from "wasm-reconciler-sdk";

import { field, i32, optionalStringMap, struct } from "./decode.js";

/** API group of `ConfigMapSet`. */
export const GROUP = "examples.wasm-reconciler.io";
/** API version of `ConfigMapSet`. */
export const VERSION = "v1alpha1";
/** Kind name. */
export const KIND = "ConfigMapSet";
/** Label put on every child, naming its set. */
export const SET_LABEL = "examples.wasm-reconciler.io/configmapset";
/** Finalizer that drains children before the set goes away. */
export const FINALIZER = "examples.wasm-reconciler.io/drain";
/** `spec.burst` when not given. */
export const DEFAULT_BURST = 10;

/** The ConfigMap every replica is built from. */
export interface ConfigMapTemplate {
  readonly labels: ReadonlyMap<string, string>;
  readonly annotations: ReadonlyMap<string, string>;
  readonly data: ReadonlyMap<string, string>;
}

/**
 * Keeps `replicas` ConfigMaps named `<set>-<index>` built from `template`, creating and deleting at most
 * `burst` of them per reconcile.
 */
export interface ConfigMapSetSpec {
  readonly replicas: number;
  readonly template: ConfigMapTemplate;
  readonly burst: number;
}

/** The spec of a `ConfigMapSet` object; throws a `PluginError` saying what does not fit. */
export function specOf(primary: JsonObject): ConfigMapSetSpec {
  const spec = struct(field(struct(primary, "ConfigMapSetObject"), "spec"), "ConfigMapSetSpec");
  const replicas = i32(field(spec, "replicas"));
  const template = struct(field(spec, "template"), "ConfigMapTemplate");
  const metadata = Object.hasOwn(template, "metadata") ? struct(template["metadata"], "TemplateMetadata") : {};
  const burst = Object.hasOwn(spec, "burst") ? i32(spec["burst"]) : DEFAULT_BURST;
  return {
    replicas,
    template: {
      labels: optionalStringMap(metadata, "labels"),
      annotations: optionalStringMap(metadata, "annotations"),
      data: optionalStringMap(template, "data"),
    },
    burst,
  };
}

/** Observed state: ConfigMaps of this set seen, and those matching the template. */
export interface ConfigMapSetStatus {
  readonly replicas: number;
  readonly readyReplicas: number;
}
