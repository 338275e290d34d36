/**
 * `configmapset` in TypeScript: keeps N ConfigMaps from a template (the ReplicaSet pattern).
 *
 * The same controller as the Rust example `plugins/configmapset`, with identical behaviour: a `ConfigMapSet`
 * (`examples.wasm-reconciler.io/v1alpha1`) names a replica count, a ConfigMap template and a burst size. The
 * plugin keeps ConfigMaps `<set>-0` … `<set>-<replicas-1>` equal to the template, creating and deleting at most
 * `burst` per reconcile and asking to be requeued for the rest (slow start). Status reports observed and ready
 * replicas with `Ready` and `Progressing` conditions; a finalizer drains the children in bursts before the set
 * goes away.
 *
 * @module
 */

import { ControllerSpec, ensure, Gvk, type Outcome, PluginError, type Reconciler, type WorldView } from "wasm-reconciler-sdk";

import { fromChild } from "./configMap.js";
import { checkTemplate } from "./keys.js";
import { converge, drain } from "./replicas.js";
import { FINALIZER, GROUP, KIND, specOf, VERSION } from "./resource.js";

/** Core `v1` ConfigMap, the kind of every child. */
export const CONFIG_MAP = new Gvk("", "v1", "ConfigMap");

/** Reconciles `ConfigMapSet`s, owns `ConfigMap`s, drains them through a finalizer. */
export class ConfigMapSetReconciler implements Reconciler {
  describe(): ControllerSpec {
    return new ControllerSpec(new Gvk(GROUP, VERSION, KIND)).owns(CONFIG_MAP).finalizer(FINALIZER);
  }

  reconcile(view: WorldView): Outcome {
    let spec;
    try {
      spec = specOf(view.primary);
    } catch (failure) {
      throw failure instanceof PluginError ? failure.context("reading the primary object") : failure;
    }
    ensure(spec.replicas >= 0, `spec.replicas must not be negative, got ${spec.replicas}`);
    ensure(spec.burst >= 1, `spec.burst must be at least 1, got ${spec.burst}`);
    const observed = view.children(CONFIG_MAP).map(fromChild);
    if (view.deleting) {
      // The drain writes no template, so a template the API server would refuse does not hold it up.
      return drain(view.name, spec, observed);
    }
    const problem = checkTemplate(spec.template);
    ensure(problem === null, problem ?? "");
    return converge(view.name, spec, observed);
  }
}
