/**
 * Running plugin logic in Node: an in-process stand-in for the host, for unit tests.
 *
 * ```ts
 * const cluster = new MemoryHost([secret]);
 * const outcome = withHost(cluster, () => new MyReconciler().reconcile(view));
 * assert.deepEqual(cluster.logs, [["info", "..."]]);
 * ```
 *
 * @module
 */

import type { WitGvk, WitHost, WitLevel } from "./contract.js";
import { Gvk } from "./gvk.js";
import { installHost } from "./host.js";
import { isObject, type JsonObject } from "./json.js";

/**
 * A host serving a fixed set of objects from memory and recording log lines. `get` matches kind, namespace
 * and name; `list` matches kind, namespace (when given) and a label selector supporting `k=v`, `k==v`,
 * `k!=v`, `k`, `!k`, `k in (a,b)` and `k notin (a,b)`. A refused call throws its reason as a string, as a
 * component's import does.
 */
export class MemoryHost implements WitHost {
  readonly objects: JsonObject[];
  readonly logs: [WitLevel, string][] = [];

  constructor(objects: Iterable<JsonObject> = []) {
    this.objects = [...objects];
  }

  /** Adds an object `get` and `list` can see (with `apiVersion`, `kind` and `metadata`). */
  withObject(object: JsonObject): this {
    this.objects.push(object);
    return this;
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
 * Serves the host functions with `host` while `body` runs, then restores the previous host (also when `body`
 * throws). Calls nest.
 */
export function withHost<T>(host: WitHost, body: () => T): T {
  const previous = installHost(host);
  try {
    return body();
  } finally {
    installHost(previous);
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
