/**
 * The contract's records as JavaScript sees them across the component boundary (WIT package
 * `wasm-reconciler:plugin@0.1.0`, world `reconciler`): records are objects with camelCase keys, enums are
 * their case names, `option<T>` is `T | null`, objects travel as JSON text. `wit/reconciler.wit` documents
 * every field. Contract 0.2 (`wit-v0.2/reconciler.wit`) exchanges the same records and adds `variables`.
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

/**
 * Interface `variables` of contract 0.2 (`wasm-reconciler:plugin@0.2.0`), imported by the plugin. `get` throws
 * the host's reason (a string) when the variable cannot be read.
 */
export interface WitVariables {
  get(name: string): string;
}

/** The WIT package of contract 0.1, the default build. */
export const WIT_PACKAGE = "wasm-reconciler:plugin@0.1.0";
/** The WIT package of contract 0.2 (`wasm-reconciler-build --contract 0.2`). */
export const WIT_PACKAGE_V0_2 = "wasm-reconciler:plugin@0.2.0";
/** The import name of interface `host` (the same in both contracts). */
export const HOST_IMPORT = "wasm-reconciler:plugin/host@0.1.0";
/** The import name of interface `variables` (contract 0.2). */
export const VARIABLES_IMPORT = "wasm-reconciler:plugin/variables@0.2.0";
/** The import name of the WASI HTTP client a contract 0.2 plugin may use. */
export const OUTGOING_HANDLER_IMPORT = "wasi:http/outgoing-handler@0.2.12";
