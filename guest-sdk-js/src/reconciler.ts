/**
 * The interface of a plugin's reconcile logic.
 *
 * @module
 */

import type { ControllerSpec } from "./controllerSpec.js";
import type { Outcome } from "./outcome.js";
import type { WorldView } from "./worldView.js";

/**
 * A plugin's reconcile logic. Implement it (a class or a plain object) and export it from the entry module
 * with `export const controller = exportReconciler(new MyReconciler())`.
 */
export interface Reconciler {
  /**
   * What this plugin reconciles. Called once when the host loads the plugin; it must depend on nothing but
   * the plugin itself.
   */
  describe(): ControllerSpec;

  /**
   * The desired outcome for one primary object. Must be a pure function of `view` and what `host` reads
   * return: the host calls it again whenever anything it read changes, and retries with backoff when it
   * throws. A `PluginError` is reported with its message; anything else with its name, message and where it
   * was thrown.
   */
  reconcile(view: WorldView): Outcome;
}
