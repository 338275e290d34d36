/**
 * The component's entry module: exports the configmapset reconciler as interface `controller`.
 *
 * @module
 */

import { exportReconciler } from "wasm-reconciler-sdk";

import { ConfigMapSetReconciler } from "./configmapset.js";

export { ConfigMapSetReconciler } from "./configmapset.js";

/** The contract's `controller` export. */
export const controller = exportReconciler(new ConfigMapSetReconciler());
