/**
 * The {{kind}} controller: keeps a ConfigMap holding each {{kind}}'s `spec.data`, and reports in `.status` and the
 * `Ready` condition whether that ConfigMap is in place. The component exports `controller`.
 *
 * @module
 */

import {
  Condition,
  ControllerSpec,
  ensure,
  Event,
  exportReconciler,
  Gvk,
  isObject,
  type JsonObject,
  Outcome,
  type Reconciler,
  type WorldView,
} from "wasm-reconciler-sdk";

/** The label on every ConfigMap this plugin writes, valued with the plugin's name. */
export const MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";
/** This plugin's name. */
export const PLUGIN_NAME = "{{name}}";
/** The kind this plugin reconciles. */
export const PRIMARY = new Gvk("{{group}}", "{{version}}", "{{kind}}");
/** The kind of the children it owns. */
export const CONFIG_MAP = new Gvk("", "v1", "ConfigMap");

/** What may name an entry of a ConfigMap. */
const CONFIG_MAP_KEY = /^[-._a-zA-Z0-9]{1,253}$/;

/**
 * `spec.data` of a {{kind}} (its schema is in `crd.yaml`), checked, with keys sorted: a `Map` keeps that order
 * when the SDK writes it, where a plain object would put integer-like keys first.
 */
function desiredData(primary: JsonObject): Map<string, string> {
  const spec = isObject(primary["spec"]) ? primary["spec"] : {};
  const data = spec["data"] ?? {};
  ensure(isObject(data), "spec.data must be an object");
  const entries: [string, string][] = [];
  for (const [key, value] of Object.entries(data)) {
    ensure(
      CONFIG_MAP_KEY.test(key),
      `spec.data key \`${key}\` is not a valid ConfigMap key (letters, digits, '-', '_' and '.')`,
    );
    ensure(typeof value === "string", `spec.data key \`${key}\` must hold a string`);
    entries.push([key, value]);
  }
  entries.sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0));
  return new Map(entries);
}

/** Whether an observed ConfigMap holds exactly `data`. */
function holds(configMap: JsonObject, data: Map<string, string>): boolean {
  const observed = isObject(configMap["data"]) ? configMap["data"] : {};
  return Object.keys(observed).length === data.size && [...data].every(([key, value]) => observed[key] === value);
}

/** Reconciles {{kind}} objects. */
export class {{kind}}Reconciler implements Reconciler {
  describe(): ControllerSpec {
    return new ControllerSpec(PRIMARY).owns(CONFIG_MAP);
  }

  reconcile(view: WorldView): Outcome {
    const data = desiredData(view.primary);
    const name = view.name;
    const observed = view
      .children(CONFIG_MAP)
      .find((child) => isObject(child["metadata"]) && child["metadata"]["name"] === name);

    // Only the fields this plugin manages: the host applies the ConfigMap with server-side apply.
    const outcome = new Outcome()
      .child({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name, labels: { [MANAGED_BY_LABEL]: PLUGIN_NAME } },
        data,
      })
      .status({ configMap: name, keys: data.size });
    if (observed === undefined) {
      return outcome
        .condition(Condition.statusFalse("Ready", "ConfigMapCreating", `ConfigMap ${name} is being created`))
        .event(Event.normal("Creating", `creating ConfigMap ${name}`));
    }
    if (!holds(observed, data)) {
      return outcome.condition(Condition.statusFalse("Ready", "ConfigMapUpdating", `ConfigMap ${name} is being updated`));
    }
    return outcome.condition(Condition.statusTrue("Ready", "ConfigMapReady", `ConfigMap ${name} holds ${data.size} key(s)`));
  }
}

/** The contract's `controller` export. */
export const controller = exportReconciler(new {{kind}}Reconciler());
