/**
 * Running plugin logic in Node: an in-process stand-in for the host, for unit tests.
 *
 * ```ts
 * const cluster = new MemoryHost([secret])
 *   .withVariable("api_key", "k3y")                                   // contract 0.2: variables.get
 *   .withHttp(() => new http.Response(200, '{"serial":7}'));        // contract 0.2: http requests
 * const outcome = withHost(cluster, () => new MyReconciler().reconcile(view));
 * assert.deepEqual(cluster.logs, [["info", "..."]]);
 * assert.deepEqual(cluster.requests.map((exchange) => exchange.url), ["http://api.test/zones"]);
 * ```
 *
 * @module
 */

import type { WitGvk, WitHost, WitLevel } from "./contract.js";
import { Gvk } from "./gvk.js";
import { installHost } from "./host.js";
import { HttpError, type HttpExchange, installHttp, type Response } from "./http.js";
import { isObject, type JsonObject } from "./json.js";
import { installVariables } from "./variables.js";

/** Plays the server for a test: answers one exchange (a redirect is a response too) or throws an `HttpError`. */
export type HttpHandler = (exchange: HttpExchange) => Response;

/**
 * What a test installs with `withHost`: the contract's `host` functions and, for contract 0.2 code, optionally
 * the variables (`variable` throws the reason, a string, for one it does not have) and an HTTP server (`http`).
 * Without `variable`, every variable is missing; without `http`, every request is denied.
 */
export interface TestHost extends WitHost {
  variable?(name: string): string;
  http?(exchange: HttpExchange): Response;
}

/** The message of a request denied by a test host with no HTTP handler (after the `METHOD URL: ` prefix). */
export const TEST_HOST_DENIAL =
  "denied: this test host sends no HTTP requests (give a MemoryHost a handler with withHttp)";

/**
 * A host serving a fixed set of objects from memory and recording log lines. `get` matches kind, namespace
 * and name; `list` matches kind, namespace (when given) and a label selector supporting `k=v`, `k==v`,
 * `k!=v`, `k`, `!k`, `k in (a,b)` and `k notin (a,b)`. A refused call throws its reason as a string, as a
 * component's import does.
 *
 * For contract 0.2 code it also answers `variables.get` from the values given with `withVariable`, and sends HTTP
 * requests to the handler given with `withHttp` (recording every exchange in `requests`); without a handler it
 * denies every request, as a host with no `allowedOutboundHosts` does.
 */
export class MemoryHost implements TestHost {
  readonly objects: JsonObject[];
  readonly logs: [WitLevel, string][] = [];
  /** The variables `variables.get` can read. */
  readonly variables = new Map<string, string>();
  /** Every HTTP exchange the plugin attempted, in order (a followed redirect is one more). */
  readonly requests: HttpExchange[] = [];
  #handler: HttpHandler | null = null;

  constructor(objects: Iterable<JsonObject> = []) {
    this.objects = [...objects];
  }

  /** Adds an object `get` and `list` can see (with `apiVersion`, `kind` and `metadata`). */
  withObject(object: JsonObject): this {
    this.objects.push(object);
    return this;
  }

  /** Defines a variable `variables.get` returns. */
  withVariable(name: string, value: string): this {
    this.variables.set(name, value);
    return this;
  }

  /** Sends HTTP requests to `handler`, which plays the server. */
  withHttp(handler: HttpHandler): this {
    this.#handler = handler;
    return this;
  }

  /** The value of a variable; throws the reason, naming the variable, when it is not defined. */
  variable(name: string): string {
    const value = this.variables.get(name);
    if (value === undefined) {
      throw `the plugin's settings define no variable ${JSON.stringify(name)}`;
    }
    return value;
  }

  /** Records the exchange and answers it with the handler; without one, denies it. */
  http(exchange: HttpExchange): Response {
    this.requests.push(exchange);
    if (this.#handler === null) {
      throw new HttpError("Denied", TEST_HOST_DENIAL);
    }
    return this.#handler(exchange);
  }

  log(level: WitLevel, message: string): void {
    this.logs.push([level, message]);
  }

  get(kind: WitGvk, namespace: string | null, name: string): string | null {
    const found = this.#visible(kind, namespace).find((object) => metadata(object)["name"] === name);
    return found === undefined ? null : JSON.stringify(found);
  }

  list(kind: WitGvk, namespace: string | null, labelSelector: string | null): string[] {
    const selector = LabelSelector.parse(labelSelector ?? "");
    return this.#visible(kind, namespace)
      .filter((object) => selector.matches(metadata(object)["labels"]))
      .map((object) => JSON.stringify(object));
  }

  #visible(kind: WitGvk, namespace: string | null): JsonObject[] {
    const wanted = new Gvk(kind.group, kind.version, kind.kind);
    return this.objects.filter(
      (object) => wanted.matches(object) && (namespace === null || metadata(object)["namespace"] === namespace),
    );
  }
}

/**
 * Serves the host functions, `variables.get` and HTTP requests with `host` while `body` runs, then restores what
 * served them before (also when `body` throws). Calls nest.
 */
export function withHost<T>(host: TestHost, body: () => T): T {
  const previousHost = installHost(host);
  const previousVariables = installVariables({
    get: (name) => {
      if (host.variable === undefined) {
        throw `this test host defines no variable ${JSON.stringify(name)}`;
      }
      return host.variable(name);
    },
  });
  const previousHttp = installHttp({
    send: (exchange) => {
      if (host.http === undefined) {
        throw new HttpError("Denied", TEST_HOST_DENIAL);
      }
      return host.http(exchange);
    },
  });
  try {
    return body();
  } finally {
    installHost(previousHost);
    installVariables(previousVariables);
    installHttp(previousHttp);
  }
}

type Operator = "exists" | "!exists" | "in" | "notin";

interface Requirement {
  key: string;
  operator: Operator;
  values: string[];
}

const KEY = /^[A-Za-z0-9\-_./]+$/;

/** A parsed label selector: every requirement must hold. */
export class LabelSelector {
  private constructor(readonly requirements: readonly Requirement[]) {}

  /** Parses Kubernetes selector syntax; throws a string naming a term that does not parse. */
  static parse(text: string): LabelSelector {
    return new LabelSelector(
      splitTerms(text)
        .map((term) => term.trim())
        .filter((term) => term !== "")
        .map(parseTerm),
    );
  }

  /** Whether a `metadata.labels` value satisfies every requirement. */
  matches(labels: unknown): boolean {
    const present = isObject(labels) ? labels : {};
    return this.requirements.every(({ key, operator, values }) => {
      const value = present[key];
      const has = typeof value === "string";
      switch (operator) {
        case "exists":
          return has;
        case "!exists":
          return !has;
        case "in":
          return has && values.includes(value);
        case "notin":
          return !has || !values.includes(value);
      }
    });
  }
}

function parseTerm(term: string): Requirement {
  const invalid = `invalid label selector term \`${term}\``;
  const key = (text: string): string => {
    if (!KEY.test(text)) {
      throw invalid;
    }
    return text;
  };
  if (term.startsWith("!")) {
    return { key: key(term.slice(1).trim()), operator: "!exists", values: [] };
  }
  const notEqual = term.indexOf("!=");
  if (notEqual >= 0) {
    return { key: key(term.slice(0, notEqual).trim()), operator: "notin", values: [term.slice(notEqual + 2).trim()] };
  }
  const equal = term.indexOf("=");
  if (equal >= 0) {
    const width = term.includes("==") ? 2 : 1;
    const at = width === 2 ? term.indexOf("==") : equal;
    return { key: key(term.slice(0, at).trim()), operator: "in", values: [term.slice(at + width).trim()] };
  }
  const space = term.search(/\s/);
  if (space >= 0) {
    const name = key(term.slice(0, space));
    const rest = term.slice(space).trimStart();
    const operator: Operator | null = rest.startsWith("notin") ? "notin" : rest.startsWith("in") ? "in" : null;
    if (operator === null) {
      throw invalid;
    }
    const values = rest.slice(operator.length).trim();
    if (!values.startsWith("(") || !values.endsWith(")")) {
      throw invalid;
    }
    return { key: name, operator, values: values.slice(1, -1).split(",").map((value) => value.trim()) };
  }
  return { key: key(term), operator: "exists", values: [] };
}

function splitTerms(text: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let start = 0;
  for (let index = 0; index < text.length; index += 1) {
    const character = text[index];
    if (character === "(") {
      depth += 1;
    } else if (character === ")") {
      depth = Math.max(depth - 1, 0);
    } else if (character === "," && depth === 0) {
      terms.push(text.slice(start, index));
      start = index + 1;
    }
  }
  terms.push(text.slice(start));
  return terms;
}

function metadata(object: JsonObject): JsonObject {
  const value = object["metadata"];
  return isObject(value) ? value : {};
}
