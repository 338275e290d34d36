/**
 * Exporting a `Reconciler` as the component's implementation of the contract.
 *
 * The componentizer exports the entry module's `controller` binding as interface `controller`;
 * `exportReconciler` builds it. The same object runs in Node, so an entry module imports (and can be tested)
 * anywhere. Both contracts export it under that name: componentize-qjs and componentize-js name an exported
 * interface by its short name without package or version, so `wasm-reconciler:plugin/controller@0.1.0` and
 * `wasm-reconciler:plugin/controller@0.2.0` are both the binding `controller`; the build
 * (`wasm-reconciler-build --contract`) picks the version.
 *
 * @module
 */

import type { WitController, WitControllerSpec, WitOutcome, WitWorldView } from "./contract.js";
import type { Reconciler } from "./reconciler.js";
import { describe, ReconcileFailed, reconcile } from "./wire.js";

/**
 * Exports a reconciler; the entry module does `export const controller = exportReconciler(new MyReconciler())`.
 * A failed reconcile throws its message as a string, the `err` case of the contract's `result`.
 */
export function exportReconciler(reconciler: Reconciler): WitController {
  return {
    describe(): WitControllerSpec {
      return describe(reconciler);
    },
    reconcile(view: WitWorldView): WitOutcome {
      try {
        return reconcile(reconciler, view);
      } catch (failure) {
        throw failure instanceof ReconcileFailed ? failure.message : String(failure);
      }
    },
  };
}
