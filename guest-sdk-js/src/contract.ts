/**
 * The contract's records as JavaScript sees them across the component boundary (WIT package
 * `wasm-reconciler:plugin@0.1.0`, world `reconciler`): records are objects with camelCase keys, enums are
 * their case names, `option<T>` is `T | null`, objects travel as JSON text. `wit/reconciler.wit` documents
 * every field.
 *
 * @module
 */

/** `record gvk`. */
export interface WitGvk {
  group: string;
  version: string;
  kind: string;
}

/** `enum condition-status`. */
export type WitConditionStatus = "true" | "false" | "unknown";

/** `record condition`. */
export interface WitCondition {
  type: string;
  status: WitConditionStatus;
  reason: string;
  message: string;
}

/** `enum event-type`. */
export type WitEventType = "normal" | "warning";

/** `record event`. */
export interface WitEvent {
  type: WitEventType;
  reason: string;
  note: string;
}

/** `record controller-spec`. */
export interface WitControllerSpec {
  primary: WitGvk;
  owns: WitGvk[];
  reads: WitGvk[];
  finalizer: string | null;
  resyncSeconds: number | null;
}

/** `record world-view`. */
export interface WitWorldView {
  primary: string;
  children: string[];
  config: string;
  deleting: boolean;
  attempt: number;
}

/** `record outcome`. */
export interface WitOutcome {
  children: string[] | null;
  status: string | null;
  conditions: WitCondition[];
  events: WitEvent[];
  requeueAfterMs: number | null;
  finalized: boolean;
}

/** `enum level` of interface `host`. */
export type WitLevel = "trace" | "debug" | "info" | "warn" | "error";

/**
 * Interface `host`, imported by the plugin. `get` and `list` throw the host's reason (a string) when
 * the host refuses the call.
 */
export interface WitHost {
  log(level: WitLevel, message: string): void;
  get(kind: WitGvk, namespace: string | null, name: string): string | null;
  list(kind: WitGvk, namespace: string | null, labelSelector: string | null): string[];
}

/**
 * Interface `controller`, exported by the plugin. `reconcile` throws its error message (a string) for
 * `err`.
 */
export interface WitController {
  describe(): WitControllerSpec;
  reconcile(view: WitWorldView): WitOutcome;
}

/** The WIT package this SDK is built against. */
export const WIT_PACKAGE = "wasm-reconciler:plugin@0.1.0";
/** The import name of interface `host`. */
export const HOST_IMPORT = "wasm-reconciler:plugin/host@0.1.0";
