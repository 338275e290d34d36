/**
 * Write wasm-reconciler plugins in TypeScript: Kubernetes reconcile logic compiled to WebAssembly components.
 *
 * A plugin is a pure function from what the host observed (a `WorldView`) to what should be (an `Outcome`).
 * The host does every API call. Implement `Reconciler` and export it from the entry module:
 *
 * ```ts
 * import { Condition, ControllerSpec, Gvk, Outcome, type Reconciler, WorldView, exportReconciler } from "wasm-reconciler-sdk";
 *
 * class Greeting implements Reconciler {
 *   describe() {
 *     return new ControllerSpec(new Gvk("example.com", "v1", "Greeting")).owns(new Gvk("", "v1", "ConfigMap"));
 *   }
 *   reconcile(view: WorldView) {
 *     const child = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: view.name }, data: { message: "hello" } };
 *     return new Outcome().child(child).condition(Condition.statusTrue("Ready", "Written", "ConfigMap desired"));
 *   }
 * }
 *
 * export const controller = exportReconciler(new Greeting());
 * ```
 *
 * Build the component with `npx wasm-reconciler-build dist/index.js -o plugin.wasm`; unit-test the same
 * module in Node with `MemoryHost` and `withHost` from `wasm-reconciler-sdk/testing`.
 *
 * A plugin that reads variables (`variables.get`) or sends HTTP requests (`http.Request`, `http.request`) is
 * built against contract 0.2: `wasm-reconciler-build dist/index.js --contract 0.2 --engine starlingmonkey`
 * (HTTP needs StarlingMonkey; variables alone build with the default engine too).
 *
 * @module
 */

export { exportReconciler } from "./component.js";
export { Condition, type ConditionStatus } from "./condition.js";
export * from "./contract.js";
export { ControllerSpec, MAX_RESYNC_SECONDS } from "./controllerSpec.js";
export { ensure, errorMessage, HostError, PluginError } from "./error.js";
export { Event, type EventType } from "./event.js";
export { Gvk } from "./gvk.js";
export * as host from "./host.js";
export * as http from "./http.js";
export { isObject, type Json, type JsonObject, toJsonText } from "./json.js";
export { Outcome } from "./outcome.js";
export type { Reconciler } from "./reconciler.js";
export * as variables from "./variables.js";
export * as wire from "./wire.js";
export { WorldView, type WorldViewParts } from "./worldView.js";
