/**
 * A test plugin built against contract 0.2 that sends the HTTP requests and reads the variables its configuration
 * names, and reports what happened in its status (variable values only by length, never verbatim): the TypeScript
 * twin of the Rust guest `test-guests/outbound`, reporting the same status for the same configuration.
 *
 * Configuration: `requests` (each `{url, method, headers, body, maxRedirects}`; a header value `${name}` is the value
 * of variable `name`, or empty when it cannot be read) and `variables` (names to read). The Rust guest's `then`
 * (compute or sleep after the requests) is not implemented here and is ignored.
 *
 * Status: `{"responses": [{"status": N, "body": "text"} | {"error": "<Kind>", "message": "..."}], "variables":
 * {name: {"length": N} | {"error": "..."}}}`, where `<Kind>` is the Rust SDK's `HttpErrorKind` as Rust prints it
 * (`Denied`, `Status(404)`, ...) and `length` counts UTF-8 bytes, as Rust's `String::len` does.
 *
 * @module
 */

import {
  ControllerSpec,
  Gvk,
  http,
  isObject,
  type JsonObject,
  Outcome,
  PluginError,
  type Reconciler,
  variables,
  type WorldView,
} from "wasm-reconciler-sdk";

/** The kind it reconciles. */
export const OUTBOUND = new Gvk("tests.wasm-reconciler.io", "v1", "Outbound");

/** One request of the configuration. */
export interface RequestSpec {
  url: string;
  method: string | null;
  /** Header fields by name, sent in name order (as the Rust guest's `BTreeMap` iterates). */
  headers: [string, string][];
  body: string | null;
  maxRedirects: number | null;
}

/** The configuration. */
export interface Config {
  requests: RequestSpec[];
  variables: string[];
}

/** What one request ended in, as the status reports it. */
export type RequestReport = { status: number; body: string } | { error: string; message: string };

/** What reading one variable gave, as the status reports it: never the value. */
export type VariableReport = { length: number } | { error: string };

/** The outbound reconciler. */
export class Outbound implements Reconciler {
  describe(): ControllerSpec {
    return new ControllerSpec(OUTBOUND);
  }

  reconcile(view: WorldView): Outcome {
    const config = parseConfig(view.config);
    // A Map keeps the configuration's order in the status, whatever the names look like.
    const read = new Map<string, VariableReport>();
    for (const name of config.variables) {
      read.set(name, readVariable(name));
    }
    const responses = config.requests.map(send);
    return new Outcome().status({ responses, variables: read });
  }
}

function readVariable(name: string): VariableReport {
  try {
    return { length: utf8Length(variables.get(name)) };
  } catch (failure) {
    if (failure instanceof PluginError) {
      return { error: failure.message };
    }
    throw failure;
  }
}

/** Sends one configured request and reports its response or its error. */
export function send(spec: RequestSpec): RequestReport {
  const request = new http.Request(spec.method ?? "GET", spec.url);
  for (const [name, value] of spec.headers) {
    request.header(name, substitute(value));
  }
  if (spec.body !== null) {
    request.body(spec.body);
  }
  if (spec.maxRedirects !== null) {
    request.maxRedirects(spec.maxRedirects);
  }
  try {
    const response = request.send();
    return { status: response.status, body: response.text({ lossy: true }) };
  } catch (failure) {
    if (failure instanceof http.HttpError) {
      return { error: failure.kind, message: failure.message };
    }
    throw failure;
  }
}

/** A header value `${name}` is the value of variable `name`, or empty when it cannot be read. */
function substitute(value: string): string {
  if (!value.startsWith("${") || !value.slice(2).endsWith("}")) {
    return value;
  }
  try {
    return variables.get(value.slice(2, -1));
  } catch (failure) {
    if (failure instanceof PluginError) {
      return "";
    }
    throw failure;
  }
}

/** Bytes of `text` in UTF-8. */
function utf8Length(text: string): number {
  let length = 0;
  for (const character of text) {
    const point = character.codePointAt(0) ?? 0;
    length += point < 0x80 ? 1 : point < 0x800 ? 2 : point < 0x10000 ? 3 : 4;
  }
  return length;
}

/** Reads the configuration; throws `PluginError` naming the field that has the wrong type. */
export function parseConfig(config: JsonObject): Config {
  const requests = optional(config, "requests");
  const names = optional(config, "variables");
  return {
    requests:
      requests === null ? [] : list(requests, "requests").map((entry, index) => parseRequest(entry, `requests[${index}]`)),
    variables:
      names === null ? [] : list(names, "variables").map((name, index) => text(name, `variables[${index}]`)),
  };
}

function parseRequest(value: unknown, where: string): RequestSpec {
  if (!isObject(value)) {
    throw new PluginError(`config: ${where} must be an object`);
  }
  const headers = optional(value, "headers");
  const method = optional(value, "method");
  const body = optional(value, "body");
  const maxRedirects = optional(value, "maxRedirects");
  return {
    url: text(value["url"], `${where}.url`),
    method: method === null ? null : text(method, `${where}.method`),
    headers: headers === null ? [] : headerFields(headers, `${where}.headers`),
    body: body === null ? null : text(body, `${where}.body`),
    maxRedirects: maxRedirects === null ? null : redirects(maxRedirects, `${where}.maxRedirects`),
  };
}

function headerFields(value: unknown, where: string): [string, string][] {
  if (!isObject(value)) {
    throw new PluginError(`config: ${where} must be an object of header names to values`);
  }
  return Object.keys(value)
    .sort((left, right) => (left < right ? -1 : left > right ? 1 : 0))
    .map((name) => [name, text(value[name], `${where}.${name}`)]);
}

/** A field that may be absent or null (both read as `null`). */
function optional(object: JsonObject, key: string): unknown {
  const value = object[key];
  return value === undefined ? null : value;
}

function list(value: unknown, where: string): unknown[] {
  if (!Array.isArray(value)) {
    throw new PluginError(`config: ${where} must be a list`);
  }
  return value;
}

function text(value: unknown, where: string): string {
  if (typeof value !== "string") {
    throw new PluginError(`config: ${where} must be a string`);
  }
  return value;
}

function redirects(value: unknown, where: string): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value > 0xffff_ffff) {
    throw new PluginError(`config: ${where} must be a whole number of at least 0`);
  }
  return value;
}
