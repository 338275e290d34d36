/**
 * Read-only calls into the host: `get` and `list` from its caches, and logging.
 *
 * In a WebAssembly component these call the host's imports (the build installs them). In Node (unit tests)
 * they call the host installed with `withHost` from `wasm-reconciler-sdk/testing`, e.g. a `MemoryHost`.
 *
 * Only kinds declared in `ControllerSpec.owns` or `ControllerSpec.reads` can be read. The host remembers every
 * read (including names that were absent) and reconciles the primary again when any of them changes.
 *
 * @module
 */

import type { WitHost, WitLevel } from "./contract.js";
import { HostError, PluginError, refusalReason } from "./error.js";
import type { Gvk } from "./gvk.js";
import type { JsonObject } from "./json.js";

/** Severity of a log line. */
export type Level = WitLevel;

let backend: WitHost | null = null;

/** Makes `host` serve the host functions and returns the previous one (`withHost` wraps this). */
export function installHost(host: WitHost | null): WitHost | null {
  const previous = backend;
  backend = host;
  return previous;
}

/** The host serving the host functions, if any. */
export function currentHost(): WitHost | null {
  return backend;
}

function required(call: string): WitHost {
  if (backend === null) {
    throw new Error(
      `host.${call} was called outside a component and outside \`withHost\`: wrap the code under test in ` +
        "`withHost(new MemoryHost(...), () => ...)` from wasm-reconciler-sdk/testing",
    );
  }
  return backend;
}

/**
 * Writes a line to the host's log, tagged with the plugin's name and the object being reconciled. Without an
 * installed host (plain unit tests) the line goes to stderr.
 */
export function log(level: Level, message: string): void {
  if (backend === null) {
    console.error(`[${level}] ${message}`);
  } else {
    backend.log(level, message);
  }
}

/** Logs at level `trace`. */
export const trace = (message: string): void => log("trace", message);
/** Logs at level `debug`. */
export const debug = (message: string): void => log("debug", message);
/** Logs at level `info`. */
export const info = (message: string): void => log("info", message);
/** Logs at level `warn`. */
export const warn = (message: string): void => log("warn", message);
/** Logs at level `error`. */
export const error = (message: string): void => log("error", message);

/**
 * Reads one object; `null` when it does not exist. `namespace` is ignored for cluster-scoped kinds. Throws
 * `HostError` when the host refuses (the kind is not declared in `owns` or `reads`).
 */
export function get(kind: Gvk, namespace: string | null, name: string): JsonObject | null {
  const host = required("get");
  let text: string | null;
  try {
    text = host.get(wit(kind), namespace, name);
  } catch (refused) {
    const where = namespace === null ? name : `${namespace}/${name}`;
    throw new HostError(`host get ${kind} ${where}: ${refusalReason(refused)}`);
  }
  return text === null || text === undefined ? null : parse(text, `reading ${kind} ${name} from the host`);
}

/**
 * Lists objects of a kind, in one namespace or all (`null`), optionally filtered by a label selector in
 * Kubernetes syntax (`app=web,tier in (a,b),!legacy`). Throws `HostError` when the host refuses.
 */
export function list(kind: Gvk, namespace: string | null = null, labelSelector: string | null = null): JsonObject[] {
  const host = required("list");
  let texts: string[];
  try {
    texts = host.list(wit(kind), namespace, labelSelector);
  } catch (refused) {
    throw new HostError(`host list ${kind}: ${refusalReason(refused)}`);
  }
  return texts.map((text) => parse(text, `reading a listed ${kind} from the host`));
}

function wit(kind: Gvk): { group: string; version: string; kind: string } {
  return { group: kind.group, version: kind.version, kind: kind.kind };
}

function parse(text: string, context: string): JsonObject {
  try {
    return JSON.parse(text) as JsonObject;
  } catch (failure) {
    throw new PluginError(`${context}: ${failure instanceof Error ? failure.message : String(failure)}`);
  }
}
