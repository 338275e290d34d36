/**
 * Variables, for plugins built against contract 0.2 (`wasm-reconciler-build --contract 0.2`): values the plugin's
 * settings name under `variables:`, each one key of a Kubernetes Secret the host reads for it.
 *
 * ```ts
 * import { variables } from "wasm-reconciler-sdk";
 *
 * const apiKey = variables.get("api_key");
 * ```
 *
 * A value is a secret: send it where it is needed (a request header), never into a log line, an event, a
 * condition or status — the host keeps it out of everything it writes, but cannot see what a plugin does with it.
 *
 * In a component built with `--contract 0.2` the host's `variables` import answers (the build installs it). In
 * Node (unit tests) the host installed with `withHost` from `wasm-reconciler-sdk/testing` answers, e.g. a
 * `MemoryHost` given values with `withVariable`.
 *
 * @module
 */

import type { WitVariables } from "./contract.js";
import { PluginError, refusalReason } from "./error.js";

let backend: WitVariables | null = null;

/** Makes `source` answer `get` and returns the previous one (the build and `withHost` call this). */
export function installVariables(source: WitVariables | null): WitVariables | null {
  const previous = backend;
  backend = source;
  return previous;
}

/** What answers `get`, if anything. */
export function currentVariables(): WitVariables | null {
  return backend;
}

/**
 * The value of variable `name`. Throws `PluginError` with the host's message (it names the variable and its
 * Secret, never a value) when the settings define no such variable or its Secret or key cannot be read.
 */
export function get(name: string): string {
  if (backend === null) {
    throw new Error(
      "variables.get was called outside a component built with `--contract 0.2` and outside `withHost`: build " +
        "with `wasm-reconciler-build --contract 0.2`, or wrap the code under test in " +
        "`withHost(new MemoryHost().withVariable(name, value), () => ...)` from wasm-reconciler-sdk/testing",
    );
  }
  let value: unknown;
  try {
    value = backend.get(name);
  } catch (refused) {
    throw new PluginError(refusalReason(refused));
  }
  if (typeof value !== "string") {
    throw new PluginError(`variable ${JSON.stringify(name)}: the host answered with a ${typeof value}, not a string`);
  }
  return value;
}
