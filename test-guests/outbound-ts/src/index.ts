/**
 * The component's entry module: exports the outbound reconciler as interface `controller` (contract 0.2).
 *
 * @module
 */

import { exportReconciler } from "wasm-reconciler-sdk";

import { Outbound } from "./outbound.js";

export { Outbound } from "./outbound.js";

/** The contract's `controller` export. */
export const controller = exportReconciler(new Outbound());
